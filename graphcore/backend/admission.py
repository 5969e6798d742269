"""Admission and fair leasing across tenants (R8, R15): the Redis side of ``admission.lua``.

Every place a run gets its first step job — a new run on an idle thread, the next run of a thread, an answer,
a reaper's continuation — asks the script for a slot (:func:`stage_admit`); every place a run stops holding
one — it ends, or waits for input — gives it back (:func:`stage_release`, :func:`release`). The script
decides alone, so ``GRAPHQ_MAX_CONCURRENT_RUNS`` and ``GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT`` (and a
workflow's own ``max_concurrent_runs`` options) hold exactly across every process. A run over a limit stays
Queued, waits in Redis without an RQ job, and is given its slot — and its step job — by the script run of a
later release, fairly across tenants (stride scheduling, ``GRAPHQ_TENANT_WEIGHTS``), oldest first within a
tenant. The later steps of a run that holds its slot are enqueued by its commit as before: no admission work,
no round trip.

Both calls ride in the caller's MULTI (no round trip of their own), as an EVAL with the script's text
(about 12 KB, once when a run starts and once when it ends), so that they run inside the transaction even
when Redis has lost its script cache (a restart). Limits: the lowest of the caller's settings and those the
live workers published (:mod:`graphcore.backend.published`), so that a command run from a shell without the
variables keeps the cluster's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import msgpack

from graphcore import keys
from graphcore.backend import published
from graphcore.backend.events import encode_event
from graphcore.backend.lua import script, stage
from graphcore.backend.runs import RunError, RunRecord, RunStore, now_iso, run_timeout_error, run_timeout_s
from graphcore.errors import RunNotFoundError
from graphcore.settings import Settings, tenant_weights

__all__ = [
    "AdmissionQueue",
    "PreparedJob",
    "TenantRow",
    "admissions",
    "effective_limits",
    "enable_debug",
    "execute",
    "expire_waiting",
    "fill",
    "highest_counts",
    "release",
    "stage_admit",
    "stage_release",
    "tenants",
    "timeout_error",
    "waiting_deadline_ms",
]

SEP = "\0"


@dataclass(frozen=True)
class PreparedJob:
    """What RQ's enqueue of a step job writes, built with RQ's own ``Job`` and ``Queue`` (by the worker
    package, :meth:`graphq.worker.queue.RQStepQueue.prepare`), for the scripts that write it: admission, when
    it admits a run, and a step's commit (``commit_step.lua``), for the next step.

    Attributes:
        job_key: the job's hash (``rq:job:<id>``).
        queue_key: the RQ queue list the job id is pushed on.
        queues_key: RQ's set of queues.
        job_id: the job's id (deterministic per run and step, R2).
        step_member: the job's member of the index of unclaimed step jobs
            (:func:`graphcore.keys.step_member`).
        fields: the job hash, field → value, as ``Job.save`` writes it.
    """

    job_key: str
    queue_key: str
    queues_key: str
    job_id: str
    step_member: str
    fields: Mapping[str, Any]


class AdmissionQueue(Protocol):
    """What admission needs of the step queue: its settings, an RQ timestamp and a prepared job."""

    settings: Settings

    def prepare(self, run: RunRecord) -> PreparedJob:
        """The job of ``run``'s step ``run.step`` as RQ's enqueue would write it."""

    def timestamp(self) -> str:
        """Now, as RQ writes ``enqueued_at``."""


def member(thread_id: str, run_id: str) -> str:
    """A run's member in the admission keys (``T:RUN``, like the lease index's)."""
    return keys.lease_member(thread_id, run_id)


_FIXED = [
    *(keys.admission(p) for p in keys.ADMISSION_PARTS[:10]),  # KEYS[1..10]: waiting ... limits
    keys.steps_index(),  # KEYS[11]
    *(keys.admission(p) for p in keys.ADMISSION_PARTS[10:]),  # KEYS[12..14]: debug, stats, log
    keys.workers(),  # KEYS[15]: whose published limits count (the live workers')
]


def _text(value: int | None) -> str:
    return "" if value is None else str(int(value))


def _limits(settings: Settings) -> list[str]:
    """The global and per-tenant limits and the weights, as the script takes them ('' = none)."""
    weights = ",".join(f"{t}={w}" for t, w in settings.weights().items())
    return [_text(settings.max_concurrent_runs), _text(settings.max_concurrent_runs_per_tenant), weights]


def _common(queue: AdmissionQueue, op: str) -> list[Any]:
    """ARGV[1..5]: the op, the caller's limits and weights, now in RQ's format."""
    return [op, *_limits(queue.settings), queue.timestamp()]


def deadline_ms(run: RunRecord) -> int:
    """When ``run`` passes its run timeout (R15: from its creation), ms since the epoch."""
    return int((datetime.fromisoformat(run.created_at).timestamp() + run_timeout_s(run)) * 1000)


def _call(kv: Any, script_keys: list[str], args: list[Any]) -> list[Any]:
    """Run the script now (loaded again if Redis lost it); returns ``[verdict, admitted]``."""
    reply = script(kv, "admission")(keys=script_keys, args=args)
    return [reply[0].decode() if isinstance(reply[0], bytes) else reply[0], int(reply[1])]


def execute(pipe: Any, kv: Any) -> list[Any]:
    """``pipe.execute()`` (``kv`` unused): an admission call needs nothing more since it is an EVAL; kept
    for the callers that still go through it (``graphq.worker.housekeeping.reaper``).

    Raises:
        WatchError: a watched key changed (nothing was written).
        Exception: the first error reply (as ``pipe.execute()`` raises it).
    """
    replies: list[Any] = pipe.execute()
    return replies


def stage_admit(pipe: Any, kv: Any, queue: AdmissionQueue, run: RunRecord) -> None:
    """On ``pipe`` (MULTI): ask for a slot for ``run`` and enqueue the job of its step ``run.step`` — at
    once when a slot is free (or the run holds one already: a reaper's continuation, a restart), else when
    a later release admits it. ``kv``: the pipeline's client (unused)."""
    job = queue.prepare(run)
    args = [
        *_common(queue, "admit"),
        member(run.thread_id, run.id),
        run.tenant,
        run.workflow,
        _text(run.config.get("max_concurrent_runs")),
        _text(run.config.get("max_concurrent_runs_per_tenant")),
        deadline_ms(run),
        keys.run(run.thread_id, run.id),
        job.job_key,
        job.queue_key,
        job.queues_key,
        job.job_id,
        job.step_member,
        *(x for pair in job.fields.items() for x in pair),
    ]
    stage(pipe, "admission", _FIXED, args)


def _run_keys(thread_id: str, run_id: str) -> list[str]:
    run = [keys.run(thread_id, run_id), keys.run_events(thread_id, run_id)]
    return [*_FIXED, *run, keys.webhooks(), keys.webhooks_due()]


def _release(queue: AdmissionQueue, thread_id: str, run_id: str) -> tuple[list[str], list[Any]]:
    """KEYS and ARGV of a release of ``run_id``'s slot."""
    return _run_keys(thread_id, run_id), [*_common(queue, "release"), member(thread_id, run_id)]


def stage_release(pipe: Any, kv: Any, queue: AdmissionQueue, thread_id: str, run_id: str) -> None:
    """On ``pipe`` (MULTI): ``run_id`` has ended (or waits for input): free its slot (once, however often
    this is called) or withdraw it from the waiting runs, and admit the runs that now fit. The script
    refuses while the run is Queued or Running."""
    stage(pipe, "admission", *_release(queue, thread_id, run_id))


def release(kv: Any, queue: AdmissionQueue, thread_id: str, run_id: str) -> str:
    """:func:`stage_release` in a round trip of its own (a step that pauses for input).

    Returns:
        ``freed``, ``withdrawn``, ``none`` (it held nothing) or ``busy`` (it is Queued or Running).
    """
    return str(_call(kv, *_release(queue, thread_id, run_id))[0])


def fill(kv: Any, queue: AdmissionQueue) -> int:
    """Admit waiting runs while there is room (after a limit was raised); returns how many."""
    return int(_call(kv, list(_FIXED), _common(queue, "fill"))[1])


def waiting_deadline_ms(kv: Any, run: RunRecord) -> int | None:
    """When ``run``, waiting for a slot, passes its run timeout (ms since the epoch); None when it does not
    wait for one (it holds a slot, or has none to wait for). One read."""
    score = kv.zscore(keys.admission("deadlines"), member(run.thread_id, run.id))
    return None if score is None else int(score)


def timeout_error(run: RunRecord, now_s: float) -> RunError:
    """The error of a run whose run timeout passed while it waited for a slot (R15)."""
    age = now_s - datetime.fromisoformat(run.created_at).timestamp()
    return run_timeout_error(
        run_timeout_s(run),
        f"after {age:.1f} s, queued: it waited for a slot (GRAPHQ_MAX_CONCURRENT_RUNS, "
        "GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT or its workflow's max_concurrent_runs) and never started",
    )


def expire_waiting(kv: Any, queue: AdmissionQueue, now_ms: int, limit: int = 100) -> list[tuple[str, str]]:
    """End Canceled, with the timeout error, the waiting runs whose deadline passed (R15); they never
    started. Returns their ``(thread, run id)``: the caller hands each thread over (I3)."""
    runs = RunStore(kv)
    ended = []
    for raw in kv.zrangebyscore(keys.admission("deadlines"), "-inf", now_ms, start=0, num=limit):
        thread, run_id = keys.parse_member(raw.decode())
        try:
            run = runs.get(run_id, thread)
        except RunNotFoundError:  # gone: its entry goes with this release
            release(kv, queue, thread, run_id)
            continue
        error = timeout_error(run, now_ms / 1000)
        canceled = {"status": "canceled", "error": f"RunTimeout: {error.message}"}
        event = encode_event("status", run.step, canceled)
        args = [
            *_common(queue, "expire"),
            member(thread, run_id),
            error.model_dump_json(),
            now_iso(),
            event["data"],
            run.step,
        ]
        if _call(kv, _run_keys(thread, run_id), args)[0] == "expired":
            ended.append((thread, run_id))
    return ended


@dataclass(frozen=True)
class TenantRow:
    """One tenant in ``graphq tenants``.

    Attributes:
        tenant: its name (runs without one are ``default``).
        running: its runs holding a slot.
        queued: its runs waiting for a slot.
        oldest_wait_s: how long its oldest waiting run has waited, seconds (None when none waits).
    """

    tenant: str
    running: int
    queued: int
    oldest_wait_s: float | None


def tenants(kv: Any, now_ms: int) -> list[TenantRow]:
    """Every tenant with a run holding a slot or waiting for one, by name."""
    counts = {k.decode(): int(v) for k, v in kv.hgetall(keys.admission("counts")).items()}
    running = {k[2:]: v for k, v in counts.items() if k.startswith("t" + SEP)}
    queued = {k[2:]: v for k, v in counts.items() if k.startswith("q" + SEP)}
    names = sorted(set(running) | set(queued))
    oldest = _oldest_waits(kv, [n for n in names if queued.get(n)])
    return [
        TenantRow(
            n,
            running.get(n, 0),
            queued.get(n, 0),
            None if n not in oldest else max(0.0, (now_ms - oldest[n]) / 1000),
        )
        for n in names
    ]


def _oldest_waits(kv: Any, names: Sequence[str]) -> dict[str, int]:
    """Tenant → when its oldest waiting run started waiting (ms), for tenants that have one."""
    pipe = kv.pipeline(transaction=False)
    for name in names:  # each tenant's lanes by their oldest run: the first is the tenant's oldest
        pipe.zrangebylex(keys.admission("lanes"), f"[{name}{SEP}", f"({name}\1", start=0, num=1)
    heads = {}
    for name, lane in zip(names, pipe.execute(), strict=True):
        if lane:
            _, seq, workflow = lane[0].decode().split(SEP, 2)
            heads[name] = f"{name}{SEP}{workflow}{SEP}{seq}{SEP}"
    for prefix in heads.values():
        pipe.zrangebylex(keys.admission("waiting"), f"[{prefix}", f"({prefix[:-1]}\1", start=0, num=1)
    members = {}
    for name, found in zip(heads, pipe.execute(), strict=True):
        if found:
            members[name] = found[0].decode().rsplit(SEP, 1)[1]
    if not members:
        return {}
    raw = kv.hmget(keys.admission("entries"), list(members.values()))
    since = {}
    for name, entry in zip(members, raw, strict=True):
        if entry is not None:
            since[name] = int(msgpack.unpackb(entry, raw=True)[b"since"])
    return since


def enable_debug(kv: Any, on: bool = True) -> None:
    """Make the admission script record the highest counts it saw (:func:`highest_counts`) and every
    admission (:func:`admissions`); for tests and benchmarks (it costs a few commands per admission)."""
    if on:
        kv.set(keys.admission("debug"), "1")
    else:
        kv.delete(keys.admission("debug"), keys.admission("stats"), keys.admission("log"))


def highest_counts(kv: Any) -> dict[str, int]:
    """The highest numbers of runs holding a slot the script saw, sampled inside it right after each
    admission: ``global``, ``tenant:<t>``, ``workflow:<w>``, ``workflow-tenant:<w>:<t>``."""
    names = {"g": "global", "t": "tenant", "w": "workflow", "x": "workflow-tenant"}
    found = {}
    for raw, value in kv.hgetall(keys.admission("stats")).items():
        kind, *rest = raw.decode().split(SEP)
        found[":".join([names[kind], *rest])] = int(value)
    return found


def admissions(kv: Any) -> list[tuple[str, str]]:
    """Every admission the script made since debug was enabled, in order: ``(tenant, run id)``."""
    rows = []
    for raw in kv.lrange(keys.admission("log"), 0, -1):
        tenant, who = raw.decode().split(SEP, 1)
        rows.append((tenant, keys.parse_member(who)[1]))
    return rows


def effective_limits(kv: Any, settings: Settings) -> tuple[int | None, int | None, dict[str, int]]:
    """The limits the admission script applies for a caller with ``settings``: the lowest of each of its own
    and the live workers' published ones (None = no limit), and its weights, else the published ones
    (:mod:`graphcore.backend.published`)."""
    found = published.read(kv)

    def lower(own: int | None, other: int | None) -> int | None:
        values = [v for v in (own, other) if v is not None]
        return min(values) if values else None

    own = settings.weights()
    return (
        lower(settings.max_concurrent_runs, found.max_concurrent_runs),
        lower(settings.max_concurrent_runs_per_tenant, found.max_concurrent_runs_per_tenant),
        own if own else tenant_weights(found.weights),
    )
