"""The chaos harness (R14; ``make chaos``): runs under random SIGKILLs of their workers must all end.

``python -m bench.chaos [--runs N] [--workers K] [--seconds T] [--signal kill|term]``: N runs of a
five-step workflow whose nodes count their executions in Redis, K ``graphq worker`` processes (each in its
own process group), and every 2–4 s a random one SIGKILLed (its whole group, as a pod dies) and started
again, for T seconds; then a recovery window for the reaper to continue what the last kills interrupted.

``--signal term`` is a rolling deploy instead: the chosen worker gets SIGTERM (as a pod's first process
does), a new one starts at once, and the old one drains. Nothing may then need the reaper: the run ends
``reaped=0 requeued=0`` (lapsed leases acted on; step jobs taken off a queue and never claimed, enqueued
again — what a stop that dropped a popped job left), every chain is one run long, and every old worker
exits 0 (``unclean_exits=0``); else the exit status is 1. Short lease settings keep it
quick (``GRAPHQ_LEASE_TTL_S`` 3, ``GRAPHQ_HEARTBEAT_INTERVAL_S`` 0.5, ``GRAPHQ_REAPER_INTERVAL_S`` 1,
``GRAPHQ_MAX_RESUME_ATTEMPTS`` 10 unless set in the environment).

It prints the chains (how many of each length; each must be at most ``GRAPHQ_MAX_RESUME_ATTEMPTS + 1``
long and each continuation must name its predecessor) and ends with one line::

    CHAOS runs=<n> completed=<n> failed=<n> stuck=<n> lost=<n> double_commits=<n> extra_executions=<n>

``stuck``: chains whose last run has not ended after the recovery window; ``lost``: runs whose record is
gone or that completed with a wrong result; ``double_commits``: thread steps committed more than once;
``extra_executions``: node executions beyond one per committed step (allowed: at-least-once execution).
The exit status is 1 when stuck, lost or double_commits is not 0, or a chain is malformed.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TypedDict

import redis

from bench.common import kill, private_redis, start_worker, worker_env
from graphcore import END, START, StateGraph
from graphcore.backend.client import Client, RunRequest
from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.engine.config import get_config
from graphcore.engine.registry import Registry
from graphcore.errors import RunNotFoundError
from graphcore.settings import Settings, get_settings
from graphq.worker.housekeeping.reaper import REAPED_LOG, REQUEUED_LOG
from graphq.worker.queue import RQStepQueue

STEPS = 5
EXECUTIONS = "chaos:executions"
"""Redis hash ``<thread>:<node>`` → executions of that node on that thread."""
DEFAULTS = {
    "GRAPHQ_LEASE_TTL_S": "3",
    "GRAPHQ_HEARTBEAT_INTERVAL_S": "0.5",
    "GRAPHQ_REAPER_INTERVAL_S": "1",
    "GRAPHQ_MAX_RESUME_ATTEMPTS": "10",
}


class Line(TypedDict, total=False):
    trail: list[str]


def _node(name: str) -> Any:
    def node(state: Line) -> dict[str, Any]:
        thread = get_config().thread_id
        client = redis.Redis.from_url(get_settings().redis_url or "")
        try:
            client.hincrby(EXECUTIONS, f"{thread}:{name}", 1)
        finally:
            client.close()
        time.sleep(random.uniform(0.1, 0.6))
        return {"trail": [*state.get("trail", []), name]}

    return node


_g = StateGraph(Line)
_names = [f"s{i}" for i in range(1, STEPS + 1)]
for _name in _names:
    _g.add_node(_name, _node(_name))
for _a, _b in zip([START, *_names], [*_names, END], strict=True):
    _g.add_edge(_a, _b)
chaos_line = _g.compile(name="chaos-line")
REGISTRY = Registry({chaos_line.name: chaos_line})


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
    parser.add_argument("--signal", choices=["kill", "term"], default="kill", help="term: rolling deploys")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    with private_redis() as (kv, url), tempfile.TemporaryDirectory(prefix="graphq-chaos-") as logs:
        env = worker_env(url, "bench.chaos", **{k: os.environ.get(k, v) for k, v in DEFAULTS.items()})
        settings = Settings(redis_url=url, max_resume_attempts=int(env["GRAPHQ_MAX_RESUME_ATTEMPTS"]))
        client = Client(kv, REGISTRY, RQStepQueue(kv, settings))
        log = Path(logs) / "workers.log"
        procs = [start_worker(env, log=log) for _ in range(args.workers)]
        stopped: list[subprocess.Popen[bytes]] = []
        try:
            ids = client.enqueue_many([RunRequest(chaos_line.name, {}) for _ in range(args.runs)])
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
            counts["stuck"] += 1
        elif last.status == RunStatus.COMPLETED:
            ok = last.result is not None and last.result.get("trail") == _names
            counts["completed" if ok else "lost"] += 1
        else:
            counts["failed"] += 1
        steps = [c.step for c in client.get_history(last.thread_id)]
        double += len(steps) - len(set(steps))
        committed = sum(1 for s in steps if s >= 0)
        ran = sum(n for key, n in executions.items() if key.startswith(f"{last.thread_id}:"))
        extra += max(0, ran - committed)
    shown = ", ".join(f"{n} of length {length}" for length, n in sorted(lengths.items()))
    print(f"stops: {stops}; chains: {shown}; malformed chains: {malformed}")
    print(
        f"CHAOS runs={len(ids)} completed={counts['completed']} failed={counts['failed']} "
        f"stuck={counts['stuck']} lost={counts['lost']} double_commits={double} extra_executions={extra}",
        flush=True,
    )
    return 1 if counts["stuck"] or counts["lost"] or double or malformed else 0


if __name__ == "__main__":
    sys.exit(main())
