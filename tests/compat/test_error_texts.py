"""Error texts LangGraph's own tests match (``pytest.raises(match=...)``): a reducer that does not
take two arguments, and two writes to a key without a reducer in one super-step. graphq's texts start as
LangGraph's and name what graphq adds (the key, the writers). Each case runs with LangGraph's imports and
with graphq's."""

from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from tests.compat.conftest import Imports


class State(TypedDict):
    hello: str


def test_a_reducer_of_one_argument_is_refused(lg: Imports) -> None:
    """LangGraph: ``StateGraph`` raises ValueError "Invalid reducer signature. Expected (a, b) -> c. Got
    (a)" for a reducer that does not take two positional arguments."""

    def bad_reducer(a: Any) -> Any:
        return a

    class BadReducerState(TypedDict):
        hello: Annotated[str, bad_reducer]

    with pytest.raises(
        ValueError, match=r"^Invalid reducer signature\. Expected \(a, b\) -> c\. Got \(a: Any\)"
    ):
        lg.StateGraph(BadReducerState)


def test_two_writes_to_a_key_without_reducer(lg: Imports) -> None:
    """LangGraph: two nodes of one super-step writing a key without a reducer is InvalidUpdateError "At key
    'hello': Can receive only one value per step. ..."."""

    def node_b(state: State) -> State:
        return {"hello": "world"}

    builder = lg.StateGraph(State)
    builder.add_node("a", node_b)
    builder.add_node("b", node_b)
    builder.add_node("c", node_b)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c")
    with pytest.raises(lg.InvalidUpdateError, match=r"^At key 'hello': Can receive only one value per step"):
        builder.compile().invoke({"hello": "there"})
