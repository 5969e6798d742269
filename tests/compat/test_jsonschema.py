"""The compiled graph's ``get_input_jsonschema`` / ``get_output_jsonschema`` / ``get_context_jsonschema``:
pydantic's JSON schema of the graph's input, output and context schemas, as LangGraph gives them."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]
    n: int


class In(TypedDict):
    n: int


class Out(TypedDict):
    items: list[str]


@dataclass
class Ctx:
    user: str
    k: int = 1


class Model(BaseModel):
    x: int = 0


def _one_node(lg: Imports, builder: Any, update: Any, **compile: Any) -> Any:
    builder.add_node("a", lambda s: update)
    builder.add_edge(lg.START, "a")
    return builder.compile(**compile)


def test_typed_dict_input_output_and_dataclass_context(lg: Imports) -> None:
    """LangGraph: the input and output schemas' and the context's JSON schemas, through pydantic."""
    graph = _one_node(lg, lg.StateGraph(State, Ctx, input_schema=In, output_schema=Out), {"items": ["a"]})
    assert graph.get_input_jsonschema() == {
        "properties": {"n": {"title": "N", "type": "integer"}},
        "required": ["n"],
        "title": "In",
        "type": "object",
    }
    assert graph.get_output_jsonschema() == {
        "properties": {"items": {"items": {"type": "string"}, "title": "Items", "type": "array"}},
        "required": ["items"],
        "title": "Out",
        "type": "object",
    }
    assert graph.get_context_jsonschema() == {
        "properties": {
            "user": {"title": "User", "type": "string"},
            "k": {"default": 1, "title": "K", "type": "integer"},
        },
        "required": ["user"],
        "title": "Ctx",
        "type": "object",
    }


def test_the_state_schema_by_default_and_no_context(lg: Imports) -> None:
    """LangGraph: without input/output schemas both are the state schema's; without a context schema, None."""
    graph = _one_node(lg, lg.StateGraph(Model), {"x": 1})
    expected = {
        "properties": {"x": {"default": 0, "title": "X", "type": "integer"}},
        "title": "Model",
        "type": "object",
    }
    assert graph.get_input_jsonschema() == expected
    assert graph.get_output_jsonschema() == expected
    assert graph.get_context_jsonschema() is None


@pytest.mark.parametrize(
    ("schema", "update", "name", "title", "shape"),
    [
        (int, 1, None, "LangGraph", {"type": "integer"}),
        (Annotated[list, operator.add], ["a"], "demo", "demo_", {"items": {}, "type": "array"}),
        (str, "a", "Demo", "Demo", {"type": "string"}),
    ],
)
def test_a_root_state_is_a_nullable_root_named_after_the_graph(
    lg: Imports, schema: Any, update: Any, name: str | None, title: str, shape: dict[str, Any]
) -> None:
    """LangGraph: a root-channel state's schema is its value type (reducer dropped), default null, titled
    the graph's name ("LangGraph" when none) plus Input / Output (``_input`` after a lower-case name)."""
    graph = _one_node(lg, lg.StateGraph(schema), update, **({"name": name} if name else {}))
    suffix = ("input", "output") if title.endswith("_") else ("Input", "Output")
    assert graph.get_input_jsonschema() == {"default": None, "title": title + suffix[0], **shape}
    assert graph.get_output_jsonschema() == {"default": None, "title": title + suffix[1], **shape}
