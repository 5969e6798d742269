"""LangGraph's metadata of a task's run: what a node's ``config["metadata"]`` holds besides the run's own
metadata, what LangChain gives the chat models a node calls, and what ``stream_mode="messages"`` pairs
carry (in process and on the queue; :mod:`graphcore.engine.messages_stream`,
:mod:`graphq.worker.step.messages`).

The keys: ``langgraph_step`` (the step of the checkpoint the task makes: LangGraph's), ``langgraph_node``,
``langgraph_triggers`` (``("branch:to:<node>",)`` for a task of an edge, ``("__pregel_push",)`` for a
``Send``, ``("__start__",)`` for the input's ``__start__`` task), ``langgraph_path``
(``("__pregel_pull", node)``, or ``("__pregel_push", i, False)`` for the step's i-th ``Send``) and
``langgraph_checkpoint_ns`` (the task's namespace, ``node:task_id`` below its graph's, as the namespace of
a graph the task invokes).
"""

from __future__ import annotations

from typing import Any

from graphcore.checkpoints.model import Checkpoint, task_id
from graphcore.engine.checkpointer import task_ns
from graphcore.types import START

__all__ = ["PULL", "PUSH", "langgraph_metadata", "step_metadata", "task_paths"]

PULL = "__pregel_pull"
"""The first item of an edge-triggered task's ``langgraph_path``."""

PUSH = "__pregel_push"
"""The first item of a ``Send`` task's ``langgraph_path``, and its one trigger."""


def task_paths(cp: Checkpoint, only: range | None = None) -> list[tuple[Any, ...]]:
    """The ``langgraph_path`` of each task of the super-step after ``cp``, in task order; with ``only``, of
    the tasks at those positions (a range of step 1) only: a batch of a wide step does not build every
    task's path."""
    paths: list[tuple[Any, ...]] = []
    start = 0 if only is None else only.start
    sends = sum(1 for pending in cp.next_tasks[:start] if pending.send)  # a Send's path is its number
    for pending in cp.next_tasks[start : None if only is None else only.stop]:
        if pending.send:
            paths.append((PUSH, sends, False))
            sends += 1
        else:
            paths.append((PULL, pending.node))
    return paths


def langgraph_metadata(node: str, step: int, path: tuple[Any, ...], ns: str) -> dict[str, Any]:
    """The ``langgraph_*`` metadata of a task of ``node`` with LangGraph's step number ``step``, its
    ``path`` (:func:`task_paths`) and its namespace ``ns``."""
    triggers = (PUSH,) if path[0] == PUSH else (START,) if node == START else (f"branch:to:{node}",)
    return {
        "langgraph_step": step,
        "langgraph_node": node,
        "langgraph_triggers": triggers,
        "langgraph_path": path,
        "langgraph_checkpoint_ns": ns,
    }


def step_metadata(cp: Checkpoint, graph_ns: str) -> dict[str, dict[str, Any]]:
    """Task id → :func:`langgraph_metadata` of each task of the super-step after ``cp``, in a graph whose
    namespace is ``graph_ns`` (``""`` at the root)."""
    out = {}
    for index, (pending, path) in enumerate(zip(cp.next_tasks, task_paths(cp), strict=True)):
        tid = task_id(cp.id, index, pending.node)
        out[tid] = langgraph_metadata(pending.node, cp.step + 1, path, task_ns(graph_ns, pending.node, tid))
    return out
