"""``astream_events(..., stream_mode=..., subgraphs=..., durability=...)`` (LangGraph's
test_pregel_async ``test_nested_graph`` and ``test_checkpoint_put_after_cancellation_stream_events_anext``):
the graph's run keywords go to its run, as LangChain passes them to LangGraph's ``astream``; the graph's
``on_chain_stream`` chunks are those of the stream mode(s), shaped as ``astream`` yields them, and its
``on_chain_end`` output is the final state. Each case runs with LangGraph's imports and with graphq's."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def _graph(lg: Imports) -> Any:
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"items": ["a"]})
    builder.add_node("b", lambda s: {"items": ["b"]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    return builder.compile(checkpointer=lg.InMemorySaver())


def _graph_events(lg: Imports, thread: str, **kwargs: Any) -> tuple[list[Any], int]:
    """The graph's own events as ``(event, data)``, and how many checkpoints the thread has after."""
    graph, config = _graph(lg), {"configurable": {"thread_id": thread}}

    async def events() -> list[Any]:
        stream = graph.astream_events(
            {"items": ["i"]}, config, version="v2", include_names=["LangGraph"], **kwargs
        )
        return [(e["event"], e["data"]) async for e in stream]

    out = asyncio.run(events())
    return out, len(list(graph.get_state_history(config)))


START_EVENT = ("on_chain_start", {"input": {"items": ["i"]}})
END_EVENT = ("on_chain_end", {"output": {"items": ["i", "a", "b"]}})
UPDATES = [{"a": {"items": ["a"]}}, {"b": {"items": ["b"]}}]
VALUES = [{"items": ["i"]}, {"items": ["i", "a"]}, {"items": ["i", "a", "b"]}]


@pytest.mark.parametrize(
    ("kwargs", "chunks"),
    [
        ({}, UPDATES),
        ({"stream_mode": "values"}, VALUES),
        (
            {"stream_mode": ["updates", "values"]},
            [
                ("values", VALUES[0]),
                ("updates", UPDATES[0]),
                ("values", VALUES[1]),
                ("updates", UPDATES[1]),
                ("values", VALUES[2]),
            ],
        ),
        ({"subgraphs": True}, [((), UPDATES[0]), ((), UPDATES[1])]),
        ({"stream_mode": ["values"], "subgraphs": True}, [((), "values", v) for v in VALUES]),
    ],
    ids=["default", "values", "updates-and-values", "subgraphs", "subgraphs-list"],
)
def test_stream_mode_shapes_the_graphs_chunks(lg: Imports, kwargs: dict[str, Any], chunks: list[Any]) -> None:
    events, _ = _graph_events(lg, "1", **kwargs)
    assert events == [START_EVENT, *(("on_chain_stream", {"chunk": c}) for c in chunks), END_EVENT]


def test_durability_goes_to_the_run(lg: Imports) -> None:
    """``durability="exit"``: only the run's last checkpoint is written (LangGraph's: one)."""
    events, checkpoints = _graph_events(lg, "2", durability="exit")
    assert events == [START_EVENT, *(("on_chain_stream", {"chunk": c}) for c in UPDATES), END_EVENT]
    assert checkpoints == 1
