"""``ValidationNode``: validates the tool calls of the last AI message against pydantic models,
LangChain tools' argument schemas and functions' signatures, without running anything; each call gets a
ToolMessage with the validated JSON or the error. Each case runs with ``langgraph.prebuilt``'s imports and
with graphq's (LangGraph's deprecation warning of the class is LangGraph's own)."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from pydantic import BaseModel, field_validator

from tests.compat.conftest import Imports

pytestmark = pytest.mark.filterwarnings("ignore:ValidationNode is deprecated")


class SelectNumber(BaseModel):
    a: int

    @field_validator("a")
    @classmethod
    def a_must_be_meaningful(cls, v: int) -> int:
        if v != 37:
            raise ValueError("Only 37 is allowed")
        return v


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def scale(x: float, by: int = 2) -> float:
    """Scale a number."""
    return x * by


CALLS = [
    {"name": "SelectNumber", "args": {"a": 37}, "id": "c1"},
    {"name": "SelectNumber", "args": {"a": 3}, "id": "c2"},
    {"name": "add", "args": {"a": 1, "b": "2"}, "id": "c3"},
    {"name": "add", "args": {"a": 1}, "id": "c4"},
    {"name": "scale", "args": {"x": 1.5}, "id": "c5"},
]
LINK = "    For further information visit https://errors.pydantic.dev/{v}/v/{kind}\n\n"
FIX = "Respond after fixing all validation errors."


def pydantic_version() -> str:
    import pydantic

    return ".".join(pydantic.VERSION.split(".")[:2])


def shown(messages: list[Any]) -> list[tuple[Any, ...]]:
    return [(m.type, m.content, m.name, m.tool_call_id, m.additional_kwargs) for m in messages]


def test_each_call_gets_its_validated_json_or_its_error(lg: Imports) -> None:
    """LangGraph: a call that validates gets ``model_dump_json()`` of it ("2" coerced to 2, a function's
    default filled in); one that does not, the error's repr, ``is_error`` in ``additional_kwargs``."""
    v = pydantic_version()
    node = lg.ValidationNode([SelectNumber, add, scale])
    out = node.invoke({"messages": [HumanMessage("pick"), AIMessage("", tool_calls=CALLS)]})
    assert shown(out["messages"]) == [
        ("tool", '{"a":37}', "SelectNumber", "c1", {}),
        (
            "tool",
            "1 validation error for SelectNumber\na\n  Value error, Only 37 is allowed [type=value_error, "
            "input_value=3, input_type=int]\n" + LINK.format(v=v, kind="value_error") + FIX,
            "SelectNumber",
            "c2",
            {"is_error": True},
        ),
        ("tool", '{"a":1,"b":2}', "add", "c3", {}),
        (
            "tool",
            "1 validation error for add\nb\n  Field required [type=missing, input_value={'a': 1}, "
            "input_type=dict]\n" + LINK.format(v=v, kind="missing") + FIX,
            "add",
            "c4",
            {"is_error": True},
        ),
        ("tool", '{"x":1.5,"by":2}', "scale", "c5", {}),
    ]


def test_in_a_graph_of_messages_with_its_own_error_format(lg: Imports) -> None:
    """LangGraph: as a node of a graph whose state is a list of messages, the node's messages are appended;
    ``format_error(error, call, schema)`` words the errors."""

    def format_error(error: BaseException, call: Any, schema: type[BaseModel]) -> str:
        return f"{schema.__name__} refused {call['args']}: {len(error.errors())} error(s)"  # type: ignore[attr-defined]

    builder = lg.StateGraph(Annotated[list, lg.add_messages])
    builder.add_node("validation", lg.ValidationNode([SelectNumber], format_error=format_error))
    builder.add_edge(lg.START, "validation")
    out = builder.compile().invoke([AIMessage("", tool_calls=CALLS[:2], id="a1")])
    assert shown(out[1:]) == [
        ("tool", '{"a":37}', "SelectNumber", "c1", {}),
        ("tool", "SelectNumber refused {'a': 3}: 1 error(s)", "SelectNumber", "c2", {"is_error": True}),
    ]


def test_bad_inputs_raise(lg: Imports) -> None:
    """LangGraph: a schema of another kind is refused at construction; a call naming no schema raises
    KeyError with its name; a last message that is not an AI message raises ValueError."""
    with pytest.raises(
        ValueError, match=r"Unsupported input to ValidationNode\. Expected BaseModel, tool or"
    ):
        lg.ValidationNode([3])
    node = lg.ValidationNode([SelectNumber])
    with pytest.raises(KeyError, match="'nope'"):
        node.invoke([AIMessage("", tool_calls=[{"name": "nope", "args": {}, "id": "n1"}])])
    with pytest.raises(ValueError, match="Last message is not an AIMessage"):
        node.invoke({"messages": [HumanMessage("hi")]})
    with pytest.raises(ValueError):
        node.invoke({"messages": []})
