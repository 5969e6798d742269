"""``Interrupt.response_schema`` and ``interrupt(value, response_schema=...)`` (LangGraph 1.2): the
same program, LangGraph's imports or graphq's, builds, prints and compares interrupts alike, surfaces the
schema (a type as its JSON Schema) in the result, the snapshot and the ``tasks`` stream, and validates the
answer against a type."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import ValidationError

from tests.compat.conftest import Imports
from tests.workflows.schema_ask import DECISION_SCHEMA, Decision


class State(TypedDict):
    items: Annotated[list[Any], operator.add]


def thread(name: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def asking(lg: Imports, schema: Any) -> Any:
    """A graph whose one node asks ``"ok?"`` with ``response_schema=schema`` and appends the answer's repr."""

    def ask(state: State) -> dict[str, Any]:
        return {"items": [repr(lg.interrupt("ok?", response_schema=schema))]}

    builder = lg.StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "ask")
    return builder.compile(checkpointer=lg.InMemorySaver())


def test_an_interrupt_takes_a_response_schema_by_keyword(lg: Imports) -> None:
    """LangGraph 1.2: ``Interrupt(value, id=..., response_schema=...)``; the schema takes part in ``==`` and
    the repr; it defaults to None."""
    made = lg.Interrupt("ok?", id="x", response_schema={"type": "boolean"})
    assert made.response_schema == {"type": "boolean"}
    assert repr(made) == "Interrupt(value='ok?', id='x', response_schema={'type': 'boolean'})"
    assert made == lg.Interrupt(value="ok?", id="x", response_schema={"type": "boolean"})
    assert made != lg.Interrupt("ok?", id="x")
    assert lg.Interrupt("ok?", id="x").response_schema is None
    assert repr(lg.Interrupt("ok?", id="x")) == "Interrupt(value='ok?', id='x', response_schema=None)"


def test_a_dict_schema_is_shown_as_given_and_the_answer_is_not_checked(lg: Imports) -> None:
    """LangGraph: a JSON Schema dict reaches the request as it is (result, snapshot, ``tasks`` stream); the
    answer is returned as given."""
    graph = asking(lg, {"type": "integer"})
    chunks = list(graph.stream({"items": []}, thread(), stream_mode="tasks"))
    (asked,) = graph.get_state(thread()).interrupts
    assert asked == lg.Interrupt("ok?", id=asked.id, response_schema={"type": "integer"})
    assert graph.get_state(thread()).tasks[0].interrupts == (asked,)
    assert [c["interrupts"] for c in chunks if "interrupts" in c] == [
        [{"value": "ok?", "id": asked.id, "response_schema": {"type": "integer"}}]
    ]
    assert graph.invoke(lg.Command(resume="seven"), thread()) == {"items": ["'seven'"]}


def test_a_model_schema_is_shown_as_json_schema_and_validates_the_answer(lg: Imports) -> None:
    """LangGraph: a pydantic model as ``response_schema`` surfaces as its JSON Schema; the answer is validated
    into the model. A wrong answer fails the call (pydantic's ValidationError; graphq: a NodeError holding
    it, since the two types cannot be combined) and the request stays open: a right one is taken."""
    graph = asking(lg, Decision)
    (asked,) = graph.invoke({"items": []}, thread())["__interrupt__"]
    assert asked == lg.Interrupt("ok?", id=asked.id, response_schema=DECISION_SCHEMA)
    with pytest.raises(Exception) as info:
        graph.invoke(lg.Command(resume={"ok": "maybe"}), thread())
    error = info.value if lg.is_langgraph else getattr(info.value, "error", None)
    assert isinstance(error, ValidationError)
    assert [e["loc"] for e in error.errors()] == [("ok",)]
    assert graph.get_state(thread()).interrupts == (asked,)
    done = graph.invoke(lg.Command(resume={"ok": True}), thread())
    assert done == {"items": ["Decision(ok=True, note='')"]}
