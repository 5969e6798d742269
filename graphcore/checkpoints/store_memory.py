"""LangGraph's ``InMemoryStore`` (``langgraph.store.memory``): long-term memory kept in this process, for
tests and single-process programs (the rules of :mod:`graphcore.checkpoints.store_base`)."""

from __future__ import annotations

import copy
import threading
from datetime import datetime

from graphcore.checkpoints.store_base import BaseStore, IndexConfig, Record, TTLConfig

__all__ = ["InMemoryStore"]


class InMemoryStore(BaseStore):
    """A store in a dict of this process: ``InMemoryStore()``, ``InMemoryStore(index={"embed": fn, "dims":
    N, "fields": [...]})``, ``InMemoryStore(ttl={"default_ttl": minutes})``. Safe to share between threads
    (nodes of one super-step run in several); lost when the process ends. Expired items are dropped as
    they are read.

    Raises:
        ValueError: a bad ``index`` or ``ttl`` (naming the setting).
    """

    def __init__(self, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None) -> None:
        super().__init__(index=index, ttl=ttl)
        self._items: dict[tuple[str, ...], dict[str, Record]] = {}
        self._lock = threading.Lock()

    def _live(self, namespace: tuple[str, ...], now: datetime) -> dict[str, Record]:
        """The namespace's live records (expired ones dropped); call under the lock."""
        records = self._items.get(namespace, {})
        for key in [k for k, r in records.items() if r.expired(now)]:
            del records[key]
        if not records:
            self._items.pop(namespace, None)
        return records

    def _load(self, namespace: tuple[str, ...], key: str, now: datetime) -> Record | None:
        with self._lock:
            record = self._live(namespace, now).get(key)
            return copy.deepcopy(record)

    def _save(self, record: Record) -> None:
        with self._lock:
            self._items.setdefault(record.namespace, {})[record.key] = copy.deepcopy(record)

    def _remove(self, namespace: tuple[str, ...], key: str) -> None:
        with self._lock:
            records = self._items.get(namespace, {})
            records.pop(key, None)
            if not records:
                self._items.pop(namespace, None)

    def _namespaces(self, prefix: tuple[str, ...], now: datetime) -> list[tuple[str, ...]]:
        with self._lock:
            return [ns for ns in list(self._items) if ns[: len(prefix)] == prefix and self._live(ns, now)]

    def _scan(self, prefix: tuple[str, ...], now: datetime) -> list[Record]:
        with self._lock:
            namespaces = [ns for ns in list(self._items) if ns[: len(prefix)] == prefix]
            return [copy.deepcopy(r) for ns in namespaces for r in self._live(ns, now).values()]

    def _touch(self, records: list[Record]) -> None:
        with self._lock:
            for record in records:
                kept = self._items.get(record.namespace, {}).get(record.key)
                if kept is not None:
                    kept.expires_at = record.expires_at
