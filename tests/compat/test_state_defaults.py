"""A pydantic state's field defaults, reducer channels' starting values and the key order of results,
``values`` events, snapshots and the state a node receives."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Optional, TypedDict

from pydantic import BaseModel, Field

from tests.compat.conftest import Imports


class Doc(BaseModel):
    q: str
    extra: str = "dflt"
    items: list[str] = []


class Counted(BaseModel):
    q: str
    red: Annotated[list[str], operator.add] = Field(default_factory=lambda: ["f"])
    cnt: Annotated[int, operator.add] = 5


class Tagged(BaseModel):
    q: str
    extra: str = "dflt"
    tag: Optional[str] = None  # noqa: UP045 - LangGraph programs write Optional
    red: Annotated[list[str], operator.add] = []


class Jokes(TypedDict):
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]
    best: str


def _one_node(lg: Imports, schema: type[Any], node: Any, **compile: Any) -> Any:
    g = lg.StateGraph(schema)
    g.add_node("node", node)
    g.add_edge(lg.START, "node")
    g.add_edge("node", lg.END)
    return g.compile(**compile)


def _exclaim(seen: list[Any]) -> Any:
    def node(s: Doc) -> dict[str, Any]:
        seen.append((s.extra, s.items))
        return {"q": s.q + "!" + s.extra}

    return node


def test_an_unset_default_is_not_in_the_result(lg: Imports) -> None:
    """LangGraph: a pydantic field's default fills the model a node receives, not the state: the result
    holds only the keys written (``{'q': 'x!dflt'}``)."""
    seen: list[Any] = []
    assert _one_node(lg, Doc, _exclaim(seen)).invoke({"q": "x"}) == {"q": "x!dflt"}
    assert seen == [("dflt", [])]


def test_values_events_hold_no_unset_default(lg: Imports) -> None:
    """LangGraph: ``values`` events show the written keys only, from the input's ``{'q': 'x'}`` on."""
    app = _one_node(lg, Doc, _exclaim([]))
    assert list(app.stream({"q": "x"}, stream_mode="values")) == [{"q": "x"}, {"q": "x!dflt"}]


def test_a_snapshot_holds_no_unset_default(lg: Imports) -> None:
    """LangGraph: ``get_state(config).values`` of a pydantic state holds the written keys only."""
    app = _one_node(lg, Doc, _exclaim([]), checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"q": "x"}, config)
    assert app.get_state(config).values == {"q": "x!dflt"}


def test_a_default_given_in_the_input_is_kept(lg: Imports) -> None:
    """LangGraph: a field the input sets (to its default value, too) is a channel value and in the result."""
    assert _one_node(lg, Doc, _exclaim([])).invoke({"q": "x", "extra": "dflt"}) == {
        "q": "x!dflt",
        "extra": "dflt",
    }


def test_a_reducer_field_starts_from_its_types_empty_value(lg: Imports) -> None:
    """LangGraph: a pydantic reducer field's channel starts from ``T()`` (``[]``, ``0``), not from the
    field's default; it is in the result without a write, and the node's model holds that value."""
    seen: list[Any] = []

    def node(s: Counted) -> dict[str, Any]:
        seen.append((s.red, s.cnt))
        return {"q": "z"}

    assert _one_node(lg, Counted, node).invoke({"q": "x"}) == {"q": "z", "red": [], "cnt": 0}
    assert seen == [([], 0)]


def test_a_reducer_field_adds_to_its_types_empty_value(lg: Imports) -> None:
    """LangGraph: writes to a pydantic reducer field fold into ``T()``, the field's default ignored."""
    app = _one_node(lg, Counted, lambda s: {"red": ["a"], "cnt": 2})
    assert app.invoke({"q": "x"}) == {"q": "x", "red": ["a"], "cnt": 2}


def test_a_reducer_field_without_an_empty_value_takes_its_first_write(lg: Imports) -> None:
    """LangGraph: ``Annotated[Optional[list], add] = None`` has no ``T()``: the first node's model sees the
    default None, the first write is taken as it is, the next one is added."""

    class Opt(BaseModel):
        q: str
        opt: Annotated[Optional[list[str]], operator.add] = None  # noqa: UP045

    seen: list[Any] = []

    def step(name: str) -> Any:
        def node(s: Opt) -> dict[str, Any]:
            seen.append(s.opt)
            return {"opt": [name]}

        return node

    g = lg.StateGraph(Opt)
    g.add_node("a", step("a"))
    g.add_node("b", step("b"))
    g.add_edge(lg.START, "a")
    g.add_edge("a", "b")
    assert g.compile().invoke({"q": "x"}) == {"q": "x", "opt": ["a", "b"]}
    assert seen == [None, ["a"]]


def test_a_typeddict_reducer_channel_is_in_the_result_without_a_write(lg: Imports) -> None:
    """LangGraph: a TypedDict reducer key starts from ``T()`` and is in the result unwritten; a plain key
    nobody wrote is absent."""

    class T(TypedDict):
        q: str
        red: Annotated[list[str], operator.add]
        cnt: Annotated[int, operator.add]
        plain: list[str]

    assert _one_node(lg, T, lambda s: {"q": "z"}).invoke({"q": "x"}) == {"q": "z", "red": [], "cnt": 0}


def test_a_returned_model_writes_its_defaults_but_unset_nones(lg: Imports) -> None:
    """LangGraph: a node returning a model instance writes every field (defaults too) but one that is None
    while neither set nor None by default."""
    app = _one_node(lg, Tagged, lambda s: Tagged(q=s.q + "!"))
    assert list(app.stream({"q": "x"}, stream_mode="updates")) == [
        {"node": {"q": "x!", "extra": "dflt", "red": []}}
    ]


def test_a_model_input_writes_its_defaults(lg: Imports) -> None:
    """LangGraph: a model instance as the input writes its defaults (not an unset None) into the state."""
    app = _one_node(lg, Tagged, lambda s: {"tag": "t"})
    assert list(app.stream(Tagged(q="x"), stream_mode="values")) == [
        {"q": "x", "extra": "dflt", "red": []},
        {"q": "x", "extra": "dflt", "tag": "t", "red": []},
    ]


def test_an_explicit_none_in_a_returned_model_is_written(lg: Imports) -> None:
    """LangGraph: a None field set explicitly in a returned model is written (it clears the value)."""
    app = _one_node(lg, Tagged, lambda s: Tagged(q="y", tag=None))
    assert app.invoke({"q": "x", "tag": "t"}) == {"q": "y", "extra": "dflt", "tag": None, "red": []}


def _jokes(lg: Imports, **compile: Any) -> Any:
    g = lg.StateGraph(Jokes, **compile)
    g.add_node("gen", lambda s: {"subjects": ["a", "b"]})
    g.add_node("joke", lambda s: {"jokes": [f"joke {x}" for x in s["subjects"]]})
    g.add_node("pick", lambda s: {"best": s["jokes"][-1]})
    g.add_edge(lg.START, "gen")
    g.add_edge("gen", "joke")
    g.add_edge("joke", "pick")
    return g.compile(checkpointer=lg.InMemorySaver())


def test_result_keys_follow_the_schemas_declaration_order(lg: Imports) -> None:
    """LangGraph: a result lists its keys in the state schema's declaration order, not in the order of
    their first values (the reducer key ``jokes`` starts with ``[]`` and still comes second)."""
    result = _jokes(lg).invoke({}, {"configurable": {"thread_id": "t"}})
    assert list(result) == ["subjects", "jokes", "best"]
    assert result == {"subjects": ["a", "b"], "jokes": ["joke a", "joke b"], "best": "joke b"}


def test_result_keys_follow_the_output_schemas_order(lg: Imports) -> None:
    """LangGraph: with ``output_schema``, the result lists the output schema's keys in its own order."""

    class Out(TypedDict):
        best: str
        jokes: list[str]

    result = _jokes(lg, output_schema=Out).invoke({}, {"configurable": {"thread_id": "t"}})
    assert list(result.items()) == [("best", "joke b"), ("jokes", ["joke a", "joke b"])]


def test_values_events_and_snapshots_follow_the_declaration_order(lg: Imports) -> None:
    """LangGraph: ``values`` events and ``get_state().values`` list channels in declaration order."""
    app = _jokes(lg)
    config = {"configurable": {"thread_id": "t"}}
    orders = [list(ev) for ev in app.stream({"best": "-"}, config, stream_mode="values")]
    assert orders == [
        ["jokes", "best"],
        ["subjects", "jokes", "best"],
        ["subjects", "jokes", "best"],
        ["subjects", "jokes", "best"],
    ]
    assert list(app.get_state(config).values) == ["subjects", "jokes", "best"]


def test_a_node_receives_its_state_in_declaration_order(lg: Imports) -> None:
    """LangGraph: a node's dict state lists the keys in declaration order (a reducer key unwritten too)."""
    seen: list[list[str]] = []

    def node(s: Jokes) -> dict[str, Any]:
        seen.append(list(s))
        return {}

    _one_node(lg, Jokes, node).invoke({"best": "b", "subjects": ["s"]})
    assert seen == [["subjects", "jokes", "best"]]


def test_a_pydantic_result_follows_the_fields_order(lg: Imports) -> None:
    """LangGraph: a pydantic state's result lists the fields in declaration order (a new-user
    trial's ``{'a': 'hi!', 'n': 1}``), the defaulted ``n`` absent from the input's ``values`` event."""

    class S(BaseModel):
        a: str
        n: int = 0

    app = _one_node(lg, S, lambda s: {"n": s.n + 1, "a": s.a + "!"})
    assert list(app.invoke({"a": "hi"}).items()) == [("a", "hi!"), ("n", 1)]
    assert list(app.stream({"a": "hi"}, stream_mode="values")) == [{"a": "hi"}, {"a": "hi!", "n": 1}]
