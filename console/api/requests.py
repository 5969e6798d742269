"""``/api/requests``: the open human requests of every run, and answering one."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.exceptions import HTTPException

from graphcore.backend.client import MAX_LIMIT, Client
from graphcore.backend.json_forms import jsonable, request_json
from graphcore.engine.inputs import check_answer
from graphcore.engine.interrupts import NotAwaitingInputError
from graphcore.errors import ConfigError, PermanentError
from graphq.console.api.body import JsonRoute
from graphq.console.api.models import LIMIT, Answered, AnswerIn, OpenRequest
from graphq.console.problems import problem, status_of
from graphq.console.state import Console

__all__ = ["router"]

router = APIRouter(tags=["requests"], route_class=JsonRoute)


@router.get("/requests", summary="Open requests of every run, oldest first", response_model=list[OpenRequest])
def open_requests(request: Request, limit: Annotated[LIMIT, Query()] = 100) -> list[OpenRequest]:
    """The open requests of the runs waiting for input, oldest first: each as ``graphq runs requests RUN
    -o json`` lists it (id, value, node, task_id, index, created_at, deadline_ms, deadline,
    response_schema) with its run's id, thread, workflow and tenant.
    """
    pairs = Console.of(request).client.open_requests(limit)
    return [
        OpenRequest(
            **jsonable(request_json(asked)),
            run_id=run.id,
            thread_id=run.thread_id,
            workflow=run.workflow,
            tenant=run.tenant,
        )
        for run, asked in pairs
    ]


@router.post("/requests/{request_id}/answer", summary="Answer a request", response_model=Answered)
def answer(request: Request, request_id: str, body: AnswerIn) -> Any:
    """Answer the open request ``request_id``: ``graphq runs answer RUN --request ID --value JSON`` (with
    ``update`` and ``goto``, its ``--update`` and ``--goto``); a worker continues the run. Without
    ``run_id`` the run is found among the open requests.

    With ``"again": true`` (and ``run_id``), an answered request is answered again, as ``graphq runs
    answer RUN --request ID --again``: a new run branches off the thread where the request was made
    (``branch_run_id``).

    Errors: 404 no open request with that id, or no such run; 409 the run is not waiting for input; 422 an
    invalid answer, update or goto, or ``again`` without ``run_id`` (the CLI's texts).
    """
    client = Console.of(request).client
    try:
        check_answer(body.value)
    except PermanentError as exc:
        return problem(request, status_of(exc), f"value: {exc}")
    if body.again:
        if body.run_id is None:
            raise ConfigError("again: needs run_id (the run that made the request)")
        if body.update is not None or body.goto:
            raise ConfigError(
                "update and goto go with a first answer, not with again (a branch of the thread)"
            )
        branch = client.answer_again(body.run_id, request_id, body.value)
        return Answered(request_id=request_id, run_id=body.run_id, branch_run_id=branch)
    run_id = body.run_id or _run_asking(client, request_id)
    try:
        client.answer(run_id, body.value, request_id, update=body.update, goto=list(body.goto))
    except NotAwaitingInputError as exc:
        again = f'; answer one of its requests again, on a new branch, with "again": true: {exc.answered}'
        return problem(request, 409, exc.refusal + (again if exc.answered else ""))
    return Answered(request_id=request_id, run_id=run_id)


def _run_asking(client: Client, request_id: str) -> str:
    """The run whose open request ``request_id`` is.

    Raises:
        HTTPException: 404, no open request has that id.
    """
    for run, asked in client.open_requests(MAX_LIMIT):
        if asked.id == request_id:
            return run.id
    raise HTTPException(
        404,
        f"no open request with id {request_id!r} (GET /api/requests lists them; an answered one is answered "
        'again with "again": true and its run_id)',
    )
