"""State schemas as LangGraph's ``StateGraph`` reads them: root-channel state, input and output schemas,
node input schemas (private channels), and input keys outside the schema."""

from __future__ import annotations

import asyncio
import dataclasses
import operator
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel, ValidationError

from tests.compat.conftest import Imports


class Overall(TypedDict):
    question: str
    answer: str
    notes: str


class In(TypedDict):
    question: str


class Out(TypedDict):
    answer: str


class Private(TypedDict):
    secret: str


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


class Question(BaseModel):
    question: str


def _twice_reducer(a: list[str], b: list[str]) -> list[str]:
    return a + b + b


class OtherLog(TypedDict):
    log: Annotated[list[str], _twice_reducer]


class PlainLog(TypedDict):
    log: list[str]


class Parent(TypedDict, total=False):
    question: str
    answer: str
    other: str


class SubAll(TypedDict, total=False):
    question: str
    answer: str
    scratch: str


def _sub_first(state: In) -> dict[str, str]:
    return {"scratch": state["question"] + "!"}


def _sub_second(state: SubAll) -> dict[str, str]:
    return {"answer": state["scratch"] * 2}


class ModelState(BaseModel):
    question: str
    answer: str = ""
    notes: str = ""


class ModelOut(BaseModel):
    answer: str


def _twice(state: OtherLog) -> None:
    return None


def _count(state: PlainLog) -> dict[str, list[str]]:
    return {"log": [str(len(state["log"]))]}


# --------------------------------------------------------------------------------------------------------
# Root-channel state: the state is the value itself


def _root_list(lg: Imports) -> Any:
    builder = lg.StateGraph(Annotated[list, operator.add])
    builder.add_node("a", lambda s: ["a", len(s)])
    builder.add_node("b", lambda s: ["b"])
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", lg.END)
    return builder.compile()


def test_a_root_list_state_appends_each_update(lg: Imports) -> None:
    """LangGraph: StateGraph(Annotated[list, operator.add]) passes nodes the list and appends their lists."""
    assert _root_list(lg).invoke(["x"]) == ["x", "a", 1, "b"]


def test_a_root_int_state_is_replaced_by_each_node(lg: Imports) -> None:
    """LangGraph: StateGraph(int) passes the int and the node's return value is the new state."""
    builder = lg.StateGraph(int)
    builder.add_node("inc", lambda n: n + 1)
    builder.add_node("double", lambda n: n * 2)
    builder.add_edge(lg.START, "inc")
    builder.add_edge("inc", "double")
    assert builder.compile().invoke(4) == 10


def test_a_root_node_returning_none_keeps_the_value(lg: Imports) -> None:
    """LangGraph: a node of a root-channel graph that returns None writes nothing."""
    builder = lg.StateGraph(int)
    builder.add_node("noop", lambda n: None)
    builder.add_edge(lg.START, "noop")
    assert builder.compile().invoke(3) == 3


def test_a_root_dict_state_is_one_value(lg: Imports) -> None:
    """LangGraph: StateGraph(dict) is a root channel: a node's dict replaces the whole value."""
    builder = lg.StateGraph(dict)
    builder.add_node("a", lambda d: {"z": len(d)})
    builder.add_edge(lg.START, "a")
    assert builder.compile().invoke({"q": 1, "r": 2}) == {"z": 2}


def test_a_root_router_sees_the_value(lg: Imports) -> None:
    """LangGraph: a router of a root-channel graph receives the value itself."""
    builder = lg.StateGraph(Annotated[list, operator.add])
    builder.add_node("a", lambda s: [1])
    builder.add_conditional_edges(lg.START, lambda s: "a" if len(s) < 2 else lg.END)
    builder.add_edge("a", lg.END)
    graph = builder.compile()
    assert (graph.invoke([0]), graph.invoke([0, 0])) == ([0, 1], [0, 0])


def test_two_writes_to_a_root_last_value_conflict(lg: Imports) -> None:
    """LangGraph: two parallel writes to a root int state are an InvalidUpdateError."""
    builder = lg.StateGraph(int)
    builder.add_node("a", lambda n: n + 1)
    builder.add_node("b", lambda n: n + 2)
    builder.add_edge(lg.START, "a")
    builder.add_edge(lg.START, "b")
    with pytest.raises(lg.InvalidUpdateError):
        builder.compile().invoke(3)


def test_a_root_state_is_kept_by_the_checkpointer(lg: Imports) -> None:
    """LangGraph: a root-channel thread continues from its value: a second input appends to it."""
    builder = lg.StateGraph(Annotated[list, operator.add])
    builder.add_node("a", lambda s: [len(s)])
    builder.add_edge(lg.START, "a")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    cfg = {"configurable": {"thread_id": "root"}}
    assert graph.invoke(["x"], cfg) == ["x", 1]
    assert graph.invoke(["y"], cfg) == ["x", 1, "y", 3]


def test_a_root_state_interrupt_returns_only_the_interrupt(lg: Imports) -> None:
    """LangGraph: a paused root-channel graph returns {'__interrupt__': [...]}, and resuming returns the
    value."""

    def ask(s: list[Any]) -> list[Any]:
        return [lg.interrupt("why?")]

    builder = lg.StateGraph(Annotated[list, operator.add])
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    paused = graph.invoke(["q"], cfg)
    assert list(paused) == ["__interrupt__"]
    assert [i.value for i in paused["__interrupt__"]] == ["why?"]
    assert graph.invoke(lg.Command(resume="because"), cfg) == ["q", "because"]


# --------------------------------------------------------------------------------------------------------
# input_schema / output_schema and node input schemas


def _answer(lg: Imports, **schemas: Any) -> Any:
    seen: list[Any] = []

    def a(state: In) -> dict[str, str]:
        seen.append(dict(state))
        return {"notes": "n", "secret": "s"}

    def b(state: Private) -> dict[str, str]:
        seen.append(dict(state))
        return {"answer": "ans:" + state["secret"]}

    builder = lg.StateGraph(Overall, **schemas)
    builder.add_node("a", a)
    builder.add_node("b", b)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", lg.END)
    return builder.compile(), seen


def test_the_result_is_narrowed_to_the_output_schema(lg: Imports) -> None:
    """LangGraph: invoke returns only the output schema's keys; each node sees its own input schema's keys;
    a key declared only in a node's schema (secret) is a private channel."""
    graph, seen = _answer(lg, input_schema=In, output_schema=Out)
    assert graph.invoke({"question": "q"}) == {"answer": "ans:s"}
    assert seen == [{"question": "q"}, {"secret": "s"}]


def test_the_default_result_leaves_out_private_channels(lg: Imports) -> None:
    """LangGraph: without an output schema, the result has the state schema's keys, not private ones."""
    graph, _ = _answer(lg)
    assert graph.invoke({"question": "q"}) == {"question": "q", "notes": "n", "answer": "ans:s"}


def test_the_values_stream_shows_every_channel(lg: Imports) -> None:
    """LangGraph: stream_mode='values' shows every channel, private ones included, whatever the output
    schema."""
    graph, _ = _answer(lg, input_schema=In, output_schema=Out)
    assert list(graph.stream({"question": "q"}, stream_mode="values"))[-1] == {
        "question": "q",
        "notes": "n",
        "secret": "s",
        "answer": "ans:s",
    }


def test_a_result_without_output_values_is_none(lg: Imports) -> None:
    """LangGraph: invoke returns None when no key of the output schema has a value."""
    builder = lg.StateGraph(Overall, output_schema=Out)
    builder.add_node("a", lambda s: {"notes": "z"})
    builder.add_edge(lg.START, "a")
    assert builder.compile().invoke({"question": "q"}) is None


def test_an_output_schema_may_declare_its_own_keys(lg: Imports) -> None:
    """LangGraph: an output schema's keys are channels too, even when the state schema lacks them."""

    class Extra(TypedDict):
        extra: int

    builder = lg.StateGraph(Overall, output_schema=Extra)
    builder.add_node("a", lambda s: {"extra": 3})
    builder.add_edge(lg.START, "a")
    assert builder.compile().invoke({"question": "q"}) == {"extra": 3}


def test_a_paused_run_with_an_output_schema_returns_its_output_keys_and_the_interrupt(lg: Imports) -> None:
    """LangGraph: an interrupted run returns the output schema's values that are set plus '__interrupt__';
    the resumed run returns the output."""

    def ask(state: Overall) -> dict[str, str]:
        return {"answer": lg.interrupt("why?")}

    builder = lg.StateGraph(Overall, output_schema=Out)
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    assert list(graph.invoke({"question": "q"}, cfg)) == ["__interrupt__"]
    assert graph.invoke(lg.Command(resume="because"), cfg) == {"answer": "because"}


def test_add_node_input_schema_narrows_what_the_node_sees(lg: Imports) -> None:
    """LangGraph: add_node(..., input_schema=X) gives the node only X's keys."""
    seen: list[Any] = []
    builder = lg.StateGraph(Overall)
    builder.add_node("p", lambda s: seen.append(dict(s)) or {"answer": "1"}, input_schema=In)
    builder.add_edge(lg.START, "p")
    assert builder.compile().invoke({"question": "q", "notes": "z"}) == {
        "question": "q",
        "notes": "z",
        "answer": "1",
    }
    assert seen == [{"question": "q"}]


def test_a_pydantic_node_schema_gives_the_node_a_model(lg: Imports) -> None:
    """LangGraph: a node whose first parameter is a pydantic model receives an instance built from its
    keys."""
    seen: list[Any] = []

    def p(state: Question) -> dict[str, str]:
        seen.append(state)
        return {"answer": state.question.upper()}

    builder = lg.StateGraph(Overall)
    builder.add_node("p", p)
    builder.add_edge(lg.START, "p")
    assert builder.compile().invoke({"question": "q"}) == {"question": "q", "answer": "Q"}
    assert seen == [Question(question="q")]


def test_a_node_annotated_with_a_plain_dict_sees_the_state(lg: Imports) -> None:
    """LangGraph: a first-parameter annotation that is not a schema (dict) leaves the node the state's
    keys."""
    seen: list[Any] = []

    def d(state: dict) -> None:  # type: ignore[type-arg]
        seen.append(dict(state))

    builder = lg.StateGraph(Overall)
    builder.add_node("d", d)
    builder.add_edge(lg.START, "d")
    builder.compile().invoke({"question": "q"})
    assert seen == [{"question": "q"}]


def test_a_router_sees_the_state_schema_not_its_nodes_schema(lg: Imports) -> None:
    """LangGraph: a node's router receives the graph's state (its keys), not the node's narrowed input."""
    seen: list[Any] = []

    def n(state: In) -> dict[str, str]:
        return {"answer": "a"}

    builder = lg.StateGraph(Overall)
    builder.add_node("n", n)
    builder.add_edge(lg.START, "n")
    builder.add_conditional_edges("n", lambda s: seen.append(dict(s)) or lg.END)
    builder.compile().invoke({"question": "q"})
    assert seen == [{"question": "q", "answer": "a"}]


def test_a_pydantic_input_schema_instance_is_an_input(lg: Imports) -> None:
    """LangGraph: the input may be an instance of a pydantic input schema."""
    builder = lg.StateGraph(Overall, input_schema=Question)
    builder.add_node("a", lambda s: {"answer": s["question"] * 2})
    builder.add_edge(lg.START, "a")
    assert builder.compile().invoke(Question(question="q")) == {"question": "q", "answer": "qq"}


@pytest.mark.parametrize(
    ("schemas", "extra"), [({"input_schema": In}, {"answer": "x"}), ({}, {"bogus": 1})], ids=["In", "Overall"]
)
def test_input_keys_outside_the_input_schema(
    lg: Imports, schemas: dict[str, Any], extra: dict[str, Any]
) -> None:
    """LangGraph: input keys outside the input schema are dropped silently (the node never sees them, the
    state never holds them); graphq refuses them only at enqueue."""
    builder = lg.StateGraph(Overall, **schemas)
    builder.add_node("a", lambda s: {"notes": ",".join(sorted(s))})
    builder.add_edge(lg.START, "a")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"question": "q", **extra}, config) == {"question": "q", "notes": "question"}
    assert graph.get_state(config).values == {"question": "q", "notes": "question"}


def test_two_schemas_declaring_one_key_with_different_reducers_are_refused(lg: Imports) -> None:
    """LangGraph: a node schema that redeclares a channel with another reducer is a ValueError."""

    builder = lg.StateGraph(Log)
    with pytest.raises(ValueError):
        builder.add_node("n", _twice)


def test_a_node_schema_redeclaring_a_reducer_channel_as_plain_is_fine(lg: Imports) -> None:
    """LangGraph: a schema redeclaring a reducer channel without its reducer keeps the reducer."""

    builder = lg.StateGraph(Log)
    builder.add_node("n", _count)
    builder.add_edge(lg.START, "n")
    assert builder.compile().invoke({"log": ["a"]}) == {"log": ["a", "1"]}


# --------------------------------------------------------------------------------------------------------
# context_schema and Runtime


@dataclasses.dataclass
class Ctx:
    user: str
    n: int = 1


class ModelCtx(BaseModel):
    user: str


class Out1(TypedDict, total=False):
    out: str


def _reads_context(lg: Imports, context_schema: Any = None) -> Any:
    def node(state: Out1, runtime) -> dict[str, str]:  # type: ignore[no-untyped-def]
        return {"out": repr(runtime.context)}

    builder = lg.StateGraph(Out1, context_schema=context_schema)
    builder.add_node("node", node)
    builder.add_edge(lg.START, "node")
    return builder.compile()


@pytest.mark.parametrize(
    ("schema", "context", "seen"),
    [
        (Ctx, Ctx("ann"), "Ctx(user='ann', n=1)"),
        (Ctx, {"user": "bo", "n": 2}, "Ctx(user='bo', n=2)"),
        (ModelCtx, {"user": "cy"}, "ModelCtx(user='cy')"),
        (None, {"user": "di"}, "{'user': 'di'}"),
        (None, None, "None"),
    ],
)
def test_a_runtime_parameter_reads_the_run_context(lg: Imports, schema: Any, context: Any, seen: str) -> None:
    """LangGraph: a node's runtime parameter carries invoke(context=...); a dict is made into a dataclass or
    pydantic context_schema; no context is None."""
    assert _reads_context(lg, schema).invoke({}, context=context) == {"out": seen}


@pytest.mark.parametrize(
    ("schema", "context", "error", "message"),
    [
        (Ctx, {"nobody": 1}, TypeError, "Ctx.__init__() got an unexpected keyword argument 'nobody'"),
        (ModelCtx, {"nobody": 1}, ValidationError, "1 validation error for ModelCtx\nuser\n  Field required"),
        (ModelCtx, {"user": 3}, ValidationError, "1 validation error for ModelCtx\nuser\n  Input should be"),
    ],
)
@pytest.mark.parametrize("call", ["invoke", "stream", "ainvoke"])
def test_a_context_that_does_not_fit_its_schema(
    lg: Imports, schema: Any, context: Any, error: type[Exception], message: str, call: str
) -> None:
    """LangGraph: a dict context that does not fit a dataclass context_schema is the dataclass's TypeError,
    one that does not fit a pydantic model is pydantic's ValidationError (graphq's enqueue refuses it with a
    ConfigError instead)."""
    graph = _reads_context(lg, schema)
    runs = {
        "invoke": lambda: graph.invoke({}, context=context),
        "stream": lambda: list(graph.stream({}, context=context)),
        "ainvoke": lambda: asyncio.run(graph.ainvoke({}, context=context)),
    }
    with pytest.raises(error) as info:
        runs[call]()
    assert type(info.value) is (TypeError if error is TypeError else ValidationError)
    assert str(info.value).startswith(message)


def test_get_runtime_gives_the_context_and_the_stream_writer(lg: Imports) -> None:
    """LangGraph: get_runtime() in a node returns its Runtime: .context, and .stream_writer emitting custom
    events."""

    def node(state: Out1) -> dict[str, str]:
        runtime = lg.get_runtime()
        runtime.stream_writer("hey")
        return {"out": repr(runtime.context)}

    builder = lg.StateGraph(Out1)
    builder.add_node("node", node)
    builder.add_edge(lg.START, "node")
    events = list(builder.compile().stream({}, context="ctx", stream_mode=["custom", "values"]))
    assert events == [("custom", "hey"), ("values", {"out": "'ctx'"})]


def test_subgraphs_and_invoked_graphs_inherit_the_context(lg: Imports) -> None:
    """LangGraph: a subgraph node and a graph invoked inside a node see the parent run's context."""
    inner = _reads_context(lg)
    as_node = lg.StateGraph(Out1)
    as_node.add_node("sub", inner)
    as_node.add_edge(lg.START, "sub")
    invoking = lg.StateGraph(Out1)
    invoking.add_node("call", lambda s: inner.invoke({}))
    invoking.add_edge(lg.START, "call")
    assert as_node.compile().invoke({}, context={"k": 1}) == {"out": "{'k': 1}"}
    assert invoking.compile().invoke({}, context={"k": 2}) == {"out": "{'k': 2}"}


def test_a_router_taking_runtime_reads_the_context(lg: Imports) -> None:
    """LangGraph: a router's runtime parameter carries the run context."""

    def route(state: Out1, runtime) -> str:  # type: ignore[no-untyped-def]
        return lg.END if runtime.context == "stop" else "b"

    builder = lg.StateGraph(Out1)
    builder.add_node("a", lambda s: {"out": "a"})
    builder.add_node("b", lambda s: {"out": "b"})
    builder.add_edge(lg.START, "a")
    builder.add_conditional_edges("a", route)
    graph = builder.compile()
    assert (graph.invoke({}, context="stop"), graph.invoke({}, context="go")) == ({"out": "a"}, {"out": "b"})


def test_a_runtime_built_by_hand_has_langgraphs_defaults(lg: Imports) -> None:
    """LangGraph: Runtime() has context None and store None; Runtime(context=x) keeps x."""
    assert (lg.Runtime().context, lg.Runtime().store, lg.Runtime(context=3).context) == (None, None, 3)


def test_a_root_state_snapshot_is_the_value(lg: Imports) -> None:
    """LangGraph: get_state(config).values of a root-channel thread is the value; update_state(config, v,
    as_node) reduces v into it."""
    builder = lg.StateGraph(Annotated[list, operator.add])
    builder.add_node("a", lambda s: ["a"])
    builder.add_edge(lg.START, "a")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    cfg = {"configurable": {"thread_id": "snap"}}
    graph.invoke(["x"], cfg)
    assert graph.get_state(cfg).values == ["x", "a"]
    graph.update_state(cfg, ["u"], as_node="a")
    assert graph.get_state(cfg).values == ["x", "a", "u"]


def test_a_root_state_streams_its_updates_and_values(lg: Imports) -> None:
    """LangGraph: a root-channel graph's updates events are {node: its return value}, its values events the
    value after each step."""
    graph = _root_list(lg)
    assert list(graph.stream(["x"], stream_mode="updates")) == [{"a": ["a", 1]}, {"b": ["b"]}]
    assert list(graph.stream(["x"], stream_mode="values")) == [["x"], ["x", "a", 1], ["x", "a", 1, "b"]]


def test_a_subgraph_with_its_own_input_and_output_schemas(lg: Imports) -> None:
    """LangGraph: a subgraph node takes the parent's state through its input schema and hands back only its
    output schema's keys (its private scratch key stays inside)."""
    sub = lg.StateGraph(SubAll, input_schema=In, output_schema=Out)
    sub.add_node("first", _sub_first)
    sub.add_node("second", _sub_second)
    sub.add_edge(lg.START, "first")
    sub.add_edge("first", "second")
    builder = lg.StateGraph(Parent)
    builder.add_node("sub", sub.compile())
    builder.add_edge(lg.START, "sub")
    graph = builder.compile()
    assert graph.invoke({"question": "q", "other": "o"}) == {"question": "q", "answer": "q!q!", "other": "o"}
    assert list(graph.stream({"question": "q", "other": "o"})) == [{"sub": {"answer": "q!q!"}}]


def test_a_pydantic_state_with_a_typeddict_node_schema_and_a_model_output(lg: Imports) -> None:
    """LangGraph: on a pydantic state a node annotated with a TypedDict gets a dict of its keys, an
    unannotated node the model, and a pydantic output schema narrows the result (a dict)."""
    seen: list[Any] = []

    def a(state: In) -> dict[str, str]:
        seen.append(state)
        return {"notes": "n"}

    def b(state):  # type: ignore[no-untyped-def]
        seen.append(state)
        return {"answer": state.question + state.notes}

    builder = lg.StateGraph(ModelState, output_schema=ModelOut)
    builder.add_node("a", a)
    builder.add_node("b", b)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    assert builder.compile().invoke({"question": "q"}) == {"answer": "qn"}
    assert seen == [{"question": "q"}, ModelState(question="q", notes="n")]


def test_a_node_key_that_is_no_channel_is_ignored(lg: Imports) -> None:
    """LangGraph: a node's keys that are no channel are ignored (its other keys are written); graphq logs a
    warning naming them (in process and on a queue worker)."""
    builder = lg.StateGraph(Overall)
    builder.add_node("a", lambda s: {"answer": "a", "anwser": "typo"})
    builder.add_node("b", lambda s: {"notes": ",".join(sorted(s))})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    graph = builder.compile()
    assert graph.invoke({"question": "q"}) == {"question": "q", "answer": "a", "notes": "answer,question"}
