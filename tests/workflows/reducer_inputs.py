"""Workflows whose reducers refuse some inputs, for the reducer check at enqueue (graphcore.engine.inputs):
``add_messages`` on a TypedDict, a pydantic and a root-channel state, and a reducer of one's own."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from graphcore import START, MessagesState, StateGraph, add_messages
from graphcore.messages import AIMessage, MessagesStateModel

FOLDS: list[tuple[list[int], Any]] = []
"""Every call of :func:`whole_numbers`, (left, right), in this process."""


def whole_numbers(left: list[int], right: Any) -> list[int]:
    """Appends an int; refuses anything else."""
    FOLDS.append((list(left), right))
    if not isinstance(right, int):
        raise ValueError(f"whole_numbers takes an int,\n  not {type(right).__name__}")
    return [*left, right]


def reply(state: Any) -> dict[str, Any]:
    messages = state["messages"] if isinstance(state, dict) else state.messages
    return {"messages": [AIMessage(f"{len(messages)} in", id=f"ai-{len(messages)}")]}


_m = StateGraph(MessagesState)
_m.add_node("reply", reply)
_m.add_edge(START, "reply")
echo = _m.compile(name="echo")

_p = StateGraph(MessagesStateModel)
_p.add_node("reply", reply)
_p.add_edge(START, "reply")
echo_model = _p.compile(name="echo-model")


def root_reply(messages: list[Any]) -> list[Any]:
    return [AIMessage(f"{len(messages)} in", id="ai-root")]


_r = StateGraph(Annotated[list, add_messages])
_r.add_node("reply", root_reply)
_r.add_edge(START, "reply")
echo_root = _r.compile(name="echo-root")


class Counted(TypedDict, total=False):
    numbers: Annotated[list[int], whole_numbers]
    note: str


def note(state: Counted) -> dict[str, Any]:
    return {"note": f"numbers={state.get('numbers')}"}


_c = StateGraph(Counted)
_c.add_node("note", note)
_c.add_edge(START, "note")
counted = _c.compile(name="counted")
