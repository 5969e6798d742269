"""Printing: JSON that is always valid, rich tables and consoles, and the shared ``--output`` option."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphcore.backend.json_forms import to_json
from graphcore.backend.run_fields import when
from graphq.worker.logs import redact_urls

__all__ = [
    "CELL_LIMIT",
    "FORMATS",
    "clip",
    "err_console",
    "mask_output",
    "out_console",
    "output_option",
    "print_json",
    "print_table",
    "short",
    "when",
]

FORMATS = ("table", "json")
"""Values of ``--output``: ``table`` for people, ``json`` for machines."""

_F = TypeVar("_F", bound=Callable[..., Any])


def out_console() -> Console:
    """A rich console on stdout (looked up at call time, so click's test runner captures it).

    On a terminal tables fit its width; piped, they keep their natural width (up to 250 columns).
    """
    return Console(highlight=False, width=None if sys.stdout.isatty() else 250)


def err_console() -> Console:
    """A rich console on stderr, for progress and notes that must not mix with machine output."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


class _Masked:
    """A text stream writing through another with every URL's password masked
    (:func:`graphq.worker.logs.redact_urls`).

    It has no ``buffer``: click then writes text to it, not bytes past it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # click probes with bytes: a text stream refuses them
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._stream.write(redact_urls(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":
            raise AttributeError(name)
        return getattr(self._stream, name)


def mask_output() -> None:
    """From now on, mask in everything this process prints on stdout and stderr (run errors, their
    tracebacks, records, a bug's traceback) the password of every URL (``scheme://user:***@``), and
    nothing else: the output is data (a tenant ``default``, a schedule ``s1``, ``-o json``) and is never
    changed otherwise, whatever the configured password is. Idempotent."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _Masked):
            setattr(sys, name, _Masked(stream))


def output_option(fn: _F) -> _F:
    """Decorator: add ``--output/-o [table|json]`` (default ``table``) to a command as ``output``."""
    option = click.option(
        "--output",
        "-o",
        type=click.Choice(FORMATS),
        default="table",
        show_default=True,
        help="table for people, json for machines (always valid JSON on stdout).",
    )
    return option(fn)


def print_json(value: Any) -> None:
    """Print ``value`` as indented, valid JSON on stdout."""
    click.echo(to_json(value))


CELL_LIMIT = 80
"""Characters of a value shown in a table cell or a one-line listing; longer ones are cut, ending "…"
(``--output json`` has every value whole)."""


def clip(text: str, limit: int = CELL_LIMIT) -> str:
    """``text``, or its first ``limit`` characters and "…" when it is longer."""
    return text if len(text) <= limit else text[:limit] + "…"


def short(value: Any, width: int = CELL_LIMIT) -> str:
    """A one-line rendering of ``value`` (a string as it is, anything else compact JSON), cut after
    ``width`` characters (see :func:`clip`)."""
    return clip(value if isinstance(value, str) else to_json(value, indent=None), width)


def print_table(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    title: str | None = None,
    no_wrap: Sequence[str] = (),
    limit: int = CELL_LIMIT,
) -> None:
    """Print a rich table on stdout.

    Every other cell is cut to ``limit`` characters before rich sees it (:func:`clip`), so that the time
    to render is linear in the number of rows whatever the values' sizes: rich wraps a cell line by line,
    splitting what is left of it each time, which takes minutes for a cell of megabytes.

    Args:
        columns: header names.
        rows: one sequence of cells per row; cells are shown with ``str`` (None as empty).
        title: optional caption above the table.
        no_wrap: columns of ids and times (at most 200 characters, see ``keys.validate_id``): shown whole,
            never wrapped.
        limit: characters shown of any other cell.
    """
    table = Table(title=title, show_edge=False, header_style="bold")
    whole = [name in no_wrap for name in columns]
    for name in columns:
        table.add_column(name, no_wrap=name in no_wrap, overflow="fold")
    for row in rows:
        texts = ("" if cell is None else str(cell) for cell in row)
        table.add_row(*(Text(t if keep else clip(t, limit)) for t, keep in zip(texts, whole, strict=False)))
    out_console().print(table)
