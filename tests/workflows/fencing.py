"""Workflows for the fence and last-step tests.

``last-cancel``: one step whose node cancels its own run (as an operator would, mid-step), waits until the
worker has seen the cancel (``interrupt``: its cancel token is set), ignores it and returns normally.

``pause-cancel``: the same, then the node asks for input (``interrupt``).

``zombie-sub``: the ``hold`` task of the first name inside a subgraph (which checkpoints in the thread).

``zombie``: fans out to one ``hold`` task per name; a task leaves a line in ``$GRAPHQ_TEST_DIR/<name>.log``
each time it starts, and (unless its name starts with ``fast``) waits for ``$GRAPHQ_TEST_DIR/go`` before it
returns ``<name>#<attempt>``; with ``fail`` its first attempt raises after the wait instead.
"""

from __future__ import annotations

import operator
import os
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import redis

from graphcore import START, Send, StateGraph, get_cancel_token, get_config
from graphcore.backend.client import Client
from graphcore.engine.interrupts import interrupt
from graphcore.engine.registry import Registry
from graphq.worker.queue import RQStepQueue


class Last(TypedDict, total=False):
    url: str
    interrupt: bool
    done: str


def finish_anyway(state: Last) -> dict[str, Any]:
    kv = redis.Redis.from_url(state["url"])
    try:
        said = Client(kv, Registry({}), RQStepQueue(kv)).cancel(
            get_config().run_id or "", interrupt=state["interrupt"]
        )
    finally:
        kv.close()
    if state["interrupt"]:
        assert get_cancel_token().wait(5), "the keeper did not pass the cancel on"
    return {"done": said}


_l = StateGraph(Last)
_l.add_node("finish_anyway", finish_anyway)
_l.add_edge(START, "finish_anyway")
last_cancel = _l.compile(name="last-cancel")


def ask_anyway(state: Last) -> dict[str, Any]:
    said = finish_anyway(state)["done"]
    return {"done": f"{said}; answered {interrupt({'question': 'go on?'})}"}


_p = StateGraph(Last)
_p.add_node("ask_anyway", ask_anyway)
_p.add_edge(START, "ask_anyway")
pause_cancel = _p.compile(name="pause-cancel")


class Zombie(TypedDict, total=False):
    names: list[str]
    fail: bool
    done: Annotated[list[str], operator.add]


def _dir() -> Path:
    return Path(os.environ["GRAPHQ_TEST_DIR"])


def split(state: Zombie) -> list[Send]:
    return [Send("hold", {"name": n, "fail": state.get("fail", False)}) for n in state["names"]]


def hold(arg: dict[str, Any]) -> dict[str, Any]:
    log = _dir() / f"{arg['name']}.log"
    attempt = (len(log.read_text().splitlines()) if log.exists() else 0) + 1
    with log.open("a") as out:
        out.write("ran\n")
    while not arg["name"].startswith("fast") and not (_dir() / "go").exists():
        time.sleep(0.02)
    if arg["fail"] and attempt == 1:
        raise RuntimeError(f"{arg['name']} failed in its first attempt")
    return {"done": [f"{arg['name']}#{attempt}"]}


_z = StateGraph(Zombie)
_z.add_node("hold", hold)
_z.add_conditional_edges(START, split)
zombie = _z.compile(name="zombie")


def sub_hold(state: Zombie) -> dict[str, Any]:
    return hold({"name": state["names"][0], "fail": False})


_s = StateGraph(Zombie)
_s.add_node("sub_hold", sub_hold)
_s.add_edge(START, "sub_hold")
_zp = StateGraph(Zombie)
_zp.add_node("inner", _s.compile(name="zombie-inner"))
_zp.add_edge(START, "inner")
zombie_sub = _zp.compile(name="zombie-sub")
