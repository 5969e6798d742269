"""Reading run inputs: ``--input JSON|@file`` and ``--input-file runs.jsonl``, all validated up front."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from graphcore import keys
from graphcore.backend.client import RunRequest, ValidRun, check_request
from graphcore.engine.inputs import MAX_NESTING, TOO_DEEP, nesting_problem
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError, PermanentError
from graphq.cli.errors import fail

__all__ = [
    "BATCH_KEYS",
    "BatchLine",
    "check_ids",
    "checked",
    "fail_at",
    "loads",
    "make_data_dir",
    "option_at_fault",
    "parse_input",
    "read_batch",
]

BATCH_KEYS = ("input", "thread", "tenant", "webhook")
"""Keys a ``--input-file`` line may have; ``input`` is required."""

OPTIONS_OF: dict[str, tuple[str, ...]] = {
    "thread_id": ("--thread",),
    "tenant": ("--tenant",),
    "config": ("--config",),
    "checkpoint_id": ("--checkpoint", "--config"),
    "webhook": ("--webhook", "--config"),
}
"""The options of ``graphq enqueue`` and ``graphq run`` that may give each field of a run request, in the
order an error of that field names them (the client's errors carry the field, ``PermanentError.param``).
A field given by none of them (the input, a batch line's thread) is named by where its input came from."""


def option_at_fault(param: str | None, where: str, given: Collection[str]) -> str | None:
    """The option to name in an error of request field ``param``: the first of :data:`OPTIONS_OF`'s that
    was ``given`` on the command line, else ``where`` (``--input`` or a batch line's ``path:LINE``); None
    for the workflow (its errors name it)."""
    if param == "workflow":
        return None
    return next((o for o in OPTIONS_OF.get(param or "", ()) if o in given), where)


def checked(registry: Registry, request: RunRequest, where: str, given: Collection[str]) -> ValidRun:
    """``request`` checked by the client (:func:`~graphcore.backend.client.check_request`, the one check),
    without Redis.

    Raises:
        CliError: it is invalid: exit 2, one line naming the option at fault (:func:`option_at_fault`).
    """
    try:
        return check_request(registry, request)
    except PermanentError as exc:
        fail_at(exc, where, given)


def fail_at(exc: PermanentError, where: str, given: Collection[str]) -> NoReturn:
    """Stop with ``exc``'s message after the option at fault (:func:`option_at_fault`) and, for a batch
    line's run, the line (``path:LINE``), exit 2."""
    option = option_at_fault(exc.param, where, given)
    if option is None:
        fail(str(exc))
    at_line = option != where and not where.startswith("--")  # a batch line's request, an option at fault
    fail(f"{where}: {option}: {exc}" if at_line else f"{option}: {exc}")


@dataclass(frozen=True)
class BatchLine:
    """One run of a batch file: its input, thread (None = new), tenant (None = the default), webhook (None =
    the default) and where it stands (``path:LINE``)."""

    input: Any
    thread: str | None
    tenant: str | None
    where: str
    webhook: str | None = None


def check_ids(thread: str | None, tenant: str | None) -> None:
    """Refuse a malformed ``--thread`` or ``--tenant`` (exit 2, naming the option)."""
    for option, kind, value in (("--thread", "thread id", thread), ("--tenant", "tenant", tenant)):
        if value is not None:
            try:
                keys.validate_id(kind, value)
            except ConfigError as exc:
                fail(f"{option}: {exc}")


def make_data_dir(path: str) -> None:
    """Create the local data directory (``GRAPHQ_DATA_DIR``), or exit 2 saying why it cannot be."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"GRAPHQ_DATA_DIR: cannot use {path} as the data directory: {exc.strerror or exc}")


def _read_text(path: str, option: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        fail(f"{option}: cannot read {path}: {reason}")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number {text} is out of range for a float")
    return number


def loads(text: str, levels: int = MAX_NESTING) -> Any:
    """Strict JSON: ``NaN``, ``Infinity`` and numbers beyond a float's range are refused (ValueError), as
    the JSON standard (RFC 8259 §6) has none of them; so are arrays and objects nested more than ``levels``
    deep (:data:`~graphcore.engine.inputs.MAX_NESTING`, as the client refuses, plus the levels the text
    wraps the value in), also those too deep for Python's JSON parser."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:  # deeper than Python's recursion limit, so than MAX_NESTING
        raise ValueError(TOO_DEEP) from None
    problem = nesting_problem(value, levels)
    if problem is not None:
        raise ValueError(problem)
    return value


def parse_input(value: str | None, option: str = "--input") -> Any:
    """The run input given as JSON text, or as ``@path`` of a JSON file.

    Args:
        value: the option's value; None means no input (``{}``).
        option: the option's name, for messages.

    Returns:
        The parsed JSON value.

    Raises:
        CliError: the file cannot be read or the JSON is malformed (exit 2, with line and column).
    """
    if value is None:
        return {}
    if value.startswith("@"):
        path = value[1:]
        text = _read_text(path, option)
        try:
            return loads(text)
        except json.JSONDecodeError as exc:
            fail(f"{option}: {path}:{exc.lineno}:{exc.colno}: {exc.msg}")
        except ValueError as exc:
            fail(f"{option}: {path}: {exc}")
    try:
        return loads(value)
    except ValueError as exc:  # JSONDecodeError included
        fail(f"{option}: {exc}")


def _optional_id(kind: str, value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        fail(f"{where}: {kind} must be a string, got {type(value).__name__}")
    try:
        return keys.validate_id(kind, value)
    except ConfigError as exc:
        fail(f"{where}: {exc}")


def _optional_text(key: str, value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        fail(f"{where}: {key} must be a string, got {type(value).__name__}")
    return value


def _batch_line(text: str, where: str) -> BatchLine:
    try:
        obj = loads(text, MAX_NESTING + 1)  # the line's object around the input
    except json.JSONDecodeError as exc:
        fail(f"{where}:{exc.colno}: {exc.msg}")
    except ValueError as exc:
        fail(f"{where}: {exc}")
    if not isinstance(obj, dict):
        fail(f'{where}:1: expected a JSON object like {{"input": {{...}}}}, got {type(obj).__name__}')
    unknown = sorted(set(obj) - set(BATCH_KEYS))
    if unknown:
        fail(f"{where}:1: unknown key(s) {unknown}; a line may have {', '.join(BATCH_KEYS)}")
    if "input" not in obj:
        fail(f"{where}:1: missing key 'input'")
    return BatchLine(
        obj["input"],
        _optional_id("thread id", obj.get("thread"), where),
        _optional_id("tenant", obj.get("tenant"), where),
        where,
        _optional_text("webhook", obj.get("webhook"), where),
    )


def _lines(path: str, text: str) -> Iterator[tuple[str, str]]:
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            yield f"{path}:{number}", line


def read_batch(path: str) -> list[BatchLine]:
    """Parse every line of a JSON-lines batch file before anything is enqueued.

    Each non-blank line is one JSON object ``{"input": ..., "thread": "...", "tenant": "...", "webhook":
    "..."}``; ``input`` is required, the other keys are optional (the client checks the webhook).

    Args:
        path: the file; ``-`` reads stdin.

    Returns:
        The runs, in file order.

    Raises:
        CliError: the file cannot be read, or a line is malformed (``path:LINE:COL: message``, exit 2).
    """
    if path == "-":
        text, path = sys.stdin.read(), "<stdin>"
    else:
        text = _read_text(path, "--input-file")
    runs = [_batch_line(line, where) for where, line in _lines(path, text)]
    if not runs:
        fail(f"--input-file: {path} has no runs")
    return runs
