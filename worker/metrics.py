"""Prometheus metrics (O1): what graphq's processes record, and ``/metrics`` ``/healthz`` ``/readyz``.

Recording is off until :func:`enable` (``graphq worker --metrics-port``, ``graphq scheduler
--metrics-port``, a test): every ``record`` function below then costs a dictionary lookup and returns.
On, each costs a few microseconds in memory (no Redis round trip: P1 is measured both ways).

``graphq worker`` runs its steps in worker processes under a supervising parent: with a metrics port the
parent gives them prometheus-client's multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, a private temporary
directory: each process writes its values to memory-mapped files there) and serves the sum of them all,
its own included, on one port (:func:`serve`). The gauges of the cluster's state (runs running and queued
by tenant, queue depth by workflow, the oldest admission wait) are read from Redis at scrape time by
:class:`RedisCollector`, in the serving process only.

Names (:data:`METRICS`) use base units (seconds), counters end in ``_total``, and no label carries a run
or thread id: ``workflow``, ``node``, ``outcome``, ``status``, ``kind``, ``tenant`` (capped by
``GRAPHQ_METRICS_TENANT_LABEL_CAP``) only.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, Counter, Histogram, make_wsgi_app, multiprocess, values
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.registry import Collector
from rq import Queue

from graphcore.backend.admission import tenants as tenant_rows
from graphcore.backend.connection import on_retry
from graphcore.backend.reaper import server_ms
from graphcore.errors import ConfigError
from graphcore.settings import Settings
from graphq.worker.health import pid_alive
from graphq.worker.pinned import SHORT, version_queues
from graphq.worker.queue import queue_name, waiting_jobs

__all__ = [
    "METRICS",
    "MULTIPROC_ENV",
    "RedisCollector",
    "batch_done",
    "catalog",
    "continued",
    "disable",
    "enable",
    "exposed_names",
    "fenced_write_refused",
    "lease_lost",
    "node_timer",
    "process_dead",
    "requests_expired",
    "run_started",
    "runs_reaped",
    "schedule_fired",
    "serve",
    "start_multiprocess",
    "step_done",
    "step_outcome",
    "stop_multiprocess",
    "webhook_delivery",
]

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus-client's multiprocess directory variable (set by the supervisor for its worker processes)."""

_FAST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_SLOW_BUCKETS = (*_FAST_BUCKETS, 60.0, 300.0, 900.0, 3600.0)
_LAG_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0)

_COUNTERS = {
    "graphq_steps": (
        "Step jobs run, by workflow and outcome: committed, completed, failed, canceled, awaiting_input, "
        'skipped (a duplicate, or its run is gone: thread expired or deleted; workflow ""), rejected (the '
        "fence refused: lease lost), handed_back (its run is pinned to a version this worker does not serve: "
        "queued again for that version), error (raised).",
        ("workflow", "outcome"),
    ),
    "graphq_runs": (
        "Runs a step job ended, by workflow and final status: completed, failed, canceled.",
        ("workflow", "status"),
    ),
    "graphq_batches": (
        "Batches of split super-steps run, by workflow and outcome: done, failed (a task failure ends the "
        "run), left (its lease lapsed: it runs again elsewhere), canceled (canceled with interrupt, or given "
        "up), given_up (left more often than GRAPHQ_MAX_RESUME_ATTEMPTS: the run fails).",
        ("workflow", "outcome"),
    ),
    "graphq_leases_lost": ("Step leases found taken while their step ran.", ()),
    "graphq_fenced_writes_rejected": (
        "Writes the lease fence refused, by kind of write: pending, commit, status, events, ...",
        ("kind",),
    ),
    "graphq_runs_reaped": (
        "Lapsed leases the reaper acted on, by outcome: continued, restarted, limit, canceled, left.",
        ("outcome",),
    ),
    "graphq_continuations": (
        "Continuation runs queued, by cause: reaper (a worker died), shutdown (a step given up at a drain).",
        ("cause",),
    ),
    "graphq_request_expirations": ("Runs closed because a human request expired.", ()),
    "graphq_schedule_fires": (
        "Schedule fires, by outcome: started, skipped-overlap, missed, caught-up, buffered.",
        ("outcome",),
    ),
    "graphq_redis_retries": ("Redis calls tried again after a transient error.", ()),
    "graphq_webhook_deliveries": (
        "Tries of webhook deliveries, by outcome: delivered (answered 2xx), retried (failed: tried again "
        "after a back-off), dead (failed and given up: a dead letter).",
        ("outcome",),
    ),
}
_HISTOGRAMS = {
    "graphq_step_duration_seconds": ("A step job's duration.", ("workflow", "outcome"), _SLOW_BUCKETS),
    "graphq_node_duration_seconds": (
        "A task's duration, from its step's start (tasks start together) to its end.",
        ("workflow", "node"),
        _SLOW_BUCKETS,
    ),
    "graphq_admission_wait_seconds": (
        "From a run's creation to its first step's start (queue and slot wait).",
        ("workflow",),
        _SLOW_BUCKETS,
    ),
    "graphq_schedule_fire_lag_seconds": ("From a fire time to the fire.", (), _LAG_BUCKETS),
}
_GAUGES = {
    "graphq_runs_running": (
        "Runs holding an admission slot, by tenant (read from Redis at scrape time); from "
        'GRAPHQ_METRICS_TENANT_LABEL_CAP tenants on, one series tenant="*".',
        ("tenant",),
    ),
    "graphq_runs_queued": (
        "Runs waiting for an admission slot, by tenant (read from Redis at scrape time); from "
        'GRAPHQ_METRICS_TENANT_LABEL_CAP tenants on, one series tenant="*".',
        ("tenant",),
    ),
    "graphq_admission_oldest_wait_seconds": (
        "How long the tenant's oldest waiting run has waited (read from Redis at scrape time); from "
        'GRAPHQ_METRICS_TENANT_LABEL_CAP tenants on, one series tenant="*".',
        ("tenant",),
    ),
    "graphq_queue_depth": (
        "Step jobs waiting in a workflow's RQ queues: its own and those of its pinned runs' versions (read "
        "from Redis at scrape time).",
        ("workflow",),
    ),
    "graphq_runs_waiting_for_version": (
        "Runs whose next step waits for a worker serving the version of the workflow they are pinned to "
        "(no live worker listens on that version's queue), by workflow and version (its first 12 hex "
        "digits; read from Redis at scrape time).",
        ("workflow", "version"),
    ),
}

METRICS: dict[str, tuple[str, tuple[str, ...]]] = {
    **{f"{name}_total": (kind, labels) for name, (kind, labels) in _COUNTERS.items()},
    **{name: (doc, labels) for name, (doc, labels, _) in _HISTOGRAMS.items()},
    **_GAUGES,
}
"""Every metric graphq exposes → (help text, label names); counters by their ``_total`` name."""

ALL_TENANTS = "*"
"""The ``tenant`` label value of the running/queued gauges once the tenants reach the cap."""


def catalog() -> list[tuple[str, str, str, tuple[str, ...]]]:
    """Every metric graphq exposes as ``(name, type, help, label names)``, sorted by name; ``type`` is
    ``counter``, ``histogram`` or ``gauge``, counters by their ``_total`` name. The metrics reference page
    (``docs/reference/metrics.md``) is generated from it."""
    kinds = {f"{n}_total": "counter" for n in _COUNTERS} | dict.fromkeys(_HISTOGRAMS, "histogram")
    kinds |= dict.fromkeys(_GAUGES, "gauge")
    return sorted((name, kinds[name], doc, labels) for name, (doc, labels) in METRICS.items())


def exposed_names() -> set[str]:
    """Every series name :func:`serve` may expose (histograms' ``_bucket``, ``_sum``, ``_count``)."""
    names = {f"{n}_total" for n in _COUNTERS} | set(_GAUGES)
    for name in _HISTOGRAMS:
        names |= {name, f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    return names


@dataclass
class _Metrics:
    """This process's metric objects (built by :func:`enable`)."""

    registry: CollectorRegistry
    counters: dict[str, Counter]
    histograms: dict[str, Histogram]
    children: dict[tuple[str, tuple[str, ...]], Any] = field(default_factory=dict)
    """(name, label values) → the labelled metric (``labels()`` checks and locks on every call)."""

    @classmethod
    def build(cls) -> _Metrics:
        registry = CollectorRegistry(auto_describe=True)
        counters = {n: Counter(n, doc, labels, registry=registry) for n, (doc, labels) in _COUNTERS.items()}
        histograms = {
            n: Histogram(n, doc, labels, registry=registry, buckets=buckets)
            for n, (doc, labels, buckets) in _HISTOGRAMS.items()
        }
        return cls(registry, counters, histograms)


_on: _Metrics | None = None
_built: dict[str, _Metrics] = {}
_lock = threading.Lock()


def enable() -> CollectorRegistry:
    """Record from now on (idempotent); returns the registry of this process's metrics. Under
    ``PROMETHEUS_MULTIPROC_DIR`` the values go to that directory's files (set it before)."""
    global _on
    mode = os.environ.get(MULTIPROC_ENV, "")
    with _lock:
        if mode not in _built:
            values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]  # as the env says now
            _built[mode] = _Metrics.build()
        _on = _built[mode]
        on_retry(_redis_retried)
        return _on.registry


def disable() -> None:
    """Stop recording (the benchmark compares both)."""
    global _on
    _on = None


def _inc(name: str, *labels: str, amount: float = 1.0) -> None:
    m = _on
    if m is not None:
        child = m.children.get((name, labels))
        if child is None:
            counter = m.counters[name]
            child = m.children[(name, labels)] = counter.labels(*labels) if labels else counter
        child.inc(amount)


def _observe(name: str, seconds: float, *labels: str) -> None:
    m = _on
    if m is not None:
        child = m.children.get((name, labels))
        if child is None:
            histogram = m.histograms[name]
            child = m.children[(name, labels)] = histogram.labels(*labels) if labels else histogram
        child.observe(seconds)


_FINAL = {"completed": "completed", "failed": "failed", "canceled": "canceled"}


def step_outcome(result: str) -> str:
    """A step job's outcome label from its result text (``committed step 3`` → ``committed``,
    ``awaiting input: 1 request(s)`` → ``awaiting_input``, ``failed: ValueError`` → ``failed``)."""
    word = result.split(":", 1)[0].split(" ", 1)[0]
    return "awaiting_input" if word == "awaiting" else word


def step_done(workflow: str, result: str | None, seconds: float) -> None:
    """Record one step job: ``graphq_steps_total``, ``graphq_step_duration_seconds`` (by workflow and
    outcome; ``result`` None: it raised, outcome ``error``; ``seconds`` up to its commit's reply, which for
    a commit sent in RQ's success pipeline includes RQ's bookkeeping of the job) and, when the step ended
    its run, ``graphq_runs_total`` by final status."""
    if _on is None:
        return
    outcome = "error" if result is None else step_outcome(result)
    _inc("graphq_steps", workflow, outcome)
    _observe("graphq_step_duration_seconds", seconds, workflow, outcome)
    final = _FINAL.get(outcome)
    if final is not None:
        _inc("graphq_runs", workflow, final)


def run_started(workflow: str, waited_s: float) -> None:
    """Record a run's first step starting ``waited_s`` after the run was created."""
    _observe("graphq_admission_wait_seconds", max(0.0, waited_s), workflow)


def node_timer(
    workflow: str, started: float, then: Callable[[Any], None] | None
) -> Callable[[Any], None] | None:
    """An ``on_task_done`` hook that records each task's node duration (seconds since ``started``, a
    ``time.perf_counter()``: the step's tasks start together) and calls ``then``; ``then`` itself while
    recording is off."""
    if _on is None:
        return then

    def done(task_writes: Any) -> None:
        _observe("graphq_node_duration_seconds", time.perf_counter() - started, workflow, task_writes.node)
        if then is not None:
            then(task_writes)

    return done


def batch_done(workflow: str, outcome: str) -> None:
    """Record one batch of a split super-step (``outcome``: ``done``, ``failed``, ``left``, ``canceled``,
    ``given_up``)."""
    _inc("graphq_batches", workflow, outcome)


def lease_lost() -> None:
    """Record a lease found taken while its step ran."""
    _inc("graphq_leases_lost")


def fenced_write_refused(kind: str) -> None:
    """Record a write the fence refused (``kind``: one of :data:`graphq.worker.step.fence.KINDS`)."""
    _inc("graphq_fenced_writes_rejected", kind)


def runs_reaped(outcome: str) -> None:
    """Record a lapsed lease the reaper acted on (``continued``, ``restarted``, ``limit``, ``canceled``,
    ``left``); ``continued`` also counts a continuation."""
    _inc("graphq_runs_reaped", outcome)
    if outcome == "continued":
        continued("reaper")


def continued(cause: str) -> None:
    """Record a continuation run queued (``cause``: ``reaper`` or ``shutdown``)."""
    _inc("graphq_continuations", cause)


def requests_expired(count: int = 1) -> None:
    """Record ``count`` runs closed because their human request expired (R13)."""
    if count > 0:
        _inc("graphq_request_expirations", amount=count)


def schedule_fired(schedule_outcome: str, lag_s: float) -> None:
    """Record a schedule fire (``started``, ``skipped-overlap``, ``missed``, ``caught-up``, ``buffered``)
    ``lag_s`` seconds after its fire time."""
    _inc("graphq_schedule_fires", schedule_outcome)
    _observe("graphq_schedule_fire_lag_seconds", max(0.0, lag_s))


def _redis_retried() -> None:
    _inc("graphq_redis_retries")


# --- cluster state, read from Redis at scrape time ---------------------------------------------------


class RedisCollector(Collector):
    """The cluster's gauges, read at scrape time: runs running and queued and the oldest wait by tenant
    (the admission counts, as ``graphq tenants`` reads them; one ``tenant="*"`` series each once there are
    ``tenant_cap`` tenants or more) and each workflow's queue depth (RQ queue lengths, one pipeline).

    Args:
        kv: redis-py client.
        queues: workflow → RQ queue key (``rq:queue:<name>``).
        tenant_cap: tenants shown one by one below this many.
        base: ``GRAPHQ_QUEUE``: the queues of these workflows' pinned runs (:mod:`graphq.worker.pinned`)
            count in their depth, and those no live worker listens on in
            ``graphq_runs_waiting_for_version``; None: neither.
    """

    def __init__(self, kv: Any, queues: dict[str, str], tenant_cap: int, base: str | None = None) -> None:
        self.kv = kv
        self.queues = queues
        self.tenant_cap = tenant_cap
        self.base = base

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        families = {n: GaugeMetricFamily(n, doc, labels=list(lab)) for n, (doc, lab) in _GAUGES.items()}
        try:
            self._tenants(families)
            self._queues(families["graphq_queue_depth"], families["graphq_runs_waiting_for_version"])
        except Exception:  # Redis away: the scrape still answers (with what it has; /healthz says why)
            pass
        yield from families.values()

    def _tenants(self, families: dict[str, GaugeMetricFamily]) -> None:
        rows = tenant_rows(self.kv, server_ms(self.kv))
        running, queued = families["graphq_runs_running"], families["graphq_runs_queued"]
        oldest = families["graphq_admission_oldest_wait_seconds"]
        if len(rows) >= self.tenant_cap:
            running.add_metric([ALL_TENANTS], sum(r.running for r in rows))
            queued.add_metric([ALL_TENANTS], sum(r.queued for r in rows))
            waits = [r.oldest_wait_s for r in rows if r.oldest_wait_s is not None]
            oldest.add_metric([ALL_TENANTS], max(waits, default=0.0))
            return
        for row in rows:
            running.add_metric([row.tenant], row.running)
            queued.add_metric([row.tenant], row.queued)
            oldest.add_metric([row.tenant], row.oldest_wait_s or 0.0)

    def _queues(self, depth: GaugeMetricFamily, waiting: GaugeMetricFamily) -> None:
        lengths = dict(zip(self.queues, waiting_jobs(self.kv, list(self.queues.values())), strict=True))
        pinned = version_queues(self.kv, self.base) if self.base is not None else []
        for queue in (q for q in pinned if q.workflow in lengths):
            lengths[queue.workflow] += queue.waiting
            if not queue.served and queue.waiting:
                waiting.add_metric([queue.workflow, queue.version[:SHORT]], queue.waiting)
        for workflow, length in lengths.items():
            depth.add_metric([workflow], length)


# --- the HTTP endpoint ----------------------------------------------------------------------------------


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log."""


class _Own(Collector):
    """This process's metrics (single-process mode)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        yield from self.registry.collect()


def _registry(extra: Iterable[Collector]) -> CollectorRegistry:
    """What ``/metrics`` shows: every process's files under the multiprocess directory (this one's
    included), else this process's metrics; then ``extra``. Enables recording here."""
    own = enable()
    registry = CollectorRegistry(auto_describe=False)
    directory = os.environ.get(MULTIPROC_ENV)
    if directory:
        multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    else:
        registry.register(_Own(own))
    for collector in extra:
        registry.register(collector)
    return registry


def start_multiprocess() -> str:
    """Give this process and the processes it starts from now on prometheus-client's multiprocess mode,
    in a new private temporary directory (returned; remove it with :func:`stop_multiprocess`), and enable
    recording. Directories left by killed processes (``graphq-metrics-<pid>-*`` whose pid is gone) are
    removed first."""
    for left in Path(tempfile.gettempdir()).glob("graphq-metrics-*-*"):
        pid = left.name.split("-")[2]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(left, ignore_errors=True)
    directory = tempfile.mkdtemp(prefix=f"graphq-metrics-{os.getpid()}-")
    os.environ[MULTIPROC_ENV] = directory
    enable()
    return directory


def process_dead(pid: int) -> None:
    """A worker process ended: drop its live-gauge files (its counters and histograms stay counted)."""
    directory = os.environ.get(MULTIPROC_ENV)
    if directory:
        multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]


def stop_multiprocess(directory: str) -> None:
    """Stop recording and remove ``directory`` (the supervisor's, at exit)."""
    disable()
    if os.environ.get(MULTIPROC_ENV) == directory:
        del os.environ[MULTIPROC_ENV]
    shutil.rmtree(directory, ignore_errors=True)


def cluster_collector(kv: Any, settings: Settings, workflows: Iterable[str]) -> RedisCollector:
    """The :class:`RedisCollector` of these workflows' step queues (``rq:queue:<GRAPHQ_QUEUE>:<workflow>``,
    and ``...@<version>`` of their pinned runs) and the admission counts: what the worker's and the
    scheduler's ``/metrics`` export, so that queue depth and runs running stay visible with no worker pod
    (the dashboard takes the max across pods)."""
    queues = {w: Queue.redis_queue_namespace_prefix + queue_name(settings.queue, w) for w in workflows}
    return RedisCollector(kv, queues, settings.metrics_tenant_label_cap, settings.queue)


def serve(
    port: int,
    ready: Callable[[], bool],
    live: Callable[[], bool],
    *,
    collectors: Iterable[Collector] = (),
    host: str = "",
) -> ThreadingWSGIServer:
    """Serve ``/metrics``, ``/healthz`` (200 while ``live()``, else 503) and ``/readyz`` (200 while
    ``live()`` and ``ready()``) on ``port`` (0: a free one, ``server.server_port``), from a daemon thread;
    recording is enabled. Stop with ``server.shutdown()``.

    Raises:
        ConfigError: the port cannot be bound: ``--metrics-port P: cannot listen there (Address already in
            use)`` (``graphq worker`` and ``graphq scheduler`` exit 2 with it).
    """
    metrics_app = make_wsgi_app(_registry(collectors))

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        path = environ.get("PATH_INFO", "")
        if path in ("/healthz", "/readyz"):
            ok = _safe(live) and (path == "/healthz" or _safe(ready))
            start_response("200 OK" if ok else "503 Service Unavailable", [("Content-Type", "text/plain")])
            return [b"ok\n" if ok else b"unavailable\n"]
        if path != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"see /metrics, /healthz, /readyz\n"]
        result: list[bytes] = metrics_app(environ, start_response)
        return result

    try:
        server = make_server(host, port, app, ThreadingWSGIServer, handler_class=_Quiet)
    except OSError as exc:
        raise ConfigError(f"--metrics-port {port}: cannot listen there ({exc.strerror})") from exc
    threading.Thread(target=server.serve_forever, name="graphq-metrics", daemon=True).start()
    return server


def _safe(check: Callable[[], bool]) -> bool:
    try:
        return bool(check())
    except Exception:
        return False


def webhook_delivery(outcome: str) -> None:
    """Record one try of a webhook delivery by its outcome: ``delivered``, ``retried`` (failed, tried again
    later) or ``dead`` (failed and given up)."""
    _inc("graphq_webhook_deliveries", outcome)
