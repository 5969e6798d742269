"""The in-memory checkpoint store: the same store code as Redis over a dict-backed key-value client.

:class:`MemoryKV` implements the handful of Redis commands the store uses, with Redis's semantics
(bytes in, bytes out). It exists so that the in-process executor can keep history without a server; it is
not a Redis stand-in for tests — the Redis store is always tested against a real ``redis-server``.
"""

from __future__ import annotations

import threading
from typing import Any

from graphcore import keys
from graphcore.checkpoints.kv import KVCheckpointStore
from graphcore.checkpoints.layout import ChannelKinds, Plan
from graphcore.checkpoints.model import Checkpoint

__all__ = ["InMemoryCheckpointStore", "InMemorySaver", "MemoryKV", "MemorySaver"]


def _b(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


class MemoryKV:
    """Hashes and lists in process memory; thread-safe; ``pipeline()`` runs its commands on ``execute()``."""

    def __init__(self) -> None:
        self._hashes: dict[bytes, dict[bytes, bytes]] = {}
        self._lists: dict[bytes, list[bytes]] = {}
        self.lock = threading.RLock()

    def hset(self, key: str, field: str, value: bytes) -> int:
        with self.lock:
            h = self._hashes.setdefault(_b(key), {})
            new = _b(field) not in h
            h[_b(field)] = value
            return int(new)

    def hget(self, key: str, field: str) -> bytes | None:
        return self._hashes.get(_b(key), {}).get(_b(field))

    def hmget(self, key: str, fields: list[str]) -> list[bytes | None]:
        h = self._hashes.get(_b(key), {})
        return [h.get(_b(f)) for f in fields]

    def hgetall(self, key: str) -> dict[bytes, bytes]:
        return dict(self._hashes.get(_b(key), {}))

    def hdel(self, key: str, *fields: str) -> int:
        with self.lock:
            h = self._hashes.get(_b(key), {})
            return sum(h.pop(_b(f), None) is not None for f in fields)

    def delete(self, *names: str) -> int:
        with self.lock:
            return sum(
                (self._hashes.pop(_b(n), None) is not None) + (self._lists.pop(_b(n), None) is not None)
                for n in names
            )

    def list_names(self) -> list[str]:
        """The names of the lists, oldest first."""
        with self.lock:
            return [n.decode() for n in self._lists]

    def delete_prefix(self, prefix: str) -> int:
        """Delete every key whose name starts with ``prefix``; returns how many existed."""
        with self.lock:
            names = [n for n in (*self._hashes, *self._lists) if n.startswith(_b(prefix))]
            return sum(
                (self._hashes.pop(n, None) is not None) + (self._lists.pop(n, None) is not None)
                for n in names
            )

    def ltrim(self, key: str, start: int, end: int) -> bool:
        with self.lock:
            items = self._lists.get(_b(key), [])
            stop = len(items) if end == -1 else end + 1
            self._lists[_b(key)] = items[start:stop] if start >= 0 else items[len(items) + start : stop]
            return True

    def rpush(self, key: str, *values: Any) -> int:
        with self.lock:
            items = self._lists.setdefault(_b(key), [])
            items.extend(_b(v) for v in values)
            return len(items)

    def lrange(self, key: str, start: int, end: int) -> list[bytes]:
        items = self._lists.get(_b(key), [])
        stop = len(items) if end == -1 else end + 1
        return items[start:stop]

    def llen(self, key: str) -> int:
        return len(self._lists.get(_b(key), []))

    def lindex(self, key: str, index: int) -> bytes | None:
        items = self._lists.get(_b(key), [])
        return items[index] if -len(items) <= index < len(items) else None

    def pipeline(self, transaction: bool = True) -> _Pipeline:
        return _Pipeline(self)


class _Pipeline:
    def __init__(self, kv: MemoryKV) -> None:
        self._kv = kv
        self._calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        def queue(*args: Any) -> _Pipeline:
            self._calls.append((name, args))
            return self

        return queue

    def execute(self) -> list[Any]:
        with self._kv.lock:
            return [getattr(self._kv, name)(*args) for name, args in self._calls]


class InMemoryCheckpointStore(KVCheckpointStore):
    """A checkpoint store in process memory (for ``compile(checkpointer=InMemoryCheckpointStore())``). It also
    answers LangGraph's saver API (``list(config)``, ``get_tuple``, ``put``, ``delete_thread``, ...:
    :mod:`graphcore.checkpoints.saver`)."""

    kv: MemoryKV

    def __init__(
        self, schema: ChannelKinds | None = None, kv: MemoryKV | None = None, *, history: bool | None = None
    ) -> None:
        super().__init__(MemoryKV() if kv is None else kv, schema, history=history)

    def threads(self) -> list[str]:
        """The threads that have checkpoints, in the order they were first written."""
        return [t for t in map(keys.history_thread, self.kv.list_names()) if t is not None]

    def namespaces(self, thread_id: str) -> list[str]:
        """The namespaces of ``thread_id`` that have checkpoints: the root's (``""``) first, then subgraphs'
        in the order they were first written."""
        root = keys.history(thread_id)
        return [n.removeprefix(root) for n in self.kv.list_names() if n.startswith(root)]

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint of ``thread_id`` (LangGraph's ``delete_thread``): every key of the thread,
        in all namespaces (subgraphs'), with its channel values and logs, pending writes and answers. A later
        run on the thread starts afresh."""
        self.kv.delete_prefix(keys.thread_pattern(thread_id).removesuffix("*"))
        self._forget()

    def _apply(self, thread_id: str, ns: str, cp: Checkpoint, plan: Plan) -> bool:
        """What ``put_checkpoint.lua`` (and ``prune_checkpoints.lua``) do on Redis, under the store's lock:
        check every append guard, then write the record, its history entry, the values and the appends, and
        without history drop the rest (see :class:`~graphcore.checkpoints.layout.Prune`); a checkpoint
        already stored is not written again."""
        kv = self.kv
        with kv.lock:
            if kv.hget(keys.checkpoints(thread_id, ns), cp.id) is not None:
                return True
            if any(kv.llen(a.key) != a.start for a in plan.appends):
                return False
            kv.hset(keys.checkpoints(thread_id, ns), cp.id, plan.record)
            kv.rpush(keys.history(thread_id, ns), cp.id)
            for key, field, value in plan.values:
                kv.hset(key, field, value)
            for append in plan.appends:
                kv.rpush(append.key, *append.items)
            if plan.prune is not None:
                history = keys.history(thread_id, ns)
                dropped = [i.decode() for i in kv.lrange(history, 0, -2)]
                kv.hdel(keys.checkpoints(thread_id, ns), *(i for i in dropped if i != cp.id))
                kv.ltrim(history, -1, -1)
                for key, field in plan.prune.fields:
                    kv.hdel(key, field)
                kv.delete(*plan.prune.keys)
        return True


InMemorySaver = InMemoryCheckpointStore
"""LangGraph's name for its in-memory checkpointer (``langgraph.checkpoint.memory.InMemorySaver``):
``compile(checkpointer=InMemorySaver())`` keeps a graph's threads in this process, with their history
(``get_state_history``) unless ``GRAPHQ_ENABLE_CHECKPOINTING`` is off."""

MemorySaver = InMemorySaver
"""LangGraph's older name for :data:`InMemorySaver` (``langgraph.checkpoint.memory.MemorySaver``)."""
