"""The Redis checkpoint store: the shared store code (:mod:`graphcore.checkpoints.kv`) writing through
``put_checkpoint.lua`` (and, without history, ``prune_checkpoints.lua`` in the same MULTI), and the ARGV
layout of a planned write that the fenced commit shares."""

from __future__ import annotations

from typing import Any

from graphcore import keys
from graphcore.backend.connection import retry_transient
from graphcore.backend.lua import script, stage
from graphcore.backend.retention import namespaces
from graphcore.backend.ttl import delete_thread
from graphcore.checkpoints.kv import KVCheckpointStore
from graphcore.checkpoints.layout import Plan, Prune
from graphcore.checkpoints.model import Checkpoint

__all__ = ["KeyIndex", "RedisCheckpointStore", "plan_argv", "stage_prune"]


class KeyIndex:
    """Numbers the data keys a Lua script receives in KEYS, from ``first`` on (I8: keys only via KEYS)."""

    def __init__(self, first: int) -> None:
        self.first = first
        self.keys: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, key: str) -> str:
        """The KEYS index (as a string) of ``key``, adding it when new."""
        if key not in self._index:
            self._index[key] = self.first + len(self.keys)
            self.keys.append(key)
        return str(self._index[key])


def plan_argv(plan: Plan, index: KeyIndex) -> list[str | bytes]:
    """The plan's two ARGV sections for ``put_checkpoint.lua`` / ``commit_step.lua``: values
    ``n × (key index, field, value)``, then appends ``n × (key index, start, count, items...)``."""
    argv: list[str | bytes] = [str(len(plan.values))]
    for key, field, value in plan.values:
        argv += [index(key), field, value]
    argv.append(str(len(plan.appends)))
    for append in plan.appends:
        argv += [index(append.key), str(append.start), str(len(append.items)), *append.items]
    return argv


def stage_prune(kv: Any, pipe: Any, thread_id: str, ns: str, cp_id: str, prune: Prune) -> None:
    """Queue ``prune_checkpoints.lua`` on ``pipe`` (a MULTI of client ``kv``, after the write that stores
    ``cp_id``): drop the rest of the namespace's history and what only the previous head referenced, if
    that write applied. No round trip of its own (:func:`graphcore.backend.lua.stage`)."""
    index = KeyIndex(3)
    argv: list[str] = [cp_id, str(len(prune.fields))]
    for key, field in prune.fields:
        argv += [index(key), field]
    argv += [str(len(prune.keys)), *(index(key) for key in prune.keys)]
    script_keys = [keys.checkpoints(thread_id, ns), keys.history(thread_id, ns), *index.keys]
    stage(pipe, "prune_checkpoints", script_keys, argv)


class RedisCheckpointStore(KVCheckpointStore):
    """The checkpoint store on Redis: ``RedisCheckpointStore(redis.Redis(...), schema)``."""

    def threads(self) -> list[str]:
        """The threads that have root checkpoints, found by a SCAN of the keyspace (``list(None)`` only:
        listing every thread is a walk over every key)."""
        found = (n.decode() for n in self.kv.scan_iter(match=keys.root_histories(), count=1000))
        return sorted(t for t in map(keys.history_thread, found) if t is not None)

    def namespaces(self, thread_id: str) -> list[str]:
        """The namespaces of ``thread_id`` that have checkpoints, the root's first, then the subgraphs'
        level by level (:func:`graphcore.backend.retention.namespaces`)."""
        return namespaces(self.kv, thread_id)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every key of ``thread_id`` now (LangGraph's ``delete_thread``; as ``graphq threads delete
        THREAD``, :func:`graphcore.backend.ttl.delete_thread`): checkpoints in all namespaces, pending
        writes, answers, and the thread's run records and events. Transient Redis errors are retried.

        Raises:
            ThreadActiveError: a run is active on the thread (queued, running or awaiting input) or waits
                for it; nothing was removed.
        """
        retry_transient(delete_thread, self.kv, thread_id)
        self._forget()

    def _apply(self, thread_id: str, ns: str, cp: Checkpoint, plan: Plan) -> bool:
        """Write ``plan`` atomically with ``put_checkpoint.lua``; False when an append guard failed."""
        return self.put_plan(thread_id, ns, cp, plan) == "ok"

    def put_plan(
        self, thread_id: str, ns: str, cp: Checkpoint, plan: Plan, fence: tuple[str, str, str] | None = None
    ) -> str:
        """Run ``put_checkpoint.lua`` for ``plan``; returns its verdict: ``ok``, ``log`` (an append guard
        failed) or ``lease`` (refused by the fence).

        Args:
            fence: ``(lease key, run hash key, lease token)``: write only while the token holds the lease (a
                subgraph inside a step job); None writes unfenced.
        """
        index = KeyIndex(6)
        cps, history = keys.checkpoints(thread_id, ns), keys.history(thread_id, ns)
        lease_key, run_key, token = fence or (cps, cps, "")  # unused keys without a fence: same slot
        argv = [token, cp.id, plan.record, *plan_argv(plan, index)]
        script_keys = [lease_key, run_key, cps, history, keys.thread_keys(thread_id), *index.keys]
        if plan.prune is None:
            reply = script(self.kv, "put_checkpoint")(keys=script_keys, args=argv)
        else:
            with self.kv.pipeline(transaction=True) as pipe:
                stage(pipe, "put_checkpoint", script_keys, argv)
                stage_prune(self.kv, pipe, thread_id, ns, cp.id, plan.prune)
                reply = pipe.execute()[0]
        return reply.decode() if isinstance(reply, bytes) else str(reply)
