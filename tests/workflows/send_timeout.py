"""Workflow of the Send-timeout queue test (tests/compat/test_send_timeout.py); module-level, so workers
import it. ``send_timeout``: START sends the input to node ``a`` with ``TimeoutPolicy(idle_timeout=0.5)``;
``a`` (its own idle timeout 60 s) waits on its cancel token for up to 60 s, making no progress."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from graphcore import START, Send, StateGraph, TimeoutPolicy, get_cancel_token


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _silent(state: State) -> dict[str, Any]:
    get_cancel_token().wait(60)
    return {"log": ["never"]}


def _route(state: State) -> list[Send]:
    return [Send("a", state, timeout=TimeoutPolicy(idle_timeout=0.5))]


_builder = StateGraph(State)
_builder.add_node("a", _silent, timeout=TimeoutPolicy(idle_timeout=60))
_builder.add_conditional_edges(START, _route)
send_timeout = _builder.compile(name="send_timeout")
