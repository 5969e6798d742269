"""A node's error handler that fails by re-raising the error it was given (graphq's ``NodeError``, which names
the node, not the handler): the node's saved failure stays its record, so a continued run runs the handler
alone with that text, as after any other handler failure (graphcore.engine.handlers, saving.TaskSaver)."""

from __future__ import annotations

import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from graphcore import START, InMemorySaver, NodeError, StateGraph


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def test_a_handler_that_raises_the_error_it_was_given_is_continued_alone() -> None:
    calls: list[str] = []

    def fails(state: State) -> dict[str, Any]:
        calls.append("a")
        raise KeyError("boom")

    def handler(state: State, error: NodeError) -> dict[str, Any]:
        calls.append("handler")
        if calls.count("handler") == 1:
            raise error
        return {"log": [error.node, type(error.error).__name__, str(error.error)]}

    builder = StateGraph(State)
    builder.add_node("a", fails, error_handler=handler)
    builder.add_edge(START, "a")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(KeyError, match="boom"):
        graph.invoke({"log": []}, config)
    assert [(t.name, t.error) for t in graph.get_state(config).tasks] == [("a", "KeyError('boom')")]
    assert graph.invoke(None, config) == {"log": ["a", "str", "KeyError('boom')"]}
    assert calls == ["a", "handler", "handler"]
