"""The JSON forms of graphq's values, shared by the CLI (``--output json``) and the HTTP API.

:func:`jsonable` turns any value into plain JSON data, :func:`from_json` reads JSON text strictly;
:func:`record_json`, :func:`request_json` and :func:`request_record_json` are a run record's and a human
request's JSON forms.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import math
from collections.abc import Mapping, Sequence
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import BaseModel

from graphcore.backend.reaper import iso_ms
from graphcore.backend.run_fields import slot_deadline_ms
from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.inputs import MAX_NESTING, TOO_DEEP, nesting_problem
from graphcore.engine.interrupts import RequestRecord
from graphcore.errors import CheckpointNotFoundError
from graphcore.types import Interrupt

if TYPE_CHECKING:
    from graphcore.backend.client import Client

__all__ = [
    "MAIN_BRANCH",
    "branches",
    "checkpoint_json",
    "deadline_iso",
    "from_json",
    "history_json",
    "jsonable",
    "listed_json",
    "record_json",
    "request_json",
    "request_record_json",
    "shown_json",
    "state_json",
    "to_json",
]

MAIN_BRANCH = "main"
"""The branch of a thread's first checkpoints; each fork (C3) starts another, ``b1``, ``b2``, ..."""


def _scalar(value: Any) -> Any:
    """The JSON form of a non-container value (``NotImplemented`` when it is not a known scalar)."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal | UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return "base64:" + base64.b64encode(raw).decode("ascii")
    return NotImplemented


def jsonable(value: Any) -> Any:
    """Convert ``value`` into plain JSON data.

    datetimes, dates and times become ISO-8601 strings, timedeltas seconds, Decimal and UUID strings, bytes
    UTF-8 text (``base64:...`` when not UTF-8), sets sorted lists, enums their value, pydantic models and
    dataclasses dicts, non-finite floats strings, mapping keys strings; anything else its ``repr``.

    Args:
        value: any value, nested to any depth.

    Returns:
        A value made of dict, list, str, int, float, bool and None only.
    """
    scalar = _scalar(value)
    if scalar is not NotImplemented:
        return scalar
    if isinstance(value, BaseModel):
        return jsonable(value.model_dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {k if isinstance(k, str) else json.dumps(jsonable(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        items = [jsonable(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return repr(value)


def to_json(value: Any, indent: int | None = 2) -> str:
    """``value`` as valid JSON text (see :func:`jsonable`)."""
    return json.dumps(jsonable(value), indent=indent, ensure_ascii=False, allow_nan=False)


def record_json(record: RunRecord) -> dict[str, Any]:
    """A run record as a JSON-ready dict (``status`` as its string value)."""
    return record.model_dump(mode="python") | {"status": record.status.value}


def request_json(request: Interrupt) -> dict[str, Any]:
    """An open request as a JSON-ready dict: id, value, node, task_id, index, created_at, deadline_ms and
    deadline (ISO-8601 UTC; both null without one, R13)."""
    return dataclasses.asdict(request) | {"deadline": deadline_iso(request.deadline_ms)}


def request_record_json(record: RequestRecord) -> dict[str, Any]:
    """A request a run made (open or answered) as a JSON-ready dict: id, node, value, status, answer, step,
    checkpoint_id, created_at, answered_at, again_of, deadline, deadline_ms."""
    return dataclasses.asdict(record)


def deadline_iso(deadline_ms: int | None) -> str | None:
    """A request's deadline as ISO-8601 UTC (None without one)."""
    return None if deadline_ms is None else iso_ms(deadline_ms)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number {text} is out of range for a float")
    return number


def from_json(text: str, levels: int = MAX_NESTING) -> Any:
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


def shown_json(client: Client, record: RunRecord, unserved: bool) -> dict[str, Any]:
    """A run as ``graphq runs show RUN -o json`` prints it (and ``GET /api/runs/{id}`` answers it): its whole
    record (:func:`record_json`: ``step`` is its steps done), ``thread_step`` (the thread's super-step it is
    at), ``waiting_for_slot_until`` (the deadline of a queued run waiting for an admission slot, ISO-8601),
    ``waiting_for_version`` (the version of a pinned run no live worker serves; ``unserved`` says whether
    that is so: ``graphq.worker.pinned.unserved``), ``all_requests`` (every request it made, as
    :func:`request_record_json`) and, when it waits for input, ``requests`` (the open ones, as
    :func:`request_json`).

    Raises:
        redis.exceptions.RedisError: Redis unreachable (the record itself was read already).
    """
    slot = slot_deadline_ms(client.kv, record)
    shown = record_json(record) | {
        "thread_step": client.thread_step(record),
        "waiting_for_slot_until": None if slot is None else iso_ms(slot),
        "waiting_for_version": record.pinned_version if unserved else None,
        "all_requests": [request_record_json(r) for r in client.run_requests(record.id)],
    }
    if record.status == RunStatus.AWAITING_INPUT:
        shown["requests"] = [request_json(r) for r in client.requests(record.id)]
    return shown


def listed_json(record: RunRecord) -> dict[str, Any]:
    """A run as ``runs list -o json`` prints it: its record without ``result`` (``runs show`` reads it)."""
    listed = record_json(record)
    del listed["result"]
    return listed


def checkpoint_json(cp: Checkpoint) -> dict[str, Any]:
    """A checkpoint as JSON-ready data, without its state."""
    return {
        "checkpoint_id": cp.id,
        "parent_id": cp.parent_id,
        "step": cp.step,
        "source": cp.source,
        "writes": list(cp.metadata.get("writes", [])),
        "next": [t.node for t in cp.next_tasks],
        "created_at": cp.created_at,
        "metadata": cp.metadata,
    }


def branches(history: Sequence[Checkpoint]) -> dict[str, str]:
    """Checkpoint id → the branch it is on: ``main`` from the thread's first checkpoint, then ``b1``, ``b2``,
    ... from each fork (``source: fork``) in the order they were made; a checkpoint is on its parent's
    branch.

    Args:
        history: a thread's checkpoints, newest first (as :meth:`Client.get_history` lists them).
    """
    labels: dict[str, str] = {}
    forks = 0
    for cp in reversed(history):
        if cp.source == "fork":
            forks += 1
            labels[cp.id] = f"b{forks}"
        else:
            labels[cp.id] = labels.get(cp.parent_id or "", MAIN_BRANCH)
    return labels


def _why_none(client: Client, thread: str) -> str:
    """Why a thread has no checkpoint, when it has runs: they were removed after completion (R7)."""
    completed = [r for r in client.thread_runs(thread) if r.status == RunStatus.COMPLETED]
    if not completed:
        return ""
    return (
        f"; {len(completed)} of its runs completed, and checkpoints are removed when a run completes with "
        "GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION=false (`graphq runs show RUN` keeps each run's result)"
    )


def thread_checkpoint(client: Client, thread: str, checkpoint_id: str | None = None) -> Checkpoint:
    """The checkpoint ``graphq state THREAD`` shows: ``checkpoint_id``, or the thread's newest.

    Raises:
        CheckpointNotFoundError: no such checkpoint; for the newest, saying why when the thread's runs
            completed and their checkpoints were removed.
    """
    try:
        return client.get_state(thread, checkpoint_id)
    except CheckpointNotFoundError as exc:
        if checkpoint_id is not None:
            raise
        raise CheckpointNotFoundError(f"{exc}{_why_none(client, thread)}") from None


def thread_history(client: Client, thread: str) -> list[Checkpoint]:
    """Every checkpoint of ``thread``, newest first (``graphq state THREAD --history``).

    Raises:
        CheckpointNotFoundError: the thread has none (saying why when its runs completed).
    """
    history = client.get_history(thread)
    if not history:
        raise CheckpointNotFoundError(f"thread {thread!r} has no checkpoints{_why_none(client, thread)}")
    return history


def state_json(client: Client, thread: str, cp: Checkpoint) -> dict[str, Any]:
    """``graphq state THREAD -o json``: the checkpoint ``cp`` of ``thread`` with its state ``values``."""
    return {"thread_id": thread} | checkpoint_json(cp) | {"values": client.shown_values(thread, cp)}


def history_json(history: Sequence[Checkpoint], limit: int | None = None) -> list[dict[str, Any]]:
    """``graphq state THREAD --history -o json``: the newest ``limit`` checkpoints of ``history`` (a whole
    thread's, newest first: branches are told from the oldest), each with its ``branch``."""
    labels = branches(history)
    return [checkpoint_json(cp) | {"branch": labels[cp.id]} for cp in history[:limit]]
