"""Human-request expiry, the Redis side (R13, K2): deadlines of open requests and the closing of a run
whose request expired.

A request gets a deadline from ``interrupt(value, timeout_s=...)`` or its workflow's ``request_timeout_s``
(:class:`graphcore.types.Interrupt.deadline_ms`; its record in :func:`graphcore.keys.requests` carries it
too, ``deadline`` ISO and ``deadline_ms``). When a run pauses AwaitingInput with such a request, the script
that sets the status (``set_status.lua``) also writes the run's :data:`DEADLINE_FIELD` (its earliest open
request: deadline, id, step) and adds the run to the deadline index (:func:`graphcore.keys.request_deadlines`,
scored by that deadline) — nothing is written when no request has a deadline. The answer (its MULTI), a
cancel and the run's end (``set_status.lua``) take it out again.

The scan (:mod:`graphq.worker.housekeeping.expiry`) reads the due entries with one ZRANGEBYSCORE ... LIMIT
(:func:`due`) and closes each run with :func:`expire`: ``set_status.lua`` sets Canceled only while the run is
AwaitingInput with the same :data:`DEADLINE_FIELD` (still waiting for that request, past its deadline), so an
answer racing the scan either wins (the run continues; the scan changes nothing) or loses (the answer is
refused, naming the expiry: :func:`expired_note`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphcore import keys
from graphcore.backend.reaper import due_members, iso_ms
from graphcore.backend.runs import RunError, RunRecord, RunStatus, RunStore, now_iso
from graphcore.types import Interrupt

__all__ = [
    "DEADLINE_FIELD",
    "EXPIRED",
    "Due",
    "deadline_fields",
    "due",
    "expire",
    "expired_error",
    "expired_note",
    "request_deadline",
]

DEADLINE_FIELD = "request_deadline"
"""The run-hash field of a run awaiting input whose open requests have a deadline: ``MS:REQUEST:STEP``, the
earliest deadline (ms since the epoch), its request id and the thread step that asked."""

EXPIRED = "RequestExpired"
"""The error type of a run closed because a request expired."""


def deadline_fields(deadline_ms: int | None) -> dict[str, Any]:
    """The deadline fields of a request record: ``{"deadline": ISO, "deadline_ms": ms}``; ``{}`` without
    one."""
    return {} if deadline_ms is None else {"deadline": iso_ms(deadline_ms), "deadline_ms": deadline_ms}


def request_deadline(requests: Sequence[Interrupt], step: int) -> tuple[int, str] | None:
    """The run's entry for a pause with these open requests in thread step ``step``: ``(earliest deadline
    ms, DEADLINE_FIELD value)``; None when no request has a deadline (nothing is indexed)."""
    timed = [r for r in requests if r.deadline_ms is not None]
    if not timed:
        return None
    first = min(timed, key=lambda r: (r.deadline_ms or 0, r.id))
    ms = int(first.deadline_ms or 0)
    return ms, f"{ms}:{first.id}:{step}"


def expired_error(request_id: str, deadline_ms: int) -> RunError:
    """The error of a run closed because request ``request_id`` was not answered by ``deadline_ms``."""
    return RunError(
        type=EXPIRED,
        message=f"request {request_id} was not answered by its deadline {iso_ms(deadline_ms)} "
        "(interrupt timeout_s or the workflow's request_timeout_s)",
    )


_EXPIRED_MESSAGE = re.compile(r"request (\S+) was not answered by its deadline (\S+) ")
"""Reads :func:`expired_error`'s message back: the request id and the deadline."""


def expired_note(run: RunRecord) -> str:
    """Why an answer to ``run`` is refused when its request expired: ``its request R expired at DEADLINE``
    (from the run's error; its message as is when not in :func:`expired_error`'s form); "" otherwise."""
    if run.status == RunStatus.CANCELED and run.error is not None and run.error.type == EXPIRED:
        found = _EXPIRED_MESSAGE.match(run.error.message)
        return f"its request {found[1]} expired at {found[2]}" if found else run.error.message
    return ""


@dataclass(frozen=True)
class Due:
    """An entry of the deadline index whose deadline passed: the run's thread and id, the deadline (ms)."""

    thread_id: str
    run_id: str
    deadline_ms: int


def due(kv: Any, now_ms: int, limit: int) -> list[Due]:
    """At most ``limit`` runs whose earliest request deadline is at or before ``now_ms``, earliest first (one
    ZRANGEBYSCORE ... LIMIT)."""
    return [Due(*entry) for entry in due_members(kv, keys.request_deadlines(), now_ms, limit)]


def expire(kv: Any, runs: RunStore, entry: Due, now_ms: int) -> RunError | None:
    """Close ``entry``'s run Canceled if it still waits, past the deadline, for the request its deadline
    field names; returns the error it was closed with, or None when it was not (answered, canceled or
    paused again meanwhile: a stale entry is dropped by the same script). The caller hands the thread on.
    """
    record = RunRecord(id=entry.run_id, workflow="", thread_id=entry.thread_id, created_at="")
    raw = kv.hget(keys.run(entry.thread_id, entry.run_id), DEADLINE_FIELD)
    waiting = (RunStatus.AWAITING_INPUT,)
    if raw is None:  # not waiting any more (or gone); "-" is no field's value: the script drops the entry
        runs.set_status(record, RunStatus.CANCELED, allowed=waiting, expect=(DEADLINE_FIELD, "-"))
        return None
    value = raw.decode()
    ms, request_id, step = value.split(":")
    if int(ms) > now_ms:  # paused again meanwhile, with a later deadline (its entry moved with it)
        return None
    error = expired_error(request_id, int(ms))
    fields = {"error": error.model_dump_json(), "ended_at": now_iso()}
    event = ("status", int(step), {"status": "canceled", "error": f"{error.type}: {error.message}"})
    options: dict[str, Any] = {"fields": fields, "events": [event], "expect": (DEADLINE_FIELD, value)}
    return error if runs.set_status(record, RunStatus.CANCELED, allowed=waiting, **options) else None
