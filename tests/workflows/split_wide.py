"""Wide super-steps for split-step tests. ``split-wide``: ``plan`` sends one ``work`` task per item of the
input's ``n`` (``Send``), each squaring its item into a reducer list, then ``join`` sums them.
``split-timed``: ``split-wide`` whose ``work`` node has ``timeout=1``.
``split-rich``: the same fan-out whose tasks each write a ``custom`` chunk and, by item, fail their first try
(retried), return a ``Command`` going to ``extra``, or run a subgraph. ``split-stops``: the fan-out's tasks
each run a subgraph that stops at its static breakpoint before its node ``b``.

Input options: ``n`` items; ``fail`` an item whose task raises ``ValueError``; ``unavailable`` an item whose
task raises graphq's ``RedisUnavailableError`` (an error of graphq's own that is not a node's fault: a node
whose client cannot reach its Redis; it fails the run unwrapped); ``ask`` items whose task
calls ``interrupt()`` (the answer is added to the square); ``sleep_s`` each task's sleep; ``gate`` true:
each task first waits for a file ``go`` in ``GRAPHQ_TEST_DIR``; ``hold`` an item whose task holds its
process's GIL for ``gil_s`` seconds (a C-level sleep); ``stuck_s`` every task sleeps in C that long, the GIL
free, deaf to its cancel token; ``block`` items whose task waits (polling every 20 ms) until the file
``release`` exists in ``GRAPHQ_TEST_DIR``, or with ``heed`` true stops on its cancel token, appending
``<item> <pid>`` to ``canceled.log`` there first. With ``GRAPHQ_TEST_DIR`` set, each task
appends ``<item> <pid>`` to ``work.log`` there (which process ran it).
"""

from __future__ import annotations

import ctypes
import operator
import os
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from graphcore import (
    END,
    START,
    Command,
    RetryPolicy,
    Send,
    StateGraph,
    get_cancel_token,
    get_config,
    get_stream_writer,
    interrupt,
)
from graphcore.errors import RedisUnavailableError
from tests.workflows.shutdown import sleep_in_c


class Options(TypedDict, total=False):
    """The input options every task gets (see the module)."""

    fail: int
    unavailable: int
    ask: list[int]
    sleep_s: float
    gate: bool
    hold: int
    gil_s: float
    stuck_s: float
    block: list[int]
    heed: bool


DEFAULTS: Options = {
    "fail": -1,
    "unavailable": -1,
    "ask": [],
    "sleep_s": 0.0,
    "gate": False,
    "hold": -1,
    "gil_s": 0.0,
    "stuck_s": 0.0,
    "block": [],
    "heed": False,
}
"""Each option's value when the input does not give it."""


class State(Options, total=False):
    n: int
    out: Annotated[list[int], operator.add]
    total: int


class Item(Options):
    i: int


def plan(state: State) -> dict[str, Any]:
    return {}


def fan(state: State) -> list[Send]:
    extra = {name: state.get(name, default) for name, default in DEFAULTS.items()}
    return [Send("work", {"i": i, **extra}) for i in range(state["n"])]


def work(item: Item) -> dict[str, Any]:
    where = os.environ.get("GRAPHQ_TEST_DIR")
    if where:
        with (Path(where) / "work.log").open("a") as log:
            log.write(f"{item['i']} {os.getpid()}\n")
    while item["gate"] and not (Path(os.environ["GRAPHQ_TEST_DIR"]) / "go").exists():
        time.sleep(0.02)
    if item["i"] == item["hold"]:
        sleep_in_c(ctypes.PyDLL(None), item["gil_s"])
    if item["stuck_s"]:
        sleep_in_c(ctypes.CDLL(None), item["stuck_s"])
    if item["sleep_s"]:
        time.sleep(item["sleep_s"])
    if item["i"] in item["block"]:
        _blocked(Path(os.environ["GRAPHQ_TEST_DIR"]), item)
    if item["i"] == item["fail"]:
        raise ValueError(f"item {item['i']} fails")
    if item["i"] == item["unavailable"]:
        raise RedisUnavailableError(f"item {item['i']}: its Redis is away")
    extra = interrupt({"item": item["i"]}) if item["i"] in item["ask"] else 0
    return {"out": [item["i"] * item["i"] + extra]}


def _blocked(where: Path, item: Item) -> None:
    """Wait until ``release`` exists in ``where``; with ``heed``, stop on the task's cancel token."""
    token = get_cancel_token()
    while not (where / "release").exists():
        if item["heed"] and token.cancelled:
            with (where / "canceled.log").open("a") as log:
                log.write(f"{item['i']} {os.getpid()}\n")
            token.raise_if_cancelled()
        time.sleep(0.02)


def join(state: State) -> dict[str, Any]:
    return {"total": sum(state["out"])}


def _build(name: str = "split-wide", timeout: float | None = None) -> Any:
    g = StateGraph(State)
    g.add_node("plan", plan)
    g.add_node("work", work, timeout=timeout)
    g.add_node("join", join)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan, ["work"])
    g.add_edge("work", "join")
    g.add_edge("join", END)
    return g.compile(name=name)


wide = _build()
wide_timed = _build("split-timed", timeout=1)


_tries: dict[tuple[str, int], int] = {}
"""(thread id, item) → the tries of its task in this process (a task's retries run where it runs)."""


def _inner() -> Any:
    g = StateGraph(State)
    g.add_node("a", lambda s: {"out": [1]})
    g.add_node("b", lambda s: {"out": [2]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    return g.compile(name="split-inner")


inner = _inner()


def rich(item: Item) -> Any:
    i = item["i"]
    get_stream_writer()({"item": i})
    key = (str(get_config()["configurable"]["thread_id"]), i)
    _tries[key] = _tries.get(key, 0) + 1
    if i % 10 == 3 and _tries[key] == 1:
        raise ValueError(f"item {i}: first try fails")
    if i % 10 == 5:
        return Command(update={"out": [i * i]}, goto="extra")
    if i % 10 == 7:
        return {"out": [i * i, *inner.invoke({"out": []})["out"]]}
    return {"out": [i * i]}


def extra(state: State) -> dict[str, Any]:
    return {"out": [-1]}


def _rich() -> Any:
    g = StateGraph(State)
    g.add_node("plan", plan)
    g.add_node(
        "work",
        rich,
        retry=RetryPolicy(max_attempts=2, initial_interval_s=0.01, jitter=False, retry_on=ValueError),
    )
    g.add_node("extra", extra)
    g.add_node("join", join)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan, ["work"])
    g.add_edge("work", "join")
    g.add_edge("extra", "join")
    g.add_edge("join", END)
    return g.compile(name="split-rich")


wide_rich = _rich()


def _stopping() -> Any:
    inner = StateGraph(State)
    inner.add_node("a", lambda s: {"out": [1]})
    inner.add_node("b", lambda s: {"out": [2]})
    inner.add_edge(START, "a")
    inner.add_edge("a", "b")
    g = StateGraph(State)
    g.add_node("plan", plan)
    g.add_node("sub", inner.compile(name="split-stopping", interrupt_before=["b"]))
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", lambda s: [Send("sub", {"out": []}) for _ in range(s["n"])], ["sub"])
    g.add_edge("sub", END)
    return g.compile(name="split-stops")


wide_stops = _stopping()
