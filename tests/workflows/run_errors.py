"""Nodes that raise what is not an ``Exception`` (issue 28 item 2: ``SystemExit``, ``KeyboardInterrupt``,
``asyncio.CancelledError`` fail their run like any node error)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any, TypedDict

from graphcore import START, StateGraph


class S(TypedDict, total=False):
    n: int


def ok(state: S) -> dict[str, Any]:
    return {"n": 1}


def _one(name: str, fn: Any, **options: Any) -> StateGraph:
    g = StateGraph(S)
    g.add_node(name, fn, **options)
    g.add_edge(START, name)
    return g


# -- nodes raising what is not an Exception (item 2) ---------------------------------------------------------

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
