"""Workflows that fail in each way a run can fail (every run error names its type, the node
or router it came from, and the step), and nodes that raise what is not an ``Exception``
(``SystemExit``, ``KeyboardInterrupt``, ``asyncio.CancelledError`` fail their run like any node error)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from graphcore import START, RetryPolicy, Send, StateGraph, get_cancel_token


def no_repeats(current: list[int], new: list[int]) -> list[int]:
    """A reducer that refuses a value the channel already has."""
    repeated = sorted(set(current) & set(new))
    if repeated:
        raise ValueError(f"{repeated} already there")
    return current + new


class S(TypedDict, total=False):
    words: list[str]
    n: int
    bad: Any
    seen: Annotated[list[int], no_repeats]


def ok(state: S) -> dict[str, Any]:
    return {"n": 1}


def lookup(state: S) -> dict[str, Any]:
    return {"n": len(state["words"])}


def pick(state: S) -> str:
    return str(state["words"][0])


def nowhere(state: S) -> list[Send]:
    return [Send("missing", 1)]


def fan_out(state: S) -> list[Send]:
    """The router from START of docs/guides/writing-a-workflow.md: fails on an input without ``words``."""
    return [Send("ok", w) for w in state["words"]]


def repeat(state: S) -> dict[str, Any]:
    return {"seen": [1]}


def unserialisable(state: S) -> dict[str, Any]:
    return {"bad": {"inner": [1, object()]}}


def slow(state: S) -> dict[str, Any]:
    get_cancel_token().wait(60)  # returns once its timeout cancels it
    return {}


def flaky(state: S) -> dict[str, Any]:
    raise ConnectionError("upstream unavailable")


def _one(name: str, fn: Any, **options: Any) -> StateGraph:
    g = StateGraph(S)
    g.add_node(name, fn, **options)
    g.add_edge(START, name)
    return g


_n = _one("ok", ok)
_n.add_node("lookup", lookup)
_n.add_edge("ok", "lookup")
node_failing = _n.compile(name="err-node")

_r = _one("ok", ok)
_r.add_conditional_edges("ok", pick)
router_failing = _r.compile(name="err-router")

_s = _one("ok", ok)
_s.add_conditional_edges("ok", nowhere)
send_to_unknown = _s.compile(name="err-send")

_c = _one("ok", ok)
_c.add_node("also", ok)
_c.add_edge(START, "also")
conflicting = _c.compile(name="err-conflict")

reducer_failing = _one("repeat", repeat).compile(name="err-reducer")

_i = StateGraph(S)
_i.add_node("ok", ok)
_i.add_conditional_edges(START, fan_out)
input_failing = _i.compile(name="err-input")

unstorable = _one("unserialisable", unserialisable).compile(name="err-serialization")
timing_out = _one("slow", slow, timeout=0.5).compile(name="err-timeout")
retried = _one("flaky", flaky, retry=RetryPolicy(max_attempts=2, initial_interval_s=0.01, jitter=False))
retries_used_up = retried.compile(name="err-retries")


# -- nodes raising what is not an Exception ----------------------------------------------------------------

RAISED: dict[str, BaseException] = {
    "exits": SystemExit(3),
    "interrupts": KeyboardInterrupt("from the node"),
    "cancels": asyncio.CancelledError("from the node"),
}
"""Workflow name → what its node ``bail`` raises."""


def _bail(error: BaseException) -> Any:
    def bail(state: S) -> dict[str, Any]:
        _log("bail")
        raise error

    return bail


def _abail(error: BaseException) -> Any:
    async def bail(state: S) -> dict[str, Any]:
        _log("bail")
        raise error

    return bail


def _log(what: str) -> None:
    """A line in ``$GRAPHQ_TEST_DIR/ran.log`` (when set): which node ran, in which process."""
    where = os.environ.get("GRAPHQ_TEST_DIR")
    if where:
        with (Path(where) / "ran.log").open("a") as out:
            out.write(f"{what} {os.getpid()}\n")


exits = _one("bail", _bail(RAISED["exits"])).compile(name="exits")
interrupts = _one("bail", _bail(RAISED["interrupts"])).compile(name="interrupts")
cancels = _one("bail", _bail(RAISED["cancels"])).compile(name="cancels")
async_exits = _one("bail", _abail(RAISED["exits"])).compile(name="async-exits")
async_interrupts = _one("bail", _abail(RAISED["interrupts"])).compile(name="async-interrupts")
async_cancels = _one("bail", _abail(RAISED["cancels"])).compile(name="async-cancels")


def nap(state: S) -> dict[str, Any]:
    """Sleeps in the thread that runs it (a one-task step: the worker's main thread) until signalled."""
    _log("nap")
    time.sleep(60)
    return {"n": 1}


napping = _one("nap", nap).compile(name="napping")
fine = _one("ok", ok).compile(name="fine")
