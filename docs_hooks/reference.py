"""mkdocs hook (``hooks:`` in mkdocs.yml): the reference pages generated from the code at build time.

A page of ``docs/`` holds a line ``<!-- generated: NAME -->`` where the generated part goes; NAME is one of
:data:`SECTIONS`:

- ``cli``: every ``graphq`` command and subcommand, its help as ``graphq ... --help`` prints it (usage,
  options, defaults), from the click command tree;
- ``settings``: every field of :class:`graphcore.settings.Settings`: its ``GRAPHQ_*`` variable, type,
  default, allowed range and description, from the pydantic model;
- ``metrics``: every metric graphq exposes: name, type, labels and help
  (:func:`graphq.worker.metrics.catalog`).

The pages so cannot go stale, and nothing of this is shipped in the wheel (it is not under ``graphcore/`` or
``graphq/``). ``tests/test_design_refs.py`` reads a page's anchors from :func:`fill` too.
"""

from __future__ import annotations

import html
import re
import types
from collections.abc import Callable, Iterator
from typing import Any, Literal, get_args, get_origin

import click
from mkdocs.exceptions import PluginError
from pydantic import SecretStr

MARKER = re.compile(r"^<!-- generated: (\S+) -->$", re.MULTILINE)
"""Where a page wants a generated section."""

HELP_WIDTH = 80
"""Columns of the generated ``--help`` texts: what a code block of the theme shows without scrolling (in a
terminal ``graphq`` uses its width, up to 100: cli/main.py)."""


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """mkdocs event: fill the page's generated sections."""
    return fill(markdown)


def fill(markdown: str) -> str:
    """``markdown`` with each ``<!-- generated: NAME -->`` line replaced by that section.

    Raises:
        PluginError: NAME is not one of :data:`SECTIONS` (the build stops naming it).
    """

    def section(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in SECTIONS:
            raise PluginError(f"<!-- generated: {name} -->: no such section (known: {', '.join(SECTIONS)})")
        return SECTIONS[name]()

    return MARKER.sub(section, markdown)


# --- graphq's commands ------------------------------------------------------------------------------------


def cli_reference() -> str:
    """A heading and a ``text`` block of ``--help`` for ``graphq`` and each of its commands, depth first in
    the order ``graphq --help`` lists them (``## graphq``, ``### graphq run``, ``#### graphq runs
    answer``)."""
    from graphq.cli.main import main

    parts = []
    for ctx, depth in _contexts(main, "graphq", None, 0):
        heading = "#" * min(depth + 2, 6)
        parts.append(f"{heading} {ctx.command_path}\n\n```text\n{ctx.get_help()}\n```\n")
    return "\n".join(parts)


def _contexts(
    command: click.Command, name: str, parent: click.Context | None, depth: int
) -> Iterator[tuple[click.Context, int]]:
    """The context of ``command`` (as ``graphq ... COMMAND --help`` builds it: its context settings, the
    parent's help options) and of each visible subcommand, recursively."""
    ctx = command.make_context(name, [], parent=parent, resilient_parsing=True, terminal_width=HELP_WIDTH)
    yield ctx, depth
    if isinstance(command, click.Group):
        for sub_name in command.list_commands(ctx):
            sub = command.get_command(ctx, sub_name)
            if sub is not None and not sub.hidden:
                yield from _contexts(sub, sub_name, ctx, depth + 1)


# --- the settings -----------------------------------------------------------------------------------------


def settings_reference() -> str:
    """A section per setting, in the model's order: ``## GRAPHQ_<FIELD>``, then its type, default and
    allowed range (``number · default `20` · 0 < value ≤ 3600``), then its description; then the other
    ``GRAPHQ_*`` variables graphq reads (``OTHER_VARIABLES``), under ``## Other variables``."""
    from graphcore.settings import OTHER_VARIABLES, PREFIX, Settings, allowed_range

    parts = []
    for field, info in Settings.model_fields.items():
        facts = [_type_name(info.annotation), f"default {_default(info.default)}", allowed_range(field)]
        parts.append(f"## {PREFIX}{field.upper()}\n\n{_text(' · '.join(f for f in facts if f))}\n")
        parts.append(f"{_text(info.description or '')}\n")
    parts.append("## Other variables\n\nRead by graphq, but not settings.\n")
    parts += [f"### {name}\n\n{_text(meaning)}\n" for name, meaning in sorted(OTHER_VARIABLES.items())]
    return "\n".join(parts)


_TYPES = {
    str: "text",
    SecretStr: "text (secret)",
    int: "integer",
    float: "number",
    bool: "boolean (`true`/`false`)",
}


def _type_name(annotation: Any) -> str:
    """``int`` → integer, ``float | None`` → number or unset, ``Literal['a', 'b']`` → `a` or `b`."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) in (types.UnionType,) and len(args) == 1:
        return f"{_type_name(args[0])} or unset"
    if get_origin(annotation) is Literal:
        return " or ".join(f"`{a}`" for a in args)
    return _TYPES.get(annotation, str(annotation))


def _default(value: object) -> str:
    """How a default reads in the environment: ``unset``, ``empty``, `true`, `20` (not 20.0)."""
    if value is None:
        return "unset"
    if value == "":
        return "empty"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def _text(text: str) -> str:
    """``text`` as Markdown that shows it: no HTML outside its code spans (``<queue>`` stays visible; a code
    span shows its text as it is)."""
    parts = text.split("`")
    parts[::2] = [html.escape(part, quote=False) for part in parts[::2]]
    return "`".join(parts)


# --- the metrics ------------------------------------------------------------------------------------------


def metrics_reference() -> str:
    """A section per metric, by name: ``## graphq_steps_total``, then its type and labels (``counter ·
    labels `workflow`, `outcome```), then its help."""
    from graphq.worker.metrics import catalog

    parts = []
    for name, kind, doc, labels in catalog():
        shown = ", ".join(f"`{label}`" for label in labels) or "none"
        parts.append(f"## {name}\n\n{kind} · labels {shown}\n\n{_text(doc)}\n")
    return "\n".join(parts)


SECTIONS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "settings": settings_reference,
    "metrics": metrics_reference,
}
"""Each generated section by name."""
