"""Static breakpoints on the queue (``compile(interrupt_before=..., interrupt_after=...)``).

A step job checks the breakpoints on the checkpoint its step starts from, before running any task
(:meth:`graphcore.engine.breakpoints.Breakpoints.stop`: an ``interrupt_after`` stop is seen there too, on
the nodes the previous step ran). A stop pauses the run as a node's ``interrupt()`` does — AwaitingInput,
its slot and lease given back, the checkpoint kept — with no request to answer: the run hash's
``breakpoint`` field says where it stopped, and the ``interrupt`` event carries it. ``Client.resume(run)``
(``graphq runs resume RUN``) lets the same run go on: it marks the stop ``continued`` and enqueues the step
again, which then passes that breakpoint.

A graph a task runs (a subgraph node, ``inner.invoke(...)``) that stops at one of its own breakpoints stops
the step the same way (:mod:`graphcore.engine.breakpoints`): the run hash's ``breakpoint`` names that
graph's nodes, the task's result is not kept, and after ``resume`` the task runs again and its graph goes on
past the breakpoint.

The first step of a run without input (a run that continues its thread: ``resume`` of an ended run, a second
answer's branch) passes the breakpoints as well, as ``invoke(None, config)`` does in process; so does a step
with pending writes (it started before: an answer to one of its nodes' requests goes on into it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from graphcore.backend.runs import RunRecord
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.breakpoints import Stop
from graphcore.engine.compiled import GraphSpec
from graphcore.types import TaskWrites

__all__ = ["stop_at", "stopped"]


def stop_at(
    graph: GraphSpec, run: RunRecord, cp: Checkpoint, finished: Mapping[str, TaskWrites]
) -> Stop | None:
    """Where the step after ``cp`` stops at a breakpoint of ``graph``, or None when it runs.

    ``finished``: the step's pending writes (a step that has some started before: it passes).
    """
    if not graph.breakpoints or finished:
        return None
    mark = run.breakpoint or {}
    continued = bool(mark.get("continued")) and mark.get("checkpoint_id") == cp.id
    return graph.breakpoints.stop(cp, continued or (run.input is None and run.step == 0))


def stopped(stop: Stop | None, cp: Checkpoint) -> tuple[dict[str, Any], dict[str, str]]:
    """The ``interrupt`` event's extra data and the run hash fields of a pause at ``stop`` (none for a
    pause without one)."""
    if stop is None:
        return {}, {}
    where = {"when": stop.when, "nodes": list(stop.nodes)}
    return {"breakpoint": where}, {
        "breakpoint": json.dumps({**where, "checkpoint_id": cp.id, "continued": False})
    }
