"""Streaming: ``stream``'s modes, ``subgraphs=True``, interrupts in the stream, ``Interrupt``
objects and ``invoke``'s ``stream_mode``; the same program, LangGraph's imports or graphq's, gives LangGraph's
chunks. Chunks holding random ids (task, checkpoint, interrupt ids) are compared by shape and by relation."""

from __future__ import annotations

import operator
import threading
import time
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]
    n: int


class Text(TypedDict):
    text: str


def chain(lg: Imports, *nodes: tuple[str, Any], checkpointer: Any = None) -> Any:
    builder = lg.StateGraph(State)
    previous = lg.START
    for name, fn in nodes:
        builder.add_node(name, fn)
        builder.add_edge(previous, name)
        previous = name
    return builder.compile(checkpointer=checkpointer)


def parallel(lg: Imports, *nodes: tuple[str, Any]) -> Any:
    builder = lg.StateGraph(State)
    for name, fn in nodes:
        builder.add_node(name, fn)
        builder.add_edge(lg.START, name)
    return builder.compile(checkpointer=lg.InMemorySaver())


def texts(lg: Imports, *names: str) -> Any:
    """A compiled chain over ``Text`` whose nodes append their names."""
    builder = lg.StateGraph(Text)
    previous = lg.START
    for name in names:
        builder.add_node(name, lambda s, name=name: {"text": s["text"] + name})
        builder.add_edge(previous, name)
        previous = name
    return builder.compile()


def thread(name: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def a_then_b(lg: Imports, **kw: Any) -> Any:
    return chain(lg, ("a", lambda s: {"items": ["a"], "n": 1}), ("b", lambda s: {"items": ["b"]}), **kw)


def asking(question: str) -> Any:
    def node(state: State) -> dict[str, Any]:
        from_human = ask(question)
        return {"items": [from_human]}

    return node


_interrupt: Any = None


def ask(question: str) -> Any:
    return _interrupt(question)


@pytest.fixture(autouse=True)
def _interrupt_of(lg: Imports) -> None:
    global _interrupt
    _interrupt = lg.interrupt


# --- the default mode and updates ---


def test_the_default_mode_is_updates(lg: Imports) -> None:
    """LangGraph: StateGraph's stream yields ``{node: update}`` per task when no stream_mode is given."""
    assert list(a_then_b(lg).stream({"items": ["in"]})) == [
        {"a": {"items": ["a"], "n": 1}},
        {"b": {"items": ["b"]}},
    ]


@pytest.mark.parametrize("returned", [None, {}])
def test_a_node_that_writes_nothing_gives_none(lg: Imports, returned: Any) -> None:
    """LangGraph: a node returning None (or an empty update) appears in ``updates`` as ``{node: None}``."""
    graph = chain(lg, ("quiet", lambda s: returned), ("b", lambda s: {"n": 2}))
    assert list(graph.stream({"items": []})) == [{"quiet": None}, {"b": {"n": 2}}]


def test_a_goto_only_command_gives_none(lg: Imports) -> None:
    """LangGraph: a node returning ``Command(goto=...)`` without an update appears as ``{node: None}``."""
    builder = lg.StateGraph(State)
    builder.add_node("jump", lambda s: lg.Command(goto="land"), destinations=("land",))
    builder.add_node("land", lambda s: {"n": 5})
    builder.add_edge(lg.START, "jump")
    assert list(builder.compile().stream({"items": []})) == [{"jump": None}, {"land": {"n": 5}}]


def test_parallel_tasks_give_one_chunk_each(lg: Imports) -> None:
    """LangGraph: the tasks of one super-step give one ``updates`` chunk each."""
    graph = parallel(lg, ("a", lambda s: {"items": ["a"]}), ("b", lambda s: {"n": 1}))
    chunks = list(graph.stream({"items": []}, thread()))
    assert sorted(chunks, key=lambda c: next(iter(c))) == [{"a": {"items": ["a"]}}, {"b": {"n": 1}}]


# --- values ---


def test_values_are_the_input_then_the_state_after_each_step(lg: Imports) -> None:
    """LangGraph: ``values`` yields the state after the input, then after each super-step, reducers
    applied."""
    assert list(a_then_b(lg).stream({"items": ["in"]}, stream_mode="values")) == [
        {"items": ["in"]},
        {"items": ["in", "a"], "n": 1},
        {"items": ["in", "a", "b"], "n": 1},
    ]


def test_values_skip_an_input_and_a_step_that_wrote_nothing(lg: Imports) -> None:
    """LangGraph: no ``values`` chunk for an empty input nor for a super-step whose tasks wrote nothing."""
    graph = chain(lg, ("quiet", lambda s: None), ("b", lambda s: {"n": 2}))
    assert list(graph.stream({}, stream_mode="values")) == [{"items": [], "n": 2}]


# --- several modes, custom, tasks, checkpoints, debug ---


def test_several_modes_yield_mode_and_chunk_in_order(lg: Imports) -> None:
    """LangGraph: a list of modes yields ``(mode, chunk)``: the input's values, then per step the tasks'
    updates before the step's values."""
    assert list(a_then_b(lg).stream({"items": ["in"]}, stream_mode=["updates", "values"])) == [
        ("values", {"items": ["in"]}),
        ("updates", {"a": {"items": ["a"], "n": 1}}),
        ("values", {"items": ["in", "a"], "n": 1}),
        ("updates", {"b": {"items": ["b"]}}),
        ("values", {"items": ["in", "a", "b"], "n": 1}),
    ]


def test_a_list_of_one_mode_still_yields_pairs(lg: Imports) -> None:
    """LangGraph: ``stream_mode=["updates"]`` (a list) yields ``("updates", chunk)`` pairs."""
    assert list(a_then_b(lg).stream({"items": []}, stream_mode=["updates"])) == [
        ("updates", {"a": {"items": ["a"], "n": 1}}),
        ("updates", {"b": {"items": ["b"]}}),
    ]


def test_custom_chunks_come_from_the_stream_writer(lg: Imports) -> None:
    """LangGraph: ``custom`` yields what nodes pass to ``get_stream_writer()``, before the node's update."""

    def talker(state: State) -> dict[str, Any]:
        write = lg.get_stream_writer()
        write({"progress": 0.5})
        write("done")
        return {"n": 1}

    graph = chain(lg, ("talker", talker))
    assert list(graph.stream({"items": []}, stream_mode="custom")) == [{"progress": 0.5}, "done"]
    assert list(graph.stream({"items": []}, stream_mode=["custom", "updates"])) == [
        ("custom", {"progress": 0.5}),
        ("custom", "done"),
        ("updates", {"talker": {"n": 1}}),
    ]


def test_custom_chunks_arrive_while_the_node_runs(lg: Imports) -> None:
    """LangGraph: a ``custom`` chunk reaches the caller while its node is still running."""
    seen = threading.Event()

    def talker(state: State) -> dict[str, Any]:
        lg.get_stream_writer()("ping")
        return {"items": [f"seen={seen.wait(5)}"]}

    chunks = []
    for mode, chunk in chain(lg, ("talker", talker)).stream({"items": []}, stream_mode=["custom", "updates"]):
        chunks.append((mode, chunk))
        if chunk == "ping":
            seen.set()
    assert chunks == [("custom", "ping"), ("updates", {"talker": {"items": ["seen=True"]}})]


def test_tasks_mode_gives_a_start_and_a_result_per_task(lg: Imports) -> None:
    """LangGraph: ``tasks`` yields each task's start (id, name, input, triggers) and result (id, name,
    error, result, interrupts)."""
    chunks = list(a_then_b(lg).stream({"items": ["in"]}, stream_mode="tasks"))
    assert [sorted(c) for c in chunks[:2]] == [
        ["id", "input", "name", "triggers"],
        ["error", "id", "interrupts", "name", "result"],
    ]
    start_a, done_a, start_b, done_b = chunks
    assert start_a["id"] == done_a["id"] != start_b["id"] == done_b["id"]
    assert {k: v for k, v in start_a.items() if k != "id"} == {
        "name": "a",
        "input": {"items": ["in"]},
        "triggers": ("branch:to:a",),
    }
    assert {k: v for k, v in done_a.items() if k != "id"} == {
        "name": "a",
        "error": None,
        "result": {"items": ["a"], "n": 1},
        "interrupts": [],
    }
    assert (start_b["input"], done_b["result"]) == ({"items": ["in", "a"], "n": 1}, {"items": ["b"]})


def test_a_send_task_is_triggered_by_a_push(lg: Imports) -> None:
    """LangGraph: a task made by ``Send`` starts with its argument as input and ``__pregel_push`` as its
    trigger."""
    builder = lg.StateGraph(State)
    builder.add_node("worker", lambda s: {"items": ["w"]})
    builder.add_conditional_edges(lg.START, lambda s: [lg.Send("worker", {"items": ["arg"]})], ["worker"])
    start = next(iter(builder.compile().stream({"items": []}, stream_mode="tasks")))
    assert (start["name"], start["input"], start["triggers"]) == (
        "worker",
        {"items": ["arg"]},
        ("__pregel_push",),
    )


def test_checkpoints_mode_needs_a_checkpointer(lg: Imports) -> None:
    """LangGraph: without a checkpointer, ``checkpoints`` yields nothing (and ``debug`` only task events)."""
    assert list(a_then_b(lg).stream({"items": []}, stream_mode="checkpoints")) == []
    types = [e["type"] for e in a_then_b(lg).stream({"items": []}, stream_mode="debug")]
    assert types == ["task", "task_result", "task", "task_result"]


def test_checkpoints_mode_shows_every_checkpoint_saved_from_the_input_on(lg: Imports) -> None:
    """LangGraph: ``checkpoints`` yields each saved checkpoint, the input's included, as a snapshot-like
    dict (config, parent_config, values, metadata, next, tasks) chained by parent_config."""
    saver = lg.InMemorySaver()
    chunks = list(
        a_then_b(lg, checkpointer=saver).stream({"items": ["in"]}, thread(), stream_mode="checkpoints")
    )
    assert all(
        sorted(c) == ["config", "metadata", "next", "parent_config", "tasks", "values"] for c in chunks
    )
    assert chunks[0]["parent_config"] is None
    assert [c["parent_config"] for c in chunks[1:]] == [c["config"] for c in chunks[:-1]]
    assert {c["config"]["configurable"]["thread_id"] for c in chunks} == {"t"}
    assert {c["config"]["configurable"]["checkpoint_ns"] for c in chunks} == {""}
    nexts = [c["next"] for c in chunks]
    sources = [c["metadata"]["source"] for c in chunks]
    # a checkpoint before the input (next: __start__), then one with it applied
    assert nexts == [["__start__"], ["a"], ["b"], []]
    assert sources == ["input", "loop", "loop", "loop"]
    assert [c["metadata"] for c in chunks] == [
        {"source": "input", "step": -1, "parents": {}},
        {"source": "loop", "step": 0, "parents": {}},
        {"source": "loop", "step": 1, "parents": {}},
        {"source": "loop", "step": 2, "parents": {}},
    ]
    assert chunks[-2]["values"] == {"items": ["in", "a"], "n": 1}
    assert chunks[-2]["tasks"][0]["name"] == "b"
    assert chunks[-1]["values"] == {"items": ["in", "a", "b"], "n": 1}
    latest = a_then_b(lg, checkpointer=saver).get_state(thread())
    assert (
        chunks[-1]["config"]["configurable"]["checkpoint_id"]
        == latest.config["configurable"]["checkpoint_id"]
    )


def test_debug_mode_wraps_checkpoints_and_tasks(lg: Imports) -> None:
    """LangGraph: ``debug`` yields ``{"step", "timestamp", "type", "payload"}``: the input checkpoint, then
    per step each task's start and result and the step's checkpoint."""
    chunks = list(
        a_then_b(lg, checkpointer=lg.InMemorySaver()).stream({"items": []}, thread(), stream_mode="debug")
    )
    assert all(sorted(c) == ["payload", "step", "timestamp", "type"] for c in chunks)
    types = [c["type"] for c in chunks]
    step_events = ["task", "task_result", "checkpoint"] * 2
    assert types == ["checkpoint", "checkpoint", *step_events]
    assert [c["step"] for c in chunks] == [-1, 0, 1, 1, 1, 2, 2, 2]
    assert chunks[-2]["payload"]["result"] == {"items": ["b"]}


def test_messages_mode_without_a_model(lg: Imports) -> None:
    """LangGraph: ``messages`` streams nothing for a graph whose nodes call no model and write no messages
    (tests/compat/test_langchain.py has the cases with a model)."""
    assert list(a_then_b(lg).stream({"items": []}, stream_mode="messages")) == []


def test_an_unknown_mode_yields_nothing(lg: Imports) -> None:
    """LangGraph: an unknown stream mode is accepted and yields nothing, alone, next to a known mode (whose
    chunks keep their ``(mode, payload)`` shape) and under ``invoke``; graphq warns, naming it."""
    graph = a_then_b(lg)
    warned = r"^unknown stream mode\(s\) \['valus'\] yield nothing; known: \['values', 'updates', "
    with lg.graphq_warns(warned):
        assert list(graph.stream({"items": []}, stream_mode="valus")) == []
    with lg.graphq_warns(warned):
        assert list(graph.stream({"items": []}, stream_mode=["valus", "updates"])) == [
            ("updates", {"a": {"items": ["a"], "n": 1}}),
            ("updates", {"b": {"items": ["b"]}}),
        ]
    with lg.graphq_warns(warned):
        assert graph.invoke({"items": []}, stream_mode="valus") == []


@pytest.mark.parametrize("modes", ["updates", ["updates", "custom"]])
def test_breaking_out_stops_the_run(lg: Imports, modes: Any) -> None:
    """LangGraph: leaving the loop after the first chunk runs no further super-step."""
    calls: list[str] = []
    graph = chain(
        lg, ("a", lambda s: calls.append("a") or {"n": 1}), ("b", lambda s: calls.append("b") or {})
    )
    for _ in graph.stream({"items": []}, stream_mode=modes):
        break
    assert calls == ["a"]


def test_a_failing_step_streams_what_finished_then_raises(lg: Imports) -> None:
    """LangGraph: when a task fails, its finished siblings' updates and task results, and the failed task's
    result with its error, are streamed before the error is raised."""

    def boom(state: State) -> dict[str, Any]:
        lg.get_stream_writer()("before")
        time.sleep(0.3)  # the sibling finishes first
        raise ValueError("x")

    def ok(state: State) -> dict[str, Any]:
        time.sleep(0.02)  # after boom's chunk: events come as tasks finish
        return {"items": ["ok"]}

    graph = parallel(lg, ("ok", ok), ("boom", boom))
    chunks: list[Any] = []
    with pytest.raises(Exception) as err:
        for chunk in graph.stream({"items": []}, thread(), stream_mode=["updates", "tasks", "custom"]):
            chunks.append(chunk)
    results = [c for m, c in chunks if m == "tasks" and "result" in c]
    assert [c for c in chunks if c[0] != "tasks"] == [
        ("custom", "before"),
        ("updates", {"ok": {"items": ["ok"]}}),
    ]
    assert [(r["name"], r["result"], r["interrupts"]) for r in results] == [
        ("ok", {"items": ["ok"]}, []),
        ("boom", {}, []),
    ]
    assert results[0]["error"] is None and repr(results[1]["error"]) == "ValueError('x')"
    if lg.is_langgraph:
        assert err.value is results[1]["error"]
    else:  # graphq's NodeError names the node and wraps the node's error
        assert err.value.error is results[1]["error"]  # type: ignore[attr-defined]


# --- interrupts in the stream ---


def test_an_interrupt_is_an_update_with_a_tuple(lg: Imports) -> None:
    """LangGraph: a task pausing in ``interrupt()`` yields ``{"__interrupt__": (Interrupt(value, id),)}``."""
    graph = chain(lg, ("a", lambda s: {"n": 1}), ("ask", asking("ok?")), checkpointer=lg.InMemorySaver())
    chunks = list(graph.stream({"items": []}, thread()))
    assert chunks[0] == {"a": {"n": 1}}
    (paused,) = chunks[1:]
    assert list(paused) == ["__interrupt__"] and isinstance(paused["__interrupt__"], tuple)
    (request,) = paused["__interrupt__"]
    assert request == lg.Interrupt(value="ok?", id=request.id)
    assert list(graph.stream(lg.Command(resume="yes"), thread())) == [{"ask": {"items": ["yes"]}}]


def test_two_parallel_interrupts_give_one_chunk_each(lg: Imports) -> None:
    """LangGraph: two tasks of one step that both pause give two ``__interrupt__`` chunks, one interrupt
    each; invoke lists both."""
    graph = parallel(lg, ("a", asking("qa")), ("b", asking("qb")))
    chunks = list(graph.stream({"items": []}, thread()))
    assert [list(c) for c in chunks] == [["__interrupt__"], ["__interrupt__"]]
    assert sorted(i.value for c in chunks for i in c["__interrupt__"]) == ["qa", "qb"]
    assert [len(c["__interrupt__"]) for c in chunks] == [1, 1]
    result = graph.invoke({"items": []}, thread("u"))
    assert sorted(i.value for i in result["__interrupt__"]) == ["qa", "qb"]


def test_a_pause_beside_a_finished_task_in_values(lg: Imports) -> None:
    """LangGraph: when one task pauses and its sibling finished, ``values`` shows the state with the
    interrupt, then the state with the finished task's writes applied; invoke returns the latter."""
    graph = parallel(lg, ("ask", asking("q")), ("done", lambda s: {"items": ["done"]}))
    chunks = list(graph.stream({"items": ["in"]}, thread(), stream_mode=["updates", "values"]))
    (request,) = next(c for m, c in chunks if m == "updates" and "__interrupt__" in c)["__interrupt__"]
    assert chunks[0] == ("values", {"items": ["in"]})
    paused = ("updates", {"__interrupt__": (request,)})
    at = chunks.index(paused)
    assert chunks[at + 1] == ("values", {"items": ["in"], "__interrupt__": (request,)})  # right after it
    assert sorted(chunks[1:4], key=str) == sorted(
        [paused, chunks[at + 1], ("updates", {"done": {"items": ["done"]}})], key=str
    )
    assert chunks[4:] == [("values", {"items": ["in", "done"]})]
    result = graph.invoke({"items": ["in"]}, thread("u"))
    assert result["items"] == ["in", "done"] and [i.value for i in result["__interrupt__"]] == ["q"]


def test_a_resumed_stream_starts_with_the_current_values(lg: Imports) -> None:
    """LangGraph: streaming ``values`` on ``Command(resume=...)`` yields the paused state first."""
    graph = chain(lg, ("a", lambda s: {"n": 1}), ("ask", asking("q")), checkpointer=lg.InMemorySaver())
    list(graph.stream({"items": []}, thread()))
    assert list(graph.stream(lg.Command(resume="A"), thread(), stream_mode="values")) == [
        {"items": [], "n": 1},
        {"items": ["A"], "n": 1},
    ]


# --- Interrupt objects ---


def test_interrupts_compare_by_value_and_id(lg: Imports) -> None:
    """LangGraph: ``Interrupt`` objects are equal when value and id are, and are not hashable."""
    one = lg.Interrupt(value={"q": 1}, id="abc")
    assert one == lg.Interrupt(value={"q": 1}, id="abc")
    assert one != lg.Interrupt(value={"q": 2}, id="abc")
    assert one != lg.Interrupt(value={"q": 1}, id="abd")
    with pytest.raises(TypeError):
        hash(one)


def test_an_interrupt_prints_its_value_and_id(lg: Imports) -> None:
    """LangGraph 1.2: ``repr(Interrupt)`` shows ``value``, ``id`` and ``response_schema``."""
    graph = chain(lg, ("ask", asking("ok?")), checkpointer=lg.InMemorySaver())
    (request,) = graph.invoke({"items": []}, thread())["__interrupt__"]
    assert repr(request) == f"Interrupt(value='ok?', id='{request.id}', response_schema=None)"


# --- subgraphs=True ---


def test_subgraphs_true_namespaces_a_subgraph_nodes_updates(lg: Imports) -> None:
    """LangGraph: with ``subgraphs=True`` a compiled subgraph node's updates come as ``(("node:<task id>",),
    chunk)`` before the node's own update, the parent's as ``((), chunk)``."""
    builder = lg.StateGraph(Text)
    builder.add_node("pre", lambda s: {"text": "p"})
    builder.add_node("child", texts(lg, "x", "y"))
    builder.add_edge(lg.START, "pre")
    builder.add_edge("pre", "child")
    chunks = list(builder.compile().stream({"text": ""}, subgraphs=True))
    (ns,) = {c[0] for c in chunks if c[0]}
    assert len(ns) == 1 and ns[0].startswith("child:") and len(ns[0]) > len("child:")
    assert chunks == [
        ((), {"pre": {"text": "p"}}),
        (ns, {"x": {"text": "px"}}),
        (ns, {"y": {"text": "pxy"}}),
        ((), {"child": {"text": "pxy"}}),
    ]
    assert list(builder.compile().stream({"text": ""})) == [
        {"pre": {"text": "p"}},
        {"child": {"text": "pxy"}},
    ]


def test_subgraphs_true_shows_a_graph_invoked_inside_a_node(lg: Imports) -> None:
    """LangGraph: a graph invoked inside a node streams under that node's namespace with ``subgraphs=True``
    (a second call from the same task adds ``"1"``)."""
    inner = texts(lg, "x")

    def node(state: Text) -> dict[str, Any]:
        return {"text": inner.invoke({"text": "1"})["text"] + inner.invoke({"text": "2"})["text"]}

    builder = lg.StateGraph(Text)
    builder.add_node("calls", node)
    builder.add_edge(lg.START, "calls")
    chunks = list(builder.compile().stream({"text": ""}, subgraphs=True))
    first, second = chunks[0][0], chunks[1][0]
    assert first[0].startswith("calls:") and second == (first[0], "1")
    assert [c[1] for c in chunks] == [
        {"x": {"text": "1x"}},
        {"x": {"text": "2x"}},
        {"calls": {"text": "1x2x"}},
    ]
    assert chunks[2][0] == ()


def test_subgraphs_true_with_several_modes_gives_triples(lg: Imports) -> None:
    """LangGraph: ``subgraphs=True`` with a list of modes yields ``(namespace, mode, chunk)``, a subgraph's
    custom chunks included (they are not shown without ``subgraphs=True``)."""

    def x(state: Text) -> dict[str, Any]:
        lg.get_stream_writer()("from-x")
        return {"text": state["text"] + "x"}

    inner = lg.StateGraph(Text)
    inner.add_node("x", x)
    inner.add_edge(lg.START, "x")
    builder = lg.StateGraph(Text)
    builder.add_node("child", inner.compile())
    builder.add_edge(lg.START, "child")
    graph = builder.compile()
    chunks = list(graph.stream({"text": "t"}, stream_mode=["updates", "values", "custom"], subgraphs=True))
    ns = chunks[1][0]
    assert chunks == [
        ((), "values", {"text": "t"}),
        (ns, "values", {"text": "t"}),
        (ns, "custom", "from-x"),
        (ns, "updates", {"x": {"text": "tx"}}),
        (ns, "values", {"text": "tx"}),
        ((), "updates", {"child": {"text": "tx"}}),
        ((), "values", {"text": "tx"}),
    ]
    assert list(graph.stream({"text": "t"}, stream_mode="custom")) == []


def test_nested_subgraphs_give_nested_namespaces(lg: Imports) -> None:
    """LangGraph: a subgraph inside a subgraph streams under ``(outer ns, inner ns)``."""
    middle = lg.StateGraph(Text)
    middle.add_node("m", texts(lg, "x"))
    middle.add_edge(lg.START, "m")
    top = lg.StateGraph(Text)
    top.add_node("t", middle.compile())
    top.add_edge(lg.START, "t")
    chunks = list(top.compile().stream({"text": ""}, subgraphs=True))
    assert [c[1] for c in chunks] == [{"x": {"text": "x"}}, {"m": {"text": "x"}}, {"t": {"text": "x"}}]
    deep, mid, root = (c[0] for c in chunks)
    assert root == () and len(mid) == 1 and deep[:1] == mid and len(deep) == 2
    assert mid[0].startswith("t:") and deep[1].startswith("m:")


def test_a_graph_streamed_inside_a_node_reaches_the_parent_stream(lg: Imports) -> None:
    """LangGraph: a graph a node streams (``inner.stream(...)``) yields its chunks to that node and, with
    ``subgraphs=True`` on the parent's stream, to the parent's under the node's namespace."""
    middle = lg.StateGraph(Text)
    middle.add_node("sub", texts(lg, "x"))
    middle.add_edge(lg.START, "sub")
    inner = middle.compile()
    seen: list[Any] = []

    def node(state: Text) -> dict[str, Any]:
        seen.extend(inner.stream({"text": "s"}))
        return {"text": "done"}

    builder = lg.StateGraph(Text)
    builder.add_node("st", node)
    builder.add_edge(lg.START, "st")
    chunks = list(builder.compile().stream({"text": ""}, subgraphs=True))
    assert seen == [{"sub": {"text": "sx"}}]
    assert [c[1] for c in chunks] == [
        {"x": {"text": "sx"}},
        {"sub": {"text": "sx"}},
        {"st": {"text": "done"}},
    ]
    deep, mine, root = (c[0] for c in chunks)
    assert root == () and len(mine) == 1 and mine[0].startswith("st:") and deep[:1] == mine and len(deep) == 2


def test_a_subgraphs_events_arrive_while_its_parent_node_runs(lg: Imports) -> None:
    """LangGraph: with ``subgraphs=True`` a nested graph's events reach the caller before the node that
    invoked it returns."""
    inner = texts(lg, "x")
    seen = threading.Event()

    def node(state: Text) -> dict[str, Any]:
        inner.invoke({"text": ""})
        return {"text": f"seen={seen.wait(5)}"}

    builder = lg.StateGraph(Text)
    builder.add_node("o", node)
    builder.add_edge(lg.START, "o")
    chunks = []
    for ns, chunk in builder.compile().stream({"text": ""}, subgraphs=True):
        chunks.append(chunk)
        if ns:
            seen.set()
    assert chunks == [{"x": {"text": "x"}}, {"o": {"text": "seen=True"}}]


def test_an_interrupt_in_a_subgraph_shows_in_both_namespaces(lg: Imports) -> None:
    """LangGraph: with ``subgraphs=True`` a subgraph's interrupt is yielded under its namespace and the
    parent's; answering it streams the subgraph's node then the parent's."""

    def ask_text(state: Text) -> dict[str, Any]:
        return {"text": lg.interrupt("q")}

    inner = lg.StateGraph(Text)
    inner.add_node("ask", ask_text)
    inner.add_edge(lg.START, "ask")
    builder = lg.StateGraph(Text)
    builder.add_node("sub", inner.compile())
    builder.add_edge(lg.START, "sub")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    (ns, inner_paused), (root, outer_paused) = graph.stream({"text": ""}, thread(), subgraphs=True)
    assert ns[0].startswith("sub:") and root == ()
    assert inner_paused == outer_paused and [i.value for i in outer_paused["__interrupt__"]] == ["q"]
    assert list(graph.stream(lg.Command(resume="A"), thread(), subgraphs=True)) == [
        (ns, {"ask": {"text": "A"}}),
        ((), {"sub": {"text": "A"}}),
    ]


# --- invoke's stream_mode, debug ---


def test_invoke_with_a_stream_mode_returns_the_chunks(lg: Imports) -> None:
    """LangGraph: ``invoke(stream_mode="values")`` returns the final state; another mode (or a list) returns
    the list of chunks stream would yield."""
    graph = a_then_b(lg)
    assert graph.invoke({"items": []}, stream_mode="values") == {"items": ["a", "b"], "n": 1}
    assert graph.invoke({"items": []}, stream_mode="updates") == [
        {"a": {"items": ["a"], "n": 1}},
        {"b": {"items": ["b"]}},
    ]
    assert graph.invoke({"items": []}, stream_mode=["values"]) == [
        ("values", {"items": []}),
        ("values", {"items": ["a"], "n": 1}),
        ("values", {"items": ["a", "b"], "n": 1}),
    ]


def test_invoke_with_updates_and_subgraphs(lg: Imports) -> None:
    """LangGraph: ``invoke(stream_mode="updates", subgraphs=True)`` returns ``(namespace, chunk)`` pairs."""
    builder = lg.StateGraph(Text)
    builder.add_node("child", texts(lg, "x"))
    builder.add_edge(lg.START, "child")
    chunks = builder.compile().invoke({"text": ""}, stream_mode="updates", subgraphs=True)
    assert [c[1] for c in chunks] == [{"x": {"text": "x"}}, {"child": {"text": "x"}}]
    assert chunks[0][0][0].startswith("child:") and chunks[1][0] == ()


def test_version_v2_stream_parts(lg: Imports) -> None:
    """LangGraph 1.2: ``version="v2"`` streams ``{"type", "ns", "data"}`` parts (more: test_stream_v2.py)."""
    parts = list(a_then_b(lg).stream({"items": []}, version="v2"))
    assert parts == [
        {"type": "updates", "ns": (), "data": {"a": {"items": ["a"], "n": 1}}},
        {"type": "updates", "ns": (), "data": {"b": {"items": ["b"]}}},
    ]
