"""Workflows of the idle-timeout queue test (tests/compat/test_idle_timeout.py); module-level, so workers
import them. ``beating``: node ``a`` (idle timeout 0.5 s) heartbeats every 20 ms for 1 s, then returns.
``silent``: node ``a`` (idle timeout 0.5 s) waits on its cancel token for up to 60 s, making no progress."""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, TypedDict

from graphcore import START, Runtime, StateGraph, TimeoutPolicy, get_cancel_token


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def beat_for(runtime: Runtime[Any], seconds: float) -> None:
    """Call ``runtime.heartbeat()`` every 20 ms for ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        runtime.heartbeat()
        time.sleep(0.02)


def _beating(state: State, runtime: Runtime[Any]) -> dict[str, Any]:
    beat_for(runtime, 1.0)
    return {"log": ["a beat"]}


def _silent(state: State) -> dict[str, Any]:
    get_cancel_token().wait(60)
    return {"log": ["never"]}


def _graph(name: str, node: Any, idle_s: float) -> Any:
    builder = StateGraph(State)
    builder.add_node("a", node, timeout=TimeoutPolicy(idle_timeout=idle_s))
    builder.add_edge(START, "a")
    return builder.compile(name=name)


beating = _graph("beating", _beating, 0.5)
silent = _graph("silent", _silent, 0.5)
