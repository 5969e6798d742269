"""A thread given ``Command(update=...)`` in process, then continued on the queue: the update,
kept with the thread's head as a pending write (tests/compat/test_command_input.py), is applied by the
queued step job as by the in-process loop: the question asked again shows it and the answered step commits
it. As for any queued step, the commit drops the pending writes of the checkpoint it goes on from, the
update's too: that checkpoint's snapshot no longer shows it (docs: LangGraph differences). Burst workers
in this process, on the test Redis."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import redis

from graphcore import END, START, Command, StateGraph, interrupt
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.backend.store import RedisCheckpointStore
from graphcore.engine.registry import Registry
from tests.workers import work


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _b(state: State) -> dict[str, Any]:
    return {"log": ["b:" + interrupt(f"q{len(state['log'])}")]}


def _builder() -> StateGraph:
    builder = StateGraph(State)
    builder.add_node("a", lambda state: {"log": ["a"]})
    builder.add_node("b", _b)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    return builder


CHAIN = _builder().compile(name="cmd-chain")
REGISTRY = Registry({CHAIN.name: CHAIN})


def test_an_update_given_in_process_is_applied_by_the_queued_step(
    client: Client, redis_client: redis.Redis
) -> None:
    graph = _builder().compile(
        name="cmd-chain", checkpointer=RedisCheckpointStore(redis_client, CHAIN.schema)
    )
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": []}, config)
    paused = graph.invoke(Command(update={"log": ["u"]}), config)
    assert (paused["log"], [i.value for i in paused["__interrupt__"]]) == (["a", "u"], ["q2"])
    run = client.enqueue("cmd-chain", None, thread_id="t")
    work(client)
    assert client.get_run(run).status == RunStatus.AWAITING_INPUT
    assert [i.value for i in client.requests(run)] == ["q2"]
    client.answer(run, "x")
    work(client)
    [done] = client.wait([run], timeout_s=30)
    assert (done.status, done.result) == (RunStatus.COMPLETED, {"log": ["a", "u", "b:x"]})
    history = graph.get_state_history(config)
    assert [(s.metadata["step"], s.next, s.values) for s in history][:2] == [
        (2, (), {"log": ["a", "u", "b:x"]}),
        (1, ("b",), {"log": ["a"]}),  # the queued commit drops the step's pending writes (docs)
    ]
