"""``/api/runs``: enqueue, list, read (with a long-poll), cancel and resume runs; their events (SSE).

Plain ``def`` routes run in the server's thread pool (short Redis calls); the ones that wait (``?wait=``,
the event stream) are ``async`` and wait on the console's async Redis connection, holding no thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, ConfigDict, Field
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from graphcore import keys
from graphcore.backend.event_lines import event_id_problem
from graphcore.backend.json_forms import jsonable, listed_json, shown_json
from graphcore.backend.runs import RunFilter, RunRecord, RunStatus
from graphcore.errors import ConfigError, TransientError
from graphq.console.api.body import JsonRoute
from graphq.console.api.enqueue import FieldError, enqueue
from graphq.console.api.follow import End, Stopping, follow, wait_settled
from graphq.console.api.models import (
    LIMIT,
    Canceled,
    CancelIn,
    Enqueued,
    EnqueueIn,
    Resumed,
    ResumeIn,
    ShownRun,
)
from graphq.console.problems import problem, problem_of, status_of
from graphq.console.state import Console
from graphq.scheduler.schedules import ScheduleStore
from graphq.worker.pinned import unserved

__all__ = ["MAX_WAIT_S", "WAIT_HEADER", "router"]

router = APIRouter(tags=["runs"], route_class=JsonRoute)

MAX_WAIT_S = 300
"""Longest ``?wait=`` of ``GET /api/runs/{id}``, seconds."""
WAIT_HEADER = "Graphq-Wait"
"""Says how a ``?wait=`` ended: ``ended`` (completed, failed, canceled), ``paused`` (waits for input) or
``timeout`` (still queued or running; also when the server stops during the wait)."""
_RECORD = dict[str, Any]


class RunsQuery(BaseModel):
    """The filters of ``graphq runs list``."""

    model_config = ConfigDict(extra="forbid")
    status: RunStatus | None = None
    workflow: str | None = None
    tenant: str | None = None
    schedule: str | None = Field(default=None, description="Runs the schedule of that name started.")
    limit: LIMIT = 50


@router.get("/runs", summary="List runs, newest first")
def list_runs(request: Request, query: Annotated[RunsQuery, Query()]) -> list[_RECORD]:
    """The newest runs that match every filter given: ``graphq runs list -o json`` (records without
    ``result``).

    Errors: 422 for a malformed tenant or an unknown schedule.
    """
    client = Console.of(request).client
    if query.tenant is not None:
        _checked_id("tenant", query.tenant)
    since = None if query.schedule is None else ScheduleStore(client.kv).created_at(query.schedule)
    where = RunFilter(query.tenant, query.status, query.workflow, query.schedule, since)
    records = client.list_runs(query.limit, None if where == RunFilter() else where)
    return [jsonable(listed_json(r)) for r in records]


@router.post(
    "/runs",
    summary="Enqueue a run or a batch",
    status_code=201,
    response_model=Enqueued,
    responses={200: {"model": Enqueued, "description": "A repeat of an Idempotency-Key: the same runs."}},
)
def enqueue_runs(
    request: Request,
    response: Response,
    body: Annotated[EnqueueIn, Body()],
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> Any:
    """Enqueue one run (``{"workflow": ..., "input": ...}``) or a batch (``{"runs": [...]}``), all or
    nothing: every run is checked as ``Client.enqueue_many`` checks it before any is enqueued.

    With header ``Idempotency-Key`` a repeat with the same body answers the same run ids (200) without
    enqueueing again; the same key with another body is refused (422). Keys are kept 24 h.

    Errors: 404 a workflow not loaded in this server; 422 an invalid run (the detail names the field,
    ``runs.2.input: ...`` in a batch); 409 a run id taken, a busy thread with ``multitask: reject``, or
    graphq disabled.
    """
    console = Console.of(request)
    try:
        outcome = enqueue(console, body, idempotency_key)
    except FieldError as exc:
        return problem(request, status_of(exc.error), str(exc))
    if not outcome.created:
        response.status_code = 200
    return Enqueued(run_ids=outcome.run_ids)


@router.post("/runs/{run_id:path}/cancel", summary="Cancel a run", response_model=Canceled)
def cancel_run(request: Request, run_id: str, body: Annotated[CancelIn | None, Body()] = None) -> Canceled:
    """Cancel the run: ``graphq runs cancel RUN [--interrupt]``. A queued or paused run ends canceled at
    once; a running one stops before its next super-step. A run that had ended is left as it is
    (``changed`` false; the message says why).

    Errors: 404 when no run has that id.
    """
    interrupt = body.interrupt if body is not None else False
    reply = Console.of(request).client.try_cancel(run_id, interrupt)
    return Canceled(message=reply.message, changed=reply.changed)


@router.post("/runs/{run_id:path}/resume", summary="Continue an ended or stopped run", response_model=Resumed)
def resume_run(request: Request, run_id: str, body: Annotated[ResumeIn | None, Body()] = None) -> Resumed:
    """``graphq runs resume RUN``: an ended run's thread goes on in a new run (``continued_from_run_id``
    names RUN), a run stopped at a static breakpoint goes on itself past it (its own id).

    Errors: 404 unknown run; 422 refused (still queued or running, awaiting an answer, nothing left to run,
    an invalid update or goto), with the CLI's text.
    """
    given = body or ResumeIn()
    client = Console.of(request).client
    new_id = client.resume(run_id, update=given.update, goto=list(given.goto))
    return Resumed(run_id=new_id, continued_from_run_id=client.get_run(new_id).continued_from_run_id)


async def _followed(
    request: Request,
    run_id: str,
    after: Annotated[
        str | None,
        Query(
            description="Start after this message id (`<stream id>.<n>`) or stream id (`runs watch --after`)."
        ),
    ] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> tuple[RunRecord, str]:
    """The run and the event id to start after, checked before the stream starts (errors are problems)."""
    start = _event_id(last_event_id, "Last-Event-ID") or _event_id(after, "after") or "0-0"
    record = await run_in_threadpool(Console.of(request).client.get_run, run_id)
    return record, start


@router.get(
    "/runs/{run_id:path}/events",
    summary="The run's events (server-sent events)",
    response_class=EventSourceResponse,
    responses={200: {"description": "One SSE message per event line; `end` last."}},
)
async def run_events(
    request: Request, followed: Annotated[tuple[RunRecord, str], Depends(_followed)]
) -> AsyncIterator[ServerSentEvent]:
    """The run's events as ``graphq runs watch RUN -o json`` prints them, then new ones live: each message
    ``id: <stream id>.<n>`` (the n-th line, from 0, of that stored event: ids are unique),
    ``event: <mode>``, ``data: {"mode", "step", "data"}``. It resumes exactly after the ``Last-Event-ID``
    header (a reconnecting EventSource sends it) or ``?after=``: after a message id, the rest of its
    stored event's lines then the later events; after a plain stream id, the events after it. When the run
    has ended or paused, a last ``event: end`` with ``{"status", "continued_by_run_id"}``. A comment
    (``: ping``) every 15 s keeps idle connections open.

    Errors: 404 unknown run; 422 a malformed event id. Redis lost once the stream has started (after the
    retries): a last ``event: error`` with the problem document (503, the CLI's text), then the stream
    closes (resume elsewhere with ``Last-Event-ID``). When the server stops, the stream ends after a whole
    message, without ``end``.
    """
    record, start = followed
    try:
        async for item in follow(Console.of(request), record, start):
            if isinstance(item, End):
                yield ServerSentEvent(event="end", data=item.data())
                return
            data = jsonable({"mode": item.mode, "step": item.step, "data": item.data})
            yield ServerSentEvent(id=item.id, event=item.mode, data=data)
    except Stopping:  # the server stops: end cleanly, no `end` (the client resumes elsewhere)
        return
    except (TransientError, RedisConnectionError, RedisTimeoutError) as exc:
        yield ServerSentEvent(event="error", data=problem_of(exc))


# after /runs/{run_id}/events: a GET of /runs/a/b/events is that run's events, not run "a/b/events"
@router.get(
    "/runs/{run_id:path}",
    summary="One run's record, waiting for it to end or pause",
    response_model=None,
    responses={
        200: {
            "model": ShownRun,
            "description": "The run, as `graphq runs show RUN -o json` prints it.",
            "headers": {
                WAIT_HEADER: {
                    "description": "With ?wait=: how the wait ended (the run ended, paused for input, or "
                    "is still queued or running).",
                    "schema": {"type": "string", "enum": ["ended", "paused", "timeout"]},
                }
            },
        }
    },
)
async def get_run(
    request: Request,
    response: Response,
    run_id: str,
    wait: Annotated[
        float | None,
        Query(gt=0, le=MAX_WAIT_S, description="Wait up to this many seconds for the run to end or pause."),
    ] = None,
) -> _RECORD:
    """The run as ``graphq runs show RUN -o json`` prints it: its record with ``thread_step``,
    ``waiting_for_slot_until``, ``waiting_for_version``, ``all_requests`` and, when it waits for input,
    ``requests`` (:func:`~graphcore.backend.json_forms.shown_json`).

    With ``?wait=S`` (0 < S ≤ 300) it answers when the run has ended or waits for input, or after S
    seconds with the record as it is; header ``Graphq-Wait`` says which: ``ended``, ``paused`` or
    ``timeout``. When the server stops, a wait answers at once, as a ``timeout``.

    Errors: 404 when no run has that id; 422 for a wait out of range.
    """
    console = Console.of(request)
    if wait is None:
        record = await run_in_threadpool(console.client.get_run, run_id)
    else:
        record, done = await wait_settled(console, run_id, wait)
        outcome = (
            "timeout" if not done else "paused" if record.status == RunStatus.AWAITING_INPUT else "ended"
        )
        response.headers[WAIT_HEADER] = outcome
    data: _RECORD = jsonable(await run_in_threadpool(_shown, console, record))
    return data


def _shown(console: Console, record: RunRecord) -> _RECORD:
    served = unserved(console.client.kv, console.settings.queue, record)
    return shown_json(console.client, record, served)


def _event_id(value: str | None, where: str) -> str | None:
    """``value`` when it is a stream id or a message id (``<stream id>.<n>``), None when not given.

    Raises:
        ConfigError: it is neither (:func:`~graphcore.backend.event_lines.event_id_problem`).
    """
    problem = None if value is None else _message_id_problem(value)
    if problem is not None:
        raise ConfigError(f"{where}: {problem}")
    return value


def _message_id_problem(text: str) -> str | None:
    """Why ``text`` is not an id to resume after (``MS-SEQ`` or ``MS-SEQ.N``), or None."""
    entry, dot, line = text.partition(".")
    if dot and not (line.isascii() and line.isdigit()):
        return f"{text!r} is not an event id: after '.' comes the line's number (1712345678901-0.1)"
    return event_id_problem(entry)


def _checked_id(where: str, value: str) -> None:
    try:
        keys.validate_id(where, value)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
