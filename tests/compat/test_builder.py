"""The builder as LangGraph's ``StateGraph``: deferred nodes, ``config`` / ``writer`` parameters, node
metadata, ``retry_policy``, ``set_finish_point``, ``set_conditional_entry_point``, ``validate`` and
destinations read from annotations."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.compat.conftest import Imports
from tests.workers import work
from tests.workflows import start_router

REGISTRY = Registry.load(["tests.workflows.start_router"])


class Log(TypedDict):
    log: Annotated[list[Any], operator.add]


def _say(name: str) -> Any:
    return lambda s: {"log": [name]}


# --------------------------------------------------------------------------------------------------------
# add_node(..., defer=True)


def _uneven(lg: Imports, defer: bool) -> Any:
    builder = lg.StateGraph(Log)
    for name in ("a", "a2", "a3", "b"):
        builder.add_node(name, _say(name))
    builder.add_node("join", lambda s: {"log": [f"join:{len(s['log'])}"]}, defer=defer)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "a2")
    builder.add_edge("a2", "a3")
    builder.add_edge("a3", "join")
    builder.add_edge(lg.START, "b")
    builder.add_edge("b", "join")
    builder.add_edge("join", lg.END)
    return builder.compile()


def test_without_defer_a_join_of_uneven_branches_runs_twice(lg: Imports) -> None:
    """LangGraph: a node with edges from a short and a long branch runs after each of them."""
    assert _uneven(lg, False).invoke({"log": []}) == {"log": ["a", "b", "a2", "join:2", "a3", "join:5"]}


def test_a_deferred_join_runs_once_after_the_longest_branch(lg: Imports) -> None:
    """LangGraph: a deferred node runs once, when nothing else is pending."""
    graph = _uneven(lg, True)
    assert graph.invoke({"log": []}) == {"log": ["a", "b", "a2", "a3", "join:4"]}
    assert [list(u) for u in graph.stream({"log": []}, stream_mode="updates")] == [
        ["a"],
        ["b"],
        ["a2"],
        ["a3"],
        ["join"],
    ]


def test_a_deferred_join_of_a_list_edge_waits_for_the_finish(lg: Imports) -> None:
    """LangGraph: add_edge([a2, b], join) into a deferred node fires once both ran, at the finish, and its
    successor follows."""
    builder = lg.StateGraph(Log)
    for name in ("a", "a2", "b", "after"):
        builder.add_node(name, _say(name))
    builder.add_node("join", _say("join"), defer=True)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "a2")
    builder.add_edge(lg.START, "b")
    builder.add_edge(["a2", "b"], "join")
    builder.add_edge("join", "after")
    assert builder.compile().invoke({"log": []}) == {"log": ["a", "b", "a2", "join", "after"]}


def test_a_deferred_node_waits_out_a_loop(lg: Imports) -> None:
    """LangGraph: a deferred node triggered at the start runs only after a loop of other nodes ends."""
    builder = lg.StateGraph(Log)
    builder.add_node("a", _say("a"))
    builder.add_node("b", _say("b"))
    builder.add_node("d", _say("d"), defer=True)
    builder.add_edge(lg.START, "a")
    builder.add_edge(lg.START, "d")
    builder.add_edge("a", "b")
    builder.add_conditional_edges("b", lambda s: "a" if s["log"].count("a") < 2 else lg.END)
    assert builder.compile().invoke({"log": []}) == {"log": ["a", "b", "a", "b", "d"]}


def test_a_deferred_map_reduce_join_runs_after_every_send(lg: Imports) -> None:
    """LangGraph: Send workers of one fan-out feed a deferred reducer that runs once after all of them."""
    builder = lg.StateGraph(Log)
    builder.add_node("work", lambda n: {"log": [n * 10]})
    builder.add_node("slow", _say("slow"))
    builder.add_node("slower", _say("slower"))
    builder.add_node(
        "reduce", lambda s: {"log": [sum(x for x in s["log"] if isinstance(x, int))]}, defer=True
    )
    builder.add_conditional_edges(lg.START, lambda s: [lg.Send("work", 1), lg.Send("work", 2), "slow"])
    builder.add_edge("slow", "slower")
    builder.add_edge("work", "reduce")
    builder.add_edge("slower", "reduce")
    result = builder.compile().invoke({"log": []})["log"]
    assert (sorted(map(str, result[:-1])), result[-1]) == (["10", "20", "slow", "slower"], 30)


def test_a_deferred_node_keeps_its_place_across_a_checkpointed_pause(lg: Imports) -> None:
    """LangGraph: a deferred node held while another branch pauses in interrupt() runs after the resume."""

    def ask(s: Log) -> dict[str, list[Any]]:
        return {"log": [lg.interrupt("go?")]}

    builder = lg.StateGraph(Log)
    builder.add_node("a", _say("a"))
    builder.add_node("ask", ask)
    builder.add_node("join", _say("join"), defer=True)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "ask")
    builder.add_edge(lg.START, "join")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    cfg = {"configurable": {"thread_id": "d"}}
    assert list(graph.invoke({"log": []}, cfg)) == ["log", "__interrupt__"]
    assert graph.invoke(lg.Command(resume="yes"), cfg) == {"log": ["a", "yes", "join"]}


# --------------------------------------------------------------------------------------------------------
# config / writer parameters


def test_a_node_taking_config_gets_the_run_config(lg: Imports) -> None:
    """LangGraph: a node parameter named config receives the run config (configurable readable as a dict)."""

    def node(state: Log, config) -> dict[str, list[Any]]:
        return {"log": [config["configurable"]["user"]]}

    builder = lg.StateGraph(Log)
    builder.add_node("node", node)
    builder.add_edge(lg.START, "node")
    assert builder.compile().invoke({"log": []}, {"configurable": {"user": "ann"}}) == {"log": ["ann"]}


def test_a_keyword_only_writer_and_config_are_injected(lg: Imports) -> None:
    """LangGraph: keyword-only writer and config parameters get the stream writer and the config."""

    def node(state: Log, *, writer, config) -> None:
        writer({"user": config["configurable"]["user"], "n": len(state["log"])})

    builder = lg.StateGraph(Log)
    builder.add_node("node", node)
    builder.add_edge(lg.START, "node")
    chunks = builder.compile().stream({"log": [1]}, {"configurable": {"user": "bo"}}, stream_mode="custom")
    assert list(chunks) == [{"user": "bo", "n": 1}]


def test_a_writer_annotated_stream_writer_emits_custom_events(lg: Imports) -> None:
    """LangGraph: a writer parameter emits custom stream chunks next to the node's update."""

    def node(state: Log, writer) -> dict[str, list[Any]]:
        writer("working")
        return {"log": ["done"]}

    builder = lg.StateGraph(Log)
    builder.add_node("node", node)
    builder.add_edge(lg.START, "node")
    events = list(builder.compile().stream({"log": []}, stream_mode=["custom", "updates"]))
    assert events == [("custom", "working"), ("updates", {"node": {"log": ["done"]}})]


def test_a_writer_outside_streaming_is_harmless(lg: Imports) -> None:
    """LangGraph: a node's writer() with invoke (no custom stream) changes nothing."""

    def node(state: Log, writer) -> dict[str, list[Any]]:
        writer("ignored")
        return {"log": ["x"]}

    builder = lg.StateGraph(Log)
    builder.add_node("node", node)
    builder.add_edge(lg.START, "node")
    assert builder.compile().invoke({"log": []}) == {"log": ["x"]}


def test_a_router_taking_config_gets_the_run_config(lg: Imports) -> None:
    """LangGraph: a router parameter named config receives the run config."""

    def route(state: Log, config) -> str:
        return "yes" if config["configurable"].get("go") else lg.END

    builder = lg.StateGraph(Log)
    builder.add_node("start", _say("start"))
    builder.add_node("yes", _say("yes"))
    builder.add_edge(lg.START, "start")
    builder.add_conditional_edges("start", route)
    graph = builder.compile()
    assert graph.invoke({"log": []}, {"configurable": {"go": True}}) == {"log": ["start", "yes"]}
    assert graph.invoke({"log": []}) == {"log": ["start"]}


def test_a_router_taking_writer_emits_custom_events(lg: Imports) -> None:
    """LangGraph: a router's writer parameter emits custom stream chunks."""

    def route(state: Log, writer) -> str:
        writer("routing")
        return lg.END

    builder = lg.StateGraph(Log)
    builder.add_node("s", _say("s"))
    builder.add_edge(lg.START, "s")
    builder.add_conditional_edges("s", route)
    assert list(builder.compile().stream({"log": []}, stream_mode="custom")) == ["routing"]


def test_a_second_positional_parameter_of_another_name(lg: Imports) -> None:
    """LangGraph: a node's second parameter not named config is not filled (a TypeError); graphq passes it
    the config (graphq's fn(state, cfg) form, kept)."""

    def node(state: Log, cfg: Any) -> dict[str, list[Any]]:
        return {"log": [cfg["configurable"]["user"]]}

    builder = lg.StateGraph(Log)
    builder.add_node("node", node)
    builder.add_edge(lg.START, "node")
    graph = builder.compile()
    if lg.is_langgraph:
        with pytest.raises(TypeError, match="missing 1 required positional argument: 'cfg'"):
            graph.invoke({"log": []}, {"configurable": {"user": "cy"}})
    else:
        assert graph.invoke({"log": []}, {"configurable": {"user": "cy"}}) == {"log": ["cy"]}


def test_a_router_from_start_runs_in_the_start_task(lg: Imports) -> None:
    """LangGraph: a router from START runs in the input's ``__start__`` task: its ``config`` is that task's
    (the run's metadata, tags and ``configurable``, the task's ``langgraph_*`` keys of the input's step, the
    tag ``langsmith:hidden``) and the chunks of its ``writer`` come first in the ``custom`` stream."""
    start_router.SEEN.clear()
    graph = start_router.build(lg).compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "t", "go": 1}, "metadata": {"team": "red"}, "tags": ["mine"]}
    assert list(graph.stream({"log": []}, config, stream_mode=["custom", "values"])) == [
        ("custom", {"route": "a"}),
        ("values", {"log": []}),
        ("values", {"log": ["a"]}),
    ]
    again = {"configurable": {"thread_id": "t"}}
    assert list(graph.stream({"log": ["x"]}, again, stream_mode="custom", version="v2")) == [
        {"type": "custom", "ns": (), "data": {"route": "b"}}
    ]
    seen = start_router.SEEN
    assert seen == [start_seen(0, "t", go=1, team="red", tags=("mine",)), start_seen(3, "t")]


def start_seen(
    step: int, thread: str, go: int | None = None, tags: tuple[str, ...] = (), **metadata: Any
) -> dict[str, Any]:
    """What :func:`tests.workflows.start_router.shown` gives for the config of the ``__start__`` task of
    step ``step``."""
    return {
        "metadata": {
            **metadata,
            "thread_id": thread,
            "langgraph_step": step,
            "langgraph_node": "__start__",
            "langgraph_triggers": ("__start__",),
            "langgraph_path": ("__pregel_pull", "__start__"),
            "langgraph_checkpoint_ns": "__start__:<id>",
        },
        "tags": [*tags, "langsmith:hidden"],
        "configurable": {"thread_id": thread, "go": go, "ns": "__start__:<id>"},
    }


def test_a_router_from_start_reads_get_config_and_get_stream_writer(lg: Imports) -> None:
    """LangGraph: ``get_config()`` and ``get_stream_writer()`` work in a router from START too; in a
    subgraph its chunks show under the subgraph's namespace."""

    def route(state: Log) -> str:
        lg.get_stream_writer()({"node": lg.get_config()["metadata"]["langgraph_node"]})
        return "a"

    inner = lg.StateGraph(Log)
    inner.add_node("a", _say("a"))
    inner.add_conditional_edges(lg.START, route, ["a"])
    outer = lg.StateGraph(Log)
    outer.add_node("sub", inner.compile())
    outer.add_edge(lg.START, "sub")
    graph = outer.compile()
    chunks = list(graph.stream({"log": []}, stream_mode="custom", subgraphs=True))
    assert [(ns[0].partition(":")[0], chunk) for ns, chunk in chunks] == [("sub", {"node": "__start__"})]
    assert graph.invoke({"log": []}, stream_mode="custom") == []


def test_a_queued_runs_router_from_start_writes_into_its_events(client: Client) -> None:
    """On the queue the first step job applies the input: the router from START gets the run's config and
    its chunks are the run's ``custom`` events of the input's step, before its ``values`` event."""
    start_router.SEEN.clear()
    run_id = client.enqueue(
        "start_router", {"log": []}, thread_id="q", config={"configurable": {"go": 1}, "tags": ["mine"]}
    )
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result == {"log": ["a"]}
    events = [(e.mode, e.step, e.data) for e in read_events(client.kv, "q", run_id) if e.step == 0]
    assert events[:2] == [
        ("custom", 0, {"node": "__start__", "chunk": {"route": "a"}}),
        ("values", 0, events[1][2]),
    ]
    expected = start_seen(0, "q", go=1, tags=("mine",))
    del expected["metadata"]["thread_id"]  # as a queued run's nodes see it: its configurable has no thread
    seen = start_router.SEEN
    assert seen == [expected]


def test_node_metadata_is_in_the_config_metadata(lg: Imports) -> None:
    """LangGraph: add_node(..., metadata=...) puts the keys in the node's config['metadata']."""

    def node(state: Log, config) -> dict[str, list[Any]]:
        return {"log": [config["metadata"]["team"]]}

    builder = lg.StateGraph(Log)
    builder.add_node("node", node, metadata={"team": "red"})
    builder.add_edge(lg.START, "node")
    assert builder.compile().invoke({"log": []}) == {"log": ["red"]}


# --------------------------------------------------------------------------------------------------------
# retry_policy, set_finish_point, validate, destinations from annotations


def test_retry_policy_with_langgraph_field_names(lg: Imports) -> None:
    """LangGraph: add_node(..., retry_policy=RetryPolicy(initial_interval=..., max_attempts=...,
    retry_on=[...])) tries the node again on the listed errors."""
    tries: list[int] = []

    def flaky(state: Log) -> dict[str, list[Any]]:
        tries.append(1)
        if len(tries) < 3:
            raise ConnectionError("down")
        return {"log": [len(tries)]}

    policy = lg.RetryPolicy(initial_interval=0.001, max_attempts=3, jitter=False, retry_on=[ConnectionError])
    builder = lg.StateGraph(Log)
    builder.add_node("flaky", flaky, retry_policy=policy)
    builder.add_edge(lg.START, "flaky")
    assert builder.compile().invoke({"log": []}) == {"log": [3]}


def test_set_finish_point_ends_the_graph_after_the_node(lg: Imports) -> None:
    """LangGraph: set_entry_point / set_finish_point are START and END edges."""
    builder = lg.StateGraph(Log)
    builder.add_node("a", _say("a"))
    builder.set_entry_point("a")
    builder.set_finish_point("a")
    assert builder.compile().invoke({"log": []}) == {"log": ["a"]}


def test_set_conditional_entry_point_routes_from_start(lg: Imports) -> None:
    """LangGraph: set_conditional_entry_point(router, path_map) is add_conditional_edges(START, ...); the
    builder is returned for chaining, and a path map translates the router's labels."""
    builder = lg.StateGraph(Log)
    builder.add_node("a", _say("a"))
    builder.add_node("b", _say("b"))
    assert (
        builder.set_conditional_entry_point(
            lambda s: "go-b" if s["log"] else "go-a", {"go-a": "a", "go-b": "b", "stop": lg.END}
        )
        is builder
    )
    graph = builder.compile()
    assert graph.invoke({"log": []}) == {"log": ["a"]}
    assert graph.invoke({"log": ["x"]}) == {"log": ["x", "b"]}


def test_validate_returns_the_builder_or_raises_a_value_error(lg: Imports) -> None:
    """LangGraph: validate() returns the builder for a valid graph and raises a ValueError for one without
    an entry."""
    builder = lg.StateGraph(Log)
    builder.add_node("a", _say("a"))
    with pytest.raises(ValueError):
        builder.validate()
    builder.add_edge(lg.START, "a")
    assert builder.validate() is builder


def _pick(state: Log) -> Literal["left", "right"]:
    return "left" if not state["log"] else "right"


def test_a_router_returning_literal_names_its_destinations(lg: Imports) -> None:
    """LangGraph: a router annotated -> Literal['left', 'right'] gets those as its path map."""
    builder = lg.StateGraph(Log)
    builder.add_node("left", _say("left"))
    builder.add_node("right", _say("right"))
    builder.add_conditional_edges(lg.START, _pick)
    graph = builder.compile()
    assert (graph.invoke({"log": []}), graph.invoke({"log": [0]})) == (
        {"log": ["left"]},
        {"log": [0, "right"]},
    )


def _go(state: Log) -> Any:
    return None


def test_a_union_command_annotation_declares_destinations(lg: Imports) -> None:
    """LangGraph: a node annotated -> Command[Literal['b']] | None reaches b through Command(goto=...)
    without an edge."""

    def a(state: Log) -> lg.Command[Literal["b"]] | None:  # type: ignore[name-defined]
        return lg.Command(goto="b", update={"log": ["a"]})

    a.__annotations__["return"] = lg.Command[Literal["b"]] | None
    builder = lg.StateGraph(Log)
    builder.add_node("a", a)
    builder.add_node("b", _say("b"))
    builder.add_edge(lg.START, "a")
    assert builder.compile().invoke({"log": []}) == {"log": ["a", "b"]}


def test_an_async_node_and_router_get_config_writer_and_runtime(lg: Imports) -> None:
    """LangGraph: under astream, async nodes and routers get config, writer and runtime as sync ones do."""

    async def node(state: Log, config, writer, runtime) -> dict[str, list[Any]]:  # type: ignore[no-untyped-def]
        writer("w")
        return {"log": [config["configurable"]["u"], runtime.context]}

    async def route(state: Log, config) -> str:  # type: ignore[no-untyped-def]
        return lg.END

    builder = lg.StateGraph(Log)
    builder.add_node("node", node)
    builder.add_edge(lg.START, "node")
    builder.add_conditional_edges("node", route)
    graph = builder.compile()

    async def collect() -> list[Any]:
        cfg = {"configurable": {"u": 2}}
        return [
            e async for e in graph.astream({"log": []}, cfg, context="c", stream_mode=["custom", "updates"])
        ]

    events = asyncio.run(collect())
    assert events == [("custom", "w"), ("updates", {"node": {"log": [2, "c"]}})]


def test_a_router_returning_a_list_runs_each_destination(lg: Imports) -> None:
    """LangGraph: a router may return a list of names (with a list path_map): each runs in the next step."""
    builder = lg.StateGraph(Log)
    for name in ("s", "a", "b"):
        builder.add_node(name, _say(name))
    builder.add_edge(lg.START, "s")
    builder.add_conditional_edges("s", lambda s: ["a", "b"], ["a", "b"])
    assert builder.compile().invoke({"log": []}) == {"log": ["s", "a", "b"]}


def test_a_path_map_translates_labels_and_lets_sends_through(lg: Imports) -> None:
    """LangGraph: a dict path_map maps a router's labels to nodes; a Send it returns goes to its node."""
    builder = lg.StateGraph(Log)
    builder.add_node("s", _say("s"))
    builder.add_node("done", _say("done"))
    builder.add_node("work", lambda n: {"log": [n]})
    builder.add_edge(lg.START, "s")
    builder.add_conditional_edges(
        "s", lambda s: ["finish", lg.Send("work", 7)], {"finish": "done", "w": "work"}
    )
    assert sorted(map(str, builder.compile().invoke({"log": []})["log"])) == ["7", "done", "s"]
