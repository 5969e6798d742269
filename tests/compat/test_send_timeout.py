"""``Send(node, arg, timeout=...)`` (LangGraph's test_retry
``test_send_timeout_overrides_target_node_timeout``): the Send's timeout is its task's instead of the
node's; a number is its ``run_timeout``. LangGraph's result is the expected value on both sides; on the
queue the timeout is stored with the Send and a burst worker enforces it.

No case depends on speed: the node that must time out makes no progress at all, and its node's own
timeout (60 s) would only fail it much later, with other values.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError
from tests.compat.conftest import Imports
from tests.workers import work
from tests.workflows.send_timeout import send_timeout

REGISTRY = Registry({send_timeout.name: send_timeout})


class State(TypedDict):
    log: Annotated[list[str], operator.add]


async def _silent(state: State) -> dict[str, Any]:
    await asyncio.Event().wait()  # nothing sets it
    return {"log": ["never"]}


def _graph(lg: Imports, send_timeout: Any) -> Any:
    def route(state: State) -> list[Any]:
        return [lg.Send("a", state, timeout=send_timeout)]

    builder = lg.StateGraph(State)
    builder.add_node("a", _silent, timeout=lg.TimeoutPolicy(idle_timeout=60))
    builder.add_conditional_edges(lg.START, route)
    return builder.compile()


@pytest.mark.parametrize(
    ("timeout", "expected"),
    [
        ({"idle_timeout": 0.2}, ("a", "idle", 0.2, 0.2, None)),
        ({"run_timeout": 0.2}, ("a", "run", 0.2, None, 0.2)),
        ({"run_timeout": 0.2, "idle_timeout": 30.0}, ("a", "run", 0.2, 30.0, 0.2)),
    ],
    ids=["idle", "run", "run-and-idle"],
)
def test_a_sends_timeout_overrides_its_nodes(lg: Imports, timeout: dict[str, float], expected: Any) -> None:
    with pytest.raises(lg.NodeTimeoutError) as raised:
        asyncio.run(_graph(lg, lg.TimeoutPolicy(**timeout)).ainvoke({"log": []}))
    error = raised.value
    assert (error.node, error.kind, error.timeout, error.idle_timeout, error.run_timeout) == expected


def test_seconds_are_a_run_timeout(lg: Imports) -> None:
    with pytest.raises(lg.NodeTimeoutError) as raised:
        asyncio.run(_graph(lg, 0.2).ainvoke({"log": []}))
    assert (raised.value.node, raised.value.kind, raised.value.run_timeout) == ("a", "run", 0.2)


def test_a_send_with_a_timeout_shows_and_compares_it(lg: Imports) -> None:
    send = lg.Send("a", {"x": 1}, timeout=lg.TimeoutPolicy(idle_timeout=0.5))
    assert repr(send) == (
        "Send(node='a', arg={'x': 1}, timeout=TimeoutPolicy(run_timeout=None, idle_timeout=0.5, "
        "refresh_on='auto'))"
    )
    assert repr(lg.Send("a", 1)) == "Send(node='a', arg=1)"
    assert send == lg.Send("a", {"x": 1}, timeout=lg.TimeoutPolicy(idle_timeout=0.5))
    assert send != lg.Send("a", {"x": 1})


def test_a_bad_send_timeout_is_refused_naming_the_send() -> None:
    from graphcore import START, Send, StateGraph

    builder = StateGraph(State)
    builder.add_node("a", _silent)
    builder.add_conditional_edges(START, lambda state: [Send("a", state, timeout=-1)])
    refused = r"^Send\(node='a', timeout=\.\.\.\): timeout must be above 0 s \(got -1\)$"
    with pytest.raises(ConfigError, match=refused):
        asyncio.run(builder.compile().ainvoke({"log": []}))


def test_on_the_queue_the_send_keeps_its_timeout(client: Client) -> None:
    """On a burst worker: the Send's idle timeout (0.5 s) ends the try, not the node's (60 s)."""
    run = client.enqueue("send_timeout", {"log": []})
    assert work(client)
    failed = client.get_run(run)
    assert failed.status == RunStatus.FAILED and failed.error is not None
    assert (failed.error.type, failed.error.message, failed.error.node) == (
        "NodeTimeoutError",
        "node 'a' made no progress for 0.5 s (TimeoutPolicy(idle_timeout=0.5) set on Send)",
        "a",
    )
