"""A checkpoint store over a Redis-like key-value client (redis-py's ``Redis`` or :class:`MemoryKV`).

One implementation serves both backends, so the Redis store and the in-memory store cannot drift apart;
the layout (what goes where, O(change) writes) is in :mod:`graphcore.store.layout`.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from graphcore import keys, serde
from graphcore.checkpoint import Checkpoint
from graphcore.schema import StateSchema
from graphcore.store.layout import (
    Plan,
    Record,
    decode_record,
    decode_writes_map,
    encode,
    encode_writes,
    to_checkpoint,
)
from graphcore.types import TaskWrites

__all__ = ["LRU", "KVCheckpointStore"]

_CACHE_SIZE = 128


class LRU(OrderedDict[Any, Any]):
    """A small least-recently-used map: ``put`` evicts the oldest entries beyond 128."""

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > _CACHE_SIZE:
            self.popitem(last=False)


class KVCheckpointStore:
    """:class:`~graphcore.store.base.CheckpointStore` over a Redis-like client.

    Args:
        kv: ``redis.Redis`` (bytes responses) or :class:`~graphcore.store.memory.MemoryKV`.
        schema: the state schema, if known; list values of its reducer channels are stored as logs (all
            list values are, when None).

    Two process-local caches keep per-step cost O(change): the items of append-only logs already read
    (logs are never rewritten, so a cached prefix stays valid), and recently stored or loaded checkpoints
    with their refs (so that the next put can append to their logs).
    """

    def __init__(self, kv: Any, schema: StateSchema | None = None) -> None:
        self.kv = kv
        self.schema = schema
        self._logs = LRU()
        self._recent = LRU()

    # -- writing ---------------------------------------------------------------------------------------

    def plan_put(
        self, thread_id: str, cp: Checkpoint, *, ns: str = "", parent_is_head: bool | None = None
    ) -> Plan:
        """Plan the writes that store ``cp``.

        Args:
            parent_is_head: whether ``cp``'s parent is the thread's newest checkpoint (only then may its
                append-only logs grow); None reads the thread's head to find out.

        Raises:
            SerializationError: a value is not on the allow-list; nothing has been written.
        """
        parent: Checkpoint | None = None
        parent_refs = None
        if cp.parent_id is not None and cp.parent_id in self._recent:
            parent, parent_refs = self._recent[cp.parent_id]
            if parent_is_head is None:
                parent_is_head = self._head_id(thread_id, ns) == cp.parent_id
            if not parent_is_head:
                parent_refs = None
        return encode(thread_id, ns, cp, parent, parent_refs, self.schema)

    def stage(self, pipe: Any, thread_id: str, cp: Checkpoint, plan: Plan, *, ns: str = "") -> None:
        """Queue ``plan``'s writes on ``pipe`` (a MULTI pipeline), e.g. inside a fenced commit."""
        pipe.hset(keys.checkpoints(thread_id, ns), cp.id, plan.record)
        pipe.rpush(keys.history(thread_id, ns), cp.id)
        for key, field, value in plan.hset:
            pipe.hset(key, field, value)
        for key, items in plan.rpush:
            pipe.rpush(key, *items)

    def stored(self, cp: Checkpoint, plan: Plan) -> None:
        """Record that ``cp`` was committed with ``plan`` (call after the pipeline executed)."""
        self._recent.put(cp.id, (cp, plan.refs))

    def put(self, thread_id: str, checkpoint: Checkpoint, *, ns: str = "") -> None:
        """Store ``checkpoint`` as the thread's newest (see the protocol)."""
        plan = self.plan_put(thread_id, checkpoint, ns=ns)
        pipe = self.kv.pipeline(transaction=True)
        self.stage(pipe, thread_id, checkpoint, plan, ns=ns)
        pipe.execute()
        self.stored(checkpoint, plan)

    def put_writes(self, thread_id: str, checkpoint_id: str, writes: TaskWrites, *, ns: str = "") -> None:
        """Persist one task's writes (see the protocol)."""
        self.kv.hset(keys.pending_writes(thread_id, ns, checkpoint_id), writes.task_id, encode_writes(writes))

    # -- reading ---------------------------------------------------------------------------------------

    def _head_id(self, thread_id: str, ns: str) -> str | None:
        raw = self.kv.lindex(keys.history(thread_id, ns), -1)
        return None if raw is None else raw.decode() if isinstance(raw, bytes) else str(raw)

    def get(self, thread_id: str, checkpoint_id: str | None = None, *, ns: str = "") -> Checkpoint | None:
        """The checkpoint with ``checkpoint_id``, or the newest (see the protocol)."""
        cid = checkpoint_id or self._head_id(thread_id, ns)
        if cid is None:
            return None
        if cid in self._recent:  # stored checkpoints never change: a copy of the cached one is exact
            cached: Checkpoint = self._recent[cid][0]
            return dataclasses.replace(cached, channel_values=dict(cached.channel_values))
        raw = self.kv.hget(keys.checkpoints(thread_id, ns), cid)
        if raw is None:
            return None
        return self._load(thread_id, ns, decode_record(raw))

    def list(self, thread_id: str, *, ns: str = "", limit: int | None = None) -> list[Checkpoint]:
        """The thread's checkpoints, newest first (see the protocol)."""
        ids = [
            i.decode() if isinstance(i, bytes) else i
            for i in self.kv.lrange(keys.history(thread_id, ns), 0, -1)
        ]
        ids = list(dict.fromkeys(reversed(ids)))[:limit]
        if not ids:
            return []
        raws = self.kv.hmget(keys.checkpoints(thread_id, ns), ids)
        return [self._load(thread_id, ns, decode_record(raw)) for raw in raws if raw is not None]

    def get_writes(self, thread_id: str, checkpoint_id: str, *, ns: str = "") -> Mapping[str, TaskWrites]:
        """Task id → persisted writes (see the protocol)."""
        return decode_writes_map(self.kv.hgetall(keys.pending_writes(thread_id, ns, checkpoint_id)))

    def _load(self, thread_id: str, ns: str, record: Record) -> Checkpoint:
        pipe = self.kv.pipeline(transaction=False)
        fetches: list[tuple[str, str, int]] = []
        values: dict[str, Any] = {}
        for key, ref in record.refs.items():
            if ref[0] == "v":
                pipe.hget(keys.channel_values(thread_id, ns, key), str(ref[1]))
                fetches.append((key, "v", 0))
            else:
                log_key = keys.channel_log(thread_id, ns, key, ref[1])
                cached: list[Any] = self._logs.get(log_key, [])
                if len(cached) < ref[2]:
                    pipe.lrange(log_key, len(cached), ref[2] - 1)
                    fetches.append((key, log_key, len(cached)))
                else:
                    values[key] = cached[: ref[2]]
        results = pipe.execute() if fetches else []
        for (key, kind, start), result in zip(fetches, results, strict=True):
            if kind == "v":
                values[key] = serde.loads(result)
            else:
                items = self._logs.get(kind, [])[:start] + [serde.loads(b) for b in result]
                self._logs.put(kind, items)
                values[key] = list(items)
        ordered = {key: values[key] for key in record.refs}
        cp = to_checkpoint(record, ordered)
        self._recent.put(cp.id, (cp, record.refs))
        return cp
