"""``TimeoutPolicy(idle_timeout=..., refresh_on=...)``: a try that makes no progress
for ``idle_timeout`` seconds fails with NodeTimeoutError (``kind == "idle"``). Progress is a stream write,
a LangChain event of the node's calls, or ``runtime.heartbeat()``; under ``refresh_on="heartbeat"`` only
heartbeats. LangGraph's result is the expected value on both sides (async nodes under ``ainvoke``: LangGraph
times out only those); on the queue, a sync node on a burst worker.

No case depends on speed: a node that must outlive its idle timeout makes progress every 20-30 ms for
about twice that timeout (a pause of the whole timeout between two ticks would be needed to fail it), and a
node that must time out makes no progress at all.
"""

from __future__ import annotations

import asyncio
import operator
import time
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError
from tests.compat.conftest import Imports
from tests.workers import work
from tests.workflows import idle

REGISTRY = Registry({g.name: g for g in (idle.beating, idle.silent)})

IDLE_S = 0.4
"""The idle timeout of the in-process cases; a node that outlives it runs for :data:`RUN_S`."""
RUN_S = 0.9


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _writes(lg: Imports) -> Any:
    async def writes(state: State) -> dict[str, Any]:
        writer = lg.get_stream_writer()
        end = time.monotonic() + RUN_S
        while time.monotonic() < end:
            writer("tick")
            await asyncio.sleep(0.02)
        return {"log": ["writes done"]}

    return writes


async def _beats(state: State, runtime: Any) -> dict[str, Any]:
    end = time.monotonic() + RUN_S
    while time.monotonic() < end:
        runtime.heartbeat()
        await asyncio.sleep(0.02)
    return {"log": ["beats done"]}


async def _model(state: State) -> dict[str, Any]:
    model = FakeListChatModel(responses=["x" * int(RUN_S / 0.03)], sleep=0.03)  # a token every 30 ms
    text = "".join([str(chunk.content) async for chunk in model.astream("hi")])
    return {"log": [f"{len(text)} tokens"]}


async def _silent(state: State) -> dict[str, Any]:
    await asyncio.Event().wait()  # nothing sets it
    return {"log": ["never"]}


def _run(lg: Imports, node: Any, **policy: Any) -> Any:
    """``ainvoke``'s result, or ``(type name, node, kind)`` of the NodeTimeoutError it raised; ``node``: a
    node, or :func:`_writes` (made for ``lg``)."""
    node = node(lg) if node is _writes else node
    builder = lg.StateGraph(State)
    builder.add_node("a", node, timeout=lg.TimeoutPolicy(**policy))
    builder.add_edge(lg.START, "a")
    try:
        return asyncio.run(builder.compile().ainvoke({"log": []}))
    except lg.NodeTimeoutError as exc:
        return ("NodeTimeoutError", exc.node, exc.kind)


@pytest.mark.parametrize(
    ("node", "refresh_on", "expected"),
    [
        (_writes, "auto", {"log": ["writes done"]}),
        (_beats, "auto", {"log": ["beats done"]}),
        (_model, "auto", {"log": ["30 tokens"]}),
        (_writes, "heartbeat", ("NodeTimeoutError", "a", "idle")),
        (_beats, "heartbeat", {"log": ["beats done"]}),
        (_model, "heartbeat", ("NodeTimeoutError", "a", "idle")),
        (_silent, "auto", ("NodeTimeoutError", "a", "idle")),
    ],
    ids=["writes", "heartbeats", "tokens", "writes-not-beats", "beats-only", "tokens-not-beats", "silent"],
)
def test_progress_keeps_a_try_alive(lg: Imports, node: Any, refresh_on: str, expected: Any) -> None:
    assert _run(lg, node, idle_timeout=IDLE_S, refresh_on=refresh_on) == expected


def test_the_run_timeout_still_caps_a_try_that_makes_progress(lg: Imports) -> None:
    assert _run(lg, _beats, idle_timeout=IDLE_S, run_timeout=RUN_S / 2) == ("NodeTimeoutError", "a", "run")


def test_set_node_defaults_gives_the_idle_timeout_to_nodes_without_one(lg: Imports) -> None:
    builder = lg.StateGraph(State)
    builder.set_node_defaults(timeout=lg.TimeoutPolicy(idle_timeout=IDLE_S))
    builder.add_node("a", _silent)
    builder.add_edge(lg.START, "a")
    with pytest.raises(lg.NodeTimeoutError) as raised:
        asyncio.run(builder.compile().ainvoke({"log": []}))
    assert (raised.value.node, raised.value.kind) == ("a", "idle")


def test_an_unknown_refresh_on_is_refused_naming_the_node() -> None:
    from graphcore import StateGraph, TimeoutPolicy

    policy = TimeoutPolicy(idle_timeout=1, refresh_on="x")  # type: ignore[arg-type]
    with pytest.raises(
        ConfigError, match=r"^node 'a': TimeoutPolicy refresh_on must be 'auto' or 'heartbeat' "
    ):
        StateGraph(State).add_node("a", _beats, timeout=policy)


def test_on_the_queue_a_sync_node_is_kept_alive_by_heartbeats_and_ended_by_silence(client: Client) -> None:
    """On a burst worker: ``beating`` (heartbeats for twice its idle timeout) completes; ``silent`` fails
    with the idle timeout, naming it."""
    beating = client.enqueue("beating", {"log": []})
    silent = client.enqueue("silent", {"log": []})
    assert work(client)
    done, failed = client.get_run(beating), client.get_run(silent)
    assert (done.status, done.result) == (RunStatus.COMPLETED, {"log": ["a beat"]})
    assert failed.status == RunStatus.FAILED and failed.error is not None
    assert (failed.error.type, failed.error.message, failed.error.node) == (
        "NodeTimeoutError",
        "node 'a' made no progress for 0.5 s (TimeoutPolicy(idle_timeout=0.5) set on add_node)",
        "a",
    )
