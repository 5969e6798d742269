"""Workflows for crash-recovery tests: nodes count their executions in Redis, and some kill the
worker that runs them.

Executions are counted in the hash ``graphq-test:executions`` (field = node or task name), on the Redis of
``GRAPHQ_REDIS_URL``.

- ``crashfan``: ``prepare`` → three parallel ``part`` tasks (``fast`` returns at once; ``slow-a`` and
  ``slow-b`` wait until the field ``go`` of ``graphq-test:flags`` is set) → ``join``.
- ``suicide``: ``first`` → ``doom``, which SIGKILLs its own worker (its whole process group) every time.
- ``crashonce``: ``first`` → ``doom``, which kills its worker on its first execution only.
- ``longnode``: ``first`` → ``long``, which sleeps 60 s on its first execution (the test kills its worker
  meanwhile), then returns at once.
- ``handlerkill``: ``first`` → ``fails``, which raises ``KeyError('boom')``; its error handler kills its
  worker on its first execution only, then writes what it was given (``error.node``, the type and text of
  ``error.error``).
"""

from __future__ import annotations

import operator
import os
import signal
import time
from typing import Annotated, Any, TypedDict

import redis

from graphcore import END, START, NodeError, Send, StateGraph
from graphcore.settings import get_settings
from tests.workers import worker_env

EXECUTIONS = "graphq-test:executions"
FLAGS = "graphq-test:flags"
TTL_S, REAPER_S = 2.0, 0.3
"""GRAPHQ_LEASE_TTL_S and GRAPHQ_REAPER_INTERVAL_S of :func:`crash_env`."""


def crash_env(redis_url: str, workflows: str = "tests.workflows.crash", **settings: str) -> dict[str, str]:
    """The environment of a `graphq worker` subprocess whose nodes may kill it (``GRAPHQ_TEST_CRASH``), on
    ``workflows`` (comma-separated modules), with a short lease TTL (TTL_S; heartbeat 0.3 s) and reaper
    interval (REAPER_S), and ``settings`` over them."""
    short = {
        "GRAPHQ_LEASE_TTL_S": str(TTL_S),
        "GRAPHQ_HEARTBEAT_INTERVAL_S": "0.3",
        "GRAPHQ_REAPER_INTERVAL_S": str(REAPER_S),
        "GRAPHQ_TEST_CRASH": "1",
    }
    return worker_env(redis_url, workflows, **(short | settings))


def executions(kv: redis.Redis) -> dict[str, int]:
    """How often each node (or task) ran, by name."""
    return {k.decode(): int(v) for k, v in kv.hgetall(EXECUTIONS).items()}


def _redis() -> redis.Redis:
    return redis.Redis.from_url(get_settings().redis_url or "")


def count(name: str) -> int:
    """Count one execution of ``name``; returns how many there were, this one included."""
    client = _redis()
    try:
        return int(client.hincrby(EXECUTIONS, name, 1))
    finally:
        client.close()


def _kill_own_worker() -> None:
    """SIGKILL this worker's process group; only in a worker subprocess (``GRAPHQ_TEST_CRASH`` set), never
    in the test process itself."""
    if not os.environ.get("GRAPHQ_TEST_CRASH"):
        raise RuntimeError("crash workflow node run outside a crash-test worker process")
    os.killpg(os.getpgid(0), signal.SIGKILL)


class Fan(TypedDict, total=False):
    names: list[str]
    prepared: bool
    done: Annotated[list[str], operator.add]
    joined: int


def prepare(state: Fan) -> dict[str, Any]:
    count("prepare")
    return {"prepared": True}


def fan(state: Fan) -> list[Send]:
    return [Send("part", name) for name in state["names"]]


def part(name: str) -> dict[str, Any]:
    count(name)
    client = _redis()
    try:
        while name.startswith("slow") and not client.hexists(FLAGS, "go"):
            time.sleep(0.05)
    finally:
        client.close()
    return {"done": [name]}


def join(state: Fan) -> dict[str, Any]:
    count("join")
    return {"joined": len(state["done"])}


_g = StateGraph(Fan)
_g.add_node("prepare", prepare)
_g.add_node("part", part)
_g.add_node("join", join)
_g.add_edge(START, "prepare")
_g.add_conditional_edges("prepare", fan)
_g.add_edge("part", "join")
_g.add_edge("join", END)
crashfan = _g.compile(name="crashfan")


class Line(TypedDict, total=False):
    n: int
    trail: Annotated[list[str], operator.add]


def first(state: Line) -> dict[str, Any]:
    count("first")
    return {"trail": ["first"]}


def doom_always(state: Line) -> dict[str, Any]:
    count("doom")
    _kill_own_worker()
    return {"trail": ["doom"]}


def doom_once(state: Line) -> dict[str, Any]:
    if count("doom") == 1:
        _kill_own_worker()
    return {"trail": ["doom"]}


def long_once(state: Line) -> dict[str, Any]:
    if count("long") == 1:
        time.sleep(60)
    return {"trail": ["long"]}


def _line(name: str, second: str, fn: Any) -> Any:
    g = StateGraph(Line)
    g.add_node("first", first)
    g.add_node(second, fn)
    g.add_edge(START, "first")
    g.add_edge("first", second)
    g.add_edge(second, END)
    return g.compile(name=name)


suicide = _line("suicide", "doom", doom_always)
crashonce = _line("crashonce", "doom", doom_once)
longnode = _line("longnode", "long", long_once)


def fails(state: Line) -> dict[str, Any]:
    count("fails")
    raise KeyError("boom")


def kill_once_then_handle(state: Line, error: NodeError) -> dict[str, Any]:
    if count("handler") == 1:
        _kill_own_worker()
    return {"trail": [error.node, type(error.error).__name__, str(error.error)]}


_h = StateGraph(Line)
_h.add_node("first", first)
_h.add_node("fails", fails, error_handler=kill_once_then_handle)
_h.add_edge(START, "first")
_h.add_edge("first", "fails")
_h.add_edge("fails", END)
handlerkill = _h.compile(name="handlerkill")
