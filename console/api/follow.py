"""Following a run without holding a thread: its event stream read with the console's async Redis
connection (``XREAD BLOCK``), its record read again when events arrive.

A run has *settled* when it ended or paused (waits for input: an open request or a static breakpoint), the
statuses ``graphq runs watch`` stops at (:data:`graphcore.backend.event_lines.ENDED`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from fastapi.concurrency import run_in_threadpool

from graphcore import keys
from graphcore.backend.event_lines import ENDED, EventLines, Line, ending, newest, seen
from graphcore.backend.events import Event, decode_event
from graphcore.backend.runs import RunRecord, RunStatus
from graphq.console.state import Console

__all__ = ["BLOCK_S", "End", "follow", "settled", "wait_settled"]

BLOCK_S = 5.0
"""Longest one ``XREAD BLOCK`` waits before the record is read again (a run whose end wrote no event)."""
_COUNT = 500


def settled(record: RunRecord) -> bool:
    """Whether ``record``'s run ended or waits for input."""
    return record.status in ENDED


async def _newest_id(console: Console, record: RunRecord) -> str:
    """The id of the newest event of the run's stream ("0-0" without one)."""
    reply: Any = await console.aio.xrevrange(keys.run_events(record.thread_id, record.id), count=1)
    return str(reply[0][0].decode()) if reply else "0-0"


async def _read(console: Console, record: RunRecord, after: str, block_s: float | None) -> list[Event]:
    """Events of the run after ``after``, waiting up to ``block_s`` seconds for one (None: not at all)."""
    block = None if block_s is None else max(1, int(block_s * 1000))
    reply: Any = await console.aio.xread(
        {keys.run_events(record.thread_id, record.id): after}, count=_COUNT, block=block
    )
    return [decode_event(entry_id, fields) for _, entries in reply or [] for entry_id, fields in entries]


async def wait_settled(console: Console, run_id: str, seconds: float) -> tuple[RunRecord, bool]:
    """The run's record once it ended or paused, or after ``seconds``; with whether it has settled.

    Raises:
        RunNotFoundError: no such run.
    """
    record = await run_in_threadpool(console.client.get_run, run_id)
    after = await _newest_id(console, record)  # before the record: an event after it wakes the wait
    record = await run_in_threadpool(console.client.get_run, run_id)
    deadline = time.monotonic() + seconds
    while not settled(record):
        left = deadline - time.monotonic()
        if left <= 0:
            return record, False
        events = await _read(console, record, after, min(left, BLOCK_S))
        if events:
            after = events[-1].id
        record = await run_in_threadpool(console.client.get_run, run_id)
    return record, True


@dataclass(frozen=True)
class End:
    """The run ended or paused, every event up to that sent: its status and the run continuing it."""

    status: RunStatus
    continued_by_run_id: str | None

    def data(self) -> dict[str, Any]:
        return {"status": self.status.value, "continued_by_run_id": self.continued_by_run_id}


async def follow(console: Console, record: RunRecord, after: str) -> AsyncIterator[Line | End]:
    """The run's event lines after stream id ``after`` (as ``graphq runs watch -o json`` prints them),
    then :class:`End` once it ended or paused, as ``runs watch`` decides it: the stream's newest event
    reports the record's status and was sent, or (a run whose end left no event) the record says so one
    read later."""
    lines = EventLines(console.client, record)
    grace = False
    peek = settled(record)  # ended or paused already: what is left is read at once, not waited for
    while True:
        events = await _read(console, record, after, None if peek else BLOCK_S)
        for event in events:
            for line in await run_in_threadpool(lines.lines, event):
                yield line
            after = event.id
        if events:
            status = ending(events[-1])
            if status is not None and status != RunStatus.AWAITING_INPUT:
                yield await _end(console, record.id, status)
                return
            peek = status == RunStatus.AWAITING_INPUT  # paused: stop once nothing follows the pause
            continue
        peek = False
        current = await run_in_threadpool(console.client.get_run, record.id)
        if not settled(current):
            grace = False
            continue
        last = await run_in_threadpool(newest, console.client.kv, record)
        if last is not None and ending(last) == current.status and seen(last.id, after):
            yield End(current.status, current.continued_by_run_id)
            return
        if current.status != RunStatus.AWAITING_INPUT and grace:
            yield End(current.status, current.continued_by_run_id)
            return
        grace = current.status != RunStatus.AWAITING_INPUT


async def _end(console: Console, run_id: str, status: RunStatus) -> End:
    record = await run_in_threadpool(console.client.get_run, run_id)
    return End(status, record.continued_by_run_id)
