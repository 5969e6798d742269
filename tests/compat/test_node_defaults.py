"""``StateGraph.set_node_defaults(retry_policy=..., timeout=...)`` and ``add_node(..., timeout=...)`` in
LangGraph 1.x's forms (seconds, a ``timedelta`` or ``TimeoutPolicy(run_timeout=...)``).

LangGraph times out only ``async def`` nodes (a sync node with a timeout is its ValueError; graphq times out
both), so these cases run async nodes under ``ainvoke``. A node that times out here awaits an event nothing
sets: it can never finish, whatever the machine's speed.
"""

from __future__ import annotations

import asyncio
import operator
from datetime import timedelta
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]


async def _stuck(state: State) -> dict[str, Any]:
    await asyncio.Event().wait()  # nothing sets it
    return {"items": ["never"]}


async def _quick(state: State) -> dict[str, Any]:
    return {"items": ["quick"]}


def _run(graph: Any) -> Any:
    return asyncio.run(graph.ainvoke({"items": []}))


@pytest.mark.parametrize("form", ["seconds", "timedelta", "policy"])
def test_a_node_timeout_in_each_form_fails_the_run(lg: Imports, form: str) -> None:
    """LangGraph: a try longer than the node's timeout raises NodeTimeoutError."""
    timeout = {
        "seconds": 0.2,
        "timedelta": timedelta(seconds=0.2),
        "policy": lg.TimeoutPolicy(run_timeout=0.2),
    }
    builder = lg.StateGraph(State)
    builder.add_node("a", _stuck, timeout=timeout[form])
    builder.add_edge(lg.START, "a")
    with pytest.raises(lg.NodeTimeoutError):
        _run(builder.compile())


def test_set_node_defaults_times_out_nodes_without_their_own(lg: Imports) -> None:
    """LangGraph: the default timeout applies to a node added without one; the builder is returned."""
    builder = lg.StateGraph(State)
    assert builder.set_node_defaults(timeout=lg.TimeoutPolicy(run_timeout=0.2)) is builder
    builder.add_node("a", _quick)
    builder.add_node("b", _stuck)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    with pytest.raises(lg.NodeTimeoutError):
        _run(builder.compile())


def test_set_node_defaults_retry_policy_yields_to_a_nodes_own(lg: Imports) -> None:
    """LangGraph: nodes without a retry policy get the default (set before or after add_node, applied at
    compile); a node's own policy wins."""
    calls: dict[str, int] = {"a": 0, "b": 0}

    def flaky(name: str, failures: int) -> Any:
        async def node(state: State) -> dict[str, Any]:
            calls[name] += 1
            if calls[name] <= failures:
                raise ValueError(f"{name} failure {calls[name]}")
            return {"items": [f"{name}:{calls[name]}"]}

        return node

    builder = lg.StateGraph(State)
    builder.add_node("a", flaky("a", 2))
    builder.add_node("b", flaky("b", 1), retry_policy=lg.RetryPolicy(max_attempts=1))
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.set_node_defaults(
        retry_policy=lg.RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False, retry_on=ValueError)
    )
    with pytest.raises(ValueError, match="b failure 1"):
        _run(builder.compile())
    assert calls == {"a": 3, "b": 1}
