"""Run events on a Redis stream per run (C6): status changes, per-task updates, values, custom chunks.

Each entry has ``mode`` and ``step`` fields plus ``data`` (msgpack, serde allow-list). A ``values`` event
carries the checkpoint id rather than the whole state, so the stream grows O(change) per step (I4); the
state itself is read from the checkpoint.

Streams are capped at about :data:`EVENTS_MAXLEN` entries (every XADD goes through ``_events.lua``): a run
with more events keeps its newest; readers that fell behind that far miss the oldest.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from graphcore import keys
from graphcore.checkpoints import serde

__all__ = ["EVENTS_MAXLEN", "Event", "decode_event", "encode_event", "read_events"]

EVENTS_MAXLEN = 10_000
"""About how many events a run's stream keeps (``XADD MAXLEN ~``, in ``_events.lua``: Redis trims whole
stream nodes, so up to 100 more may stay); the oldest go first."""


@dataclass(frozen=True)
class Event:
    """One stream entry: ``id`` is the Redis stream id, usable to resume reading after it."""

    id: str
    mode: str
    step: int
    data: Any


def encode_event(mode: str, step: int, data: Any) -> dict[str, str | bytes]:
    """The stream fields of one event: ``mode``, ``step`` and ``data`` (msgpack).

    Raises:
        SerializationError: ``data`` holds a value outside the serde allow-list.
    """
    return {"mode": mode, "step": str(step), "data": serde.dumps(data, path=f"event.{mode}")}


def read_events(
    kv: Any, thread_id: str, run_id: str, after: str = "0-0", block_ms: int | None = None, count: int = 500
) -> Iterator[Event]:
    """Events of a run after stream id ``after``, oldest first; blocks up to ``block_ms`` for new ones."""
    key = keys.run_events(thread_id, run_id)
    reply = kv.xread({key: after}, count=count, block=block_ms)
    for _, entries in reply or []:
        for entry_id, fields in entries:
            yield decode_event(entry_id, fields)


def decode_event(entry_id: bytes, fields: dict[bytes, bytes]) -> Event:
    """One stream entry (as XREAD or XRANGE return it) as an :class:`Event`."""
    return Event(
        entry_id.decode(), fields[b"mode"].decode(), int(fields[b"step"]), serde.loads(fields[b"data"])
    )
