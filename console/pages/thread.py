"""``/threads/{id}``: a thread's checkpoint history as a tree (each checkpoint under its parent: a fork or a
second answer is a second child), the state at any checkpoint, the difference between two, and a fork
from a checkpoint with an edited state (:meth:`graphcore.backend.client.Client.update_state`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from graphcore.backend.client import Client
from graphcore.backend.json_forms import jsonable, to_json
from graphcore.checkpoints.model import Checkpoint
from graphcore.errors import InvalidUpdateError
from graphq.console.pages.actions import ActionError, Outcome, act, json_field
from graphq.console.rendering import quote_id, templates
from graphq.console.state import Console

__all__ = ["Branch", "Change", "diff", "router", "tree"]

router = APIRouter()

_SHOWN = 1_000
"""Most checkpoints the page draws (the newest)."""


@dataclass
class Branch:
    """A line of checkpoints, oldest first (each the only one made on the one before), and the branches
    that start on its last: two or more where the thread forked (a fork, a second answer)."""

    checkpoints: list[Checkpoint]
    branches: list[Branch] = field(default_factory=list)


@dataclass(frozen=True)
class Change:
    """One key of a state that differs between two checkpoints: ``added``, ``removed`` or ``changed``; the
    values as JSON text ("" where the key is absent)."""

    key: str
    kind: str
    before: str
    after: str


def tree(history: list[Checkpoint]) -> list[Branch]:
    """The checkpoints as branches, oldest first: each checkpoint after its parent (one whose parent is not
    in ``history`` starts a branch of its own)."""
    ordered = sorted(history, key=lambda cp: cp.id)  # ids grow with time
    known = {cp.id for cp in ordered}
    children: dict[str | None, list[Checkpoint]] = {}
    for cp in ordered:
        children.setdefault(cp.parent_id if cp.parent_id in known else None, []).append(cp)

    def line(first: Checkpoint) -> Branch:
        found = [first]
        while len(children.get(found[-1].id, [])) == 1:
            found.append(children[found[-1].id][0])
        return Branch(found, [line(cp) for cp in children.get(found[-1].id, [])])

    return [line(cp) for cp in children.get(None, [])]


def diff(before: Any, after: Any) -> list[Change]:
    """The keys that differ between two states (dicts of channels), in key order; a state that is not a
    dict (a root-channel state) is the one key ``(value)``."""
    old = jsonable(before) if isinstance(before, dict) else {"(value)": jsonable(before)}
    new = jsonable(after) if isinstance(after, dict) else {"(value)": jsonable(after)}
    changes = []
    for key in sorted(set(old) | set(new)):
        if key not in new:
            changes.append(Change(key, "removed", to_json(old[key]), ""))
        elif key not in old:
            changes.append(Change(key, "added", "", to_json(new[key])))
        elif old[key] != new[key]:
            changes.append(Change(key, "changed", to_json(old[key]), to_json(new[key])))
    return changes


@router.get("/threads/{thread_id:path}")
async def thread_page(
    request: Request,
    thread_id: str,
    checkpoint: str | None = None,
    a: str | None = None,
    b: str | None = None,
) -> Response:
    console = Console.of(request)
    context = await run_in_threadpool(_thread_context, console, thread_id, checkpoint, a or None, b or None)
    return templates.TemplateResponse(request, "thread.html", context)


def _thread_context(
    console: Console, thread_id: str, checkpoint: str | None, a: str | None, b: str | None
) -> dict[str, Any]:
    client = console.client
    selected = client.get_state(thread_id, checkpoint or None)  # 404 without a checkpoint
    history = client.get_history(thread_id, _SHOWN)
    runs = client.thread_runs(thread_id)
    changes = None
    if a and b:
        before, after = client.get_state(thread_id, a), client.get_state(thread_id, b)
        changes = diff(client.shown_values(thread_id, before), client.shown_values(thread_id, after))
    return {
        "thread_id": thread_id,
        "branches": tree(history),
        "count": len(history),
        "head": history[0].id if history else None,
        "selected": selected,
        "state": to_json(client.shown_values(thread_id, selected)),
        "next_nodes": [t.node for t in selected.next_tasks],
        "workflow": runs[-1].workflow if runs else None,
        "runs": runs,
        "a": a,
        "b": b,
        "changes": changes,
        "shown": _SHOWN,
        "read_only": console.guard.read_only,
    }


@router.post("/threads/{thread_id:path}/fork")
async def fork(
    request: Request,
    thread_id: str,
    checkpoint: Annotated[str, Form()],
    values: Annotated[str, Form()] = "",
    as_node: Annotated[str, Form()] = "",
) -> Response:
    """A new checkpoint on ``checkpoint`` with ``values`` (JSON) as if ``as_node`` (empty: the rule of
    :meth:`Client.update_state`) had returned them: ``update_state(..., checkpoint_id=checkpoint)``."""
    client = Console.of(request).client
    return await act(request, _fork, client, thread_id, checkpoint, values, as_node or None)


def _fork(client: Client, thread_id: str, checkpoint: str, values_text: str, as_node: str | None) -> Outcome:
    values = json_field("values", values_text)
    runs = client.thread_runs(thread_id)
    if not runs:
        raise ActionError(f"thread {thread_id!r} has no run to say its workflow; nothing written")
    workflow = runs[-1].workflow
    if not isinstance(values, dict) and not client.registry.get(workflow).schema.root:
        raise ActionError(f"state update: must be a JSON object (key: value), got {_json_kind(values)}")
    if as_node is not None:
        cp = client.update_state(workflow, thread_id, values, as_node, checkpoint_id=checkpoint)
    else:
        writer = client.update_writer(workflow, thread_id, checkpoint)
        try:
            cp = client.update_state(workflow, thread_id, values, writer, checkpoint_id=checkpoint)
        except InvalidUpdateError as exc:
            raise ActionError(f"as node {writer!r} (the node that wrote last): {exc}") from None
    link = f"/threads/{quote_id(thread_id)}?checkpoint={cp.id}"
    return Outcome(f"checkpoint {cp.id} forks checkpoint {checkpoint} on thread {thread_id}", link, cp.id)


def _json_kind(value: Any) -> str:
    """What a JSON value is, in words: ``a list``, ``a string``, ``a number``, ``a boolean``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a list" if isinstance(value, list) else "a string"
