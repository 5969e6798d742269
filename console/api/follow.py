"""Following a run without holding a thread: its event stream read with the console's async Redis
connection (``XREAD BLOCK``), its record read again when events arrive.

A run has *settled* when it ended or paused (waits for input: an open request or a static breakpoint), the
statuses ``graphq runs watch`` stops at (:data:`graphcore.backend.event_lines.ENDED`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, replace
from typing import Any

from fastapi.concurrency import run_in_threadpool

from graphcore import keys
from graphcore.backend.event_lines import ENDED, EventLines, Line, ending, newest, seen, stream_id
from graphcore.backend.events import Event, decode_event
from graphcore.backend.runs import RunRecord, RunStatus
from graphq.console.state import Console

__all__ = ["BLOCK_S", "End", "Stopping", "follow", "settled", "wait_settled"]

BLOCK_S = 5.0
"""Longest one ``XREAD BLOCK`` waits before the record is read again (a run whose end wrote no event)."""
_COUNT = 500


class Stopping(Exception):
    """The server is stopping (:meth:`Console.stop`): a wait ended before its time."""


async def _unless_stopping(console: Console, waiting: Awaitable[Any]) -> Any:
    """``waiting``'s result, or (it cancelled) :class:`Stopping` as soon as the server is stopping."""
    work = asyncio.ensure_future(waiting)
    stop = asyncio.ensure_future(console.stopping())
    try:
        await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (work, stop):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    if not work.done() or work.cancelled():
        raise Stopping
    return work.result()


def settled(record: RunRecord) -> bool:
    """Whether ``record``'s run ended or waits for input."""
    return record.status in ENDED


async def _newest_id(console: Console, record: RunRecord) -> str:
    """The id of the newest event of the run's stream ("0-0" without one)."""
    reply: Any = await console.aio.xrevrange(keys.run_events(record.thread_id, record.id), count=1)
    return str(reply[0][0].decode()) if reply else "0-0"


async def _read(console: Console, record: RunRecord, after: str, block_s: float | None) -> list[Event]:
    """Events of the run after ``after``, waiting up to ``block_s`` seconds for one (None: not at all).

    Raises:
        Stopping: the server is stopping (the read cancelled).
    """
    block = None if block_s is None else max(1, int(block_s * 1000))
    read = console.aio.xread({keys.run_events(record.thread_id, record.id): after}, count=_COUNT, block=block)
    reply: Any = await _unless_stopping(console, read)
    return [decode_event(entry_id, fields) for _, entries in reply or [] for entry_id, fields in entries]


async def wait_settled(console: Console, run_id: str, seconds: float) -> tuple[RunRecord, bool]:
    """The run's record once it ended or paused, or after ``seconds``, or at once when the server is
    stopping; with whether it has settled.

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
        try:
            events = await _read(console, record, after, min(left, BLOCK_S))
        except Stopping:
            return await run_in_threadpool(console.client.get_run, run_id), False
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
    """The run's event lines after ``after`` (as ``graphq runs watch -o json`` prints them, each with a
    message id of its own: ``<stream id>.<n>``, the n-th line of that stream entry from 0), then
    :class:`End` once it ended or paused, as ``runs watch`` decides it: the stream's newest event reports
    the record's status and was sent, or (a run whose end left no event) the record says so one read later.

    ``after`` is a stream id (after every line of that entry, as ``runs watch --after``) or a message id
    ``<stream id>.<n>`` (the entry's lines after its n-th, then the entries after it).

    Raises:
        Stopping: the server is stopping (after a whole line, never within one).
    """
    lines = EventLines(console.client, record)
    after, _, shown = after.partition(".")
    if shown:
        for event in await _entry(console, record, after):
            for line in (await _numbered(lines, event))[int(shown) + 1 :]:
                yield line
    async for item in _follow_entries(console, record, lines, after):
        yield item


async def _follow_entries(
    console: Console, record: RunRecord, lines: EventLines, after: str
) -> AsyncIterator[Line | End]:
    """:func:`follow` after stream id ``after``: the lines of every later entry, then :class:`End`."""
    grace = False
    peek = settled(record)  # ended or paused already: what is left is read at once, not waited for
    while True:
        events = await _read(console, record, after, None if peek else BLOCK_S)
        for event in events:
            for line in await _numbered(lines, event):
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


async def _numbered(lines: EventLines, event: Event) -> list[Line]:
    """The lines of ``event``, each with its message id ``<stream id>.<n>``."""
    shown = await run_in_threadpool(lines.lines, event)
    return [replace(line, id=f"{event.id}.{n}") for n, line in enumerate(shown)]


async def _entry(console: Console, record: RunRecord, entry_id: str) -> list[Event]:
    """The run's stream entry ``entry_id`` (none when trimmed meanwhile)."""
    ms, seq = stream_id(entry_id)
    exact = f"{ms}-{seq}"
    reply: Any = await console.aio.xrange(keys.run_events(record.thread_id, record.id), exact, exact)
    return [decode_event(entry, fields) for entry, fields in reply or []]


async def _end(console: Console, run_id: str, status: RunStatus) -> End:
    record = await run_in_threadpool(console.client.get_run, run_id)
    return End(status, record.continued_by_run_id)
