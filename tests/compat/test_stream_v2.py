"""``version="v2"``: LangGraph's v2 stream parts from ``stream``/``astream`` and its
``GraphOutput`` from ``invoke``/``ainvoke``; LangGraph's imports or graphq's give LangGraph's values."""

from __future__ import annotations

import asyncio
import operator
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.compat.conftest import Imports
from tests.workers import work
from tests.workflows.stream_v2 import build as build_v2_caller

REGISTRY = Registry.load(["tests.workflows.stream_v2"])


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def thread(tid: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": tid}}


def asking(lg: Imports) -> Any:
    """START → first (writes "a") → ask (``interrupt("ok?")``, writes the answer), with a checkpointer."""

    def ask(state: State) -> dict[str, Any]:
        return {"items": [lg.interrupt("ok?")]}

    g = lg.StateGraph(State)
    g.add_node("first", lambda state: {"items": ["a"]})
    g.add_node("ask", ask)
    g.add_edge(lg.START, "first")
    g.add_edge("first", "ask")
    return g.compile(checkpointer=lg.InMemorySaver())


def test_stream_v2_yields_typed_parts_and_moves_interrupts_out_of_values(lg: Imports) -> None:
    """LangGraph: ``{"type", "ns", "data"}`` per chunk, whatever the modes; a ``values`` part also has
    ``"interrupts"``, the open requests taken out of the state."""
    parts = list(asking(lg).stream({"items": []}, thread(), stream_mode=["values", "updates"], version="v2"))
    (request,) = parts[3]["data"]["__interrupt__"]
    assert request == lg.Interrupt(value="ok?", id=request.id)
    assert parts == [
        {"type": "values", "ns": (), "data": {"items": []}, "interrupts": ()},
        {"type": "updates", "ns": (), "data": {"first": {"items": ["a"]}}},
        {"type": "values", "ns": (), "data": {"items": ["a"]}, "interrupts": ()},
        {"type": "updates", "ns": (), "data": {"__interrupt__": (request,)}},
        {"type": "values", "ns": (), "data": {"items": ["a"]}, "interrupts": (request,)},
    ]


def test_stream_v2_with_one_mode_still_yields_parts(lg: Imports) -> None:
    chunks = list(asking(lg).stream({"items": []}, thread(), stream_mode="updates", version="v2"))
    assert [(c["type"], c["ns"], list(c["data"])) for c in chunks] == [
        ("updates", (), ["first"]),
        ("updates", (), ["__interrupt__"]),
    ]


def test_invoke_v2_returns_a_graph_output(lg: Imports) -> None:
    """LangGraph: ``GraphOutput(value=state, interrupts=(...))``, paused and then answered."""
    graph = asking(lg)
    paused = graph.invoke({"items": []}, thread(), version="v2")
    (request,) = paused.interrupts
    assert paused == lg.GraphOutput(value={"items": ["a"]}, interrupts=(lg.Interrupt("ok?", id=request.id),))
    done = graph.invoke(lg.Command(resume="yes"), thread(), version="v2")
    assert done == lg.GraphOutput(value={"items": ["a", "yes"]}, interrupts=())
    with pytest.warns(DeprecationWarning):
        assert done["items"] == ["a", "yes"]


def test_invoke_v2_with_another_mode_returns_the_parts(lg: Imports) -> None:
    chunks = asking(lg).invoke({"items": []}, thread(), stream_mode="updates", version="v2")
    assert chunks[0] == {"type": "updates", "ns": (), "data": {"first": {"items": ["a"]}}}
    assert [c["type"] for c in chunks] == ["updates", "updates"]


class Model(BaseModel):
    n: int = 0
    s: str = ""


@dataclass
class Data:
    n: int = 0
    s: str = ""


def _nested(lg: Imports, schema: Any) -> Any:
    inner = lg.StateGraph(schema)
    inner.add_node("add", lambda state: {"n": state.n + 1})
    inner.add_edge(lg.START, "add")
    g = lg.StateGraph(schema)
    g.add_node("sub", inner.compile())
    g.add_node("b", lambda state: {"s": "x"})
    g.add_edge(lg.START, "sub")
    g.add_edge("sub", "b")
    return g.compile(checkpointer=lg.InMemorySaver())


def _seen(part: dict[str, Any]) -> str:
    """A part as (type, namespace's node names, state), printed (a model's repr shows its class)."""
    data = part["data"] if part["type"] == "values" else part["data"]["values"]
    return repr((part["type"], [ns.split(":")[0] for ns in part["ns"]], data))


@pytest.mark.parametrize("schema", [Model, Data])
def test_v2_makes_model_and_dataclass_state_instances(lg: Imports, schema: type) -> None:
    """LangGraph: ``values`` data, checkpoint values (not the input's) and ``GraphOutput.value`` are made
    into the schema's class; ``subgraphs=True`` parts carry the subgraph's namespace."""
    graph = _nested(lg, schema)
    parts = graph.stream(
        {"n": 1}, thread(), stream_mode=["values", "checkpoints"], subgraphs=True, version="v2"
    )
    # compared as a multiset: where the input's checkpoint comes relative to the first values event differs
    # in v1 too (not a v2 matter)
    assert sorted(map(_seen, parts)) == sorted(
        map(
            repr,
            [
                ("checkpoints", [], {}),
                ("values", [], schema(n=1)),
                ("checkpoints", [], schema(n=1)),
                ("checkpoints", ["sub"], {}),
                ("values", ["sub"], schema(n=1)),
                ("checkpoints", ["sub"], schema(n=1)),
                ("values", ["sub"], schema(n=2)),
                ("checkpoints", ["sub"], schema(n=2)),
                ("values", [], schema(n=2)),
                ("checkpoints", [], schema(n=2)),
                ("values", [], schema(n=2, s="x")),
                ("checkpoints", [], schema(n=2, s="x")),
            ],
        )
    )
    assert graph.invoke({"n": 1}, thread("2"), version="v2") == lg.GraphOutput(value=schema(n=2, s="x"))


def test_astream_and_ainvoke_take_v2(lg: Imports) -> None:
    graph = asking(lg)

    async def run() -> tuple[list[Any], Any]:
        parts = [p async for p in graph.astream({"items": []}, thread("1"), version="v2")]
        return parts, await graph.ainvoke({"items": []}, thread("2"), version="v2")

    parts, output = asyncio.run(run())
    assert parts[0] == {"type": "updates", "ns": (), "data": {"first": {"items": ["a"]}}}
    assert [p["type"] for p in parts] == ["updates", "updates"]
    assert output.value == {"items": ["a"]}
    assert [i.value for i in output.interrupts] == ["ok?"]


def test_an_async_graph_awaited_on_the_loop_returns_a_graph_output(lg: Imports) -> None:
    """``ainvoke`` of a graph of async nodes without a checkpointer (graphq steps it on the caller's loop)."""

    async def node(state: State) -> dict[str, Any]:
        return {"items": ["x"]}

    g = lg.StateGraph(State)
    g.add_node("node", node)
    g.add_edge(lg.START, "node")
    output = asyncio.run(g.compile().ainvoke({"items": []}, version="v2"))
    assert output == lg.GraphOutput(value={"items": ["x"]}, interrupts=())


@pytest.mark.parametrize("version", ["v3", "V2", ""])
def test_an_unknown_version_is_v1(lg: Imports, version: str) -> None:
    """LangGraph: a version other than "v2" gives v1's shapes (stream's payloads, invoke's state), also
    under ainvoke of an async graph; graphq does the same and warns, naming the value."""
    g = lg.StateGraph(State)
    g.add_node("node", lambda state: {"items": ["x"]})
    g.add_edge(lg.START, "node")
    graph = g.compile()
    warned = rf"^version={version!r} is not 'v1' \(tuples\) or 'v2' \(stream parts\); the run gives v1's$"
    with lg.graphq_warns(warned):
        assert list(graph.stream({"items": []}, version=version)) == [{"node": {"items": ["x"]}}]
    with lg.graphq_warns(warned):
        assert graph.invoke({"items": []}, version=version) == {"items": ["x"]}

    async def node(state: State) -> dict[str, Any]:
        return {"items": ["y"]}

    a = lg.StateGraph(State)
    a.add_node("node", node)
    a.add_edge(lg.START, "node")
    with lg.graphq_warns(warned):
        assert asyncio.run(a.compile().ainvoke({"items": []}, version=version)) == {"items": ["y"]}


# --- inside a node, in process and on the queue ---

CALLED = [
    [{"seen": ["inner"]}, []],
    {"type": "values", "ns": None, "data": {"seen": []}, "interrupts": ()},
    {"type": "updates", "ns": None, "data": {"add": {"seen": ["inner"]}}},
    {"type": "values", "ns": None, "data": {"seen": ["inner"]}, "interrupts": ()},
]
"""What ``v2_caller``'s node records: the inner graph's GraphOutput (value, interrupts) and its v2 parts."""


def test_a_node_gets_v2_shapes_from_a_graph_it_runs(lg: Imports) -> None:
    assert build_v2_caller(lg).compile().invoke({"seen": []}) == {"seen": CALLED}


def test_a_queued_node_gets_v2_shapes_from_a_graph_it_runs(client: Client) -> None:
    """On the queue the node runs on a worker: the same parts in the run's result."""
    run_id = client.enqueue("v2_caller", {"seen": []})
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.result == {"seen": CALLED}


def test_each_part_has_the_keys_of_its_typed_dict(lg: Imports) -> None:
    """LangGraph exports a TypedDict per part type and ``StreamPart``, their union (generic in state and
    output): a program's annotations import them; each part has its TypedDict's keys."""
    kinds = {
        "values": lg.ValuesStreamPart,
        "updates": lg.UpdatesStreamPart,
        "custom": lg.CustomStreamPart,
        "checkpoints": lg.CheckpointStreamPart,
        "tasks": lg.TasksStreamPart,
        "debug": lg.DebugStreamPart,
        "messages": lg.MessagesStreamPart,
    }
    modes = ["values", "updates", "custom", "checkpoints", "tasks", "debug"]
    parts = list(asking(lg).stream({"items": []}, thread(), stream_mode=modes, version="v2"))
    assert sorted({p["type"] for p in parts}) == ["checkpoints", "debug", "tasks", "updates", "values"]
    assert all(set(p) == set(kinds[p["type"]].__annotations__) for p in parts)
    assert set(lg.MessagesStreamPart.__annotations__) == {"type", "ns", "data"}
    assert lg.StreamPart[State, State].__origin__ is lg.StreamPart
