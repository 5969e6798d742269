"""The reaper's Redis side (R18, R14, R10): the lapsed leases, and the one script that acts on each.

The loop that drives it (:mod:`graphq.worker.housekeeping.reaper`) is a housekeeping loop
(:mod:`graphq.worker.housekeeping.loops`); one
instance at a time acts, through the loop's owner-token lock (:class:`graphcore.backend.locks.OwnerLock` on
:func:`graphcore.keys.reaper_lock`). Lapsed leases are read from the lease index (a sorted set of deadlines
kept by the claim, the renewals, the release and the commit), never by a SCAN. :func:`reap` acts on one of
them with ``reap_run.lua``, which checks again that the lease is gone and the run still interrupted, so that
several reapers racing on one lease produce one action.

Work a script cannot do — an RQ enqueue, cleaning RQ's registries, a WATCH-based thread hand-over — is
staged in the recovery set by the script and done right after by the loop; a crash in between leaves the
entry for the next pass (see :func:`recovery_entries`).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from graphcore import keys
from graphcore.backend.events import encode_event
from graphcore.backend.lua import script
from graphcore.backend.runs import CANCEL_ERROR, RunError, now_iso
from graphcore.checkpoints.layout import decode_record

__all__ = [
    "Lapsed",
    "ReapOutcome",
    "due_members",
    "lapsed_leases",
    "reap",
    "recovery_entries",
    "server_ms",
    "stale_busy_threads",
    "unclaimed_steps",
    "worker_lost_error",
]

LIMIT_SETTING = "GRAPHQ_MAX_RESUME_ATTEMPTS"


def server_ms(kv: Any) -> int:
    """Redis's clock, milliseconds since the epoch (the clock of every deadline in the index)."""
    seconds, micros = kv.time()
    return int(seconds) * 1000 + int(micros) // 1000


def iso_ms(ms: float) -> str:
    """An epoch time in milliseconds as ISO-8601 UTC."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Lapsed:
    """A lease whose deadline passed: the run's thread and id, and the deadline (ms, Redis's clock)."""

    thread_id: str
    run_id: str
    deadline_ms: int


def due_members(kv: Any, index: str, now_ms: int, limit: int) -> list[tuple[str, str, int]]:
    """At most ``limit`` members of ``index`` (a sorted set of ``thread:run`` members scored by a deadline in
    ms: :func:`graphcore.keys.lease_member`) due at or before ``now_ms``, earliest first, as (thread, run,
    deadline ms); one ZRANGEBYSCORE ... LIMIT."""
    rows = kv.zrangebyscore(index, "-inf", now_ms, start=0, num=limit, withscores=True)
    found = []
    for member, score in rows:
        thread, run_id = keys.parse_member(member.decode() if isinstance(member, bytes) else str(member))
        found.append((thread, run_id, int(score)))
    return found


def lapsed_leases(kv: Any, now_ms: int, limit: int = 100) -> list[Lapsed]:
    """Leases in the index whose deadline is at or before ``now_ms``, earliest first."""
    return [Lapsed(*entry) for entry in due_members(kv, keys.lease_index(), now_ms, limit)]


def stale_busy_threads(kv: Any, before_ms: int, limit: int = 100) -> list[str]:
    """Threads noted busy before ``before_ms`` (and not looked at since), oldest first."""
    rows = kv.zrangebyscore(keys.busy_threads(), "-inf", before_ms, start=0, num=limit)
    return [r.decode() if isinstance(r, bytes) else str(r) for r in rows]


def unclaimed_steps(kv: Any, before_ms: int, limit: int = 100) -> list[tuple[str, str, str, int]]:
    """Step jobs enqueued before ``before_ms`` and still not claimed: ``(member, thread, run id, step)``,
    oldest first (most are simply waiting in their queue; the reaper checks)."""
    rows = kv.zrangebyscore(keys.steps_index(), "-inf", before_ms, start=0, num=limit)
    found = []
    for raw in rows:
        member = raw.decode() if isinstance(raw, bytes) else str(raw)
        thread, run_id, step = member.split(":")
        found.append((member, thread, run_id, int(step)))
    return found


@dataclass(frozen=True)
class ReapOutcome:
    """What :func:`reap` did: ``verdict`` as returned by ``reap_run.lua`` and the continuation's id."""

    verdict: str
    detail: str = ""

    def describe(self) -> str:
        """The outcome for a log line, e.g. ``continued by run 3f…`` or ``not continued: the chain reached
        GRAPHQ_MAX_RESUME_ATTEMPTS``."""
        texts = {
            "continued": f"continued by run {self.detail}",
            "restarted": "started again from its input (GRAPHQ_RESUME_INTERRUPTED_RUNS off)",
            "limit": "not continued: the chain reached GRAPHQ_MAX_RESUME_ATTEMPTS",
            "canceled": "not continued: its cancel was requested",
            "left": f"left alone: the run is {self.detail}",
            "held": "left alone: its lease is held again",
        }
        return texts.get(self.verdict, f"{self.verdict} {self.detail}".strip())


def worker_lost_error(worker: str, step: int, deadline_ms: float) -> RunError:
    """The error that closes an interrupted run: which worker held it, the thread step it was running (as
    ``graphq state --history`` numbers them), and when its lease lapsed."""
    who = f"worker {worker}" if worker else "its worker"
    return RunError(
        type="WorkerLost",
        message=f"{who} stopped renewing its lease on step {step}; the lease lapsed at {iso_ms(deadline_ms)}",
        step=step,
    )


def _event_step(kv: Any, thread: str, head: str | None, fallback: int) -> int:
    """The thread's number of the step the run was in (its head checkpoint's step + 1)."""
    if not head:
        return fallback
    try:
        raw = kv.hget(keys.checkpoints(thread), head)
        return fallback if raw is None else int(decode_record(raw).fields["step"]) + 1
    except Exception:  # the record cannot be read here: the run's own count still places the event
        return fallback


def _start_config(kv: Any, thread: str, head: str | None, run_id: str, config: dict[str, Any]) -> str:
    """The config of a run started again from its beginning, pinned to where it first started: the
    checkpoint it continued (``checkpoint_id``), or a fresh start (``resume_if_exists`` off) when it began
    the thread, or when the checkpoint it started from is gone (``GRAPHQ_ENABLE_CHECKPOINTING=false`` keeps
    only the working state: the run starts again from its input on an empty state, R5). '' leaves the config
    as it is (the run committed nothing, or it was a fork already)."""
    if not head or not config.get("resume_if_exists", True) or config.get("checkpoint_id"):
        return ""
    cid: str | None = head
    while cid:  # walk back over the checkpoints this run wrote, to the one it started from
        raw = kv.hget(keys.checkpoints(thread), cid)
        if raw is None:  # dropped (no history kept): what the run started from is gone
            break
        fields = decode_record(raw).fields
        if fields.get("metadata", {}).get("run_id") != run_id:
            return json.dumps({**config, "checkpoint_id": cid})
        cid = fields.get("parent_id")
    return json.dumps({**config, "resume_if_exists": False})


def reap(
    kv: Any,
    lapsed: Lapsed,
    *,
    resume: bool,
    max_attempts: int,
    closing: RunError | None = None,
    status: str = "failed",
) -> ReapOutcome:
    """Act on one lapsed lease with ``reap_run.lua`` (see its header): cancel, fail at the chain's limit,
    continue (``resume``) or start again. Safe to call from several reapers at once: one acts, the others
    get ``gone``.

    ``closing`` and ``status``: the error and status the interrupted run is closed with instead of
    ``WorkerLost`` / Failed (a step its worker gave up at a shutdown, :mod:`graphq.worker.step.handover`:
    Canceled)."""
    thread, run_id = lapsed.thread_id, lapsed.run_id
    raw = kv.hmget(keys.run(thread, run_id), ["worker", "step", "head", "attempt", "config"])
    worker, step_raw, head_raw, attempt_raw, config_raw = (None if v is None else v.decode() for v in raw)
    step = int(step_raw or 0)
    head = head_raw or None
    attempt = int(attempt_raw or 1)
    config = json.loads(config_raw) if config_raw else {}
    event_step = _event_step(kv, thread, head, step)
    lost = closing or worker_lost_error(worker or "", event_step, lapsed.deadline_ms)
    limit = lost.model_copy(
        update={
            "message": f"{lost.message}; not continued: the chain reached {LIMIT_SETTING}={max_attempts} "
            f"(attempt {attempt})"
        }
    )
    new_id = uuid.uuid4().hex
    failed = {"status": status, "error": f"{lost.type}: {lost.message}"}
    restart_config = "" if resume else _start_config(kv, thread, head, run_id, config)

    def data(payload: dict[str, Any]) -> str | bytes:
        return encode_event("status", event_step, payload)["data"]

    args: list[str | bytes | int] = [
        keys.lease_member(thread, run_id),
        lapsed.deadline_ms,
        "resume" if resume else "restart",
        max_attempts,
        new_id,
        now_iso(),
        lost.model_dump_json(),
        limit.model_dump_json(),
        data(failed | {"continued_by_run_id": new_id}),
        data({"status": status, "error": f"{limit.type}: {limit.message}"}),
        event_step,
        thread,
        run_id,
        data({"status": "queued", "restarted": f"{lost.type}: {lost.message}"}),
        CANCEL_ERROR.model_dump_json(),
        data({"status": "canceled"}),
        restart_config,
        status,
        keys.lease_member(thread, new_id),
        keys.recovery_member("handover", thread, run_id),
        keys.recovery_member("enqueue", thread, run_id),
        keys.recovery_member("enqueue", thread, new_id),
    ]
    script_keys = [
        keys.lease_index(),
        keys.lease(thread, run_id),
        keys.run(thread, run_id),
        keys.run_events(thread, run_id),
        keys.thread_active(thread),
        keys.run(thread, new_id),
        keys.runs_index(),
        keys.run_threads(),
        keys.thread_runs(thread),
        keys.recovery(),
        keys.admission("holders"),
        keys.thread_keys(thread),
        keys.retention(),
        keys.webhooks(),
        keys.webhooks_due(),
    ]
    verdict, detail = script(kv, "reap_run")(keys=script_keys, args=args)
    return ReapOutcome(verdict.decode(), detail.decode())


def recovery_entries(kv: Any) -> list[tuple[str, str, str, list[str]]]:
    """The staged recovery work, ``(member, kind, thread, [run id, ...])``: abandoned jobs first (a
    restarted run's new job may have the abandoned one's id), then enqueues, then hand-overs."""
    order = {"abandoned": 0, "enqueue": 1, "handover": 2}
    entries = []
    for raw in kv.zrange(keys.recovery(), 0, -1):
        member = raw.decode() if isinstance(raw, bytes) else str(raw)
        kind, thread, *rest = member.split(":")
        entries.append((member, kind, thread, rest))
    return sorted(entries, key=lambda e: order.get(e[1], 3))
