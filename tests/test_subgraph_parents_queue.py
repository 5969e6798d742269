"""A queued run's subgraph checkpoints name their parents as LangGraph's in-process ones do
(tests/compat/test_streamed_subgraph_checkpoints.py): read through a graph on the workers' Redis store, the
history of a subgraph's namespace has metadata ``parents`` (the root checkpoint its task ran from) and the
``checkpoint_map`` of its configs."""

from __future__ import annotations

from typing import Any

import redis

from graphcore import START, StateGraph, interrupt
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.backend.store import RedisCheckpointStore
from graphcore.engine.registry import Registry
from tests.workers import work
from tests.workflows.watched_subgraph import State, builder  # START → plan → writer (sub_a → sub_b) → polish

WRITER = builder().compile(name="sp-writer")
REGISTRY = Registry({WRITER.name: WRITER})
THREAD = {"configurable": {"thread_id": "q"}}


def test_a_queued_subgraphs_history_names_its_parents(client: Client, redis_client: redis.Redis) -> None:
    run_id = client.enqueue("sp-writer", {"topic": "owls"}, thread_id="q")
    work(client)
    (record,) = client.wait([run_id], timeout_s=30)
    assert record.status == RunStatus.COMPLETED
    reader = builder().compile(
        name="sp-writer", checkpointer=RedisCheckpointStore(redis_client, WRITER.schema)
    )
    (writing,) = [s for s in reader.get_state_history(THREAD) if s.next == ("writer",)]
    root = writing.config["configurable"]["checkpoint_id"]
    (task,) = writing.tasks
    ns = f"writer:{task.id}"
    history = list(reader.get_state_history(task.state))
    assert [(s.metadata["step"], s.metadata["parents"]) for s in history] == [
        (2, {"": root}),
        (1, {"": root}),
        (0, {"": root}),
        (-1, {"": root}),
    ]
    assert [s.config["configurable"]["checkpoint_map"] for s in history] == [
        {"": root, ns: s.config["configurable"]["checkpoint_id"]} for s in history
    ]


def test_a_run_enqueued_with_a_subgraphs_config_forks_at_its_root_checkpoint(
    client: Client, redis_client: redis.Redis
) -> None:
    """As ``invoke(None, subgraph_config)`` in process (LangGraph's): the run forks the thread at the root
    checkpoint of the config's ``checkpoint_map`` (a ``fork`` checkpoint) and runs from there again."""
    first = client.enqueue("sp-writer", {"topic": "owls"}, thread_id="q")
    work(client)
    reader = builder().compile(
        name="sp-writer", checkpointer=RedisCheckpointStore(redis_client, WRITER.schema)
    )
    (writing,) = [s for s in reader.get_state_history(THREAD) if s.next == ("writer",)]
    (sub,) = [s for s in reader.get_state_history(writing.tasks[0].state) if s.next == ("sub_b",)]
    second = client.enqueue("sp-writer", None, thread_id="q", config=sub.config)
    history = _both_completed(client, reader, first, second)
    assert history[:4] == [
        (4, "loop", ()),
        (3, "loop", ("polish",)),
        (2, "fork", ("writer",)),
        (3, "loop", ()),
    ]


RAN: list[str] = []


def _both_completed(client: Client, reader: Any, first: str, second: str) -> list[tuple[Any, ...]]:
    """Work runs ``first`` and ``second`` (the fork) to their ends, check both completed with the same
    result, and return the thread's history as ``(step, source, next)``, newest first."""
    work(client)
    done = client.wait([first, second], timeout_s=30)
    steps = ["plan", "plan", "sub_a", "sub_b", "polish"]
    assert [(r.status, r.result) for r in done] == [
        (RunStatus.COMPLETED, {"topic": "owls", "steps": steps})
    ] * 2
    return [(s.metadata["step"], s.metadata["source"], s.next) for s in reader.get_state_history(THREAD)]


def _asking() -> StateGraph:
    """START → sub, a ``checkpointer=True`` subgraph of before → ask (``interrupt('ok?')``)."""

    def before(state: State) -> dict[str, Any]:
        RAN.append("before")
        return {"steps": ["before"]}

    def ask(state: State) -> dict[str, Any]:
        RAN.append("ask")
        return {"steps": [f"ask:{interrupt('ok?')}"]}

    inner = StateGraph(State)
    inner.add_node("before", before)
    inner.add_node("ask", ask)
    inner.add_edge(START, "before")
    inner.add_edge("before", "ask")
    outer = StateGraph(State)
    outer.add_node("sub", inner.compile(checkpointer=True))
    outer.add_edge(START, "sub")
    return outer


ASKING = _asking().compile(name="sp-asking")
REGISTRY.add(ASKING)


def test_a_stateful_subgraph_goes_on_from_the_checkpoint_its_config_names(
    client: Client, redis_client: redis.Redis
) -> None:
    """As in process (tests/compat/test_checkpoint_ns.py): a run enqueued with a paused ``checkpointer=True``
    subgraph's snapshot config goes on from the subgraph checkpoint its ``checkpoint_map`` names: only
    ``ask`` runs again, and asks again (the paused run is canceled first: the thread is busy while it
    waits)."""
    RAN.clear()
    first = client.enqueue("sp-asking", {"steps": []}, thread_id="a")
    work(client)
    reader = _asking().compile(
        name="sp-asking", checkpointer=RedisCheckpointStore(redis_client, ASKING.schema)
    )
    sub = reader.get_state({"configurable": {"thread_id": "a"}}, subgraphs=True).tasks[0].state
    client.cancel(first)
    second = client.enqueue("sp-asking", None, thread_id="a", config=sub.config)
    work(client)
    assert client.get_run(second).status == RunStatus.AWAITING_INPUT
    assert [r.value for r in client.requests(second)] == ["ok?"]
    assert RAN == ["before", "ask", "ask"]
    client.answer(second, "yes")
    work(client)
    (done,) = client.wait([second], timeout_s=30)
    assert (done.status, done.result) == (RunStatus.COMPLETED, {"steps": ["before", "ask:yes"]})


def test_a_queued_subgraphs_checkpoints_listed_from_redis_fork_the_run(
    client: Client, redis_client: redis.Redis
) -> None:
    """Through the saver API on the workers' Redis store, a subgraph checkpoint's metadata names the root
    checkpoint its task ran from (``parents``, LangGraph's); its listed config, given to ``get_state``, gives
    the config with ``checkpoint_map`` (as LangGraph's) that an enqueued run forks from."""
    first = client.enqueue("sp-writer", {"topic": "owls"}, thread_id="q")
    work(client)
    listed = list(client.checkpoints.list(THREAD))
    roots = [t for t in listed if not t.config["configurable"]["checkpoint_ns"]]
    subs = [t for t in listed if t.config["configurable"]["checkpoint_ns"]]
    writing = roots[2].config["configurable"]["checkpoint_id"]
    assert [(t.metadata["step"], t.metadata["parents"]) for t in roots] == [(s, {}) for s in (3, 2, 1, 0, -1)]
    assert [(t.metadata["step"], t.metadata["parents"]) for t in subs] == [
        (s, {"": writing}) for s in (2, 1, 0, -1)
    ]
    assert [sorted(t.config["configurable"]) for t in subs] == [
        ["checkpoint_id", "checkpoint_ns", "thread_id"]
    ] * 4
    reader = builder().compile(
        name="sp-writer", checkpointer=RedisCheckpointStore(redis_client, WRITER.schema)
    )
    at_sub_b = reader.get_state(subs[1].config).config  # step 1 of the subgraph: sub_b next
    ns = subs[1].config["configurable"]["checkpoint_ns"]
    assert at_sub_b["configurable"]["checkpoint_map"] == {"": writing, ns: subs[1].checkpoint["id"]}
    second = client.enqueue("sp-writer", None, thread_id="q", config=at_sub_b)
    history = _both_completed(client, reader, first, second)
    assert history[:3] == [(4, "loop", ()), (3, "loop", ("polish",)), (2, "fork", ("writer",))]
