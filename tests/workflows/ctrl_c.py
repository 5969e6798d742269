"""A workflow for Ctrl-C in ``graphq run`` (tests/test_run_ctrl_c.py).

``held``: ``first`` (a quick step), then ``slow``, then ``last`` (a quick step). ``slow`` writes
``$GRAPHQ_TEST_DIR/slow-started`` and runs while the file ``$GRAPHQ_TEST_DIR/hold`` exists (polled every
20 ms). With ``{"heed": true}`` it stops on its cancel token (``Cancelled``); otherwise it ignores the token.
``done`` lists the nodes that returned.
"""

from __future__ import annotations

import operator
import os
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from graphcore import START, StateGraph, get_cancel_token

_POLL_S = 0.02


class Held(TypedDict, total=False):
    heed: bool
    done: Annotated[list[str], operator.add]


def _dir() -> Path:
    return Path(os.environ["GRAPHQ_TEST_DIR"])


def first(state: Held) -> dict[str, Any]:
    return {"done": ["first"]}


def slow(state: Held) -> dict[str, Any]:
    (_dir() / "slow-started").touch()
    token = get_cancel_token()
    while (_dir() / "hold").exists():
        if state.get("heed"):
            token.raise_if_cancelled()
        time.sleep(_POLL_S)
    return {"done": ["slow"]}


def last(state: Held) -> dict[str, Any]:
    return {"done": ["last"]}


_g = StateGraph(Held)
_g.add_node("first", first)
_g.add_node("slow", slow)
_g.add_edge(START, "first")
_g.add_node("last", last)
_g.add_edge("first", "slow")
_g.add_edge("slow", "last")
held = _g.compile(name="held")
