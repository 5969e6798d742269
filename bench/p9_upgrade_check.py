"""P9 upgrade check: ``graphq workflows check`` over 10,000 paused threads.

One real run of workflow ``upgrade`` is worked in this process until it pauses at a human request (its
checkpoint holds an int, a 3-item append-only list and a string; its next task and its open request name
node ``review``). Its keys — run record, indexes, checkpoints, channel values, logs, pending writes,
request records — are then copied byte for byte (Redis ``COPY``) to ``THREADS - 1`` more threads, each with
its own run id, so every thread holds a real checkpoint as a worker wrote it.

Measured on the same data, alternating, ``REPEATS`` times each (medians kept):

* ours: :func:`graphcore.backend.upgrade_check.check_upgrade` of every thread against a compatible new
  version (a new node, a new optional channel): the active runs' enumeration, then pipelined pages of 500
  threads (their heads, subgraph namespaces, values, open requests);
* baseline: the same check one thread per page: the same reads and comparisons, with round trips per
  thread, as a loop over the threads would make them;
* for information (``P9read``, no target): only reading the threads' latest checkpoints one by one with
  ``Client.get_state``, which checks nothing (no requests, no subgraph namespaces, no validation).

``P9 ratio = ours / baseline``, target 0.5; the absolute seconds for the 10,000 threads are printed.
Nothing here asserts a timing.
"""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, TypedDict

from bench.common import Row, median, private_redis, summary, timed
from graphcore import END, START, StateGraph, keys
from graphcore.backend.client import Client
from graphcore.backend.upgrade_check import PAGE, active_runs, check_upgrade
from graphcore.engine.interrupts import interrupt
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import RQStepQueue

THREADS = 10_000
REPEATS = 3
TARGET = 0.5
_COPY_BATCH = 1000


class State(TypedDict, total=False):
    count: int
    items: Annotated[list[str], operator.add]
    notes: str


class NewState(State, total=False):
    score: float


def start(state: Any) -> dict[str, Any]:
    return {"count": 1, "items": ["a", "b", "c"], "notes": "first"}


def review(state: Any) -> dict[str, Any]:
    return {"items": [interrupt("approve?")]}


def audit(state: Any) -> dict[str, Any]:
    return {"score": 1.0}


def _graph(schema: type[Any], *nodes: Any) -> Any:
    g = StateGraph(schema)
    previous = START
    for fn in nodes:
        g.add_node(fn.__name__, fn)
        g.add_edge(previous, fn.__name__)
        previous = fn.__name__
    g.add_edge(previous, END)
    return g.compile(name="upgrade")


OLD = _graph(State, start, review)
NEW = _graph(NewState, start, review, audit)


def _template(kv: Any, url: str) -> tuple[str, str]:
    """One run worked until it pauses: (its thread, its run id)."""
    registry = Registry({"upgrade": OLD})
    client = Client(kv, registry, RQStepQueue(kv, Settings(redis_url=url)))
    run_id = client.enqueue("upgrade", {}, thread_id="t0")
    run_worker(Settings(redis_url=url), burst=True, registry=registry, kv=kv)
    assert client.runs.get(run_id).status.value == "awaiting_input"
    return "t0", run_id


def _copy_threads(kv: Any, thread: str, run_id: str, count: int) -> None:
    """``count`` copies of ``thread``'s keys, threads ``t1``..., run ids ``<run_id>-<n>``."""
    names = [k.decode() for k in kv.keys(f"graphq:{{{thread}}}:*")]
    now = time.time()
    for first in range(1, count + 1, _COPY_BATCH):
        pipe = kv.pipeline(transaction=False)
        for n in range(first, min(first + _COPY_BATCH, count + 1)):
            other, rid = f"t{n}", f"{run_id}-{n}"
            for name in names:
                pipe.copy(name, name.replace(f"{{{thread}}}", f"{{{other}}}").replace(run_id, rid))
            pipe.hset(keys.run(other, rid), mapping={"id": rid, "thread_id": other})
            pipe.set(keys.thread_active(other), rid)
            pipe.zadd(keys.runs_index(), {rid: now + n})
            pipe.hset(keys.run_threads(), rid, other)
        pipe.execute()


def measure() -> tuple[float, float, float, int]:
    """Median seconds over every thread: ours, the baseline, ``get_state`` one by one; and the threads
    the check found."""
    with private_redis() as (kv, url):
        thread, run_id = _template(kv, url)
        _copy_threads(kv, thread, run_id, THREADS - 1)
        client = Client(kv, Registry({"upgrade": OLD}))
        threads = [r.thread_id for r in active_runs(kv, "upgrade")]
        ours: list[float] = []
        base: list[float] = []
        reads: list[float] = []
        for _ in range(REPEATS):
            ours.append(timed(lambda: _check(kv, PAGE, len(threads))))
            base.append(timed(lambda: _check(kv, 1, len(threads))))
            reads.append(timed(lambda: [client.get_state(t) for t in threads]))
        return median(ours), median(base), median(reads), len(threads)


def _check(kv: Any, page: int, threads: int) -> None:
    """The check of every thread, ``page`` threads per page: all ``threads`` found, none broken."""
    report = check_upgrade(kv, NEW, page=page)
    assert (len(report.threads), report.broken) == (threads, 0), report.threads[0].line()


def run() -> list[Row]:
    """Run P9; print its summary lines; return its rows."""
    ours, base, reads, found = measure()
    summary("P9", ours / base, TARGET)
    print(
        f"   {found} paused threads: check {ours:.2f} s in pages of {PAGE}, {base:.2f} s one thread per "
        f"page; get_state one by one {reads:.2f} s (P9read ratio={ours / reads:.2f}, for information)",
        flush=True,
    )
    return [
        Row("P9", f"upgrade check of {found} threads", f"{ours:.2f} s", f"{base:.2f} s", ours / base, TARGET),
        Row(
            "P9read",
            "against get_state one by one",
            f"{ours:.2f} s",
            f"{reads:.2f} s",
            ours / reads,
            TARGET,
            gate=False,
        ),
    ]


if __name__ == "__main__":
    run()
