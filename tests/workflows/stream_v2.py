"""``version="v2"`` inside a node: ``v2_caller``'s node runs a small inner graph with
``invoke(..., version="v2")`` and ``stream(..., version="v2")`` and records what it got (the parts' ``ns``
as None)."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from typing_extensions import TypedDict

import graphcore


class Seen(TypedDict):
    seen: Annotated[list[Any], operator.add]


def build(lg: Any) -> Any:
    """The caller's builder from either side of the import map (the ``lg`` fixture of tests/compat, or
    ``graphcore``)."""
    inner_builder = lg.StateGraph(Seen)
    inner_builder.add_node("add", lambda state: {"seen": ["inner"]})
    inner_builder.add_edge(lg.START, "add")
    inner = inner_builder.compile()

    def call(state: Seen) -> dict[str, Any]:
        output = inner.invoke({"seen": []}, version="v2")
        parts = inner.stream({"seen": []}, stream_mode=["updates", "values"], version="v2")
        # the namespace left out: an inner stream's is the differences' row "a graph streamed inside a node"
        return {"seen": [[output.value, list(output.interrupts)], *({**p, "ns": None} for p in parts)]}

    builder = lg.StateGraph(Seen)
    builder.add_node("call", call)
    builder.add_edge(lg.START, "call")
    return builder


v2_caller = build(graphcore).compile(name="v2_caller")
