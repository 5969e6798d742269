"""``/api/runs/{id}/events``: a run's events as server-sent events, live.

A MINIMAL version of the endpoint (the run page's live list needs it); the full one is built on the
branch ``s29-api``. Its contract:

- each event is one message: ``id: <Redis stream id>``, ``event: <mode>``, ``data: {"mode", "step",
  "data"}`` (JSON; ``data`` in the JSON form of :func:`graphcore.backend.json_forms.jsonable`);
- a browser's ``EventSource`` sends ``Last-Event-ID`` when it reconnects: the stream goes on after it;
- a last message ``event: end`` with data ``{"status": ...}`` once the run has ended or waits for input,
  after every event it wrote until then.

Waiting for new events holds no thread: the blocking reads go through an asyncio Redis connection.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aioredis
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from graphcore import keys
from graphcore.backend.json_forms import jsonable
from graphcore.backend.runs import TERMINAL, RunStatus
from graphcore.checkpoints import serde
from graphq.console.state import Console

__all__ = ["router", "sse"]

router = APIRouter(tags=["runs"])

_BLOCK_MS = 2_000
"""How long one read waits for new events before the run's status is looked at again."""
_STOPPED = frozenset(s.value for s in (*TERMINAL, RunStatus.AWAITING_INPUT))


@router.get(
    "/runs/{run_id}/events",
    summary="A run's events, live (server-sent events)",
    response_class=StreamingResponse,
)
async def run_events(request: Request, run_id: str) -> StreamingResponse:
    """The run's events so far, then new ones as they are written, as ``text/event-stream``; the stream
    ends with ``event: end`` once the run has ended or waits for input. ``Last-Event-ID`` (a stream id):
    only the events after it.

    Errors: 404 when no run has that id (problem+json).
    """
    record = await run_in_threadpool(Console.of(request).client.get_run, run_id)
    after = request.headers.get("last-event-id") or "0-0"
    stream = _events(request, record.thread_id, record.id, after)
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(stream, media_type="text/event-stream", headers=headers)


def sse(event: str, data: Any, event_id: str | None = None) -> str:
    """One server-sent event message: ``id`` (when given), ``event`` and ``data`` (JSON on one line)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _events(request: Request, thread_id: str, run_id: str, after: str) -> AsyncIterator[str]:
    """The messages of the run's stream after ``after``, until the run stops or the browser goes."""
    kv: Any = _async_twin(Console.of(request).kv)  # replies: bytes
    stream, run_key = keys.run_events(thread_id, run_id), keys.run(thread_id, run_id)
    try:
        while not await request.is_disconnected():
            status = (await kv.hget(run_key, "status") or b"").decode()  # before the read: none is missed
            reply = await kv.xread(
                {stream: after}, count=200, block=None if status in _STOPPED else _BLOCK_MS
            )
            entries = [entry for _, found in reply or [] for entry in found]
            for entry_id, fields in entries:
                after = entry_id.decode()
                yield sse(fields[b"mode"].decode(), _message(fields), after)
            if not entries and status in _STOPPED:
                yield sse("end", {"status": status})
                return
    finally:
        await kv.aclose()


def _message(fields: dict[bytes, bytes]) -> dict[str, Any]:
    return {
        "mode": fields[b"mode"].decode(),
        "step": int(fields[b"step"]),
        "data": jsonable(serde.loads(fields[b"data"])),
    }


def _async_twin(kv: Any) -> aioredis.Redis:
    """An asyncio connection to the Redis ``kv`` (a ``redis.Redis``) is connected to."""
    given = kv.connection_pool.connection_kwargs
    kept = ("host", "port", "db", "username", "password", "socket_connect_timeout")
    options = {k: given[k] for k in kept if k in given}
    if "path" in given:
        return aioredis.Redis(
            unix_socket_path=given["path"], db=given.get("db", 0), password=given.get("password")
        )
    ssl = kv.connection_pool.connection_class.__name__ == "SSLConnection"
    return aioredis.Redis(**options, ssl=ssl)
