"""The checkpoint store a step job hands to the subgraphs its nodes run (G7): writes fenced by the lease.

A subgraph running inside a task checkpoints into the run's thread under its own namespace. Those writes are
the step job's too, so they go through the lease fence like every other (I1): a worker that lost its lease
(paused, cut off) cannot add subgraph checkpoints or pending writes to the thread, where the worker that took
the step over re-runs the same task, in the same namespace.
"""

from __future__ import annotations

from graphcore import keys
from graphcore.backend.connection import outlast
from graphcore.backend.lua import script
from graphcore.backend.store import RedisCheckpointStore
from graphcore.checkpoints.layout import Plan, encode_writes
from graphcore.checkpoints.model import Checkpoint
from graphcore.types import TaskWrites
from graphq.worker.step.fence import refused

__all__ = ["FencedStore"]


class FencedStore(RedisCheckpointStore):
    """A :class:`RedisCheckpointStore` on the same client and schema as ``base`` whose writes are refused
    unless the lease ``lease_key`` still holds ``token``.

    Raises (from its writes):
        LeaseLostError: the fence refused; nothing was written (logged and counted,
        :mod:`graphq.worker.step.fence`).
    """

    def __init__(
        self, base: RedisCheckpointStore, lease_key: str, token: str, run_key: str, where: tuple[str, int]
    ) -> None:
        super().__init__(base.kv, base.schema, history=base.history)
        self.lease_key, self.token, self.run_key = lease_key, token, run_key
        self.where = where
        """``(run id, step)`` of the step job, named when a write is refused."""

    def _apply(self, thread_id: str, ns: str, cp: Checkpoint, plan: Plan) -> bool:
        verdict = outlast(self.put_plan, thread_id, ns, cp, plan, (self.lease_key, self.run_key, self.token))
        if verdict == "lease":
            raise refused("subgraph", *self.where, f"a subgraph checkpoint (namespace {ns!r})")
        return verdict == "ok"

    def put_writes(self, thread_id: str, checkpoint_id: str, writes: TaskWrites, *, ns: str = "") -> None:
        """Persist one subgraph task's writes, behind the fence."""
        key = keys.pending_writes(thread_id, ns, checkpoint_id)
        args = [self.token, "subgraph", 1, writes.task_id, encode_writes(writes)]
        script_keys = [self.lease_key, self.run_key, keys.thread_keys(thread_id), key]
        if not outlast(script(self.kv, "fenced_hset"), keys=script_keys, args=args):
            raise refused("subgraph", *self.where, f"a subgraph task's pending writes (namespace {ns!r})")
