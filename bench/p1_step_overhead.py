"""P1 step overhead: a no-op super-step job vs a bare RQ no-op job, same Redis, same worker class.

Four kinds of job run in one burst of one ``SimpleWorker`` (JSON serializer), taken in turn, one of each
kind, again and again:

- ``ours``: the step jobs of one run of a chain of ``N`` no-op nodes, each loading the checkpoint, taking
  the lease, running the node and committing (fenced, atomic with enqueueing the next step job);
- ``metrics``: the same, for a second run of a second such graph, with metrics recorded as ``graphq worker
  --metrics-port`` records them (prometheus-client's multiprocess mode: memory-mapped files in a temporary
  directory);
- ``bare``: ``N`` pre-enqueued bare no-op jobs (the design's baseline);
- ``chain``: ``N`` bare no-op jobs that each enqueue the next one, as our steps do.

Each kind has a queue of its own, and each turn dequeues from that one queue as a worker listening on one
queue does (RQ's LMOVE into the queue's intermediate list, which the job's start pipeline empties); step
jobs are graphq's ``StepJob``, the others RQ's ``Job``. A job's cost is the time from the start of its
dequeue to the start of the next one: everything the worker does for it. A repetition's ratio is the mean
cost of one kind over the mean cost of another in the same burst: the jobs of every kind are spread evenly
over the same seconds, so a shared machine's slow stretches (CPU steal made bare jobs 2-3 times slower for
seconds at a time on 2026-12-02) weigh on both sides alike. Until that day each kind ran in a burst of its
own and the ratio was the median of 20 repetitions' ratios: single repetitions ranged from 0.63 to 1.69
and the median moved by ±0.07 from run to run; the ratio of one burst now moves by about ±0.03, and its
median over :data:`REPEATS` by about ±0.01.
"""

from __future__ import annotations

import itertools
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypedDict

from rq import Queue, SimpleWorker, get_current_job
from rq.job import Job
from rq.serializers import JSONSerializer

from bench.common import Row, fmt_ms, install_context, median, private_redis, summary
from graphcore import END, START, StateGraph
from graphcore.backend.client import Client
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker import metrics
from graphq.worker.queue import RQStepQueue, StepJob, queue_name

STEPS = 300
WARMUP_STEPS = 60
REPEATS = 10
TARGET = 1.25
STEP_QUEUE = "bench-steps"
BARE_QUEUE = "bench-bare"
CHAIN_QUEUE = "bench-chain"
KINDS = ("ours", "metrics", "bare", "chain")
"""The kinds of job, in the order the worker takes them."""

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


def chain_graph(n: int, name: str) -> CompiledGraph:
    """START → node0 → … → node{n-1} → END, every node a no-op."""
    g = StateGraph(NoopState)
    names = [f"node{i}" for i in range(n)]
    for node in names:
        g.add_node(node, _noop_node)
    for source, target in zip([START, *names], [*names, END], strict=True):
        g.add_edge(source, target)
    return g.compile(name=name)


class TurnWorker(SimpleWorker):
    """A ``SimpleWorker`` that takes one job from each of its queues in turn, each dequeue from that one
    queue as a one-queue worker does it, and records when each dequeue started (``starts``: kind, seconds).

    Args:
        kinds: queue name → (kind, RQ job class of its jobs).
        metered: the kind whose jobs run with metrics recorded.
    """

    def __init__(self, *args: Any, kinds: dict[str, tuple[str, type[Job]]], metered: str, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.kinds = kinds
        self.metered = metered
        self.turn = 0
        self.starts: list[tuple[str, float]] = []

    def dequeue_job_and_maintain_ttl(self, *args: Any, **kw: Any) -> Any:
        every = self.queues
        queue = every[self.turn % len(every)]
        self.turn += 1
        kind, self.job_class = self.kinds[queue.name]
        self._ordered_queues = [queue]  # RQ dequeues from one queue as a one-queue worker does (LMOVE)
        started = time.perf_counter()
        try:
            taken = super().dequeue_job_and_maintain_ttl(*args, **kw)
        finally:
            self._ordered_queues = every
        if taken is not None:
            self.starts.append((kind, started))
        return taken

    def reorder_queues(self, reference_queue: Queue) -> None:
        """The turns are :meth:`dequeue_job_and_maintain_ttl`'s."""

    def prepare_job_execution(self, job: Job, remove_from_intermediate_queue: bool = False) -> None:
        super().prepare_job_execution(job, remove_from_intermediate_queue=True)  # as a one-queue worker

    def execute_job(self, job: Job, queue: Queue) -> None:
        if self.kinds[queue.name][0] != self.metered:
            super().execute_job(job, queue)
            return
        metrics.enable()
        try:
            super().execute_job(job, queue)
        finally:
            metrics.disable()


def mean_costs(starts: Sequence[tuple[str, float]]) -> dict[str, float]:
    """Each kind's mean cost in seconds: from the start of a job's dequeue to the start of the next one
    (the last job has no next one and is left out)."""
    total: dict[str, float] = {}
    count: dict[str, int] = {}
    for (kind, start), (_, end) in itertools.pairwise(starts):
        total[kind] = total.get(kind, 0.0) + end - start
        count[kind] = count.get(kind, 0) + 1
    return {kind: total[kind] / count[kind] for kind in total}


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


class _Bench:
    """The private Redis, the two graphs of each length, and one burst of every kind (:meth:`burst`)."""

    def __init__(self, kv: Any, url: str) -> None:
        self.kv = kv
        settings = Settings(redis_url=url, queue=STEP_QUEUE)
        self.graphs = {
            (kind, n): chain_graph(n, f"bench-p1-{kind}{n}")
            for kind in ("ours", "metrics")
            for n in (WARMUP_STEPS, STEPS)
        }
        install_context(kv, settings, list(self.graphs.values()))
        registry = Registry({g.name: g for g in self.graphs.values()})
        self.client = Client(kv, registry, RQStepQueue(kv, settings))

    def burst(self, n: int) -> dict[str, float]:
        """One burst of ``n`` jobs of every kind; each kind's mean cost (seconds)."""
        self.kv.flushdb()
        bare = Queue(BARE_QUEUE, connection=self.kv, serializer=JSONSerializer)
        with self.kv.pipeline() as pipe:
            for _ in range(n):
                bare.enqueue_call(noop, pipeline=pipe)
            pipe.execute()
        Queue(CHAIN_QUEUE, connection=self.kv, serializer=JSONSerializer).enqueue_call(chained, args=(n,))
        runs = {
            kind: self.client.enqueue(self.graphs[(kind, n)].name, {}, config={"max_super_steps": 1000})
            for kind in ("ours", "metrics")
        }
        kinds: dict[str, tuple[str, type[Job]]] = {
            queue_name(STEP_QUEUE, self.graphs[("ours", n)].name): ("ours", StepJob),
            queue_name(STEP_QUEUE, self.graphs[("metrics", n)].name): ("metrics", StepJob),
            BARE_QUEUE: ("bare", Job),
            CHAIN_QUEUE: ("chain", Job),
        }
        queues = [Queue(name, connection=self.kv, serializer=JSONSerializer) for name in kinds]
        worker = TurnWorker(
            queues, connection=self.kv, serializer=JSONSerializer, kinds=kinds, metered="metrics"
        )
        worker.work(burst=True, logging_level="WARNING", with_scheduler=False)
        self._check(worker, runs, n)
        return mean_costs(worker.starts)

    def _check(self, worker: TurnWorker, runs: dict[str, str], n: int) -> None:
        for kind, run_id in runs.items():
            run = self.client.get_run(run_id)
            if run.status.value != "completed":
                raise RuntimeError(
                    f"P1 {kind} run {run_id} is {run.status.value} at step {run.step} ({run.error})"
                )
        taken = [kind for kind, _ in worker.starts]
        if taken != list(KINDS) * n:
            raise RuntimeError(f"P1: the worker took {len(taken)} jobs, not {n} of each kind in turn")


def measure(n: int = STEPS, repeats: int = REPEATS) -> list[dict[str, float]]:
    """Each repetition's mean cost (seconds) of every kind of :data:`KINDS`, ``n`` jobs of each kind, after
    a warm-up burst."""
    with private_redis() as (kv, url), _multiprocess_dir():
        bench = _Bench(kv, url)
        bench.burst(WARMUP_STEPS)
        return [bench.burst(n) for _ in range(repeats)]


def ratio(samples: list[dict[str, float]], kind: str, baseline: str) -> float:
    """The median over repetitions of ``kind``'s mean cost over ``baseline``'s in the same burst."""
    return median([s[kind] / s[baseline] for s in samples])


def _spread(name: str, ratios: list[float]) -> None:
    """Print how much the repetitions' own ratios vary (lowest, quartiles, highest): the median's noise."""
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    print(
        f"{name} spread: per-repetition ratios {min(ratios):.3f} to {max(ratios):.3f} "
        f"(quartiles {q1:.3f} to {q3:.3f}, {len(ratios)} repetitions)",
        flush=True,
    )


def run() -> list[Row]:
    """Run P1; prints ``P1 ratio=…`` (vs bare jobs), ``P1metrics ratio=…`` (metrics on, vs the same bare
    jobs) and ``P1chain ratio=…`` (vs chained bare jobs)."""
    samples = measure()
    cost = {kind: median([s[kind] for s in samples]) for kind in KINDS}
    vs_bare, on, vs_chain = (
        ratio(samples, "ours", "bare"),
        ratio(samples, "metrics", "bare"),
        ratio(samples, "ours", "chain"),
    )
    summary("P1", vs_bare, TARGET)
    summary("P1metrics", on, TARGET)
    summary("P1chain", vs_chain, TARGET)
    _spread("P1", [s["ours"] / s["bare"] for s in samples])
    what = f"no-op step job, {STEPS}-node chain, per job"
    return [
        Row("P1", what + " vs bare RQ job", fmt_ms(cost["ours"]), fmt_ms(cost["bare"]), vs_bare, TARGET),
        Row(
            "P1metrics",
            what + ", metrics on, vs bare RQ job",
            fmt_ms(cost["metrics"]),
            fmt_ms(cost["bare"]),
            on,
            TARGET,
        ),
        Row(
            "P1chain",
            what + " vs chained bare job",
            fmt_ms(cost["ours"]),
            fmt_ms(cost["chain"]),
            vs_chain,
            TARGET,
            gate=False,
        ),
    ]
