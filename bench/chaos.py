"""The chaos harness (R14; ``make chaos``): runs under random SIGKILLs of their workers must all end.

``python -m bench.chaos [--runs N] [--workers K] [--seconds T] [--wide F] [--signal kill|term]``: N runs
whose nodes count their executions in Redis, K ``graphq worker`` processes (each in its own process
group), and every 2–4 s a random one SIGKILLed (its whole group, as a pod dies) and started again, for T
seconds; then a recovery window for the reaper to continue what the last kills interrupted. A share F
(default 0.2) of the runs are wide: ``chaos-wide`` sends one task per item, a super-step of ``WIDE`` (40)
tasks that is split into batches of 8 (``GRAPHQ_SHARD_MIN_TASKS`` 20, ``GRAPHQ_SHARD_BATCH_TASKS`` 8) run
across the workers; the others are the five-step ``chaos-line``.

``--signal term`` is a rolling deploy instead: the chosen worker gets SIGTERM (as a pod's first process
does), a new one starts at once, and the old one drains. Nothing may then need the reaper: the run ends
``reaped=0 requeued=0`` (lapsed leases acted on; step jobs taken off a queue and never claimed, enqueued
again — what a stop that dropped a popped job left), every chain is one run long, and every old worker
exits 0 (``unclean_exits=0``); else the exit status is 1. Short lease settings keep it
quick (``GRAPHQ_LEASE_TTL_S`` 3, ``GRAPHQ_HEARTBEAT_INTERVAL_S`` 0.5, ``GRAPHQ_REAPER_INTERVAL_S`` 1,
``GRAPHQ_MAX_RESUME_ATTEMPTS`` 10 unless set in the environment).

It prints the chains (how many of each length; each must be at most ``GRAPHQ_MAX_RESUME_ATTEMPTS + 1``
long and each continuation must name its predecessor), what became of the wide runs (how many completed,
were continued, and ran on several processes; their extra executions), and ends with one line::

    CHAOS runs=<n> completed=<n> failed=<n> stuck=<n> lost=<n> double_commits=<n> extra_executions=<n>

``stuck``: chains whose last run has not ended after the recovery window; ``lost``: runs whose record is
gone or that completed with a wrong result (a wide run's: each item's square once, in task order);
``double_commits``: thread steps committed more than once; ``extra_executions``: node executions beyond
one per task of a committed step (allowed: at-least-once execution).
The exit status is 1 when stuck, lost or double_commits is not 0, or a chain is malformed.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import operator
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import redis

from bench.common import kill, private_redis, start_worker, worker_env
from graphcore import END, START, Send, StateGraph
from graphcore.backend.client import Client, RunRequest
from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.engine.config import get_config
from graphcore.engine.registry import Registry
from graphcore.errors import RunNotFoundError
from graphcore.settings import Settings, get_settings
from graphq.worker.housekeeping.reaper import REAPED_LOG, REQUEUED_LOG
from graphq.worker.queue import RQStepQueue

STEPS = 5
WIDE = 40
"""Tasks of a wide run's split super-step."""
EXECUTIONS = "chaos:executions"
"""Redis hash ``<thread>:<node>`` → executions of that node on that thread."""
PROCESSES = "chaos:processes:"
"""Redis set ``chaos:processes:<thread>``: the pids of the processes that ran the thread's nodes."""
DEFAULTS = {
    "GRAPHQ_LEASE_TTL_S": "3",
    "GRAPHQ_HEARTBEAT_INTERVAL_S": "0.5",
    "GRAPHQ_REAPER_INTERVAL_S": "1",
    "GRAPHQ_MAX_RESUME_ATTEMPTS": "10",
    "GRAPHQ_SHARD_MIN_TASKS": "20",
    "GRAPHQ_SHARD_BATCH_TASKS": "8",
}


class Line(TypedDict, total=False):
    trail: list[str]


class Wide(TypedDict, total=False):
    out: Annotated[list[int], operator.add]


def _executed(name: str) -> None:
    """Count one execution of node ``name`` on this thread (and which process ran it), then take a while
    (0.1–0.6 s)."""
    thread = get_config().thread_id
    client = redis.Redis.from_url(get_settings().redis_url or "")
    try:
        client.pipeline().hincrby(EXECUTIONS, f"{thread}:{name}", 1).sadd(
            PROCESSES + thread, os.getpid()
        ).execute()
    finally:
        client.close()
    time.sleep(random.uniform(0.1, 0.6))


def _node(name: str) -> Any:
    def node(state: Line) -> dict[str, Any]:
        _executed(name)
        return {"trail": [*state.get("trail", []), name]}

    return node


def _fan(state: Wide) -> dict[str, Any]:
    _executed("fan")
    return {}


def _square(item: dict[str, int]) -> dict[str, Any]:
    _executed("square")
    return {"out": [item["i"] * item["i"]]}


_g = StateGraph(Line)
_names = [f"s{i}" for i in range(1, STEPS + 1)]
for _name in _names:
    _g.add_node(_name, _node(_name))
for _a, _b in zip([START, *_names], [*_names, END], strict=True):
    _g.add_edge(_a, _b)
chaos_line = _g.compile(name="chaos-line")

_w = StateGraph(Wide)
_w.add_node("fan", _fan)
_w.add_node("square", _square)
_w.add_edge(START, "fan")
_w.add_conditional_edges("fan", lambda _: [Send("square", {"i": i}) for i in range(WIDE)], ["square"])
_w.add_edge("square", END)
chaos_wide = _w.compile(name="chaos-wide")
REGISTRY = Registry({chaos_line.name: chaos_line, chaos_wide.name: chaos_wide})
RESULTS = {chaos_line.name: {"trail": _names}, chaos_wide.name: {"out": [i * i for i in range(WIDE)]}}
"""The result of a completed run of each workflow."""


def _chain(client: Client, run_id: str) -> list[RunRecord] | None:
    try:
        return client.chain(run_id)
    except RunNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--recovery-s", type=float, default=60.0, help="longest wait after the kills")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--wide", type=float, default=0.2, help="share of the runs that are wide (0 to 1)")
    parser.add_argument("--signal", choices=["kill", "term"], default="kill", help="term: rolling deploys")
    args = parser.parse_args(argv)
    if not 0 <= args.wide <= 1:
        parser.error(f"argument --wide: {args.wide} is not from 0 to 1")
    rng = random.Random(args.seed)
    with private_redis() as (kv, url), tempfile.TemporaryDirectory(prefix="graphq-chaos-") as logs:
        env = worker_env(url, "bench.chaos", **{k: os.environ.get(k, v) for k, v in DEFAULTS.items()})
        settings = Settings(redis_url=url, max_resume_attempts=int(env["GRAPHQ_MAX_RESUME_ATTEMPTS"]))
        client = Client(kv, REGISTRY, RQStepQueue(kv, settings))
        log = Path(logs) / "workers.log"
        procs = [start_worker(env, log=log) for _ in range(args.workers)]
        stopped: list[subprocess.Popen[bytes]] = []
        try:
            ids = client.enqueue_many([RunRequest(w, {}) for w in _workflows(args.runs, args.wide, rng)])
            end = time.monotonic() + args.seconds
            while time.monotonic() < end:
                time.sleep(rng.uniform(2, 4))
                i = rng.randrange(len(procs))
                if args.signal == "kill":
                    kill(procs[i])
                else:
                    procs[i].send_signal(signal.SIGTERM)
                stopped.append(procs[i])
                procs[i] = start_worker(env, log=log)
            _recover(client, ids, args.recovery_s)
            unclean = sum(p.wait(60) != 0 for p in stopped) if args.signal == "term" else 0
        finally:
            for p in procs + stopped:
                kill(p)
        text = log.read_text(errors="replace")
        reaped, requeued = text.count(REAPED_LOG), text.count(REQUEUED_LOG)
        code = _report(client, kv, ids, len(stopped), settings.max_resume_attempts, args.signal == "term")
        if args.signal == "kill":
            return code
        print(f"DEPLOY stops={len(stopped)} reaped={reaped} requeued={requeued} unclean_exits={unclean}")
        return code or int(bool(reaped or requeued or unclean))


def _workflows(runs: int, wide: float, rng: random.Random) -> list[str]:
    """The workflow of each of ``runs`` runs: a share ``wide`` of them ``chaos-wide``, mixed at random."""
    count = round(runs * wide)
    names = [chaos_wide.name] * count + [chaos_line.name] * (runs - count)
    rng.shuffle(names)
    return names


def _recover(client: Client, ids: list[str], seconds: float) -> None:
    """Wait up to ``seconds`` for every chain's last run to end."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        chains = [_chain(client, r) for r in ids]
        if all(c is None or c[-1].terminal for c in chains):
            return
        time.sleep(0.5)


def _report(client: Client, kv: Any, ids: list[str], stops: int, max_attempts: int, single: bool) -> int:
    """Print the chains and the ``CHAOS`` line; 1 when a run is stuck or lost, a step was committed twice,
    or a chain is malformed (longer than ``max_attempts + 1``, or than 1 when ``single``), else 0."""
    counts = collections.Counter[str]()
    wide = collections.Counter[str]()
    lengths = collections.Counter[int]()
    malformed = 0
    executions = {k.decode(): int(v) for k, v in kv.hgetall(EXECUTIONS).items()}
    double = extra = 0
    for run_id in ids:
        chain = _chain(client, run_id)
        if chain is None:
            counts["lost"] += 1
            continue
        lengths[len(chain)] += 1
        links_ok = all(b.continued_from_run_id == a.id for a, b in itertools.pairwise(chain))
        if len(chain) > (1 if single else max_attempts + 1) or not links_ok:
            malformed += 1
        last = chain[-1]
        if not last.terminal:
            outcome = "stuck"
        elif last.status == RunStatus.COMPLETED:
            ok = last.result == RESULTS[last.workflow]
            outcome = "completed" if ok else "lost"
        else:
            outcome = "failed"
        counts[outcome] += 1
        history = client.get_history(last.thread_id)
        steps = [c.step for c in history]
        double += len(steps) - len(set(steps))
        committed = sum(len(c.next_tasks) for c in history[1:])  # the tasks of each step committed
        ran = sum(n for key, n in executions.items() if key.startswith(f"{last.thread_id}:"))
        extra += max(0, ran - committed)
        if last.workflow == chaos_wide.name:
            wide.update(
                {outcome: 1, "continued": len(chain) > 1, "extra executions": max(0, ran - committed)}
            )
            wide["on several processes"] += kv.scard(PROCESSES + last.thread_id) > 1
    shown = ", ".join(f"{n} of length {length}" for length, n in sorted(lengths.items()))
    print(f"stops: {stops}; chains: {shown}; malformed chains: {malformed}")
    print(
        f"wide runs (a super-step of {WIDE} tasks): " + ", ".join(f"{k} {n}" for k, n in sorted(wide.items()))
    )
    print(
        f"CHAOS runs={len(ids)} completed={counts['completed']} failed={counts['failed']} "
        f"stuck={counts['stuck']} lost={counts['lost']} double_commits={double} extra_executions={extra}",
        flush=True,
    )
    return 1 if counts["stuck"] or counts["lost"] or double or malformed else 0


if __name__ == "__main__":
    sys.exit(main())
