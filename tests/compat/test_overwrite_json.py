"""A node returning a list of updates and ``Command`` s (applied in order), and the JSON forms of
``Overwrite`` (``{"__overwrite__": value}`` and ``{"type": "__overwrite__", "value": value}``), as
LangGraph 1.x takes them."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]
    plain: Any


def _one_node(lg: Imports, fn: Any, **compile: Any) -> Any:
    builder = lg.StateGraph(State)
    builder.add_node("a", fn, destinations=("b",))
    builder.add_node("b", lambda s: {"items": ["b"]})
    builder.add_edge(lg.START, "a")
    return builder.compile(**compile)


# -- a list of updates and Commands -------------------------------------------------------------------------


def test_a_list_of_commands_applies_each_in_order(lg: Imports) -> None:
    """LangGraph: each Command's update is written in list order; a goto in any of them is followed."""
    commands = [lg.Command(update={"plain": 1}), lg.Command(update={"items": ["2"]}, goto="b")]
    assert _one_node(lg, lambda s: commands).invoke({"items": []}) == {"items": ["2", "b"], "plain": 1}
    both = [lg.Command(update={"items": ["1"]}), lg.Command(update={"items": ["2"]})]
    assert _one_node(lg, lambda s: both).invoke({"items": []}) == {"items": ["1", "2"]}


def test_a_list_mixing_a_dict_and_commands(lg: Imports) -> None:
    """LangGraph: a dict beside Commands is an update written in its place in the list."""
    mixed = [{"items": ["1"]}, lg.Command(update={"items": ["c"]}, goto="b")]
    assert _one_node(lg, lambda s: mixed).invoke({"items": []}) == {"items": ["1", "c", "b"]}
    assert _one_node(lg, lambda s: [lg.Command(goto="b"), {"items": ["d"]}]).invoke({"items": []}) == {
        "items": ["d", "b"]
    }


def test_a_list_without_a_command_is_refused(lg: Imports) -> None:
    """LangGraph: a list of plain dicts (or an empty list) is no node return value: InvalidUpdateError."""
    for returned in ([{"items": ["1"]}, {"items": ["2"]}], []):
        with pytest.raises(lg.InvalidUpdateError):
            _one_node(lg, lambda s, r=returned: r).invoke({"items": []})


# -- Overwrite's JSON forms ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "form", [{"__overwrite__": ["o"]}, {"type": "__overwrite__", "value": ["o"]}], ids=["key", "typed"]
)
def test_the_json_form_of_overwrite_from_a_node_input_and_command(lg: Imports, form: dict[str, Any]) -> None:
    """LangGraph: in a reducer channel's write the JSON form is an Overwrite, from a node, a Command or the
    input."""
    assert _one_node(lg, lambda s: {"items": form}).invoke({"items": ["i"]}) == {"items": ["o"]}
    graph = _one_node(lg, lambda s: lg.Command(update={"items": form}))
    assert graph.invoke({"items": ["i"]}) == {"items": ["o"]}
    assert _one_node(lg, lambda s: {"items": ["k"]}).invoke({"items": form}) == {"items": ["o", "k"]}


def test_the_json_form_wins_over_a_sibling_append(lg: Imports) -> None:
    """LangGraph: as an Overwrite, it drops the step's other writes to the channel."""
    builder = lg.StateGraph(State)
    builder.add_node("reset", lambda s: {"items": {"__overwrite__": ["reset"]}})
    builder.add_node("append", lambda s: {"items": ["appended"]})
    builder.add_edge(lg.START, "reset")
    builder.add_edge(lg.START, "append")
    assert builder.compile().invoke({"items": ["in"]}) == {"items": ["reset"]}


def test_update_state_with_the_json_form(lg: Imports) -> None:
    """LangGraph: update_state's values take the JSON form too."""
    graph = _one_node(lg, lambda s: {"items": ["a"]}, checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"items": ["i"]}, config)
    graph.update_state(config, {"items": {"__overwrite__": ["u"]}}, as_node="a")
    assert graph.get_state(config).values == {"items": ["u"]}


def test_a_channel_without_a_reducer_keeps_the_dict(lg: Imports) -> None:
    """LangGraph: only reducer channels read the JSON form; another key stores the dict as it is."""
    graph = _one_node(lg, lambda s: {"plain": {"__overwrite__": 1}})
    assert graph.invoke({"items": []}) == {"items": [], "plain": {"__overwrite__": 1}}


def test_the_json_form_replaces_messages(lg: Imports) -> None:
    """LangGraph: add_messages takes it as an Overwrite: the messages are replaced by its value as it is."""
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node(
        "a", lambda s: {"messages": {"__overwrite__": [{"role": "user", "content": "x", "id": "9"}]}}
    )
    builder.add_edge(lg.START, "a")
    result = builder.compile().invoke({"messages": [{"role": "user", "content": "hi"}]})
    assert result["messages"] == [{"role": "user", "content": "x", "id": "9"}]  # as given: not made a message
