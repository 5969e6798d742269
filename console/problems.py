"""Errors as ``application/problem+json`` (RFC 9457) on the API, as a page elsewhere.

The ``detail`` of a problem is the text the CLI prints for the same error (``graphq ... : error: <detail>``),
so a pipeline and an operator read the same words. The status follows the error's kind:

======================================  =====
error                                   status
======================================  =====
RunNotFoundError, CheckpointNotFound,   404
UnknownWorkflowError,
ScheduleNotFoundError
RunExistsError, ThreadActiveError,      409
NotAwaitingInputError, DisabledError,
TriggerSkippedError, ThreadBusyError
InputTooLargeError                      413
any other PermanentError (bad input)    422
request validation (FastAPI)            422
RedisUnavailableError, TransientError   503
======================================  =====
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import redis.exceptions as rex
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException

from graphcore.backend.threads import ThreadBusyError
from graphcore.backend.ttl import ThreadActiveError
from graphcore.engine.inputs import InputTooLargeError
from graphcore.engine.interrupts import NotAwaitingInputError
from graphcore.errors import (
    CheckpointNotFoundError,
    DisabledError,
    GraphqError,
    PermanentError,
    RunExistsError,
    RunNotFoundError,
    TransientError,
    UnknownWorkflowError,
)
from graphq.console.rendering import templates
from graphq.scheduler.schedules import ScheduleNotFoundError, TriggerSkippedError

__all__ = ["PROBLEM", "install_problem_handlers", "problem", "problem_of", "status_of"]

PROBLEM = "application/problem+json"

_STATUS: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], int], ...] = (
    ((RunNotFoundError, CheckpointNotFoundError, UnknownWorkflowError, ScheduleNotFoundError), 404),
    (
        (
            RunExistsError,
            ThreadActiveError,
            NotAwaitingInputError,
            DisabledError,
            TriggerSkippedError,
            ThreadBusyError,
        ),
        409,
    ),
    (InputTooLargeError, 413),
    (PermanentError, 422),
    ((TransientError, rex.ConnectionError, rex.TimeoutError), 503),
)


def status_of(exc: BaseException) -> int:
    """The HTTP status for a graphq or Redis error (the table above); 500 for anything else."""
    for kinds, status in _STATUS:
        if isinstance(exc, kinds):
            return status
    return 500


def problem(request: Request, status: int, detail: str, **extra: Any) -> Response:
    """A problem document for the API (``/api/...``); elsewhere an error page, or for an htmx request (a
    console action or a live part) the error line alone, swapped in where the answer goes.

    Args:
        status: the HTTP status.
        detail: the one-line explanation (the CLI's text for the same error).
        extra: more members of the problem document (e.g. ``errors`` for validation).
    """
    title = HTTPStatus(status).phrase
    if request.url.path.startswith("/api"):
        body = _document(status, detail, **extra)
        return JSONResponse(body, status_code=status, media_type=PROBLEM)
    template = "_error.html" if request.headers.get("hx-request") == "true" else "error.html"
    page = templates.TemplateResponse(
        request, template, {"status": status, "title": title, "detail": detail}, status_code=status
    )
    assert isinstance(page, HTMLResponse)
    return page


def problem_of(exc: BaseException) -> dict[str, Any]:
    """The problem document of a graphq or Redis error (its status from the table above, the CLI's text),
    for a place with no HTTP status of its own (an ``error`` message of an event stream)."""
    return _document(status_of(exc), _text(exc))


def _document(status: int, detail: str, **extra: Any) -> dict[str, Any]:
    """A problem document: ``type``, ``title`` (the status's phrase), ``status``, ``detail``, ``extra``."""
    return {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        **extra,
    }


def install_problem_handlers(app: FastAPI) -> None:
    """Turn graphq errors, Redis errors, HTTP errors and request validation errors into problems."""

    async def graphq_error(request: Request, exc: Exception) -> Response:
        return problem(request, status_of(exc), _text(exc))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        response = problem(request, exc.status_code, str(exc.detail))
        response.headers.update(exc.headers or {})
        return response

    async def invalid(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        errors = [_located(e) for e in exc.errors()]
        return problem(request, 422, "; ".join(errors), errors=errors)

    app.add_exception_handler(GraphqError, graphq_error)
    app.add_exception_handler(rex.ConnectionError, graphq_error)
    app.add_exception_handler(rex.TimeoutError, graphq_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid)


def _text(exc: BaseException) -> str:
    """The CLI's one line for ``exc`` (see graphq.cli.errors)."""
    if isinstance(exc, rex.ConnectionError | rex.TimeoutError):
        return f"lost the connection to Redis: {exc}"
    return str(exc)


def _located(error: Any) -> str:
    """``body.input.x: field required`` for one pydantic validation error (a JSON body that does not parse:
    ``body.12: JSON decode error: Expecting value``, at its character offset)."""
    where = ".".join(str(part) for part in error.get("loc", ()))
    why = (error.get("ctx") or {}).get("error") if error.get("type") == "json_invalid" else None
    return f"{where}: {error.get('msg', 'invalid')}" + (f": {why}" if why else "")
