"""The checkpoint store over a Redis-like key-value client, for every backend.

One implementation serves both backends, so the Redis store and the in-memory store cannot drift apart:
they differ only in how a planned write is applied atomically — ``put_checkpoint.lua`` in
:class:`graphcore.backend.store.RedisCheckpointStore`, a lock in
:class:`graphcore.checkpoints.memory.InMemoryCheckpointStore`.
The layout (what goes where, O(change) writes, the append guard) is in :mod:`graphcore.checkpoints.layout`.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from graphcore import keys
from graphcore.checkpoints import saver, serde
from graphcore.checkpoints.layout import (
    FAILED_PREFIX,
    ChannelKinds,
    Plan,
    Record,
    Ref,
    decode_record,
    decode_writes_and_errors,
    decode_writes_map,
    encode,
    encode_writes,
    prune,
    to_checkpoint,
)
from graphcore.checkpoints.model import Checkpoint
from graphcore.errors import AppendConflictError
from graphcore.settings import get_settings
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
    """:class:`~graphcore.checkpoints.protocol.CheckpointStore` over a Redis-like client; a backend
    subclass says how a planned write is applied (:meth:`_apply`).

    Args:
        kv: a client with redis-py's hash and list commands (bytes responses).
        schema: which channels are reducer channels (the engine's ``StateSchema``), if known; list values
            of those are stored as logs (all list values are, when None).
        history: keep every checkpoint (time travel, forks); False keeps one per thread namespace, its
            working state (R5: each write drops the previous head and the values only it referenced).
            None: ``GRAPHQ_ENABLE_CHECKPOINTING``.

    Process-local caches keep per-step cost O(change): the items of append-only logs already read (every
    position of a log is written once, so a cached prefix stays valid), recently stored or loaded
    checkpoints with their refs (so that the next put can reuse or extend them), and the lengths this
    process wrote its logs to (so that a fork off an older checkpoint starts a new generation at once
    instead of failing the append guard first).
    """

    def __init__(self, kv: Any, schema: ChannelKinds | None = None, *, history: bool | None = None) -> None:
        self.kv = kv
        self.schema = schema
        self.history = get_settings().enable_checkpointing if history is None else history
        self._logs = LRU()
        self._recent = LRU()
        self._tips = LRU()

    # -- writing ---------------------------------------------------------------------------------------

    def plan_put(
        self,
        thread_id: str,
        cp: Checkpoint,
        *,
        ns: str = "",
        may_append: bool = True,
        writes: Sequence[TaskWrites] = (),
    ) -> Plan:
        """Plan the writes that store ``cp``.

        Args:
            may_append: whether its logs may grow in its parent's generations (the write's append guard
                still checks); False after an :class:`~graphcore.errors.AppendConflictError`, or when the
                caller knows the parent's logs have grown since (a fork off an older checkpoint).
            writes: the task writes of the step that made ``cp``; with history they are written with it as
                the pending writes of its parent (what that checkpoint's tasks returned: O(change), the
                writes are the change); without history they are dropped with the parent anyway.

        Raises:
            SerializationError: a value is not on the allow-list; nothing has been written.
        """
        parent, refs = self._recent.get(cp.parent_id, (None, None)) if cp.parent_id else (None, None)
        if may_append and refs is not None:
            may_append = not self._grown(thread_id, ns, refs)
        plan = encode(thread_id, ns, cp, parent, refs, self.schema, may_append=may_append)
        if self.history and cp.parent_id is not None:
            kept = keys.pending_writes(thread_id, ns, cp.parent_id)
            plan.values += [(kept, tw.task_id, encode_writes(tw)) for tw in writes if tw.task_id]
        if not self.history:
            previous = cp.parent_id or self._head_id(thread_id, ns)  # a fresh start drops the old head
            stored = None if previous is None else self._stored_record(thread_id, ns, previous)
            plan.prune = prune(thread_id, ns, previous, stored, plan.refs)
        return plan

    def _stored_record(self, thread_id: str, ns: str, checkpoint_id: str) -> Record | None:
        """The record of a stored checkpoint (from the cache, else from the store); None when it is gone."""
        if checkpoint_id in self._recent:
            cp, refs = self._recent[checkpoint_id]
            return Record({"metadata": cp.metadata}, refs)
        raw = self.kv.hget(keys.checkpoints(thread_id, ns), checkpoint_id)
        return None if raw is None else decode_record(raw)

    def _grown(self, thread_id: str, ns: str, refs: Mapping[str, Ref]) -> bool:
        """Whether this process knows that one of ``refs``' logs holds more items than the ref covers."""
        for key, ref in refs.items():
            if ref[0] == "log":
                log_key = keys.channel_log(thread_id, ns, key, ref[1])
                if max(self._tips.get(log_key, 0), len(self._logs.get(log_key, ()))) > ref[2]:
                    return True
        return False

    def forget(self, checkpoint_id: str) -> None:
        """Drop ``checkpoint_id`` from this process's cache: it was put there ahead of a write that then
        failed (a log tip it advanced stays ahead: the next plan's append guard then writes a new generation,
        never over another's items)."""
        self._recent.pop(checkpoint_id, None)

    def stored(self, cp: Checkpoint, plan: Plan) -> None:
        """Record that ``cp`` was committed with ``plan`` (call after the write succeeded)."""
        if plan.prune is not None and cp.parent_id is not None:
            self._recent.pop(cp.parent_id, None)  # dropped by the write: reads must not find it here
        self._recent.put(cp.id, (cp, plan.refs))
        for append in plan.appends:
            self._tips.put(append.key, append.start + len(append.items))

    @saver.or_config(saver.put_checkpoint)
    def put(
        self, thread_id: str, checkpoint: Checkpoint, *, ns: str = "", writes: Sequence[TaskWrites] = ()
    ) -> None:
        """Store ``checkpoint`` as the thread's newest, with ``writes`` (see the protocol and
        :meth:`plan_put`); a log that another branch extended meanwhile is written to a new generation
        instead. A checkpoint already stored is not written again (a write retried after its reply was lost
        changes nothing).

        Raises:
            SerializationError: a value is not on the allow-list; nothing has been written.
            AppendConflictError: another writer grew the new generations too; nothing has been written.
        """
        for may_append in (True, False):
            plan = self.plan_put(thread_id, checkpoint, ns=ns, may_append=may_append, writes=writes)
            if self._apply(thread_id, ns, checkpoint, plan):
                self.stored(checkpoint, plan)
                return
        what = f"checkpoint {checkpoint.id} of thread {thread_id!r}: a log grew on another branch"
        raise AppendConflictError(what)

    def _apply(self, thread_id: str, ns: str, cp: Checkpoint, plan: Plan) -> bool:
        """Write ``plan`` atomically: check every append guard, then write the record, its history entry,
        the values and the appends, then (``plan.prune``) drop the rest of the history and the values only
        the previous head referenced; False (nothing written) when a guard failed. Each backend says how."""
        raise NotImplementedError

    @saver.or_config(saver.put_task_writes)
    def put_writes(self, thread_id: str, checkpoint_id: str, writes: TaskWrites, *, ns: str = "") -> None:
        """Persist one task's writes (see the protocol). ``put_writes(config, writes, task_id)`` is
        LangGraph's form (:func:`graphcore.checkpoints.saver.put_task_writes`)."""
        self.kv.hset(keys.pending_writes(thread_id, ns, checkpoint_id), writes.task_id, encode_writes(writes))

    # -- reading ---------------------------------------------------------------------------------------

    def _head_id(self, thread_id: str, ns: str) -> str | None:
        raw = self.kv.lindex(keys.history(thread_id, ns), -1)
        return None if raw is None else raw.decode() if isinstance(raw, bytes) else str(raw)

    @saver.or_config(saver.get_checkpoint)
    def get(self, thread_id: str, checkpoint_id: str | None = None, *, ns: str = "") -> Checkpoint | None:
        """The checkpoint with ``checkpoint_id``, or the newest (see the protocol). ``get(config)`` is
        LangGraph's form: the checkpoint dict (:func:`graphcore.checkpoints.saver.get_checkpoint`)."""
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

    @saver.or_config(saver.list_tuples)
    def list(self, thread_id: str, *, ns: str = "", limit: int | None = None) -> list[Checkpoint]:
        """The thread's checkpoints, newest first (see the protocol). ``list(config, *, filter, before,
        limit)`` is LangGraph's form: an iterator of CheckpointTuples
        (:func:`graphcore.checkpoints.saver.list_tuples`)."""
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

    def get_writes_and_errors(
        self, thread_id: str, checkpoint_id: str, *, ns: str = ""
    ) -> tuple[Mapping[str, TaskWrites], Mapping[str, str]]:
        """Task id → persisted writes, and task id → error text of the failed ones (see the protocol)."""
        return decode_writes_and_errors(self.kv.hgetall(keys.pending_writes(thread_id, ns, checkpoint_id)))

    def get_writes_of(
        self, thread_id: str, checkpoint_id: str, task_ids: Sequence[str], *, ns: str = ""
    ) -> tuple[Mapping[str, TaskWrites], Mapping[str, str]]:
        """:meth:`get_writes_and_errors` of the tasks ``task_ids`` only (one HMGET: a batch of a wide step
        reads its own tasks' writes, not the whole step's)."""
        fields = [*task_ids, *(FAILED_PREFIX + t for t in task_ids)]
        values = self.kv.hmget(keys.pending_writes(thread_id, ns, checkpoint_id), fields) if fields else []
        return decode_writes_and_errors({f.encode(): v for f, v in zip(fields, values, strict=True) if v})

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

    # -- LangGraph's saver API (graphcore.checkpoints.saver) ---------------------------------------------

    def get_tuple(self, config: Mapping[str, Any]) -> saver.CheckpointTuple | None:
        """The checkpoint ``config`` names, or the thread's newest, as LangGraph's ``CheckpointTuple``; None
        when there is none (:func:`graphcore.checkpoints.saver.get_tuple`).

        Raises:
            ConfigKeyError: ``config`` names no thread (a ConfigError and a KeyError).
        """
        return saver.get_tuple(self, config)

    async def aget_tuple(self, config: Mapping[str, Any]) -> saver.CheckpointTuple | None:
        """:meth:`get_tuple` (LangGraph's async form)."""
        return self.get_tuple(config)

    async def aget(self, config: Mapping[str, Any]) -> dict[str, Any] | None:
        """``get(config)``: the checkpoint dict (LangGraph's async form)."""
        return saver.get_checkpoint(self, config)

    async def alist(
        self,
        config: Mapping[str, Any] | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[saver.CheckpointTuple]:
        """``list(config, ...)`` (LangGraph's async form)."""
        for found in saver.list_tuples(self, config, filter=filter, before=before, limit=limit):
            yield found

    async def aput(
        self,
        config: Mapping[str, Any],
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, Any],
    ) -> dict[str, Any]:
        """``put(config, checkpoint, metadata, new_versions)`` (LangGraph's async form)."""
        return saver.put_checkpoint(self, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: Mapping[str, Any], writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """``put_writes(config, writes, task_id)`` (LangGraph's async form)."""
        saver.put_task_writes(self, config, writes, task_id, task_path)

    def threads(self) -> builtins.list[str]:
        """The threads that have checkpoints (for ``list(None)``). Each backend says how."""
        raise NotImplementedError

    def namespaces(self, thread_id: str) -> builtins.list[str]:
        """The namespaces of ``thread_id`` that have checkpoints, the root's (``""``) first. Each backend
        says how."""
        raise NotImplementedError

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint of ``thread_id``: all namespaces (subgraphs'), channel values and logs,
        pending writes and answers (LangGraph's ``delete_thread``). Each backend says how."""
        raise NotImplementedError

    async def adelete_thread(self, thread_id: str) -> None:
        """:meth:`delete_thread` (LangGraph's async form)."""
        self.delete_thread(thread_id)

    def _forget(self) -> None:
        """Empty this process's caches (after a thread was deleted: a cached checkpoint must not outlive
        it)."""
        for cache in (self._logs, self._recent, self._tips):
            cache.clear()
