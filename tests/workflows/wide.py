"""A wide super-step for split-step tests: ``plan`` sends one ``work`` task per item of the input's ``n``
(``Send``), each squaring its item into a reducer list, then ``join`` sums them.

Input options: ``n`` items; ``fail`` an item whose task raises ``ValueError``; ``ask`` items whose task
calls ``interrupt()`` (the answer is added to the square); ``sleep_s`` each task's sleep. With
``GRAPHQ_TEST_DIR`` set, each task appends ``<item> <pid>`` to ``work.log`` there (which process ran it).
"""

from __future__ import annotations

import operator
import os
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from graphcore import END, START, Send, StateGraph, interrupt


class State(TypedDict, total=False):
    n: int
    fail: int
    ask: list[int]
    sleep_s: float
    out: Annotated[list[int], operator.add]
    total: int


class Item(TypedDict):
    i: int
    fail: int
    ask: list[int]
    sleep_s: float


def plan(state: State) -> dict[str, Any]:
    return {}


def fan(state: State) -> list[Send]:
    extra = {"fail": state.get("fail", -1), "ask": state.get("ask", []), "sleep_s": state.get("sleep_s", 0.0)}
    return [Send("work", {"i": i, **extra}) for i in range(state["n"])]


def work(item: Item) -> dict[str, Any]:
    where = os.environ.get("GRAPHQ_TEST_DIR")
    if where:
        with (Path(where) / "work.log").open("a") as log:
            log.write(f"{item['i']} {os.getpid()}\n")
    if item["sleep_s"]:
        time.sleep(item["sleep_s"])
    if item["i"] == item["fail"]:
        raise ValueError(f"item {item['i']} fails")
    extra = interrupt({"item": item["i"]}) if item["i"] in item["ask"] else 0
    return {"out": [item["i"] * item["i"] + extra]}


def join(state: State) -> dict[str, Any]:
    return {"total": sum(state["out"])}


def _build() -> Any:
    g = StateGraph(State)
    g.add_node("plan", plan)
    g.add_node("work", work)
    g.add_node("join", join)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan, ["work"])
    g.add_edge("work", "join")
    g.add_edge("join", END)
    return g.compile(name="wide")


wide = _build()
