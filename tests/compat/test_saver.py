"""The checkpoint saver API: a program reads and forgets a thread's checkpoints through
its saver — ``list``, ``get_tuple``, ``get``, ``put``, ``put_writes``, ``delete_thread`` and their async
forms — and gets LangGraph's answers. On the queue, the Redis store answers the same for a queued run's
thread, and refuses to delete a thread while a run is active on it.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest
import redis

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.store import RedisCheckpointStore
from graphcore.backend.ttl import ThreadActiveError
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError
from graphcore.types import PendingTask
from tests.compat.conftest import Imports
from tests.workers import work

REGISTRY = Registry.load(["tests.workflows.basic", "tests.workflows.saver"])
CHECKPOINT_KEYS = {"v", "id", "ts", "channel_values", "channel_versions", "versions_seen", "updated_channels"}


class State(TypedDict):
    items: Annotated[list[str], operator.add]
    n: int


def _chain(lg: Imports) -> tuple[Any, Any]:
    """START → a → b on ``State``, with its InMemorySaver."""
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"items": ["a"], "n": s["n"] + 1})
    builder.add_node("b", lambda s: {"items": ["b"]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    saver = lg.InMemorySaver()
    return builder.compile(checkpointer=saver), saver


def _paused(lg: Imports) -> tuple[Any, Any]:
    """START → ask (asks "q1") and ok, in one super-step."""

    def ask(state: State) -> dict[str, Any]:
        return {"items": [lg.interrupt("q1")]}

    builder = lg.StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_node("ok", lambda s: {"items": ["ok"]})
    builder.add_edge(lg.START, "ask")
    builder.add_edge(lg.START, "ok")
    saver = lg.InMemorySaver()
    return builder.compile(checkpointer=saver), saver


def _nested(lg: Imports) -> tuple[Any, Any]:
    """A subgraph node ``sub`` (inc) then ``after`` (× 10) on ``{"n": int}``."""

    class N(TypedDict):
        n: int

    inner = lg.StateGraph(N)
    inner.add_node("inc", lambda s: {"n": s["n"] + 1})
    inner.add_edge(lg.START, "inc")
    outer = lg.StateGraph(N)
    outer.add_node("sub", inner.compile())
    outer.add_node("after", lambda s: {"n": s["n"] * 10})
    outer.add_edge(lg.START, "sub")
    outer.add_edge("sub", "after")
    saver = lg.InMemorySaver()
    return outer.compile(checkpointer=saver), saver


def _thread(thread: str, **more: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, **more}}


def test_list_yields_the_threads_checkpoint_tuples_newest_first(lg: Imports) -> None:
    graph, saver = _chain(lg)
    graph.invoke({"items": ["x"], "n": 0}, _thread("t1"))
    tuples = list(saver.list(_thread("t1")))
    assert isinstance(tuples[0], lg.CheckpointTuple)
    assert tuples[0]._fields == ("config", "checkpoint", "metadata", "parent_config", "pending_writes")
    assert [t.metadata["step"] for t in tuples] == [2, 1, 0, -1]
    newest = tuples[0]
    assert set(newest.checkpoint) >= CHECKPOINT_KEYS
    assert newest.checkpoint["channel_values"] == {"items": ["x", "a", "b"], "n": 1}
    assert newest.config == _thread("t1", checkpoint_ns="", checkpoint_id=newest.checkpoint["id"])
    assert [t.parent_config for t in tuples] == [t.config for t in tuples[1:]] + [None]
    assert [t.metadata["source"] for t in tuples] == ["loop"] * 3 + ["input"]
    assert newest.metadata["parents"] == {} and newest.pending_writes == []
    after_a = tuples[1].checkpoint
    if lg.is_langgraph:  # its trigger channels are channels too
        assert after_a["channel_values"] == {"items": ["x", "a"], "n": 1, "branch:to:b": None}
    else:  # the state's channels; the next step's tasks are graphq's own key
        assert after_a["channel_values"] == {"items": ["x", "a"], "n": 1}
        assert after_a["next_tasks"] == [PendingTask("b")] and after_a["barriers"] == {}
        assert (newest.checkpoint["v"], newest.checkpoint["updated_channels"]) == (2, None)
        assert newest.checkpoint["channel_versions"] == {"n": 2, "items": 3}


def test_get_tuple_and_get_read_the_newest_or_the_named_checkpoint(lg: Imports) -> None:
    graph, saver = _chain(lg)
    graph.invoke({"items": ["x"], "n": 0}, _thread("t2"))
    newest, older = list(saver.list(_thread("t2")))[:2]
    assert saver.get_tuple(_thread("t2")) == newest
    assert saver.get(_thread("t2")) == newest.checkpoint
    named = saver.get_tuple(older.config)
    assert named.config == older.config and named.checkpoint["id"] == older.checkpoint["id"]
    assert named.checkpoint["channel_values"]["items"] == ["x", "a"]
    assert saver.get_tuple(_thread("nobody")) is None
    assert saver.get(_thread("nobody")) is None


def test_list_filters_by_metadata_before_and_limit(lg: Imports) -> None:
    graph, saver = _chain(lg)
    graph.invoke({"items": ["x"], "n": 0}, _thread("t3"))
    every = list(saver.list(_thread("t3")))
    inputs = list(saver.list(_thread("t3"), filter={"source": "input"}))
    assert [t.metadata["step"] for t in inputs] == [-1]
    assert [t.config for t in saver.list(_thread("t3"), limit=2)] == [t.config for t in every[:2]]
    assert [t.config for t in saver.list(_thread("t3"), before=every[0].config)] == [
        t.config for t in every[1:]
    ]
    assert [t.config for t in saver.list(_thread("t3"), before=every[0].config, limit=1)] == [every[1].config]
    assert list(saver.list(_thread("nobody"))) == []


def test_pending_writes_of_a_paused_step(lg: Imports) -> None:
    """The newest checkpoint of a paused step holds the finished task's writes and the asking task's
    interrupt."""
    graph, saver = _paused(lg)
    graph.invoke({"items": ["x"], "n": 0}, _thread("t4"))
    found = saver.get_tuple(_thread("t4")).pending_writes
    seen = sorted((c, [i.value for i in v] if c == "__interrupt__" else v) for _, c, v in found)
    assert seen == [("__interrupt__", ["q1"]), ("items", ["ok"])]
    assert len({tid for tid, _, _ in found}) == 2


def test_list_without_a_namespace_includes_the_subgraphs(lg: Imports) -> None:
    graph, saver = _nested(lg)
    assert graph.invoke({"n": 1}, _thread("t5")) == {"n": 20}
    tuples = list(saver.list(_thread("t5")))
    spaces = [t.config["configurable"]["checkpoint_ns"].split(":")[0] for t in tuples]
    assert list(dict.fromkeys(spaces)) == ["", "sub"]
    assert spaces.count("sub") == 3
    subs = [t for t in tuples if t.config["configurable"]["checkpoint_ns"]]
    assert subs[0].checkpoint["channel_values"] == {"n": 2}
    roots = list(saver.list(_thread("t5", checkpoint_ns="")))
    assert [t.config for t in roots] == [t.config for t in tuples if spaces[tuples.index(t)] == ""]
    assert list(saver.list(_thread("t5"), limit=1)) == tuples[:1]


def test_list_of_none_lists_every_thread(lg: Imports) -> None:
    graph, saver = _chain(lg)
    graph.invoke({"items": ["x"], "n": 0}, _thread("t6"))
    graph.invoke({"items": ["y"], "n": 5}, _thread("t7"))
    threads = [t.config["configurable"]["thread_id"] for t in saver.list(None)]
    assert list(dict.fromkeys(threads)) == ["t6", "t7"]
    assert len(threads) == 8


def test_delete_thread_forgets_the_conversation(lg: Imports) -> None:
    graph, saver = _nested(lg)
    graph.invoke({"n": 1}, _thread("t8"))
    graph.invoke({"n": 2}, _thread("t9"))
    saver.delete_thread("t8")
    assert list(saver.list(_thread("t8"))) == []
    assert saver.get_tuple(_thread("t8")) is None
    assert graph.get_state(_thread("t8")).values == {}
    assert saver.get_tuple(_thread("t9")).checkpoint["channel_values"] == {"n": 30}
    assert graph.invoke({"n": 4}, _thread("t8")) == {"n": 50}  # a fresh start, not the old thread's state
    saver.delete_thread("never-used")


def test_the_async_forms(lg: Imports) -> None:
    graph, saver = _chain(lg)
    graph.invoke({"items": ["x"], "n": 0}, _thread("t10"))

    async def read() -> tuple[Any, ...]:
        listed = [t async for t in saver.alist(_thread("t10"), limit=2)]
        newest = await saver.aget_tuple(_thread("t10"))
        checkpoint = await saver.aget(_thread("t10"))
        at = _thread("t10-copy", checkpoint_ns="", checkpoint_id=None)
        stored = await saver.aput(at, checkpoint, newest.metadata, checkpoint["channel_versions"])
        await saver.aput_writes(stored, [("items", ["w"])], "task-1")
        copied = await saver.aget_tuple(stored)
        await saver.adelete_thread("t10")
        return listed, newest, checkpoint, copied, await saver.aget_tuple(_thread("t10"))

    listed, newest, checkpoint, copied, gone = asyncio.run(read())
    assert len(listed) == 2 and listed[0] == newest
    assert checkpoint == newest.checkpoint and checkpoint["channel_values"]["items"] == ["x", "a", "b"]
    assert copied.checkpoint["channel_values"] == {"items": ["x", "a", "b"], "n": 1}
    assert copied.pending_writes == [("task-1", "items", ["w"])]
    assert gone is None


def _copy(saver: Any, source: str, target: str) -> None:
    """Copy a thread's root checkpoints and their pending writes with ``put`` and ``put_writes``, oldest
    first, as a program that clones a conversation does."""
    for found in reversed(list(saver.list(_thread(source, checkpoint_ns="")))):
        parent = found.parent_config["configurable"]["checkpoint_id"] if found.parent_config else None
        at = _thread(target, checkpoint_ns="", checkpoint_id=parent)
        stored = saver.put(at, found.checkpoint, found.metadata, found.checkpoint["channel_versions"])
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in found.pending_writes:
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            saver.put_writes(stored, writes, task_id)


def test_put_and_put_writes_copy_a_paused_thread_that_then_resumes(lg: Imports) -> None:
    graph, saver = _paused(lg)
    graph.invoke({"items": ["x"], "n": 0}, _thread("src"))
    _copy(saver, "src", "copy")
    copied = saver.get_tuple(_thread("copy"))
    assert copied.checkpoint == saver.get_tuple(_thread("src")).checkpoint
    assert graph.get_state(_thread("copy")).next == ("ask",)
    assert graph.invoke(lg.Command(resume="A"), _thread("copy")) == {"items": ["x", "A", "ok"], "n": 0}
    assert graph.get_state(_thread("src")).next == ("ask",)  # the source waits still


def test_put_returns_the_stored_checkpoints_config(lg: Imports) -> None:
    graph, saver = _chain(lg)
    graph.invoke({"items": ["x"], "n": 0}, _thread("t11"))
    newest = saver.get_tuple(_thread("t11"))
    at = _thread("t12", checkpoint_ns="", checkpoint_id=None)
    stored = saver.put(at, newest.checkpoint, newest.metadata, newest.checkpoint["channel_versions"])
    assert stored == _thread("t12", checkpoint_ns="", checkpoint_id=newest.checkpoint["id"])
    assert graph.get_state(_thread("t12")).values == {"items": ["x", "a", "b"], "n": 1}
    assert graph.invoke({"items": ["y"], "n": 0}, _thread("t12")) == {
        "items": ["x", "a", "b", "y", "a", "b"],
        "n": 1,
    }


def test_the_redis_store_answers_for_a_queued_runs_thread(
    lg: Imports, request: pytest.FixtureRequest
) -> None:
    """The graph of ``_nested`` in process, and for graphq also on the queue (``saver-nested``,
    tests/workflows/saver.py): the Redis store's saver API gives the in-process saver's answers, the
    subgraph's namespace included."""
    graph, saver = _nested(lg)
    graph.invoke({"n": 1}, _thread("q1"))
    readers = [saver]
    if not lg.is_langgraph:
        client: Client = request.getfixturevalue("client")
        client.enqueue("saver-nested", {"n": 1}, thread_id="q1")
        work(client)
        readers.append(RedisCheckpointStore(client.kv))
    for reader in readers:
        newest = reader.get_tuple(_thread("q1"))
        assert newest.checkpoint["channel_values"] == {"n": 20}
        assert reader.get(_thread("q1")) == newest.checkpoint
        tuples = list(reader.list(_thread("q1")))
        spaces = [t.config["configurable"]["checkpoint_ns"].split(":")[0] for t in tuples]
        assert spaces == [""] * 4 + ["sub"] * 3
        newest_sub = next(t for t in tuples if t.config["configurable"]["checkpoint_ns"])
        assert newest_sub.checkpoint["channel_values"] == {"n": 2}
        assert [t.config["configurable"]["thread_id"] for t in reader.list(None)] == ["q1"] * len(tuples)


def test_the_redis_store_refuses_to_delete_a_thread_with_a_live_run(
    client: Client, redis_client: redis.Redis
) -> None:
    """graphq only: ``delete_thread`` on the Redis store while a run is queued on the thread is refused,
    naming the run; once it ended, every key of the thread goes (subgraph namespaces and runs too)."""
    run_id = client.enqueue("counter", {"n": 0, "limit": 2}, thread_id="q2")
    store = RedisCheckpointStore(redis_client)
    with pytest.raises(ThreadActiveError) as refused:
        store.delete_thread("q2")
    assert str(refused.value) == (
        f"thread 'q2' has an active run {run_id} (queued): cancel it (graphq runs cancel {run_id}) or wait "
        "for it to end"
    )
    work(client)
    assert store.get_tuple(_thread("q2")).checkpoint["channel_values"]["n"] == 2
    store.delete_thread("q2")
    assert list(redis_client.scan_iter(match=keys.thread_pattern("q2"))) == []
    assert store.get_tuple(_thread("q2")) is None and list(store.list(_thread("q2"))) == []


def test_a_config_without_a_thread_or_checkpoint_is_refused(lg: Imports) -> None:
    """LangGraph raises KeyError; graphq's is a KeyError too, and a ConfigError naming what is missing."""
    _, saver = _chain(lg)
    refused = KeyError
    with pytest.raises(refused) as no_thread:
        saver.get_tuple({"configurable": {}})
    with pytest.raises(refused) as no_checkpoint:
        saver.put_writes(_thread("t13", checkpoint_ns=""), [("items", ["a"])], "task")
    with pytest.raises(refused) as no_id:
        saver.put(_thread("t13", checkpoint_ns=""), {"channel_values": {}}, {"step": -1}, {})
    if not lg.is_langgraph:
        assert all(isinstance(e.value, ConfigError) for e in (no_thread, no_checkpoint, no_id))
        assert str(no_thread.value) == (
            "get_tuple needs a thread: config={'configurable': {'thread_id': ...}}, got {'configurable': {}}"
        )
        assert str(no_checkpoint.value) == (
            "put_writes: config needs the checkpoint's configurable.checkpoint_id, got "
            "{'configurable': {'thread_id': 't13', 'checkpoint_ns': ''}}"
        )
        assert str(no_id.value) == "put: checkpoint['id'] is missing (LangGraph's checkpoint dict has it)"
