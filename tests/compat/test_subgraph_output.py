"""What a subgraph node writes to its parent: the subgraph's whole output, through the parent's reducers."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]
    n: int


class Inner(TypedDict):
    items: Annotated[list[str], operator.add]
    n: int
    scratch: str


class ItemsOnly(TypedDict):
    items: list[str]


def _x(state: Inner) -> dict[str, Any]:
    return {"items": ["x"], "n": state["n"] + 1, "scratch": "inner"}


def _parent(lg: Imports, sub: Any, checkpointer: Any = None) -> Any:
    builder = lg.StateGraph(State)
    builder.add_node("pre", lambda s: {"items": ["pre"]})
    builder.add_node("sub", sub)
    builder.add_edge(lg.START, "pre")
    builder.add_edge("pre", "sub")
    builder.add_edge("sub", lg.END)
    return builder.compile(checkpointer=checkpointer)


def _inner(lg: Imports, schema: Any = State, **kwargs: Any) -> Any:
    builder = lg.StateGraph(schema, **kwargs)
    builder.add_node("x", _x)
    builder.add_edge(lg.START, "x")
    builder.add_edge("x", lg.END)
    return builder.compile()


def test_a_shared_reducer_list_gets_the_subgraphs_whole_list(lg: Imports) -> None:
    """LangGraph: the subgraph's output list (the input it was given plus its own items) goes through the
    parent's operator.add, so the parent's list holds its items twice, then the subgraph's."""
    graph = _parent(lg, _inner(lg))
    assert graph.invoke({"items": ["in"], "n": 0}) == {"items": ["in", "pre", "in", "pre", "x"], "n": 1}


def test_the_updates_stream_shows_the_subgraphs_output(lg: Imports) -> None:
    """LangGraph: the subgraph node's update is its whole output, not its changes."""
    graph = _parent(lg, _inner(lg))
    assert list(graph.stream({"items": ["in"], "n": 0}, stream_mode="updates")) == [
        {"pre": {"items": ["pre"]}},
        {"sub": {"items": ["in", "pre", "x"], "n": 1}},
    ]


def test_a_shared_last_value_key_is_written_even_when_unchanged(lg: Imports) -> None:
    """LangGraph: a plain key of the subgraph's output is written as it is, changed or not."""

    def keep(state: State) -> dict[str, Any]:
        return {"items": ["k"]}

    inner = lg.StateGraph(State)
    inner.add_node("keep", keep)
    inner.add_edge(lg.START, "keep")
    graph = _parent(lg, inner.compile())
    assert list(graph.stream({"items": [], "n": 7}, stream_mode="updates")) == [
        {"pre": {"items": ["pre"]}},
        {"sub": {"items": ["pre", "k"], "n": 7}},
    ]


def test_a_key_only_the_subgraph_has_stays_inside(lg: Imports) -> None:
    """LangGraph: an output key the parent has no channel for is dropped from the node's update."""
    graph = _parent(lg, _inner(lg, Inner))
    assert graph.invoke({"items": [], "n": 0}) == {"items": ["pre", "pre", "x"], "n": 1}
    assert list(graph.stream({"items": [], "n": 0}, stream_mode="updates"))[1] == {
        "sub": {"items": ["pre", "x"], "n": 1}
    }


def test_an_output_schema_narrows_what_the_subgraph_writes(lg: Imports) -> None:
    """LangGraph: only the subgraph's output schema keys are written; the parent's n keeps its value."""
    graph = _parent(lg, _inner(lg, Inner, output_schema=ItemsOnly))
    assert graph.invoke({"items": ["in"], "n": 0}) == {"items": ["in", "pre", "in", "pre", "x"], "n": 0}
    assert list(graph.stream({"items": ["in"], "n": 0}, stream_mode="updates"))[1] == {
        "sub": {"items": ["in", "pre", "x"]}
    }


def test_add_messages_keys_are_not_doubled(lg: Imports) -> None:
    """LangGraph: an add_messages key takes the subgraph's whole list without duplicates (ids replace)."""

    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [lg.AIMessage(content="hi", id="a1")]}

    inner = lg.StateGraph(lg.MessagesState)
    inner.add_node("reply", reply)
    inner.add_edge(lg.START, "reply")
    outer = lg.StateGraph(lg.MessagesState)
    outer.add_node("sub", inner.compile())
    outer.add_edge(lg.START, "sub")
    out = outer.compile().invoke({"messages": [lg.HumanMessage(content="q", id="h1")]})
    assert [(m.id, m.content) for m in out["messages"]] == [("h1", "q"), ("a1", "hi")]


def test_a_resumed_subgraphs_final_update_is_its_whole_output(lg: Imports) -> None:
    """LangGraph: a subgraph paused on interrupt() and resumed writes its whole output once it ends."""

    def ask(state: State) -> dict[str, Any]:
        return {"items": [f"ask:{lg.interrupt('ok?')}"]}

    inner = lg.StateGraph(State)
    inner.add_node("ask", ask)
    inner.add_edge(lg.START, "ask")
    graph = _parent(lg, inner.compile(), checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    paused = graph.invoke({"items": ["in"], "n": 3}, config)
    assert paused["items"] == ["in", "pre"]
    chunks = list(graph.stream(lg.Command(resume="yes"), config, stream_mode="updates"))
    assert chunks == [{"sub": {"items": ["in", "pre", "ask:yes"], "n": 3}}]
    assert graph.get_state(config).values == {"items": ["in", "pre", "in", "pre", "ask:yes"], "n": 3}
