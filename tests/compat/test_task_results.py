"""A task that writes one channel several times (LangGraph's test_pregel
``test_multiple_writes_same_channel_from_same_node``): its ``result`` in the history, as in the ``tasks``
stream, is ``{"$writes": [...]}`` for that channel, the values in the order written. Each case runs with
LangGraph's imports and with graphq's."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from tests.compat.conftest import Imports


def _joined(a: str, b: str) -> str:
    return ", ".join([x for x in [a, b] if x])


class State(TypedDict):
    foo: Annotated[str, _joined]


def test_a_channel_written_several_times_shows_its_writes(lg: Imports) -> None:
    builder = lg.StateGraph(State)
    builder.add_node("one", lambda s: lg.Command(update=[("foo", "one.0"), ("foo", "one.1")]))
    builder.add_node("two", lambda s: {"foo": "two"})
    builder.add_edge(lg.START, "one")
    builder.add_edge("one", "two")
    graph, config = builder.compile(checkpointer=lg.InMemorySaver()), {"configurable": {"thread_id": "1"}}
    streamed = [
        chunk["result"]
        for mode, chunk in graph.stream({"foo": "input"}, config, stream_mode=["tasks"])
        if "result" in chunk
    ]
    history: list[Any] = [
        ([(t.name, t.result) for t in s.tasks], s.values) for s in graph.get_state_history(config)
    ]
    assert streamed == [{"foo": {"$writes": ["one.0", "one.1"]}}, {"foo": "two"}]
    assert history == [
        ([], {"foo": "input, one.0, one.1, two"}),
        ([("two", {"foo": "two"})], {"foo": "input, one.0, one.1"}),
        ([("one", {"foo": {"$writes": ["one.0", "one.1"]}})], {"foo": "input"}),
        ([("__start__", {"foo": "input"})], {"foo": ""}),
    ]
