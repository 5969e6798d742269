"""P1 step overhead: a no-op super-step job vs a bare RQ no-op job, same Redis, same worker class.

Ours: one run of a chain of ``N`` no-op nodes → ``N`` step jobs, each loading the checkpoint, taking the
lease, running the node and committing (fenced, atomic with enqueueing the next step job). Baselines, on the
same Redis and the same ``SimpleWorker`` with the JSON serializer: ``N`` pre-enqueued bare no-op jobs (the
design's baseline), and ``N`` bare no-op jobs that each enqueue the next one, as our steps do. Each number
is the burst worker's wall time from start to finish divided by the jobs it ran, after a warm-up. The
ratios are the median over repetitions of each repetition's own ratio (ours and the baselines of one
repetition run back to back), so that a shared machine's slow stretches, which hit one repetition's cases
alike, cancel out instead of landing on one side.

``P1metrics`` is ours with metrics on, as ``graphq worker --metrics-port`` records them (prometheus-client's
multiprocess mode: memory-mapped files in a temporary directory), against the same bare baseline.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypedDict

from rq import Queue, get_current_job
from rq.serializers import JSONSerializer

from bench.common import Row, fmt_ms, install_context, median, private_redis, run_burst, summary
from graphcore import END, START, StateGraph
from graphcore.backend.client import Client
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from worker import metrics
from worker.queue import RQStepQueue, StepJob, queue_name

STEPS = 300
WARMUP_STEPS = 60
REPEATS = 20
"""Repetitions (each runs every case once, in rotated order; a multiple of the 4 cases, so that each case
runs first equally often). A shared machine's slow stretches make single repetitions' ratios range over
±0.1 on a quiet day and ±0.4 on a noisy one (2026-12-02: 0.63 to 1.69); the median of 11 then moved by
±0.06 from run to run, hence 20."""
TARGET = 1.25
BARE_QUEUE = "bench-bare"
STEP_QUEUE = "bench-steps"

_queues: dict[str, Queue] = {}


def noop() -> None:
    """The bare baseline job: does nothing."""


def chained(remaining: int) -> None:
    """A bare job that enqueues the next one while ``remaining`` > 1 (a chain, like our step jobs)."""
    if remaining <= 1:
        return
    job = get_current_job()
    assert job is not None
    queue = _queues.get(job.origin)
    if queue is None or queue.connection is not job.connection:
        queue = _queues[job.origin] = Queue(job.origin, connection=job.connection, serializer=JSONSerializer)
    queue.enqueue_call(chained, args=(remaining - 1,))


class NoopState(TypedDict, total=False):
    n: int


def _noop_node(state: NoopState) -> None:
    return None


def chain_graph(n: int) -> CompiledGraph:
    """START → node0 → … → node{n-1} → END, every node a no-op."""
    g = StateGraph(NoopState)
    names = [f"node{i}" for i in range(n)]
    for name in names:
        g.add_node(name, _noop_node)
    for source, target in zip([START, *names], [*names, END], strict=True):
        g.add_edge(source, target)
    return g.compile(name=f"bench-p1-chain{n}")


def _bare(kv: Any, n: int) -> float:
    kv.flushdb()
    queue = Queue(BARE_QUEUE, connection=kv, serializer=JSONSerializer)
    with kv.pipeline() as pipe:
        for _ in range(n):
            queue.enqueue_call(noop, pipeline=pipe)
        pipe.execute()
    return _per_job(kv, BARE_QUEUE, n)


def _bare_chain(kv: Any, n: int) -> float:
    kv.flushdb()
    Queue(BARE_QUEUE, connection=kv, serializer=JSONSerializer).enqueue_call(chained, args=(n,))
    return _per_job(kv, BARE_QUEUE, n)


def _ours(kv: Any, client: Client, graph: CompiledGraph, n: int) -> float:
    kv.flushdb()
    run_id = client.enqueue(graph.name, {}, config={"max_super_steps": 1000})
    seconds, worker = run_burst(kv, queue_name(STEP_QUEUE, graph.name), StepJob)
    run = client.get_run(run_id)
    if run.status.value != "completed" or len(worker.durations) != n:
        raise RuntimeError(
            f"P1 run {run_id} is {run.status.value} at step {run.step} ({run.error}) after "
            f"{len(worker.durations)} of {n} jobs"
        )
    return seconds / n


def _with_metrics(measure: Callable[[], float]) -> float:
    """``measure()`` with metrics recorded (off again after)."""
    metrics.enable()
    try:
        return measure()
    finally:
        metrics.disable()


@contextmanager
def _multiprocess_dir() -> Iterator[None]:
    """Metrics recorded as a supervised worker process records them: in a multiprocess directory."""
    directory = tempfile.mkdtemp(prefix="bench-p1-metrics-")
    before = os.environ.get(metrics.MULTIPROC_ENV)
    os.environ[metrics.MULTIPROC_ENV] = directory
    try:
        yield
    finally:
        metrics.disable()
        if before is None:
            del os.environ[metrics.MULTIPROC_ENV]
        else:
            os.environ[metrics.MULTIPROC_ENV] = before
        shutil.rmtree(directory, ignore_errors=True)


def _per_job(kv: Any, queue: str, expected: int) -> float:
    seconds, worker = run_burst(kv, queue)
    if len(worker.durations) != expected:
        raise RuntimeError(f"P1: worker ran {len(worker.durations)} jobs on {queue}, expected {expected}")
    return seconds / expected


def measure(n: int = STEPS, repeats: int = REPEATS) -> dict[str, list[float]]:
    """Seconds per job of ``ours``, ``metrics`` (ours, metrics on), ``bare`` and ``chain`` (bare chained)
    for ``n`` jobs, one sample per repetition."""
    with private_redis() as (kv, url), _multiprocess_dir():
        settings = Settings(redis_url=url, queue=STEP_QUEUE)
        graphs = {size: chain_graph(size) for size in (WARMUP_STEPS, n)}
        install_context(kv, settings, list(graphs.values()))
        client = Client(kv, Registry({g.name: g for g in graphs.values()}), RQStepQueue(kv, settings))
        cases: dict[str, Callable[[int], float]] = {
            "bare": lambda k: _bare(kv, k),
            "chain": lambda k: _bare_chain(kv, k),
            "ours": lambda k: _ours(kv, client, graphs[k], k),
            "metrics": lambda k: _with_metrics(lambda: _ours(kv, client, graphs[k], k)),
        }
        for case in cases.values():
            case(WARMUP_STEPS)
        samples: dict[str, list[float]] = {name: [] for name in cases}
        order = list(cases)
        for rep in range(repeats):
            for name in order[rep % len(order) :] + order[: rep % len(order)]:  # rotate: no fixed order bias
                samples[name].append(cases[name](n))
    return samples


def _spread(name: str, ratios: list[float]) -> None:
    """Print how much the repetitions' own ratios vary (lowest, quartiles, highest): the median's noise."""
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    print(
        f"{name} spread: per-repetition ratios {min(ratios):.2f} to {max(ratios):.2f} "
        f"(quartiles {q1:.2f} to {q3:.2f}, {len(ratios)} repetitions)",
        flush=True,
    )


def run() -> list[Row]:
    """Run P1; prints ``P1 ratio=…`` (vs bare jobs), ``P1metrics ratio=…`` (metrics on, vs the same bare
    jobs) and ``P1chain ratio=…`` (vs chained bare jobs)."""
    samples = measure()
    ours, bare, chain = (median(samples[name]) for name in ("ours", "bare", "chain"))
    vs_bare = median([o / b for o, b in zip(samples["ours"], samples["bare"], strict=True)])
    on = median([o / b for o, b in zip(samples["metrics"], samples["bare"], strict=True)])
    vs_chain = median([o / c for o, c in zip(samples["ours"], samples["chain"], strict=True)])
    summary("P1", vs_bare, TARGET)
    summary("P1metrics", on, TARGET)
    summary("P1chain", vs_chain, TARGET)
    _spread("P1", [o / b for o, b in zip(samples["ours"], samples["bare"], strict=True)])
    what = f"no-op step job, {STEPS}-node chain, per job"
    return [
        Row("P1", what + " vs bare RQ job", fmt_ms(ours), fmt_ms(bare), vs_bare, TARGET),
        Row(
            "P1metrics",
            what + ", metrics on, vs bare RQ job",
            fmt_ms(median(samples["metrics"])),
            fmt_ms(bare),
            on,
            TARGET,
        ),
        Row(
            "P1chain",
            what + " vs chained bare job",
            fmt_ms(ours),
            fmt_ms(chain),
            vs_chain,
            TARGET,
            gate=False,
        ),
    ]
