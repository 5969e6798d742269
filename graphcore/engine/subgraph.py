"""Subgraphs (G7): a compiled graph used as a node of another graph.

The subgraph runs inside its parent's task. It checkpoints into the parent's store and thread under the
namespace ``parent_ns|node:task_id`` (so parallel instances never share one), inherits the parent's
``configurable``, stops with the parent's cancel token, and pauses the parent task when one of its nodes
calls ``interrupt()``: the requests surface on the parent run, and answering them resumes the subgraph
where it stopped (it finds its own checkpoints again, because a re-run task keeps its id).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from graphcore.engine.channels import ReducerChannel
from graphcore.engine.executor import INTERRUPT_KEY, CompiledGraph
from graphcore.engine.interrupts import GraphInterrupt
from graphcore.engine.schema import StateSchema
from graphcore.types import Overwrite

__all__ = ["SubgraphNode"]


class SubgraphNode:
    """The node function of a subgraph: parent state in, the subgraph's changes to shared keys out.

    Args:
        graph: the compiled subgraph.
        parent: the parent graph's state schema.
    """

    def __init__(self, graph: CompiledGraph, parent: StateSchema) -> None:
        self.graph = graph
        self.parent = parent

    def __call__(self, state: Any) -> dict[str, Any]:
        """Run the subgraph on the keys it shares with the parent.

        Raises:
            GraphInterrupt: a node of the subgraph asked a human; the parent task pauses.
        """

        values = state.model_dump() if isinstance(state, BaseModel) else dict(state)
        shared = {k: v for k, v in values.items() if k in self.graph.schema.input_keys}
        final = self.graph.invoke(shared) or {}  # None: no output key has a value
        paused = final.pop(INTERRUPT_KEY, None)
        if paused:
            raise GraphInterrupt(*paused)
        return {k: self._delta(k, shared.get(k), v) for k, v in final.items() if self._changed(k, shared, v)}

    def _changed(self, key: str, before: dict[str, Any], after: Any) -> bool:
        return key in self.parent.channels and (key not in before or before[key] != after)

    def _delta(self, key: str, before: Any, after: Any) -> Any:
        """What to write to the parent's channel: only new items for a list its reducer extends, the value
        itself otherwise (``Overwrite`` for a reducer channel whose value changed in other ways)."""
        if not isinstance(self.parent.channels[key], ReducerChannel):
            return after
        if isinstance(before, list) and isinstance(after, list) and after[: len(before)] == before:
            return after[len(before) :]
        return Overwrite(after) if before is not None else after
