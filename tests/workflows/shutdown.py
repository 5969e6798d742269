"""Workflows for worker shutdown, GIL and deadline tests.

Every node appends ``<pid> <node> start`` / ``<pid> <node> end`` lines to ``$GRAPHQ_TEST_DIR/runs.log``,
so a test sees which worker process ran what, and how often. ``two-steps`` runs ``first`` then ``second``;
each does what its input says for its node (``{"first": {"sleep": 1.5}}``):

- ``sleep``: seconds of ``time.sleep`` (the GIL is free; the cancel token is ignored),
- ``c_sleep``: seconds blocked in C with the GIL released (libc ``sleep``; ignores the cancel token),
- ``gil_sleep``: seconds blocked in C holding the GIL (libc ``sleep`` called through ``ctypes.PyDLL``),
- ``until_cancel``: seconds of waiting on the cancel token (stops with ``Cancelled`` when it is set),
- ``returns_on_cancel``: seconds of waiting on the cancel token, then a normal return (a node that stops
  early and returns what it has, logging ``<node> cut short``),
- ``until_drain``: seconds of polling ``get_runtime().drain_requested`` (LangGraph's ``RunControl``; the
  worker's, drained by SIGTERM), logging ``<node> saw drain: <reason>`` when it turns true.

``timed`` has one node with ``timeout=1`` that does the same with its ``node`` input; ``pair`` two parallel
nodes, ``left`` and ``right``, that both do what its ``node`` input says. A test reads the
lines back with :func:`log_lines` and :func:`started`; :func:`shutdown_env` is the environment of the
`graphq worker` processes that run them.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import operator
import os
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from rq import Queue

from graphcore import START, StateGraph, get_cancel_token, get_runtime
from tests.workers import worker_env

DRAIN_S = 1.0
"""GRAPHQ_DRAIN_TIMEOUT_S of :func:`shutdown_env`."""


class _SlowExit:
    """Held by this module in a worker process when ``GRAPHQ_TEST_SLOW_EXIT_S`` is set: the process then
    takes that long to end once its interpreter is finalizing (its signal handlers already put back to the
    defaults), as a worker whose teardown outlasts the drain timeout does."""

    def __init__(self) -> None:
        # Bound now: at finalization this module's globals (time, os) may already be gone, and a __del__
        # that raises is skipped silently (importing langchain-core's tools changed the teardown order).
        self.sleep, self.seconds = time.sleep, float(os.environ["GRAPHQ_TEST_SLOW_EXIT_S"])

    def __del__(self) -> None:
        self.sleep(self.seconds)


if os.environ.get("GRAPHQ_TEST_SLOW_EXIT_S") and multiprocessing.parent_process() is not None:
    _slow_exit = _SlowExit()


def _slow_fetch(seconds: float) -> None:
    """Make RQ wait ``seconds`` between each pop and the fetch of the job it popped, logging
    ``popped <job id>`` first (``GRAPHQ_TEST_SLOW_FETCH_S``, in a worker process): a stop lands in between."""
    fetch = Queue._fetch_dequeued_job.__func__  # type: ignore[attr-defined]

    def slow(cls: type[Queue], connection: Any, queue_key: str, job_id: str, **kwargs: Any) -> Any:
        _log(f"popped {job_id}")
        time.sleep(seconds)
        return fetch(cls, connection, queue_key, job_id, **kwargs)

    Queue._fetch_dequeued_job = classmethod(slow)  # type: ignore[assignment,method-assign]


if os.environ.get("GRAPHQ_TEST_SLOW_FETCH_S") and multiprocessing.parent_process() is not None:
    _slow_fetch(float(os.environ["GRAPHQ_TEST_SLOW_FETCH_S"]))

if os.environ.get("GRAPHQ_TEST_GIVE_UP_GRACE_S") and multiprocessing.parent_process() is None:
    # The supervising `graphq worker` (it loads the workflows too) waits this long, not 2 s, between asking a
    # child to give its step up and SIGKILL: a test then tells "closed its run itself" from "was killed"
    # with a wide margin.
    import graphq.worker.process.supervisor

    graphq.worker.process.supervisor._GIVE_UP_GRACE_S = float(os.environ["GRAPHQ_TEST_GIVE_UP_GRACE_S"])


class Plan(TypedDict, total=False):
    first: dict[str, float]
    second: dict[str, float]
    node: dict[str, float]
    done: list[str]


def _log(line: str) -> None:
    with (Path(os.environ["GRAPHQ_TEST_DIR"]) / "runs.log").open("a") as log:
        log.write(f"{os.getpid()} {line}\n")


def shutdown_env(redis_url: str, test_dir: Path) -> dict[str, str]:
    """A `graphq worker` on this module whose nodes log in ``test_dir``, with short settings: lease TTL 1 s
    (heartbeat 0.2 s), drain timeout DRAIN_S, kill grace 1 s."""
    return worker_env(
        redis_url,
        "tests.workflows.shutdown",
        test_dir,
        GRAPHQ_LEASE_TTL_S="1",
        GRAPHQ_HEARTBEAT_INTERVAL_S="0.2",
        GRAPHQ_DRAIN_TIMEOUT_S=f"{DRAIN_S:g}",
        GRAPHQ_KILL_GRACE_S="1",
    )


def log_lines(test_dir: Path) -> list[tuple[int, str]]:
    """The ``(pid, "first start")`` lines the nodes wrote in ``test_dir`` so far, in order."""
    path = test_dir / "runs.log"
    if not path.exists():
        return []
    parts = (line.partition(" ") for line in path.read_text().splitlines())
    return [(int(pid), rest) for pid, _, rest in parts]


def started(test_dir: Path, node: str) -> list[int]:
    """The pids of the processes that started ``node``, in order."""
    return [pid for pid, what in log_lines(test_dir) if what == f"{node} start"]


def behave(name: str, plan: dict[str, float]) -> None:
    """Do what ``plan`` says (see the module's doc)."""
    _log(f"{name} start")
    if "sleep" in plan:
        time.sleep(plan["sleep"])
    if "c_sleep" in plan:
        sleep_in_c(ctypes.CDLL(None), plan["c_sleep"])
    if "gil_sleep" in plan:
        sleep_in_c(ctypes.PyDLL(None), plan["gil_sleep"])
    if "until_cancel" in plan:
        token = get_cancel_token()
        token.wait(plan["until_cancel"])
        token.raise_if_cancelled()
    if "until_drain" in plan:
        _until_drain(name, plan["until_drain"])
    if "returns_on_cancel" in plan and get_cancel_token().wait(plan["returns_on_cancel"]):
        _log(f"{name} cut short")
        return
    _log(f"{name} end")


def _until_drain(name: str, seconds: float) -> None:
    """Poll the runtime's drain request every 20 ms for up to ``seconds``; log it once seen."""
    end = time.monotonic() + seconds
    runtime = get_runtime()
    while time.monotonic() < end:
        if runtime.drain_requested:
            _log(f"{name} saw drain: {runtime.drain_reason}")
            return
        time.sleep(0.02)


def sleep_in_c(libc: ctypes.CDLL, seconds: float) -> None:
    """Sleep in libc's ``usleep`` for ``seconds`` (again after a signal cut a sleep short)."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        libc.usleep(int(left * 1_000_000))


def first(state: Plan) -> dict[str, Any]:
    behave("first", state.get("first", {}))
    return {"done": [*state.get("done", []), "first"]}


def second(state: Plan) -> dict[str, Any]:
    behave("second", state.get("second", {}))
    return {"done": [*state.get("done", []), "second"]}


def node(state: Plan) -> dict[str, Any]:
    behave("node", state.get("node", {}))
    return {"done": ["node"]}


_g = StateGraph(Plan)
_g.add_node("first", first)
_g.add_node("second", second)
_g.add_edge(START, "first")
_g.add_edge("first", "second")
two_steps = _g.compile(name="two-steps")

_t = StateGraph(Plan)
_t.add_node("node", node, timeout=1)
_t.add_edge(START, "node")
timed = _t.compile(name="timed")


class Pair(TypedDict, total=False):
    node: dict[str, float]
    done: Annotated[list[str], operator.add]


def left(state: Pair) -> dict[str, Any]:
    behave("left", state.get("node", {}))
    return {"done": ["left"]}


def right(state: Pair) -> dict[str, Any]:
    behave("right", state.get("node", {}))
    return {"done": ["right"]}


_p = StateGraph(Pair)
_p.add_node("left", left)
_p.add_node("right", right)
_p.add_edge(START, "left")
_p.add_edge(START, "right")
pair = _p.compile(name="shutdown-pair")
