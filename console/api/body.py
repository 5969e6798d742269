"""The JSON bodies of the API's POSTs, read before FastAPI parses them: :class:`JsonRoute`.

- **Type.** A POST with a body must be ``Content-Type: application/json`` (415 otherwise).
- **Size.** A body over :func:`body_limit` bytes is refused (413): from ``Content-Length`` before anything is
  read, and while it streams without one, so a large body never sits in the server's memory.
- **Strict JSON.** ``NaN``, ``Infinity`` and numbers beyond a float's range are refused (422), as the CLI's
  :func:`~graphcore.backend.json_forms.from_json` refuses them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute

from graphcore.backend.json_forms import from_json
from graphcore.engine.inputs import MAX_NESTING
from graphcore.settings import Settings
from graphq.console.api.models import MAX_BATCH
from graphq.console.security import is_json
from graphq.console.state import Console

__all__ = ["BATCH_BODY_CAP", "BODY_SLACK", "JsonRoute", "body_limit"]

BODY_SLACK = 64 * 1024
"""Bytes a body may carry besides its inputs (ids, config, options)."""
BATCH_BODY_CAP = 64 * 1024 * 1024
"""Most bytes one ``POST /api/runs`` body may have, whatever the batch."""
_WRAPPING = 3
"""Levels a body wraps a value in (``{"runs": [{"input": ...}]}``), above the client's nesting limit."""


def body_limit(settings: Settings, batch: bool) -> int:
    """The largest body a POST may send, bytes: twice ``GRAPHQ_MAX_INPUT_BYTES`` (JSON text is larger than
    the serialized value it checks) plus :data:`BODY_SLACK`; for ``POST /api/runs`` (a batch) that times
    :data:`~graphq.console.api.models.MAX_BATCH`, at most :data:`BATCH_BODY_CAP`."""
    one = 2 * settings.max_input_bytes + BODY_SLACK
    return min(one * MAX_BATCH, BATCH_BODY_CAP) if batch else one


class _JsonRequest(Request):
    """A request whose body is read up to ``limit`` bytes and parsed strictly."""

    limit: int = 0

    async def body(self) -> bytes:
        if not hasattr(self, "_body"):
            declared = self.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.limit:
                raise _too_large(self.limit)
            chunks: list[bytes] = []
            size = 0
            async for chunk in self.stream():
                size += len(chunk)
                if size > self.limit:
                    raise _too_large(self.limit)
                chunks.append(chunk)
            self._body = b"".join(chunks)
        return self._body

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            try:
                self._json = from_json((await self.body()).decode(), MAX_NESTING + _WRAPPING)
            except json.JSONDecodeError:
                raise  # FastAPI reports where: body.13: JSON decode error: ...
            except ValueError as exc:
                raise HTTPException(422, f"body: {exc}") from None
        return self._json


def _too_large(limit: int) -> HTTPException:
    return HTTPException(
        413, f"the request body is larger than {limit} bytes (the limit follows GRAPHQ_MAX_INPUT_BYTES)"
    )


class JsonRoute(APIRoute):
    """An API route whose POST body must be JSON, at most :func:`body_limit` bytes, without NaN or Infinity.

    Raises (as problems): 415 a body of another content type; 413 a body too large; 422 NaN or Infinity.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        batch = self.name == "enqueue_runs"  # POST /api/runs (routes are named after their functions)

        async def checked(request: Request) -> Response:
            if request.method != "POST":
                return await handler(request)
            strict = _JsonRequest(request.scope, request.receive)
            strict.limit = body_limit(Console.of(request).settings, batch)
            if not is_json(request.headers) and await strict.body():
                raise HTTPException(415, "Content-Type must be application/json")
            return await handler(strict)

        return checked
