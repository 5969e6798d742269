"""Async nodes: in-process under ``invoke`` (graphq's own loop) and ``ainvoke`` (the caller's), and
on the queue with a real worker subprocess: concurrency within a super-step, interrupts answered through the
client, timeouts, retries and interrupting cancels reaching the node as ``asyncio.CancelledError``."""

from __future__ import annotations

import asyncio
import operator
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from graphcore import END, START, Command, RetryPolicy, StateGraph, get_cancel_token, interrupt
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.checkpoints.memory import InMemoryCheckpointStore
from graphcore.engine.algo import apply_input
from graphcore.engine.cancel import CancelToken
from graphcore.engine.config import get_config
from graphcore.engine.registry import Registry
from graphcore.engine.step import run_step
from graphcore.errors import Cancelled, NodeError, NodeTimeoutError
from tests.workers import ended, wait_for, worker_env

REGISTRY = Registry.load(["tests.workflows.async_nodes"])


class State(TypedDict, total=False):
    items: Annotated[list[Any], operator.add]


def _fan_out(*nodes: tuple[str, Any], checkpointer: Any = None) -> Any:
    g = StateGraph(State)
    for name, fn in nodes:
        g.add_node(name, fn)
        g.add_edge(START, name)
        g.add_edge(name, END)
    return g.compile(checkpointer=checkpointer)


def _one(fn: Any, **options: Any) -> Any:
    g = StateGraph(State)
    g.add_node("n", fn, **options)
    g.add_edge(START, "n")
    g.add_edge("n", END)
    return g.compile()


def _loop_recorder(name: str, seconds: float, loops: list[int]) -> Any:
    async def node(state: State) -> dict[str, Any]:
        loops.append(id(asyncio.get_running_loop()))
        await asyncio.sleep(seconds)
        return {"items": [name]}

    return node


async def until(ready: Callable[[], bool], timeout_s: float = 10) -> None:
    """Wait on the running loop, without blocking it, until ``ready()``; ``TimeoutError`` after ``timeout_s``
    seconds. A node that waits so for what only another node does can end only if the two run at once."""
    async with asyncio.timeout(timeout_s):
        while not ready():
            await asyncio.sleep(0.005)


# --- in-process -------------------------------------------------------------------------------------------


def test_invoke_runs_the_async_tasks_of_a_step_concurrently_on_one_loop() -> None:
    """Each task waits (up to 10 s) until all three have started: one after another, the first times out."""
    loops: list[int] = []
    here: list[str] = []

    def meeting(name: str) -> Any:
        async def node(state: State) -> dict[str, Any]:
            loops.append(id(asyncio.get_running_loop()))
            here.append(name)
            await until(lambda: len(here) == 3)
            return {"items": [name]}

        return node

    graph = _fan_out(*((n, meeting(n)) for n in ("a", "b", "c")))
    assert graph.invoke({"items": []}) == {"items": ["a", "b", "c"]}
    here.clear()
    assert graph.invoke({"items": []}) == {"items": ["a", "b", "c"]}
    assert len(loops) == 6 and len(set(loops)) == 1  # one loop for the thread, kept across runs


def test_a_sync_and_an_async_task_of_one_step_overlap() -> None:
    """Each waits (up to 10 s) for the other to have started: one after another, the first times out."""
    sync_started, async_started = threading.Event(), threading.Event()

    def blocking(state: State) -> dict[str, Any]:
        sync_started.set()
        assert async_started.wait(10), "the async task did not start while the sync one ran"
        return {"items": ["sync"]}

    async def waiting(state: State) -> dict[str, Any]:
        async_started.set()
        await until(sync_started.is_set)
        return {"items": ["async"]}

    graph = _fan_out(("s", blocking), ("a", waiting))
    assert graph.invoke({"items": []}) == {"items": ["async", "sync"]}  # node a before s (LangGraph's order)


def test_each_async_task_sees_its_own_context() -> None:
    async def who(state: State) -> dict[str, Any]:
        token = get_cancel_token()
        await asyncio.sleep(0.01)
        node = get_config().configurable["__graphq_node"]
        return {"items": [[node, token is get_cancel_token()]]}

    graph = _fan_out(("x", who), ("y", who))
    assert graph.invoke({"items": []}) == {"items": [["x", True], ["y", True]]}


def test_invoke_from_inside_a_running_loop_uses_a_loop_of_its_own() -> None:
    loops: list[int] = []
    graph = _fan_out(("a", _loop_recorder("a", 0, loops)))

    async def caller() -> tuple[Any, int]:
        return graph.invoke({"items": []}), id(asyncio.get_running_loop())

    result, callers = asyncio.run(caller())
    assert result == {"items": ["a"]}
    assert loops != [callers]


async def ticks_during(awaited: Callable[[], Awaitable[Any]], ticked: threading.Event) -> Any:
    """What ``awaited()`` returns. Meanwhile another task of the loop ticks every 20 ms and sets ``ticked``
    after three ticks: a node that waits for ``ticked`` (with a bound) ends only if the loop was served
    while the node ran."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1
            if ticks == 3:
                ticked.set()

    tick = asyncio.create_task(ticker())
    try:
        return await awaited()
    finally:
        tick.cancel()


def test_ainvoke_does_not_block_the_callers_loop() -> None:
    """The sync node waits (up to 10 s) for ticks of the caller's loop: a blocked loop never ticks."""
    ticked = threading.Event()

    def blocking(state: State) -> dict[str, Any]:
        assert ticked.wait(10), "the caller's loop did not tick while the node ran"
        return {"items": ["slept"]}

    result = asyncio.run(ticks_during(lambda: _one(blocking).ainvoke({"items": []}), ticked))
    assert result == {"items": ["slept"]}


def test_an_async_node_past_its_timeout_is_cancelled() -> None:
    """The node would sleep 30 s: the timeout ends it long before."""
    seen: list[str] = []

    async def slow(state: State) -> dict[str, Any]:
        token = get_cancel_token()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append(f"cancelled, token set: {token.cancelled}")
            raise
        return {"items": ["never"]}

    graph = _one(slow, timeout=0.2)
    begin = time.monotonic()
    with pytest.raises(NodeTimeoutError, match=r"node 'n' timed out after 0.2 s"):
        graph.invoke({"items": []})
    assert time.monotonic() - begin < 15
    assert seen == ["cancelled, token set: True"]


def test_an_async_nodes_own_timeout_error_is_its_error() -> None:
    async def raises(state: State) -> dict[str, Any]:
        raise TimeoutError("the service timed out")

    with pytest.raises(NodeError, match="node 'n' raised TimeoutError: the service timed out"):
        _one(raises, timeout=5).invoke({"items": []})


def test_an_async_node_is_retried_under_its_policy() -> None:
    tries: list[int] = []

    async def flaky(state: State) -> dict[str, Any]:
        tries.append(len(tries) + 1)
        if len(tries) < 3:
            raise ConnectionError(f"try {len(tries)}")
        return {"items": [f"ok after {len(tries)}"]}

    graph = _one(flaky, retry=RetryPolicy(initial_interval_s=0.01, max_attempts=3, jitter=False))
    cp = apply_input(graph, None, {"items": []}, {})
    retried: list[tuple[str, int, str, float]] = []
    outcome = run_step(
        graph,
        cp,
        graph.config_for(None),
        on_retry=lambda task, n, error, wait_s: retried.append((task.node, n, str(error), wait_s)),
    )
    assert outcome.error is None
    assert [dict(r.writes) for r in outcome.results] == [{"items": ["ok after 3"]}]
    assert retried == [("n", 1, "try 1", 0.01), ("n", 2, "try 2", 0.02)]


def test_an_async_node_that_keeps_failing_fails_with_its_last_error() -> None:
    async def broken(state: State) -> dict[str, Any]:
        raise ConnectionError("down")

    graph = _one(broken, retry=RetryPolicy(initial_interval_s=0.01, max_attempts=2, jitter=False))
    with pytest.raises(NodeError, match="node 'n' raised ConnectionError: down"):
        graph.invoke({"items": []})


def _cancel_when(token: CancelToken, ready: Callable[[], bool], *reason: str) -> None:
    """Cancel ``token`` from another thread once ``ready()`` (waits up to 10 s)."""

    def cancel() -> None:
        wait_for(ready, 10, "the tasks to start")
        token.cancel(*reason)

    threading.Thread(target=cancel).start()


def test_a_cancelled_run_token_cancels_the_running_async_nodes() -> None:
    """Both nodes would sleep 30 s: the cancel, sent once both run, ends them long before."""
    started: list[str] = []
    seen: list[str] = []

    async def waits(state: State) -> dict[str, Any]:
        started.append("started")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return {"items": ["never"]}

    graph = _fan_out(("a", waits), ("b", waits))
    token = CancelToken()
    _cancel_when(token, lambda: len(started) == 2, "canceled by request")
    begin = time.monotonic()
    with pytest.raises(Cancelled, match="canceled by request"):
        run_step(graph, apply_input(graph, None, {"items": []}, {}), graph.config_for(None), cancel=token)
    assert time.monotonic() - begin < 15
    assert seen == ["cancelled", "cancelled"]


def test_a_cancel_during_the_pause_between_tries_ends_the_task() -> None:
    """The pause after the first try is 30 s: the cancel, sent once the try failed, ends it long before."""
    tries: list[int] = []

    async def failing(state: State) -> dict[str, Any]:
        tries.append(1)
        raise ConnectionError("down")

    graph = _one(failing, retry=RetryPolicy(initial_interval_s=30, max_attempts=3, jitter=False))
    token = CancelToken()
    _cancel_when(token, lambda: len(tries) == 1)
    begin = time.monotonic()
    outcome = run_step(
        graph, apply_input(graph, None, {"items": []}, {}), graph.config_for(None), cancel=token
    )
    assert time.monotonic() - begin < 15
    assert tries == [1]
    assert (
        isinstance(outcome.error, NodeError) and str(outcome.error) == "node 'n' raised ConnectionError: down"
    )


def test_interrupt_in_an_async_node_under_invoke() -> None:
    async def ask(state: State) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"items": [f"hello {interrupt('name?')}"]}

    graph = _fan_out(("ask", ask), checkpointer=InMemoryCheckpointStore())
    thread = {"configurable": {"thread_id": "t"}}
    paused = graph.invoke({"items": []}, thread)
    assert [i.value for i in paused["__interrupt__"]] == ["name?"]
    assert graph.invoke(Command(resume="ada"), thread) == {"items": ["hello ada"]}


# --- on the queue -----------------------------------------------------------------------------------------


@pytest.fixture
def env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return worker_env(redis_url, "tests.workflows.async_nodes", tmp_path)


def _status(client: Client, run_id: str, status: RunStatus, timeout_s: float = 20) -> None:
    wait_for(lambda: client.get_run(run_id).status == status, timeout_s, f"run {run_id} {status}")


def test_a_worker_runs_an_async_fan_out_concurrently(client: Client, worker: subprocess.Popen[bytes]) -> None:
    """Each node waits (up to 10 s) until all three have started (workflows/async_nodes.py): one after
    another, the first times out and the run fails."""
    run = ended(client, client.enqueue("async-fanout", {}), timeout_s=60)
    assert (run.status, run.error) == (RunStatus.COMPLETED, None)
    assert run.step == 1  # the three ran in one super-step
    assert run.result == {"met": ["a", "b", "c"]}


def test_an_async_interrupt_is_answered_through_the_client(
    client: Client, worker: subprocess.Popen[bytes]
) -> None:
    run_id = client.enqueue("async-ask", {})
    _status(client, run_id, RunStatus.AWAITING_INPUT)
    [request] = client.requests(run_id)
    assert (request.node, request.value) == ("ask", {"question": "your name?"})
    client.answer(run_id, "ada")
    _status(client, run_id, RunStatus.COMPLETED)
    assert client.get_run(run_id).result == {"greeting": "hello ada"}


def test_an_interrupting_cancel_reaches_an_async_node(
    client: Client, worker: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    log = tmp_path / "patient.log"
    run_id = client.enqueue("async-patient", {})
    wait_for(lambda: log.exists() and log.read_text() == "started\n", what="the node to start")
    client.cancel(run_id, interrupt=True)
    _status(client, run_id, RunStatus.CANCELED, timeout_s=15)  # the node would sleep 30 s
    run = client.get_run(run_id)
    assert run.error is not None and run.error.message == "canceled by request; running nodes were signalled"
    assert log.read_text() == "started\ncancelled\n"
