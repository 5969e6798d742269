"""``/runs/{id}``: one run — its fields as ``graphq runs show`` gives them, its chain, its step timeline,
its events live, its error and result, every request it made (an open one with an answer form, an
answered one with its answer, when, and an answer-again form); cancel and cancel with interrupt until it
ends, resume when :meth:`Client.resume` would accept it; no action when the console is read-only.

The record part (``/runs/{id}/record``: status, actions, fields, error, result, requests, chain) reloads
itself on the htmx event ``run-changed``: run.js triggers it on the stream's status and end events, and a
successful action answers with ``HX-Trigger: run-changed``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from graphcore.backend.client import Client
from graphcore.backend.events import EVENTS_MAXLEN, read_events
from graphcore.backend.json_forms import to_json
from graphcore.backend.reaper import iso_ms
from graphcore.backend.run_fields import run_fields, schema_text, slot_deadline_ms
from graphcore.backend.runs import RunRecord
from graphq.console.pages.actions import Outcome, act, answer
from graphq.console.rendering import quote_id, templates
from graphq.console.state import Console
from graphq.console.timeline import timeline
from graphq.worker.pinned import unserved

__all__ = ["router"]

router = APIRouter()


@router.get("/runs/{run_id:path}/record")
async def run_record(request: Request, run_id: str) -> Response:
    """The run page's record part alone (``_run_record.html``), which the page reloads on ``run-changed``
    (before the page's route: a run id may hold ``/``)."""
    console = Console.of(request)
    context = await run_in_threadpool(_record_context, console, run_id)
    return templates.TemplateResponse(request, "_run_record.html", context)


@router.get("/runs/{run_id:path}")
async def run_page(request: Request, run_id: str) -> Response:
    console = Console.of(request)
    context = await run_in_threadpool(_run_context, console, run_id)
    return templates.TemplateResponse(request, "run.html", context)


def _run_context(console: Console, run_id: str) -> dict[str, Any]:
    context = _record_context(console, run_id)
    record: RunRecord = context["run"]
    events = list(read_events(console.client.kv, record.thread_id, record.id, count=EVENTS_MAXLEN + 200))
    return {
        **context,
        "steps": timeline(events),
        "at_ms": _at_ms,
        "shown_event": events[-1].id if events else "",
    }


def _record_context(console: Console, run_id: str) -> dict[str, Any]:
    """What ``_run_record.html`` shows: the run's record and fields, requests, chain, and which actions
    it offers (none when read-only; cancel until it ends; resume when :meth:`Client.resume_refusal` has no
    reason to refuse it)."""
    client = console.client
    record = client.get_run(run_id)
    fields = run_fields(
        record,
        client.thread_step(record),
        slot_deadline_ms(client.kv, record),
        unserved(client.kv, console.settings.queue, record),
    )
    return {
        "run": record,
        "fields": [(name, _text(value)) for name, value in fields],
        "chain": client.chain(run_id),
        "requests": client.run_requests(run_id),
        "read_only": console.guard.read_only,
        "resumable": client.resume_refusal(record) is None,
        "result": None if record.result is None else to_json(record.result),
        "schema_text": schema_text,
        "to_json": to_json,
    }


def _at_ms(ms: int | None) -> str:
    """A stream time (ms since the epoch) as the tables show times: ``2024-01-02 03:04:05.678``."""
    return "" if ms is None else iso_ms(ms)[:23].replace("T", " ")


def _text(value: Any) -> str:
    """A field's value as the page shows it: a string as it is, anything else as JSON (None: "")."""
    if value is None:
        return ""
    return value if isinstance(value, str) else to_json(value, indent=None)


@router.post("/runs/{run_id:path}/cancel")
async def cancel(request: Request, run_id: str, interrupt: Annotated[bool, Form()] = False) -> Response:
    """``graphq runs cancel RUN [--interrupt]``: its words."""
    return _changed(await act(request, _cancel, Console.of(request).client, run_id, interrupt))


def _cancel(client: Client, run_id: str, interrupt: bool) -> Outcome:
    return Outcome(client.cancel(run_id, interrupt=interrupt))


@router.post("/runs/{run_id:path}/resume")
async def resume(request: Request, run_id: str) -> Response:
    """``graphq runs resume RUN``: the run that goes on."""
    return _changed(await act(request, _resume, Console.of(request).client, run_id))


def _resume(client: Client, run_id: str) -> Outcome:
    new_id = client.resume(run_id)
    thread = client.get_run(new_id).thread_id
    if new_id == run_id:
        return Outcome(
            f"run {run_id} goes on past its breakpoint on thread {thread}",
            f"/runs/{quote_id(run_id)}",
            run_id,
        )
    return Outcome(
        f"run {new_id} continues run {run_id} on thread {thread}", f"/runs/{quote_id(new_id)}", new_id
    )


@router.post("/runs/{run_id:path}/answer")
async def answer_request(
    request: Request,
    run_id: str,
    request_id: Annotated[str, Form(alias="request")],
    value: Annotated[str, Form()] = "",
    again: Annotated[bool, Form()] = False,
) -> Response:
    """``graphq runs answer RUN --request ID --value JSON [--again]``: the requests answered, or the branch
    run a second answer starts."""
    return _changed(await act(request, answer, Console.of(request).client, run_id, request_id, value, again))


def _changed(reply: Response) -> Response:
    """``reply`` to an action on a run; when it succeeded, with ``HX-Trigger: run-changed``: the run page's
    record reloads (its status, fields and actions may have changed)."""
    if reply.status_code == 200:
        reply.headers["HX-Trigger"] = "run-changed"
    return reply
