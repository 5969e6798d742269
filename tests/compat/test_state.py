"""State snapshots, history, update_state, checkpointers and stateful subgraphs: each LangGraph program runs
with LangGraph's imports and with graphq's. Checkpoint ids are compared only by relation."""

from __future__ import annotations

import asyncio
import operator
from datetime import datetime
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def thread(name: str = "1") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def chain(lg: Imports, *, checkpointer: Any = None, ask: bool = False) -> Any:
    """START → a → b → END; ``b`` asks ``interrupt("q?")`` when ``ask``."""

    def b(state: State) -> dict[str, Any]:
        return {"items": [f"b:{lg.interrupt('q?')}" if ask else "b"]}

    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"items": ["a"]})
    builder.add_node("b", b)
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", lg.END)
    return builder.compile(checkpointer=lg.InMemorySaver() if checkpointer is None else checkpointer)


def fan(lg: Imports) -> Any:
    """START → (ask, calm) in parallel; ``ask`` interrupts; ``calm`` → after."""

    def ask(state: State) -> dict[str, Any]:
        return {"items": [f"ask:{lg.interrupt('q')}"]}

    builder = lg.StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_node("calm", lambda s: {"items": ["calm"]})
    builder.add_node("after", lambda s: {"items": ["after"]})
    builder.add_edge(lg.START, "ask")
    builder.add_edge(lg.START, "calm")
    builder.add_edge("calm", "after")
    return builder.compile(checkpointer=lg.InMemorySaver())


def ids(config: dict[str, Any] | None) -> Any:
    return None if config is None else config["configurable"]["checkpoint_id"]


# -- get_state -----------------------------------------------------------------------------------------


def test_a_fresh_thread_has_an_empty_snapshot(lg: Imports) -> None:
    """LangGraph: get_state of a thread without checkpoints has values {}, nothing next, no metadata, and
    the config it was given."""
    assert tuple(chain(lg).get_state(thread())) == ({}, (), thread(), None, None, None, (), ())


def test_a_snapshot_is_a_named_tuple_with_langgraphs_fields(lg: Imports) -> None:
    """LangGraph: StateSnapshot is a NamedTuple (values, next, config, metadata, created_at, parent_config,
    tasks, interrupts) and its tasks are PregelTask tuples (id, name, path, error, interrupts, state,
    result)."""
    graph = chain(lg, ask=True)
    graph.invoke({"items": []}, thread())
    snap = graph.get_state(thread())
    assert isinstance(snap, lg.StateSnapshot)
    assert snap._fields == (
        "values",
        "next",
        "config",
        "metadata",
        "created_at",
        "parent_config",
        "tasks",
        "interrupts",
    )
    assert snap.tasks[0]._fields == ("id", "name", "path", "error", "interrupts", "state", "result")


def test_get_state_after_a_run(lg: Imports) -> None:
    """LangGraph: after a run the snapshot holds the final values, no next tasks, a loop checkpoint's
    metadata and a config naming the thread, the root namespace and the checkpoint (its parent's too)."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    snap = graph.get_state(thread())
    assert (snap.values, snap.next, snap.tasks, snap.interrupts) == ({"items": ["x", "a", "b"]}, (), (), ())
    assert (snap.metadata["source"], snap.metadata["parents"]) == ("loop", {})
    assert sorted(snap.config["configurable"]) == ["checkpoint_id", "checkpoint_ns", "thread_id"]
    assert (snap.config["configurable"]["thread_id"], snap.config["configurable"]["checkpoint_ns"]) == (
        "1",
        "",
    )
    assert sorted(snap.parent_config["configurable"]) == ["checkpoint_id", "checkpoint_ns", "thread_id"]
    assert ids(snap.parent_config) != ids(snap.config)
    assert datetime.fromisoformat(snap.created_at).utcoffset() is not None


def test_get_state_of_a_paused_run_names_the_task_and_its_interrupt(lg: Imports) -> None:
    """LangGraph: a run paused in interrupt() has the paused node next, one pull task for it carrying the
    interrupt, and the same interrupt in the snapshot's interrupts."""
    graph = chain(lg, ask=True)
    graph.invoke({"items": []}, thread())
    snap = graph.get_state(thread())
    assert (snap.values, snap.next) == ({"items": ["a"]}, ("b",))
    (task,) = snap.tasks
    assert (task.name, task.path, task.error, task.state, task.result) == (
        "b",
        ("__pregel_pull", "b"),
        None,
        None,
        None,
    )
    assert [i.value for i in task.interrupts] == ["q?"]
    assert task.interrupts == snap.interrupts


def test_a_paused_step_counts_its_finished_tasks_in_the_latest_state(lg: Imports) -> None:
    """LangGraph: get_state of the latest checkpoint reads a paused step live: a parallel task that finished
    has its writes in values and its result on its task, and only the paused task is next."""
    graph = fan(lg)
    graph.invoke({"items": []}, thread())
    snap = graph.get_state(thread())
    assert (snap.values, snap.next) == ({"items": ["calm"]}, ("ask",))
    assert [(t.name, t.result, len(t.interrupts)) for t in snap.tasks] == [
        ("ask", None, 1),
        ("calm", {"items": ["calm"]}, 0),
    ]
    assert [i.value for i in snap.interrupts] == ["q"]


def test_get_state_by_checkpoint_id_shows_the_step_as_it_started(lg: Imports) -> None:
    """LangGraph: get_state with a checkpoint_id reads the step as recorded: values at its start and every
    task next, finished or not."""
    graph = fan(lg)
    graph.invoke({"items": []}, thread())
    latest = graph.get_state(thread())
    snap = graph.get_state(latest.config)
    assert (snap.values, snap.next, snap.config) == ({"items": []}, ("ask", "calm"), latest.config)
    assert [t.result for t in snap.tasks] == [None, {"items": ["calm"]}]


def test_get_state_of_an_older_checkpoint(lg: Imports) -> None:
    """LangGraph: get_state with the config of an older snapshot returns that checkpoint's values and next
    tasks."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    older = next(s for s in graph.get_state_history(thread()) if s.next == ("b",))
    snap = graph.get_state(older.config)
    assert (snap.values, snap.next, snap.config) == ({"items": ["x", "a"]}, ("b",), older.config)


def test_send_tasks_have_push_paths(lg: Imports) -> None:
    """LangGraph: tasks started by Send have the path ("__pregel_push", index, False)."""

    class Item(TypedDict):
        items: Annotated[list[str], operator.add]
        item: str

    def each(state: Item) -> dict[str, Any]:
        return {"items": [f"{state['item']}:{lg.interrupt(state['item'])}"]}

    builder = lg.StateGraph(Item)
    builder.add_node("each", each)
    builder.add_conditional_edges(lg.START, lambda s: [lg.Send("each", {"item": i}) for i in ("x", "y")])
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    graph.invoke({"items": []}, thread())
    snap = graph.get_state(thread())
    assert [(t.name, t.path) for t in snap.tasks] == [
        ("each", ("__pregel_push", 0, False)),
        ("each", ("__pregel_push", 1, False)),
    ]
    assert [i.value for i in snap.interrupts] == ["x", "y"]


@pytest.mark.parametrize("call", ["get_state", "get_state_history", "update_state", "bulk_update_state"])
def test_the_state_api_needs_a_checkpointer(lg: Imports, call: str) -> None:
    """LangGraph: get_state, get_state_history, update_state and bulk_update_state of a graph compiled
    without a checkpointer raise ValueError ("No checkpointer set")."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"items": ["a"]})
    builder.add_edge(lg.START, "a")
    graph = builder.compile()
    calls = {
        "get_state": lambda: graph.get_state(thread()),
        "get_state_history": lambda: list(graph.get_state_history(thread())),
        "update_state": lambda: graph.update_state(thread(), {"items": ["u"]}, as_node="a"),
        "bulk_update_state": lambda: graph.bulk_update_state(
            thread(), [[lg.StateUpdate({"items": []}, "a")]]
        ),
    }
    with pytest.raises(ValueError) as caught:
        calls[call]()
    if not lg.is_langgraph:
        assert str(caught.value) == (
            f"{call} needs a checkpointer (graph 'graph' has none): compile it with "
            "checkpointer=InMemorySaver()"
        )


# -- get_state_history ---------------------------------------------------------------------------------


def test_history_is_newest_first_each_pointing_at_its_parent(lg: Imports) -> None:
    """LangGraph: get_state_history lists the thread's checkpoints newest first; each one's parent_config
    is the next one's config and the first (the input checkpoint, before the input applied) has none."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    history = list(graph.get_state_history(thread()))
    assert [s.values["items"] for s in history] == [["x", "a", "b"], ["x", "a"], ["x"], []]
    assert [s.next for s in history] == [(), ("b",), ("a",), ("__start__",)]
    assert [(s.metadata["source"], s.metadata["step"]) for s in history] == [
        ("loop", 2),
        ("loop", 1),
        ("loop", 0),
        ("input", -1),
    ]
    assert [ids(s.parent_config) for s in history] == [ids(s.config) for s in history[1:]] + [None]


def test_history_limit(lg: Imports) -> None:
    """LangGraph: get_state_history(limit=n) gives the n newest checkpoints."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    assert [s.values["items"] for s in graph.get_state_history(thread(), limit=2)] == [
        ["x", "a", "b"],
        ["x", "a"],
    ]


def test_history_before(lg: Imports) -> None:
    """LangGraph: get_state_history(before=config) gives only checkpoints older than that one."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    history = list(graph.get_state_history(thread()))
    older = list(graph.get_state_history(thread(), before=history[1].config))
    assert [ids(s.config) for s in older] == [ids(s.config) for s in history[2:]]
    assert older[0].values == {"items": ["x"]}


def test_history_filter_by_metadata(lg: Imports) -> None:
    """LangGraph: get_state_history(filter={...}) keeps the checkpoints whose metadata holds those values."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    graph.update_state(thread(), {"items": ["u"]}, as_node="b")
    updates = list(graph.get_state_history(thread(), filter={"source": "update"}))
    assert [s.values for s in updates] == [{"items": ["x", "a", "b", "u"]}]
    assert len(list(graph.get_state_history(thread(), filter={"source": "update"}, limit=0))) == 0


def test_history_of_a_checkpoint_id_is_that_checkpoint(lg: Imports) -> None:
    """LangGraph: get_state_history with a checkpoint_id in the config lists only that checkpoint."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    older = list(graph.get_state_history(thread()))[1]
    assert [ids(s.config) for s in graph.get_state_history(older.config)] == [ids(older.config)]


def test_history_snapshots_carry_the_tasks_of_their_step(lg: Imports) -> None:
    """LangGraph: each history snapshot's tasks are the tasks of the step after it."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    assert [tuple(t.name for t in s.tasks) for s in graph.get_state_history(thread(), limit=3)] == [
        (),
        ("b",),
        ("a",),
    ]


# -- update_state --------------------------------------------------------------------------------------


def test_update_state_goes_through_the_reducers_and_returns_the_new_config(lg: Imports) -> None:
    """LangGraph: update_state applies the values through the channels' reducers and returns the config of
    a new checkpoint on the same thread, whose parent is the previous latest."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    before = graph.get_state(thread())
    config = graph.update_state(thread(), {"items": ["u"]}, as_node="b")
    assert (config["configurable"]["thread_id"], config["configurable"]["checkpoint_ns"]) == ("1", "")
    snap = graph.get_state(thread())
    assert ids(config) == ids(snap.config) != ids(before.config)
    assert ids(snap.parent_config) == ids(before.config)
    assert (snap.values, snap.next, snap.metadata["source"]) == (
        {"items": ["x", "a", "b", "u"]},
        (),
        "update",
    )


def test_update_state_without_as_node_acts_as_the_last_node(lg: Imports) -> None:
    """LangGraph: without as_node the update is attributed to the node that wrote last (b: nothing next)."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    graph.update_state(thread(), {"items": ["u"]})
    assert graph.get_state(thread()).next == ()


def test_update_state_as_a_node_schedules_its_edges(lg: Imports) -> None:
    """LangGraph: update_state(as_node="a") makes a's edges fire: b is next, and invoke(None) runs it."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    graph.update_state(thread(), {"items": ["u"]}, as_node="a")
    assert graph.get_state(thread()).next == ("b",)
    assert graph.invoke(None, thread()) == {"items": ["x", "a", "b", "u", "b"]}


def test_update_state_of_a_fresh_thread_acts_as_input(lg: Imports) -> None:
    """LangGraph: update_state on a thread without checkpoints and without as_node writes the values as
    input: the entry node is next, there is no parent, and invoke(None) runs the graph from there."""
    graph = chain(lg)
    config = graph.update_state(thread(), {"items": ["z"]})
    snap = graph.get_state(thread())
    assert (snap.values, snap.next, snap.parent_config, snap.metadata["source"]) == (
        {"items": ["z"]},
        ("a",),
        None,
        "update",
    )
    assert ids(config) == ids(snap.config)
    assert graph.invoke(None, thread()) == {"items": ["z", "a", "b"]}


def test_update_state_as_start_schedules_the_entry_nodes(lg: Imports) -> None:
    """LangGraph: update_state(as_node=START) on a finished thread acts as input: the entry node is next."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    graph.update_state(thread(), {"items": ["s"]}, as_node=lg.START)
    snap = graph.get_state(thread())
    assert (snap.values, snap.next) == ({"items": ["x", "a", "b", "s"]}, ("a",))


def test_update_state_with_an_unknown_node_is_refused(lg: Imports) -> None:
    """LangGraph: update_state(as_node=...) naming no node raises InvalidUpdateError."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    with pytest.raises(lg.InvalidUpdateError):
        graph.update_state(thread(), {"items": ["u"]}, as_node="nope")


@pytest.mark.parametrize(
    ("as_node", "values", "warned", "expected"),
    [
        ("a", {"items": ["u"], "itmes": ["?"]}, "node 'a' wrote", ({"items": ["x", "a", "b", "u"]}, ("b",))),
        (None, {"items": ["u"], "itmes": ["?"]}, "node 'b' wrote", ({"items": ["x", "a", "b", "u"]}, ())),
        (
            "__start__",
            {"items": ["u"], "itmes": ["?"]},
            "the input has",
            ({"items": ["x", "a", "b", "u"]}, ("a",)),
        ),
        ("a", "command", "node 'a' wrote", ({"items": ["x", "a", "b", "u"]}, ("b",))),
    ],
    ids=["as-node", "last-writer", "as-start", "command"],
)
def test_update_state_ignores_keys_outside_the_schema(
    lg: Imports, as_node: str | None, values: Any, warned: str, expected: Any
) -> None:
    """LangGraph: an update's keys that are no state key are ignored (as a node's, as START's, in a Command's
    update); the others apply. graphq ignores them too, with a warning naming them (the queue's
    client.update_state refuses them: tests/test_hitl.py)."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    if values == "command":
        values = lg.Command(update={"items": ["u"], "itmes": ["?"]})
    known = r"known keys: \['items'\]: ignored$"
    with lg.graphq_warns(rf"^update_state: {warned} unknown state key\(s\) \['itmes'\]; {known}"):
        graph.update_state(thread(), values, as_node=as_node)
    snap = graph.get_state(thread())
    assert (snap.values, snap.next) == expected


def test_update_state_after_a_parallel_step_needs_as_node(lg: Imports) -> None:
    """LangGraph: when the last step ran several nodes, update_state without as_node is ambiguous
    (InvalidUpdateError)."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"items": ["a"]})
    builder.add_node("b", lambda s: {"items": ["b"]})
    builder.add_edge(lg.START, "a")
    builder.add_edge(lg.START, "b")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    graph.invoke({"items": []}, thread())
    with pytest.raises(lg.InvalidUpdateError):
        graph.update_state(thread(), {"items": ["u"]})


def test_update_state_at_an_older_checkpoint_forks_the_thread(lg: Imports) -> None:
    """LangGraph: update_state with an older snapshot's config writes a new checkpoint on top of that one;
    it becomes the thread's latest."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    older = next(s for s in graph.get_state_history(thread()) if s.next == ("a",))
    graph.update_state(older.config, {"items": ["f"]}, as_node="a")
    snap = graph.get_state(thread())
    assert (snap.values, snap.next, ids(snap.parent_config)) == (
        {"items": ["x", "f"]},
        ("b",),
        ids(older.config),
    )
    assert graph.invoke(None, thread()) == {"items": ["x", "f", "b"]}


def test_update_state_with_overwrite_replaces_a_reducer_channel(lg: Imports) -> None:
    """LangGraph: an Overwrite value in update_state sets a reducer channel as is."""
    graph = chain(lg)
    graph.invoke({"items": ["x"]}, thread())
    graph.update_state(thread(), {"items": lg.Overwrite(["only"])}, as_node="b")
    assert graph.get_state(thread()).values == {"items": ["only"]}


def test_update_state_while_paused_then_resume(lg: Imports) -> None:
    """LangGraph: update_state on a run paused in interrupt() keeps the paused node next, and
    Command(resume=...) then answers its interrupt()."""
    graph = chain(lg, ask=True)
    graph.invoke({"items": []}, thread())
    graph.update_state(thread(), {"items": ["u"]})
    snap = graph.get_state(thread())
    assert (snap.values, snap.next, snap.interrupts) == ({"items": ["a", "u"]}, ("b",), ())
    assert graph.invoke(lg.Command(resume="yes"), thread()) == {"items": ["a", "u", "b:yes"]}


def test_update_state_as_end_ends_the_paused_step(lg: Imports) -> None:
    """LangGraph: update_state(config, None, as_node=END) ends a paused step: the finished tasks' writes
    apply and their edges fire, the paused task is dropped."""
    graph = fan(lg)
    graph.invoke({"items": []}, thread())
    graph.update_state(thread(), None, as_node=lg.END)
    snap = graph.get_state(thread())
    assert (snap.values, snap.next, snap.metadata["source"]) == ({"items": ["calm"]}, ("after",), "update")
    assert graph.invoke(None, thread()) == {"items": ["calm", "after"]}


def test_bulk_update_state_writes_a_checkpoint_per_superstep(lg: Imports) -> None:
    """LangGraph: bulk_update_state applies each superstep as one checkpoint, in order."""
    graph = chain(lg)
    config = graph.bulk_update_state(
        thread(), [[lg.StateUpdate({"items": ["p"]}, "a")], [lg.StateUpdate({"items": ["q"]}, "b")]]
    )
    history = list(graph.get_state_history(thread()))
    assert [(s.values, s.next, s.metadata["source"]) for s in history] == [
        ({"items": ["p", "q"]}, (), "update"),
        ({"items": ["p"]}, ("b",), "update"),
    ]
    assert ids(config) == ids(history[0].config)


def test_bulk_update_state_applies_a_supersteps_updates_together(lg: Imports) -> None:
    """LangGraph: several updates of one superstep apply together in one checkpoint, each with its node's
    edges."""
    graph = fan(lg)
    graph.bulk_update_state(
        thread(), [[lg.StateUpdate({"items": ["c"]}, "calm"), lg.StateUpdate({"items": ["k"]}, "ask")]]
    )
    assert len(list(graph.get_state_history(thread()))) == 1
    snap = graph.get_state(thread())
    assert (snap.values, snap.next) == ({"items": ["c", "k"]}, ("after",))


@pytest.mark.parametrize("supersteps", [[], [[]]], ids=["no-supersteps", "an-empty-superstep"])
def test_bulk_update_state_needs_updates(lg: Imports, supersteps: list[Any]) -> None:
    """LangGraph: bulk_update_state without supersteps or with an empty one raises ValueError."""
    with pytest.raises(ValueError):
        chain(lg).bulk_update_state(thread(), supersteps)


def test_bulk_update_state_needs_as_node_for_several_updates(lg: Imports) -> None:
    """LangGraph: several updates in one superstep each need as_node (InvalidUpdateError)."""
    with pytest.raises(lg.InvalidUpdateError):
        fan(lg).bulk_update_state(
            thread(), [[lg.StateUpdate({"items": ["c"]}, None), lg.StateUpdate({"items": ["k"]}, "ask")]]
        )


def test_the_async_state_api(lg: Imports) -> None:
    """LangGraph: aget_state, aupdate_state, abulk_update_state and aget_state_history do what their sync
    twins do."""
    graph = chain(lg)

    async def main() -> tuple[Any, ...]:
        await graph.aupdate_state(thread(), {"items": ["z"]})
        await graph.abulk_update_state(thread(), [[lg.StateUpdate({"items": ["w"]}, "a")]])
        snap = await graph.aget_state(thread())
        history = [s.values async for s in graph.aget_state_history(thread())]
        return snap.values, snap.next, history

    assert asyncio.run(main()) == ({"items": ["z", "w"]}, ("b",), [{"items": ["z", "w"]}, {"items": ["z"]}])


# -- checkpointers -------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["memory", 3, object()], ids=["str", "int", "object"])
def test_compile_refuses_what_is_not_a_checkpointer(lg: Imports, bad: Any) -> None:
    """LangGraph: compile(checkpointer=...) with something that is not a saver, True, False or None raises
    TypeError, its message starting with LangGraph's words (graphq's then names the type given)."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"items": ["a"]})
    builder.add_edge(lg.START, "a")
    with pytest.raises(TypeError) as caught:
        builder.compile(checkpointer=bad)
    assert str(caught.value).startswith("Invalid checkpointer provided. Expected ")
    if not lg.is_langgraph:
        kind = f"{type(bad).__module__}.{type(bad).__qualname__}"
        assert f"Received {kind}, which is not a checkpoint store" in str(caught.value)


def test_langgraphs_own_saver_is_refused_by_graphq(lg: Imports) -> None:
    """LangGraph: its InMemorySaver is a checkpointer. graphq refuses it (a TypeError) and names its own."""
    from langgraph.checkpoint.memory import InMemorySaver as LangGraphSaver

    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"items": ["a"]})
    builder.add_edge(lg.START, "a")
    if lg.is_langgraph:
        assert builder.compile(checkpointer=LangGraphSaver()).invoke({"items": []}, thread()) == {
            "items": ["a"]
        }
        return
    with pytest.raises(TypeError, match=r"is a LangGraph checkpointer; .*use graphcore\.InMemorySaver\(\)"):
        builder.compile(checkpointer=LangGraphSaver())


def test_memory_saver_is_the_in_memory_saver(lg: Imports) -> None:
    """LangGraph: MemorySaver (the older name) is the in-memory checkpointer too."""
    graph = chain(lg, checkpointer=lg.MemorySaver())
    graph.invoke({"items": []}, thread())
    assert graph.get_state(thread()).values == {"items": ["a", "b"]}


def test_a_root_graph_cannot_use_checkpointer_true(lg: Imports) -> None:
    """LangGraph: checkpointer=True is for subgraphs; invoking a root graph compiled with it raises
    RuntimeError."""
    graph = chain(lg, checkpointer=True)
    with pytest.raises(RuntimeError):
        graph.invoke({"items": []}, thread())


# -- subgraphs -----------------------------------------------------------------------------------------


class Outer(TypedDict):
    out: str


class Inner(TypedDict):
    out: str
    seen: Annotated[list[str], operator.add]


def counting(lg: Imports, checkpointer: Any) -> Any:
    """A parent whose only node is a subgraph that counts the turns it has seen."""
    inner = lg.StateGraph(Inner)
    inner.add_node("count", lambda s: {"seen": ["x"], "out": f"seen {len(s.get('seen', []))}"})
    inner.add_edge(lg.START, "count")
    outer = lg.StateGraph(Outer)
    outer.add_node("sub", inner.compile(checkpointer=checkpointer))
    outer.add_edge(lg.START, "sub")
    return outer.compile(checkpointer=lg.InMemorySaver())


@pytest.mark.parametrize(
    ("checkpointer", "turns"),
    [(None, ["seen 0", "seen 0", "seen 0"]), (True, ["seen 0", "seen 1", "seen 2"])],
    ids=["per-turn", "stateful"],
)
def test_a_subgraphs_checkpointer_decides_what_it_keeps_across_turns(
    lg: Imports, checkpointer: Any, turns: list[str]
) -> None:
    """LangGraph: a subgraph compiled with checkpointer=None starts afresh on each turn of its parent's
    thread; with checkpointer=True it keeps its own state across them."""
    graph = counting(lg, checkpointer)
    assert [graph.invoke({"out": ""}, thread())["out"] for _ in range(3)] == turns
    assert graph.invoke({"out": ""}, thread("2"))["out"] == "seen 0"  # another thread: its own state


def asking(lg: Imports, checkpointer: Any = None) -> Any:
    """A parent whose only node is a subgraph: pre → ask (interrupt)."""

    def ask(state: Inner) -> dict[str, Any]:
        return {"out": f"{lg.interrupt('q')}:{len(state.get('seen', []))}"}

    inner = lg.StateGraph(Inner)
    inner.add_node("pre", lambda s: {"seen": ["pre"]})
    inner.add_node("ask", ask)
    inner.add_edge(lg.START, "pre")
    inner.add_edge("pre", "ask")
    outer = lg.StateGraph(Outer)
    outer.add_node("sub", inner.compile(checkpointer=checkpointer))
    outer.add_edge(lg.START, "sub")
    return outer.compile(checkpointer=lg.InMemorySaver())


def test_get_state_shows_a_paused_subgraph_with_subgraphs_true(lg: Imports) -> None:
    """LangGraph: while a subgraph is paused, its parent task's state is the subgraph's config (thread and
    namespace "sub:<task id>"), and with subgraphs=True the subgraph's own snapshot."""
    graph = asking(lg)
    graph.invoke({"out": ""}, thread())
    (task,) = graph.get_state(thread()).tasks
    assert task.state["configurable"]["thread_id"] == "1"
    assert task.state["configurable"]["checkpoint_ns"] == f"sub:{task.id}"
    (task,) = graph.get_state(thread(), subgraphs=True).tasks
    inner = task.state
    assert (inner.values, inner.next, [i.value for i in inner.interrupts]) == (
        {"out": "", "seen": ["pre"]},
        ("ask",),
        ["q"],
    )
    assert inner.config["configurable"]["checkpoint_ns"] == f"sub:{task.id}"


def test_update_state_of_a_paused_subgraph_through_its_config(lg: Imports) -> None:
    """LangGraph: update_state with a paused subgraph's snapshot config updates the subgraph's state, which
    the resumed subgraph then reads."""
    graph = asking(lg)
    graph.invoke({"out": ""}, thread())
    inner = graph.get_state(thread(), subgraphs=True).tasks[0].state
    config = graph.update_state(inner.config, {"seen": ["edited"]})
    assert config["configurable"]["checkpoint_ns"] == inner.config["configurable"]["checkpoint_ns"]
    assert graph.get_state(thread(), subgraphs=True).tasks[0].state.values["seen"] == ["pre", "edited"]
    assert graph.invoke(lg.Command(resume="ok"), thread()) == {"out": "ok:2"}


def test_a_stateful_subgraph_pauses_and_keeps_its_state_across_turns(lg: Imports) -> None:
    """LangGraph: a checkpointer=True subgraph that pauses resumes where it stopped, and its next turn
    starts from the state it ended with."""
    graph = asking(lg, checkpointer=True)
    graph.invoke({"out": ""}, thread())
    assert graph.invoke(lg.Command(resume="one"), thread()) == {"out": "one:1"}
    graph.invoke({"out": ""}, thread())
    assert graph.invoke(lg.Command(resume="two"), thread()) == {"out": "two:2"}


def test_an_interrupt_in_a_subgraph_without_checkpoints(lg: Imports) -> None:
    """LangGraph: a checkpointer=False subgraph that calls interrupt() runs again from its start on resume.
    graphq refuses the interrupt (nothing to resume it from) with an InvalidGraphError."""
    graph = asking(lg, checkpointer=False)
    if lg.is_langgraph:
        graph.invoke({"out": ""}, thread())
        assert graph.invoke(lg.Command(resume="ok"), thread()) == {"out": "ok:1"}
        return
    with pytest.raises(ValueError) as caught:
        graph.invoke({"out": ""}, thread())
    assert str(caught.value).startswith(
        "interrupt() in node 'ask' of a subgraph compiled with checkpointer=False: it keeps no checkpoints"
    )


def test_a_static_breakpoint_then_update_state_then_continue(lg: Imports) -> None:
    """LangGraph: stopped by interrupt_before, the thread's next is the node; update_state (as the node that
    wrote last) keeps it next, and invoke(None) runs it with the update; as that node, it is skipped."""
    builder = lg.StateGraph(State)
    for name in ("a", "b", "c"):
        builder.add_node(name, lambda s, name=name: {"items": [name]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    graph = builder.compile(checkpointer=lg.InMemorySaver(), interrupt_before=["b"])
    assert graph.invoke({"items": []}, thread()) == {"items": ["a"]}
    assert graph.get_state(thread()).next == ("b",)
    graph.update_state(thread(), {"items": ["u"]})
    assert graph.get_state(thread()).next == ("b",)
    assert graph.invoke(None, thread()) == {"items": ["a", "u", "b", "c"]}
    graph.invoke({"items": []}, thread("2"))
    graph.update_state(thread("2"), {"items": ["skip"]}, as_node="b")
    assert graph.get_state(thread("2")).next == ("c",)
    assert graph.invoke(None, thread("2")) == {"items": ["a", "skip", "c"]}


def test_a_paused_subgraphs_snapshot_names_its_parents_checkpoint(lg: Imports) -> None:
    """LangGraph: a paused subgraph's snapshot (subgraphs=True) has metadata parents {"": the parent's
    checkpoint id}; a stateful subgraph's is read from, and names, its namespace without the task id."""
    for checkpointer in (None, True):
        graph = asking(lg, checkpointer)
        graph.invoke({"out": ""}, thread())
        parent = graph.get_state(thread(), subgraphs=True)
        inner = parent.tasks[0].state
        assert inner.metadata["parents"] == {"": ids(parent.config)}
        ns = "sub" if checkpointer else f"sub:{parent.tasks[0].id}"
        assert inner.config["configurable"]["checkpoint_ns"] == ns
        assert (inner.values, inner.next) == ({"out": "", "seen": ["pre"]}, ("ask",))


def test_an_update_as_the_next_node_with_an_unknown_key_is_kept(lg: Imports) -> None:
    """LangGraph: ``update_state(..., as_node="a")`` on a thread stopped before ``a``, with a key that is no
    channel, ignores the key and keeps the update (a new checkpoint). graphq stored the checkpoint, then
    refused the same values as the stopped task's result (InvalidUpdateError after the write)."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda state: {"items": ["a"]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", lg.END)
    graph = builder.compile(checkpointer=lg.InMemorySaver(), interrupt_before=["a"])
    graph.invoke({"items": []}, thread())
    with lg.graphq_warns(r"^update_state: node 'a' wrote unknown state key\(s\) \['typo'\]"):
        graph.update_state(thread(), {"items": ["u"], "typo": 2}, as_node="a")
    assert graph.get_state(thread()).values == {"items": ["u"]}
    assert len(list(graph.get_state_history(thread()))) == 3
