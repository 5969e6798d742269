"""The worker registry (R18, O2): every worker process keeps a record with an expiring heartbeat.

A record holds the worker's id, host, pid, queues, start time, the step it holds (run and step, as of its
last heartbeat) and its last heartbeat. It expires ``GRAPHQ_LEASE_TTL_S`` after the last heartbeat, and
the worker index scores each id by that expiry (Redis's clock), so a killed worker drops out of
:func:`live_workers` within the lease TTL, and the reaper finds it with ZRANGEBYSCORE to clean RQ's own
worker registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphcore import keys
from graphcore.backend.lua import script

__all__ = ["WorkerRecord", "dead_workers", "drop_worker", "heartbeat", "live_worker_ids", "live_workers"]


@dataclass(frozen=True)
class WorkerRecord:
    """One live worker as its last heartbeat described it."""

    id: str
    host: str
    pid: int
    queues: list[str]
    started_at: str
    run_id: str | None
    thread_id: str | None
    step: int | None
    """The step held, counted in its run (the steps the run had done when it was claimed)."""
    thread_step: int | None
    """The same step numbered as the thread's checkpoints (``graphq runs show``); None until the worker has
    read the step's checkpoint, and for a worker older than this field."""
    heartbeat_ms: int

    @classmethod
    def from_hash(cls, raw: dict[bytes, bytes]) -> WorkerRecord:
        """Parse a worker hash as read from Redis."""
        f = {k.decode(): v.decode() for k, v in raw.items()}
        return cls(
            id=f["id"],
            host=f.get("host", ""),
            pid=int(f.get("pid") or 0),
            queues=[q for q in f.get("queues", "").split(",") if q],
            started_at=f.get("started_at", ""),
            run_id=f.get("run_id") or None,
            thread_id=f.get("thread_id") or None,
            step=int(f["step"]) if f.get("step") else None,
            thread_step=int(f["thread_step"]) if f.get("thread_step") else None,
            heartbeat_ms=int(f.get("heartbeat_ms") or 0),
        )


def heartbeat(kv: Any, worker_id: str, ttl_s: float, fields: dict[str, str]) -> int:
    """Write the worker's record and renew its expiry (one round trip); returns the heartbeat time (ms)."""
    pairs = [x for item in fields.items() for x in item]
    args = [worker_id, max(1, int(ttl_s * 1000)), "id", worker_id, *pairs]
    return int(script(kv, "worker_heartbeat")(keys=[keys.worker(worker_id), keys.workers()], args=args))


def live_worker_ids(kv: Any, now_ms: int) -> list[str]:
    """Ids of the workers whose heartbeat has not expired at ``now_ms`` (Redis's clock); one read."""
    return [w.decode() for w in kv.zrangebyscore(keys.workers(), f"({now_ms}", "+inf")]


def live_workers(kv: Any, now_ms: int) -> list[WorkerRecord]:
    """Workers whose heartbeat has not expired at ``now_ms`` (Redis's clock), by id."""
    ids = live_worker_ids(kv, now_ms)
    pipe = kv.pipeline(transaction=False)
    for wid in ids:
        pipe.hgetall(keys.worker(wid))
    records = [WorkerRecord.from_hash(raw) for raw in pipe.execute() if raw] if ids else []
    return sorted(records, key=lambda r: r.id)


def dead_workers(kv: Any, now_ms: int, limit: int = 100) -> list[str]:
    """Ids of workers whose heartbeat expired at or before ``now_ms`` and that are still in the index."""
    return [w.decode() for w in kv.zrangebyscore(keys.workers(), "-inf", now_ms, start=0, num=limit)]


def drop_worker(kv: Any, worker_id: str, pipe: Any = None) -> None:
    """Remove a worker's record and index entry (a clean exit, or the reaper after it expired)."""
    target = pipe if pipe is not None else kv
    target.delete(keys.worker(worker_id))
    target.zrem(keys.workers(), worker_id)
