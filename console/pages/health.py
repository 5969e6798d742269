"""``/healthz``: the probe of the console's server (Kubernetes liveness and readiness)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from graphq.console.state import Console

__all__ = ["router"]

router = APIRouter()


@router.get("/healthz")
async def healthz(request: Request) -> Response:
    """200 ``{"redis": "ok"}`` when Redis answers a PING, else 503 with the error's text. Open without
    the token (it shows nothing of the data)."""
    kv = Console.of(request).kv
    try:
        await run_in_threadpool(kv.ping)
    except Exception as exc:  # any failure to reach Redis makes the server unready
        return JSONResponse({"redis": f"unreachable: {type(exc).__name__}"}, status_code=503)
    return JSONResponse({"redis": "ok"})
