"""Workflows for fault tests; tasks leave a line in ``$GRAPHQ_TEST_DIR/<name>.log`` each time they run.

``slowfan`` fans out to ``fast-*`` tasks and one ``slow`` task that sleeps until ``$GRAPHQ_TEST_DIR/go``
exists, so a test can kill the worker while the fast tasks are done and the slow one still runs.
``flushing`` empties Redis's script cache from inside a node, as a Redis restart would.
"""

from __future__ import annotations

import operator
import os
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import redis

from graphcore import START, Send, StateGraph
from graphcore.settings import get_settings


def _dir() -> Path:
    return Path(os.environ["GRAPHQ_TEST_DIR"])


class Fan(TypedDict, total=False):
    names: list[str]
    done: Annotated[list[str], operator.add]


def split(state: Fan) -> list[Send]:
    return [Send("task", name) for name in state["names"]]


def task(name: str) -> dict[str, Any]:
    with (_dir() / f"{name}.log").open("a") as log:
        log.write("ran\n")
    while name == "slow" and not (_dir() / "go").exists():
        time.sleep(0.05)
    return {"done": [name]}


_g = StateGraph(Fan)
_g.add_node("task", task)
_g.add_conditional_edges(START, split)
slowfan = _g.compile(name="slowfan")


class Count(TypedDict, total=False):
    n: int


def flush(state: Count) -> dict[str, Any]:
    client = redis.Redis.from_url(get_settings().redis_url or "")
    client.script_flush()
    client.close()
    return {"n": state.get("n", 0) + 1}


def again(state: Count) -> dict[str, Any]:
    return {"n": state["n"] + 1}


_f = StateGraph(Count)
_f.add_node("flush", flush)
_f.add_node("again", again)
_f.add_edge(START, "flush")
_f.add_edge("flush", "again")
flushing = _f.compile(name="flushing")
