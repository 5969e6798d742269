"""A split step's record in Redis: a wide super-step's tasks in batches that any worker of the pool may take.

A super-step with at least ``GRAPHQ_SHARD_MIN_TASKS`` tasks still to run is split
(:mod:`graphq.worker.step.splitting`): its tasks, in task order, are cut into batches of
``GRAPHQ_SHARD_BATCH_TASKS`` (batch ``i`` holds the tasks at positions ``i * size`` up to ``(i + 1) * size``).
The step's owner (the step job holding the step's lease) and helper jobs on the workflow's queue
(:mod:`graphq.worker.step.batch`) each claim a batch, run its tasks, persist each finished task's writes as
pending writes of the step (fenced by the batch's lease) and mark it done. The owner commits the step once
every batch is done.

The record is one hash per split step, keyed by the step's head checkpoint (:func:`graphcore.keys.split`),
so a continuation of a run whose owner died joins the same split: the batches done stay done, the batches
held by live workers go on. Its fields are described in ``_batch.lua``.

A batch's lease is two fields of the record (its token, and until when it holds, on Redis's clock); the
token is ``<hex>#<batch>``, which the fence of every fenced script recognises (``_fence.lua``), so a batch's
pending writes, events and subgraph checkpoints go through the same scripts as a step's. Closing the split
deletes the record: every batch's lease goes with it, and a batch still running is refused its writes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from graphcore import keys
from graphcore.backend.connection import outlast
from graphcore.backend.lua import script
from graphcore.backend.runs import RunError
from graphcore.checkpoints import serde
from graphcore.checkpoints.layout import decode_writes, encode_writes
from graphcore.errors import LeaseLostError
from graphcore.types import Stop, TaskWrites
from graphq.worker.step.lease import Lease, LeaseListener

__all__ = ["BatchFailure", "BatchLease", "Claim", "Split", "renew_batch"]


@dataclass(frozen=True)
class Claim:
    """A batch claimed: its number, the run that owns the split now, how many batches were never handed out
    after this one, and how often the batch was claimed (1 the first time; more after its lease lapsed)."""

    batch: int
    run_id: str
    left: int
    claims: int = 1


@dataclass(frozen=True)
class BatchFailure:
    """A task failure that ended a batch: the task's position in the step, and the run's error record."""

    index: int
    error: RunError

    def to_json(self) -> str:
        """The failure as stored in the record (``f:<batch>``)."""
        return json.dumps({"index": self.index, "error": self.error.model_dump(mode="json")})

    @classmethod
    def from_json(cls, raw: bytes | str) -> BatchFailure:
        """A failure as :meth:`to_json` stored it."""
        data = json.loads(raw)
        return cls(int(data["index"]), RunError.model_validate(data["error"]))


class Split:
    """The record of the split super-step that follows checkpoint ``cp_id`` of ``thread_id``.

    Args:
        kv: redis-py client.
        tasks: the step's tasks (all of them, finished or not).
        size: tasks per batch (at least 1).
    """

    def __init__(self, kv: Any, thread_id: str, cp_id: str, tasks: int, size: int) -> None:
        self.kv, self.thread_id, self.cp_id = kv, thread_id, cp_id
        self.tasks, self.size = tasks, size
        self.key = keys.split(thread_id, cp_id)
        self.done_key = keys.split_done(thread_id, cp_id)

    @classmethod
    def read(cls, kv: Any, thread_id: str, cp_id: str) -> Split | None:
        """The split of the step after ``cp_id`` as its record says, or None when it has none (closed)."""
        tasks, size = kv.hmget(keys.split(thread_id, cp_id), "tasks", "size")
        if tasks is None or size is None:
            return None
        return cls(kv, thread_id, cp_id, int(tasks), int(size))

    @property
    def batches(self) -> int:
        """How many batches the step's tasks make."""
        return -(-self.tasks // self.size)

    def positions(self, batch: int) -> range:
        """The positions (in the step's task order) of the tasks of ``batch``."""
        return range(batch * self.size, min((batch + 1) * self.size, self.tasks))

    def open(self, lease: Lease, run_id: str, step: int, ttl_ms: int, finished: int) -> bool:
        """Create the record, or join the one an earlier owner of this step left; fenced by the step's
        ``lease``. The record expires after ``ttl_ms`` (the step's job timeout) if never closed, or with its
        thread under a thread TTL (it joins the thread's key set, K3); ``finished``: the step's tasks finished
        already (its first ``progress`` event says so). Returns True when it joined an existing split.

        Raises:
            LeaseLostError: the step's lease is no longer held (nothing written).
        """
        argv = [lease.token, run_id, step, self.tasks, self.size, self.batches, ttl_ms, finished]
        script_keys = [lease.key, self.key, self.done_key, keys.thread_keys(self.thread_id)]
        reply = outlast(script(self.kv, "split_open"), keys=script_keys, args=argv)
        if reply == 0:
            raise LeaseLostError(f"run {run_id}: the split of its step was not opened: the lease is not held")
        return bool(reply == 2)

    def claim(self, token: str, ttl_ms: int) -> Claim | None:
        """Claim a batch with ``token`` (hex, no ``#``): the next never handed out, else one whose lease
        lapsed; None when none is free or the split is closed. The batch's token is ``token#<batch>``."""
        batch, run_id, left, claims = outlast(
            script(self.kv, "claim_batch"), keys=[self.key], args=[token, ttl_ms]
        )
        if batch < 0:
            return None
        run = run_id.decode() if isinstance(run_id, bytes) else str(run_id)
        return Claim(int(batch), run, int(left), int(claims))

    def finish(self, token: str, failure: BatchFailure | None, stopped: Sequence[TaskWrites] = ()) -> bool:
        """Mark the batch of ``token`` done (with the failure that ends its run, if any, and its tasks that
        stopped at a subgraph's breakpoint: kept nowhere else, as their writes are not), give its lease back
        and wake the owner. Returns False when the batch was not the caller's any more (nothing written)."""
        args = [token, failure.to_json() if failure is not None else "", _encode_stopped(stopped)]
        return bool(outlast(script(self.kv, "finish_batch"), keys=[self.key, self.done_key], args=args) >= 0)

    def progress(self, token: str, step: int) -> int:
        """Announce the step's tasks done so far (those whose writes are persisted, whichever batch or
        attempt persisted them), fenced by the batch's ``token``: a ``progress`` event ``{"done", "total"}``
        of thread step ``step``, in the stream of the run that owns the split now, when more are done than
        the last event said (none while that run has ended). Returns the tasks done; -1 when refused or the
        split is closed."""
        pending = keys.pending_writes(self.thread_id, "", self.cp_id)
        done = -2
        for _ in range(2):  # again when a continuation took the split over between the read and the call
            run_id = self.kv.hget(self.key, "run")
            if run_id is None:
                return -1
            run_id = run_id.decode()
            run_keys = [keys.run(self.thread_id, run_id), keys.run_events(self.thread_id, run_id)]
            argv = [token, step, run_id]
            done = int(
                outlast(script(self.kv, "split_progress"), keys=[self.key, *run_keys, pending], args=argv)
            )
            if done != -2:
                break
        return done

    def helpers(self, change: int, owner: str = "") -> tuple[int, int]:
        """Count ``change`` more helper jobs queued (``+n`` as they are enqueued, ``-1`` as one starts; 0 only
        looks) and return ``(helpers queued, batches held by others than the owner's token`` ``owner``, 0
        without one``)``; ``(-1, 0)`` when the split is closed."""
        queued, held = outlast(script(self.kv, "split_helpers"), keys=[self.key], args=[change, owner])
        return int(queued), int(held)

    def close(self, lease: Lease) -> bool:
        """Delete the record (every batch's lease with it), fenced by the step's ``lease``. Returns False when
        the lease is not held."""
        reply = outlast(
            script(self.kv, "split_close"), keys=[lease.key, self.key, self.done_key], args=[lease.token]
        )
        return bool(reply)

    def state(self) -> tuple[int, list[BatchFailure], dict[str, TaskWrites]]:
        """``(batches done, their failures in task order, task id → the record of each task stopped at a
        subgraph's breakpoint)``; ``(-1, [], {})`` when the split is closed."""
        raw = self.kv.hgetall(self.key)
        if not raw:
            return -1, [], {}
        failures = [BatchFailure.from_json(v) for k, v in raw.items() if k.startswith(b"f:")]
        stopped = [tw for k, v in raw.items() if k.startswith(b"s:") for tw in _decode_stopped(v)]
        return int(raw[b"done"]), sorted(failures, key=lambda f: f.index), {tw.task_id: tw for tw in stopped}

    def wait(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` seconds for a batch to end (any batch, since the last call)."""
        self.kv.blpop([self.done_key], timeout=timeout_s)


def _encode_stopped(stopped: Sequence[TaskWrites]) -> bytes:
    """A batch's tasks stopped at a subgraph's breakpoint, as stored in the record (``s:<batch>``; ``b""``
    for none): each one's pending-writes form (its open requests, the answers it consumed) and its stop."""
    if not stopped:
        return b""
    records = [[encode_writes(tw), tw.stopped.when, list(tw.stopped.nodes)] for tw in stopped if tw.stopped]
    return serde.dumps(records, path="stopped")


def _decode_stopped(raw: bytes) -> list[TaskWrites]:
    """The tasks :func:`_encode_stopped` stored."""
    return [
        replace(decode_writes(tw), stopped=Stop(when, tuple(nodes))) for tw, when, nodes in serde.loads(raw)
    ]


class BatchLease(Lease):
    """The lease of one batch of a split step: fields of the split's record (``_fence.lua``), renewed like a
    step's lease by the process's keeper and by the supervising process of ``graphq worker`` (told through
    ``listener``; it also lapses the lease at once when the process dies) with ``renew_batch.lua``, which
    also reads the run's cancel request. It is not in the lease index: a lapsed batch is claimed again
    (:meth:`Split.claim`); the reaper has nothing to do with it.

    Args:
        split: the split's record.
        claim: the batch claimed.
        token: the claimer's token (hex).
        listener: the supervising process's channel (None: no supervisor).
    """

    of_step = False

    def __init__(
        self,
        kv: Any,
        thread_id: str,
        split: Split,
        claim: Claim,
        token: str,
        ttl_s: float,
        heartbeat_s: float,
        listener: LeaseListener | None = None,
    ) -> None:
        super().__init__(kv, thread_id, claim.run_id, ttl_s, heartbeat_s, listener)
        self.key = split.key
        self.member = ""
        self.token = f"{token}#{claim.batch}"
        self.batch = claim.batch

    def renew(self, now: bool) -> tuple[bool, bytes]:
        """One keeper tick (:func:`renew_batch`)."""
        return renew_batch(self.kv, self.key, self.run_key, self.token, self.ttl_ms, now)


def renew_batch(kv: Any, key: str, run_key: str, token: str, ttl_ms: int, now: bool) -> tuple[bool, bytes]:
    """One ``renew_batch.lua`` call: extend the lease of batch ``token`` (``<hex>#<batch>``) of the split
    ``key`` by ``ttl_ms`` from now when ``now`` (0: it lapses at once), else only look. Returns ``(held, the
    run's cancel field)``, as :func:`graphq.worker.step.lease.renew`.

    Raises:
        redis.RedisError: the call failed.
    """
    held, cancel = script(kv, "renew_batch")(keys=[key, run_key], args=[token, ttl_ms, int(now)])
    return bool(held), cancel
