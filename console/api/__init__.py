"""The HTTP API under ``/api``: JSON in and out, errors as problem+json (:mod:`graphq.console.problems`).

:func:`document_api` completes the OpenAPI document FastAPI makes: the
:class:`~graphq.console.api.models.Problem` schema every error status refers to (:data:`ERRORS`, instead
of FastAPI's own 422 schema) and the bearer token's security scheme (the guard,
:mod:`graphq.console.security`, enforces it; FastAPI does not).
"""

from typing import Any

from fastapi import APIRouter

from graphq.console.api import requests, runs, threads
from graphq.console.api.models import Problem
from graphq.console.problems import PROBLEM

__all__ = ["ERRORS", "document_api", "router"]

_WHEN = {
    401: "No token, or a wrong one (a server with GRAPHQ_UI_TOKEN).",
    403: "Read-only, or a POST without a bearer token that is not JSON.",
    404: "No such run, checkpoint, open request, or workflow loaded in the server.",
    409: "A run id taken, a busy thread with multitask reject, a run not waiting for an answer.",
    413: "A body over the limit GRAPHQ_MAX_INPUT_BYTES sets.",
    415: "A body that is not Content-Type: application/json.",
    422: "Bad input: a malformed body or query, an unknown field, an invalid run, answer or update.",
    503: "Redis unreachable.",
}
ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"description": when, "content": {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}}}
    for status, when in _WHEN.items()
}
"""The error responses of every API operation, all ``application/problem+json``."""

router = APIRouter(prefix="/api", responses=ERRORS)
router.include_router(runs.router)
router.include_router(requests.router)
router.include_router(threads.router)


def document_api(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (FastAPI's OpenAPI document of the app) with the Problem schema and the bearer scheme, and
    without FastAPI's validation error schemas, which no answer uses."""
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    schemas["Problem"] = Problem.model_json_schema()
    doc["components"]["securitySchemes"] = {
        "bearer": {
            "type": "http",
            "scheme": "bearer",
            "description": "The server's GRAPHQ_UI_TOKEN, when it has one; without one the server answers "
            "loopback host names only, unauthenticated.",
        }
    }
    doc["security"] = [{"bearer": []}, {}]
    return doc
