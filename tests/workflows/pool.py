"""A workflow for ``graphq run --processes N`` (tests/test_run_pool.py): which process ran each step.

``pids``: ``gate``, then ``slow``, then ``a``, ``b`` and ``c`` (one step each). Every node appends
``[os.getpid(), os.getppid()]`` of the process running it to ``ran``. ``gate`` writes
``$GRAPHQ_TEST_DIR/gate-started`` and waits while ``$GRAPHQ_TEST_DIR/gate`` exists; ``slow`` writes its pid
into ``$GRAPHQ_TEST_DIR/slow-started`` and runs while ``$GRAPHQ_TEST_DIR/hold`` exists (both polled every
20 ms). With ``{"heed": true}`` ``slow`` stops on its cancel token (``Cancelled``); otherwise it ignores it.
"""

from __future__ import annotations

import operator
import os
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from graphcore import START, StateGraph, get_cancel_token

_POLL_S = 0.02


class Pids(TypedDict, total=False):
    heed: bool
    ran: Annotated[list[list[int]], operator.add]


def _dir() -> Path:
    return Path(os.environ["GRAPHQ_TEST_DIR"])


def _here() -> dict[str, Any]:
    return {"ran": [[os.getpid(), os.getppid()]]}


def gate(state: Pids) -> dict[str, Any]:
    (_dir() / "gate-started").touch()
    while (_dir() / "gate").exists():
        time.sleep(_POLL_S)
    return _here()


def slow(state: Pids) -> dict[str, Any]:
    (_dir() / "slow-started").write_text(str(os.getpid()))
    token = get_cancel_token()
    while (_dir() / "hold").exists():
        if state.get("heed"):
            token.raise_if_cancelled()
        time.sleep(_POLL_S)
    return _here()


def quick(state: Pids) -> dict[str, Any]:
    return _here()


_g = StateGraph(Pids)
_g.add_node("gate", gate)
_g.add_node("slow", slow)
_g.add_node("a", quick)
_g.add_node("b", quick)
_g.add_node("c", quick)
_g.add_edge(START, "gate")
_g.add_edge("gate", "slow")
_g.add_edge("slow", "a")
_g.add_edge("a", "b")
_g.add_edge("b", "c")
pids = _g.compile(name="pids")
