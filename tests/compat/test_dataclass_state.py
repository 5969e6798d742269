"""Dataclass and plain annotated class state schemas: their fields are the channels. A node receives a
dataclass instance (its defaults filling the keys without a value) and a plain class's state as a dict; a
dataclass instance as the input or a node's update writes every field; results are dicts."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


@dataclass
class State:
    items: Annotated[list[str], operator.add] = field(default_factory=list)
    n: int = 0
    name: str = "x"


@dataclass
class Required:
    req: int
    items: Annotated[list[str], operator.add] = field(default_factory=list)


class Plain:
    x: int
    y: Annotated[list[int], operator.add]


def _one_node(lg: Imports, schema: Any, fn: Any, **compile: Any) -> Any:
    builder = lg.StateGraph(schema)
    builder.add_node("a", fn)
    builder.add_edge(lg.START, "a")
    return builder.compile(**compile)


def test_a_node_receives_a_dataclass_and_the_result_is_a_dict(lg: Imports) -> None:
    """LangGraph: the node gets State(**values), defaults filling the rest; the result has only the keys
    with a value."""
    seen: list[Any] = []

    def a(s: State) -> dict[str, Any]:
        seen.append(s)
        return {"items": ["a"], "n": s.n + 1}

    graph = _one_node(lg, State, a)
    assert graph.invoke({"items": ["i"]}) == {"items": ["i", "a"], "n": 1}
    assert seen == [State(items=["i"], n=0, name="x")]


def test_a_dataclass_input_and_update_write_every_field(lg: Imports) -> None:
    """LangGraph: a State instance, as the input or as a node's return, writes each of its fields."""
    seen: list[Any] = []

    def a(s: State) -> State:
        seen.append(s)
        return State(items=["r"], n=s.n + 4)

    graph = _one_node(lg, State, a)
    assert graph.invoke(State(items=["j"], n=5)) == {"items": ["j", "r"], "n": 9, "name": "x"}
    assert seen == [State(items=["j"], n=5, name="x")]


def test_a_required_field_without_a_value_is_the_nodes_type_error(lg: Imports) -> None:
    """LangGraph: a dataclass field without a default and without a value fails the node: a TypeError."""
    graph = _one_node(lg, Required, lambda s: {"items": [str(s.req)]})
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'req'"):
        graph.invoke({"items": []})
    assert graph.invoke({"req": 3}) == {"req": 3, "items": ["3"]}


def test_a_plain_annotated_class_gives_the_node_a_dict(lg: Imports) -> None:
    """LangGraph: a plain class's annotations are the channels; the node receives a dict."""
    seen: list[Any] = []
    graph = _one_node(lg, Plain, lambda s: seen.append(s) or {"x": 1})
    assert graph.invoke({"y": [1]}) == {"x": 1, "y": [1]}
    assert seen == [{"y": [1]}]


def test_a_checkpointed_dataclass_state(lg: Imports) -> None:
    """LangGraph: get_state's values are a dict, and the next run on the thread sees the stored fields."""
    seen: list[Any] = []

    def a(s: State) -> dict[str, Any]:
        seen.append(s)
        return {"items": ["a"], "name": s.name + "!"}

    graph = _one_node(lg, State, a, checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"n": 2}, config)
    assert graph.invoke({"items": ["b"]}, config) == {"items": ["a", "b", "a"], "n": 2, "name": "x!!"}
    assert seen[-1] == State(items=["a", "b"], n=2, name="x!")
    assert graph.get_state(config).values == {"items": ["a", "b", "a"], "n": 2, "name": "x!!"}


class Shared(TypedDict):
    items: Annotated[list[str], operator.add]


def test_a_subgraph_under_a_dataclass_state(lg: Imports) -> None:
    """LangGraph: a compiled subgraph as a node of a dataclass-state graph gets the shared keys."""
    inner = _one_node(lg, Shared, lambda s: {"items": [f"inner:{len(s['items'])}"]})
    graph = _one_node(lg, State, inner)
    assert graph.invoke({"items": ["i"], "n": 1}) == {"items": ["i", "i", "inner:1"], "n": 1}


@dataclass
class Defaults:
    req: int
    items: Annotated[list[str], operator.add] = field(default_factory=list)
    n: int = 0
    o: str | None = None


@pytest.mark.parametrize("schema", [Defaults, Plain])
def test_the_json_schema_of_a_class_state(lg: Imports, schema: Any) -> None:
    """LangGraph: a model of the fields titled after the graph; a dataclass default (or its factory's value)
    is the field's default, an optional field defaults to null, any other is required."""
    graph = _one_node(lg, schema, lambda s: {})
    if schema is Plain:
        properties = {
            "x": {"title": "X", "type": "integer"},
            "y": {"items": {"type": "integer"}, "title": "Y", "type": "array"},
        }
        required = ["x", "y"]
    else:
        properties = {
            "req": {"title": "Req", "type": "integer"},
            "items": {"default": [], "items": {"type": "string"}, "title": "Items", "type": "array"},
            "n": {"default": 0, "title": "N", "type": "integer"},
            "o": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "O"},
        }
        required = ["req"]
    for got, title in ((graph.get_input_jsonschema(), "Input"), (graph.get_output_jsonschema(), "Output")):
        assert got == {
            "properties": properties,
            "required": required,
            "title": "LangGraph" + title,
            "type": "object",
        }


class Both(TypedDict):
    a: int
    b: int


@dataclass
class OnlyA:
    a: int


def test_a_node_annotated_with_a_dataclass_receives_its_fields(lg: Imports) -> None:
    """LangGraph: a node's first parameter annotated with a dataclass is its input schema: it receives an
    instance made of those keys only."""
    seen: list[Any] = []

    def a(s: OnlyA) -> dict[str, Any]:
        seen.append(s)
        return {"b": s.a + 1}

    assert _one_node(lg, Both, a).invoke({"a": 1, "b": 0}) == {"a": 1, "b": 2}
    assert seen == [OnlyA(a=1)]
