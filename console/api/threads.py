"""``/api/threads/{id}``: a thread's state and its checkpoint history, as ``graphq state`` shows them."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from graphcore import keys
from graphcore.backend.json_forms import (
    history_json,
    jsonable,
    state_json,
    thread_checkpoint,
    thread_history,
)
from graphq.console.api.models import LIMIT
from graphq.console.state import Console

__all__ = ["router"]

router = APIRouter(tags=["threads"])


@router.get("/threads/{thread_id:path}/state", summary="A thread's state at a checkpoint")
def state(
    request: Request,
    thread_id: str,
    checkpoint_id: Annotated[str | None, Query(description="This checkpoint, not the newest.")] = None,
) -> dict[str, Any]:
    """``graphq state THREAD -o json``: the newest checkpoint (or ``checkpoint_id``) with its ``values``.

    Errors: 404 no such checkpoint (the thread has none); 422 a malformed thread id.
    """
    client = Console.of(request).client
    keys.validate_id("thread id", thread_id)
    data: dict[str, Any] = jsonable(
        state_json(client, thread_id, thread_checkpoint(client, thread_id, checkpoint_id))
    )
    return data


@router.get("/threads/{thread_id:path}/history", summary="A thread's checkpoints, newest first")
def history(
    request: Request, thread_id: str, limit: Annotated[LIMIT | None, Query()] = None
) -> list[dict[str, Any]]:
    """``graphq state THREAD --history -o json``: the checkpoints, newest first, each with its
    ``parent_id`` and ``branch`` (main, b1, ...), at most ``limit``.

    Errors: 404 the thread has no checkpoints; 422 a malformed thread id.
    """
    client = Console.of(request).client
    keys.validate_id("thread id", thread_id)
    data: list[dict[str, Any]] = jsonable(history_json(thread_history(client, thread_id), limit))
    return data
