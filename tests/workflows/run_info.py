"""What a run's nodes are told about it: ``run_info`` records ``runtime.execution_info.run_id`` in
its node ``a``, asks in ``ask`` (``interrupt()``), then records it again in ``b`` and in ``inner``,
the node of the graph that node ``sub`` invokes."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from typing_extensions import TypedDict

import graphcore


class State(TypedDict):
    seen: Annotated[list[Any], operator.add]


def build(lg: Any) -> Any:
    """``run_info``'s builder from either side of the import map (``lg``: the ``lg`` fixture of tests/compat,
    or ``graphcore``)."""

    def record(name: str) -> Any:
        def node(state: Any, runtime: lg.Runtime) -> dict[str, Any]:  # type: ignore[name-defined]
            return {"seen": [[name, runtime.execution_info.run_id]]}

        return node

    def ask(state: Any) -> dict[str, Any]:
        lg.interrupt("go on?")
        return {}

    inner = lg.StateGraph(State)
    inner.add_node("inner", record("inner"))
    inner.add_edge(lg.START, "inner")
    sub = inner.compile()

    def call_sub(state: Any) -> dict[str, Any]:
        return {"seen": sub.invoke({"seen": []})["seen"]}

    builder = lg.StateGraph(State)
    builder.add_node("a", record("a"))
    builder.add_node("ask", ask)
    builder.add_node("b", record("b"))
    builder.add_node("sub", call_sub)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "ask")
    builder.add_edge("ask", "b")
    builder.add_edge("b", "sub")
    return builder


run_info = build(graphcore).compile(name="run_info")
