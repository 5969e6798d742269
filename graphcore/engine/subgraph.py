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

from graphcore.engine.executor import INTERRUPT_KEY, CompiledGraph
from graphcore.engine.interrupts import GraphInterrupt
from graphcore.engine.schema import StateSchema, fields_of

__all__ = ["SubgraphNode"]


class SubgraphNode:
    """The node function of a subgraph: parent state in, the subgraph's output out (LangGraph's rule).

    The update is the subgraph's whole output (its output schema's keys that have a value) restricted to
    the keys the parent has; it goes through the parent's reducers like any node's update, so a shared
    ``operator.add`` list gets the subgraph's full list appended (LangGraph's value), while an
    ``add_messages`` key is unchanged by it (messages replace by id). Keys only the subgraph has are dropped.

    Args:
        graph: the compiled subgraph.
        parent: the parent graph's state schema.
    """

    def __init__(self, graph: CompiledGraph, parent: StateSchema) -> None:
        self.graph = graph
        self.parent = parent

    def __call__(self, state: Any) -> dict[str, Any]:
        """Run the subgraph on the keys it shares with the parent.

        Returns:
            output key → value, for the subgraph's output keys the parent has.

        Raises:
            GraphInterrupt: a node of the subgraph asked a human; the parent task pauses.
        """

        values = state.model_dump() if isinstance(state, BaseModel) else fields_of(state) or dict(state)
        shared = {k: v for k, v in values.items() if k in self.graph.schema.input_keys}
        final = self.graph.invoke(shared) or {}  # None: no output key has a value
        paused = final.pop(INTERRUPT_KEY, None)
        if paused:
            raise GraphInterrupt(*paused)
        return {k: v for k, v in final.items() if k in self.parent.channels}
