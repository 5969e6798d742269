"""What ``graphq runs show`` and the console's run page say of a run: its fields as ``(name, value)`` rows, in
the order shown, and what a run that has not ended waits for.

The rows hold values, not printed text: a caller shows them its way (the CLI cuts long values to one line,
the console shows them whole).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from graphcore.backend.admission import waiting_deadline_ms
from graphcore.backend.reaper import iso_ms
from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.types import Interrupt

__all__ = [
    "SHORT",
    "request_deadline",
    "run_fields",
    "schema_text",
    "slot_deadline_ms",
    "version_text",
    "waits",
    "when",
]

SHORT = 12
"""Hex digits of a version in a table, a message or a metric label (JSON has all 64)."""


def when(iso: str | None) -> str:
    """An ISO-8601 timestamp shortened for tables: ``2024-01-02 03:04:05`` (UTC); "" for None."""
    return "" if not iso else iso[:19].replace("T", " ")


def version_text(r: RunRecord) -> str:
    """A run's version: its first :data:`SHORT` hex digits, with ``(pinned)`` when its steps are pinned to
    it; "" before its first step."""
    if r.version is None:
        return ""
    return f"{r.version[:SHORT]} (pinned)" if r.pinned else r.version[:SHORT]


def slot_deadline_ms(kv: Any, record: RunRecord) -> int | None:
    """For a queued run waiting for an admission slot (R8), its deadline (ms since the epoch); None
    otherwise."""
    return waiting_deadline_ms(kv, record) if record.status == RunStatus.QUEUED else None


def _same(value: Any) -> Any:
    return value


def run_fields(
    r: RunRecord,
    step: int | None,
    slot_deadline: int | None = None,
    unserved: bool = False,
    shown: Callable[[Any], Any] = _same,
) -> list[tuple[str, Any]]:
    """The rows of ``graphq runs show``, but its result and its requests' deadline
    (:func:`request_deadline`).

    Args:
        r: the run's record.
        step: the thread's super-step it is at (:meth:`graphcore.backend.client.Client.thread_step`).
        slot_deadline: :func:`slot_deadline_ms`.
        unserved: no live worker can take its next step (:func:`graphq.worker.pinned.unserved`).
        shown: how the input and the config are shown (the CLI cuts them to one line).

    Returns:
        ``(name, value)`` rows; a value is a str, an int, None, or what ``shown`` returns.
    """
    fields: list[tuple[str, Any]] = [
        ("run", r.id),
        ("workflow", r.workflow),
        ("status", r.status.value),
        ("thread", r.thread_id),
        ("tenant", r.tenant),
        ("version", version_text(r) or ("none yet (its first step sets it)" if not r.terminal else "")),
        ("step", step),
        ("steps done", r.step),
        ("head", r.head),
        ("created", r.created_at),
        ("started", r.started_at),
        ("ended", r.ended_at),
        ("input", shown(r.input)),
    ]
    fields += waits(r, slot_deadline, unserved)
    if r.migrated_from:
        fields.append(("migrated", f"from version {r.migrated_from[:SHORT]} at {r.migrated_at}"))
    if r.continued_from_run_id:
        fields.append(("continued from", r.continued_from_run_id))
    if r.continued_by_run_id:
        fields.append(("continued by", r.continued_by_run_id))
    if r.attempt > 1:
        fields.append(("attempt", r.attempt))
    if r.worker:
        fields.append(("worker", r.worker))
    if r.interrupted is not None:
        fields.append(("interrupted", f"{r.interrupted.type}: {r.interrupted.message}"))
    if r.config:
        fields.append(("config", shown(r.config)))
    if r.error is not None:
        fields += [("error type", r.error.type), ("error", r.error.message)]
    return fields


def waits(r: RunRecord, slot_deadline: int | None, unserved: bool) -> list[tuple[str, str]]:
    """What a run that has not ended waits for: a worker that can take its next step (one serving its
    version, or one that takes new runs: :func:`graphq.worker.pinned.unserved`), an admission slot."""
    rows: list[tuple[str, str]] = []
    version = r.pinned_version
    if unserved and version is not None:
        note = "no live worker serves it; start one, or `graphq runs migrate`"
        rows.append(("waiting for", f"a worker serving version {version[:SHORT]} ({note})"))
    elif unserved:
        note = "none is live, or each has GRAPHQ_TAKE_NEW_RUNS=false"
        rows.append(("waiting for", f"a worker that takes new runs of {r.workflow} ({note})"))
    if slot_deadline is not None:
        rows.append(("waiting for", "a slot (GRAPHQ_MAX_CONCURRENT_RUNS[_PER_TENANT] or its workflow's)"))
        rows.append(("deadline", f"{when(iso_ms(slot_deadline))} UTC (canceled if still waiting)"))
    return rows


def request_deadline(open_requests: Sequence[Interrupt]) -> list[tuple[str, Any]]:
    """The row of a waiting run whose open requests have a deadline: the earliest, and which (R13)."""
    timed = [r for r in open_requests if r.deadline_ms is not None]
    if not timed:
        return []
    first = min(timed, key=lambda r: r.deadline_ms or 0)
    note = f"request {first.id}: canceled if unanswered by then"
    return [("request deadline", f"{when(iso_ms(first.deadline_ms or 0))} UTC ({note})")]


def schema_text(schema: Any) -> str:
    """The answer a request expects (its ``response_schema``, a JSON Schema) on one line: the schema's title,
    else its type, then its required fields: ``Decision (required: ok, note)``; "" without a schema."""
    if schema is None:
        return ""
    if not isinstance(schema, dict):  # a type (an in-process Interrupt keeps the one given)
        return str(getattr(schema, "__name__", schema))
    name = schema.get("title") or schema.get("type") or "JSON Schema"
    if isinstance(name, list):  # "type": ["string", "null"]
        name = " or ".join(map(str, name))
    required = schema.get("required") or []
    return f"{name} (required: {', '.join(map(str, required))})" if required else str(name)
