"""A thread's checkpoints in LangGraph's shape on the queue, and threads written in
graphq's earlier shape (one input checkpoint at step -1 already holding the input) loading and going on.

A queued run's history, read as snapshots through a graph on the same Redis store, is the one LangGraph
gives in process (tests/compat/test_history_shape.py): an input checkpoint, the input applied, one per
super-step; the run config's keys in each snapshot's metadata. One difference (docs): a committed step's
task writes are not kept on Redis (they would double an append-heavy thread's memory, P2), so only the
input's ``__start__`` task shows a ``result``."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
import redis

from graphcore import START, Command, InMemorySaver, InvalidUpdateError, StateGraph, keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.backend.store import RedisCheckpointStore
from graphcore.checkpoints.layout import decode_record
from graphcore.checkpoints.model import Checkpoint, new_checkpoint_id
from graphcore.engine.registry import Registry
from graphcore.types import PendingTask
from tests.compat.test_history_shape import FIRST_RUN, SECOND_RUN
from tests.workers import work


class State(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def _builder() -> StateGraph:
    builder = StateGraph(State)
    builder.add_node("a", lambda s: {"x": s["x"] + 1, "log": ["a"]})
    builder.add_node("b", lambda s: {"log": ["b"]})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    return builder


CHAIN = _builder().compile(name="hh-chain")
REGISTRY = Registry({CHAIN.name: CHAIN})


def _queued(history: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``history`` (LangGraph's) as a queued thread shows it: no ``result`` for a committed step's tasks."""
    return [
        (meta, nxt, values, [(name, result if name == START else None) for name, result in tasks])
        for meta, nxt, values, tasks in history
    ]


def _reader(redis_client: redis.Redis) -> Any:
    """The chain compiled on the workers' Redis store: its snapshots of a queued thread."""
    return _builder().compile(name="hh-chain", checkpointer=RedisCheckpointStore(redis_client, CHAIN.schema))


def _shape(graph: Any, thread: str) -> list[tuple[Any, ...]]:
    config = {"configurable": {"thread_id": thread}}
    return [
        (s.metadata, s.next, s.values, [(t.name, t.result) for t in s.tasks])
        for s in graph.get_state_history(config)
    ]


def test_a_queued_threads_history_is_langgraphs(client: Client, redis_client: redis.Redis) -> None:
    config = {"configurable": {"team": "x", "n": 3, "obj": [1]}, "metadata": {"user": "u"}}
    first = client.enqueue("hh-chain", {"x": 1}, thread_id="q", config=config)
    work(client)
    assert _shape(_reader(redis_client), "q") == _queued(FIRST_RUN)
    second = client.enqueue("hh-chain", {"x": 10}, thread_id="q")
    work(client)
    assert [r.status for r in client.wait([first, second], timeout_s=30)] == [RunStatus.COMPLETED] * 2
    assert _shape(_reader(redis_client), "q") == _queued(SECOND_RUN + FIRST_RUN)


def _old_thread(store: Any, thread: str) -> Checkpoint:
    """A thread as graphq wrote it before: its input checkpoint at step -1 already holds the input and
    schedules the first node; its metadata has graphq's ``run_id`` and ``writes``."""
    meta = {"run_id": "old-run", "source": "input", "step": -1, "writes": ["__start__"]}
    old = Checkpoint(new_checkpoint_id(), None, -1, {"x": 1, "log": []}, {"x": 1}, {}, [PendingTask("a")])
    old.metadata = meta
    store.put(thread, old)
    return old


def _old_then_new(history: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [(m["source"], m["step"], nxt, values) for m, nxt, values, _ in history]


OLD_THEN_NEW = [
    ("loop", 5, (), {"x": 11, "log": ["a", "b", "a", "b"]}),
    ("loop", 4, ("b",), {"x": 11, "log": ["a", "b", "a"]}),
    ("loop", 3, ("a",), {"x": 10, "log": ["a", "b"]}),
    ("input", 2, ("__start__",), {"x": 2, "log": ["a", "b"]}),
    ("loop", 1, (), {"x": 2, "log": ["a", "b"]}),
    ("loop", 0, ("b",), {"x": 2, "log": ["a"]}),
    ("input", -1, ("a",), {"x": 1, "log": []}),
]
"""An old thread (:func:`_old_thread`) gone on without input, then a run with input ``{"x": 10}``: the old
checkpoints keep their numbers, the new run writes LangGraph's two before its steps."""


def test_an_old_thread_goes_on_in_process() -> None:
    graph = _builder().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "old"}}
    _old_thread(graph.checkpointer, "old")
    assert graph.get_state(config).metadata == {"source": "input", "step": -1, "parents": {}}
    assert graph.invoke(None, config) == {"x": 2, "log": ["a", "b"]}
    assert graph.invoke({"x": 10}, config) == {"x": 11, "log": ["a", "b", "a", "b"]}
    assert _old_then_new(_shape(graph, "old")) == OLD_THEN_NEW


def test_an_old_thread_goes_on_on_the_queue(client: Client, redis_client: redis.Redis) -> None:
    _old_thread(RedisCheckpointStore(redis_client, CHAIN.schema), "old")
    first = client.enqueue("hh-chain", None, thread_id="old")
    work(client)
    second = client.enqueue("hh-chain", {"x": 10}, thread_id="old")
    work(client)
    done = client.wait([first, second], timeout_s=30)
    assert [(r.status, r.result) for r in done] == [
        (RunStatus.COMPLETED, {"x": 2, "log": ["a", "b"]}),
        (RunStatus.COMPLETED, {"x": 11, "log": ["a", "b", "a", "b"]}),
    ]
    assert _old_then_new(_shape(_reader(redis_client), "old")) == OLD_THEN_NEW


def test_a_queued_run_applies_an_input_checkpoint_written_by_update_state(
    client: Client, redis_client: redis.Redis
) -> None:
    """update_state(as_node="__input__") writes only the input checkpoint (next ``__start__``); a run
    without input applies it, then runs the graph."""
    _reader(redis_client).update_state({"configurable": {"thread_id": "u"}}, {"x": 5}, as_node="__input__")
    run = client.enqueue("hh-chain", None, thread_id="u")
    work(client)
    [done] = client.wait([run], timeout_s=30)
    assert (done.status, done.result) == (RunStatus.COMPLETED, {"x": 6, "log": ["a", "b"]})
    assert [
        (m["source"], m["step"], nxt, tasks) for m, nxt, _, tasks in _shape(_reader(redis_client), "u")
    ] == [
        ("loop", 2, (), []),
        ("loop", 1, ("b",), [("b", None)]),  # a committed step's task writes are not kept on Redis
        ("loop", 0, ("a",), [("a", None)]),
        ("input", -1, ("__start__",), [("__start__", {"x": 5})]),
    ]


def test_an_answer_to_an_input_checkpoint_is_refused_then_the_input_applies() -> None:
    """A thread whose latest checkpoint is an input checkpoint (update_state as "__input__") asks nothing:
    Command(resume=...) is refused as on any thread without an open question (docs); invoke(None) applies
    the input."""
    graph = _builder().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "in"}}
    graph.update_state(config, {"x": 1}, as_node="__input__")
    with pytest.raises(InvalidUpdateError, match=r"^the run has no pending request to answer$"):
        graph.invoke(Command(resume="yes"), config)
    assert graph.invoke(None, config) == {"x": 2, "log": ["a", "b"]}


def test_an_input_checkpoint_stores_no_value(client: Client, redis_client: redis.Redis) -> None:
    """O(change) (I4): a run's input checkpoint references its parent's stored values (the same refs), so
    it costs a record and a history entry; the input applied references new slots only for what changed."""
    client.enqueue("hh-chain", {"x": 1}, thread_id="o")
    work(client)
    client.enqueue("hh-chain", {"x": 10}, thread_id="o")
    work(client)
    history = client.get_history("o")
    refs = {
        cp.id: decode_record(redis_client.hget(keys.checkpoints("o"), cp.id) or b"").refs for cp in history
    }
    previous, first, applied = history[4], history[3], history[2]
    assert (first.source, first.step, applied.source, applied.step) == ("input", 3, "loop", 4)
    assert refs[first.id] == refs[previous.id]
    assert refs[applied.id]["log"] == refs[previous.id]["log"]  # the input wrote no log item
    assert refs[applied.id]["x"] == ["v", applied.id]  # x changed: its own slot
