"""The long-term store on Redis (:class:`RedisStore`): the memory every run of every thread shares on the
queue (``get_store()`` in a node run by ``graphq worker``), and what ``graphq store`` reads and writes.

Layout (:mod:`graphcore.keys`): each item is a hash ``graphq:{store}:item:[*namespace, key]`` (``value`` and
``vectors`` as JSON, ``created_at``/``updated_at`` ISO 8601, ``ttl`` minutes), expiring with its TTL
(``PEXPIREAT``); each namespace has a zset of its keys scored by expiry (ms, ``+inf`` for never), and one
zset indexes the namespaces (dotted, score 0). A prefix (``search``, ``list_namespaces``) is a
``ZRANGEBYLEX`` of that index, never a SCAN of the keyspace; ``prune_store_namespaces.lua`` drops expired
keys and emptied namespaces from the indexes as they are read.

Semantic search is brute force: the query's embedding is compared (cosine) with every item under the prefix,
read from Redis: O(items under the prefix) per query, fine for thousands of items per prefix, not millions
(Redis Stack's vector index is not used).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import redis

from graphcore import keys
from graphcore.backend.connection import retry_transient
from graphcore.backend.lua import script
from graphcore.checkpoints.store_base import BaseStore, IndexConfig, Record, TTLConfig

__all__ = ["RedisStore"]

_HIGH = b"\xff"  # above every byte of UTF-8 text: the end of a ZRANGEBYLEX prefix range


def _ms(when: datetime | None) -> str:
    return "+inf" if when is None else str(int(when.timestamp() * 1000))


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


class RedisStore(BaseStore):
    """A store on Redis: ``RedisStore(redis.Redis(...))``, with the ``index`` and ``ttl`` settings of
    :class:`~graphcore.checkpoints.store_base.BaseStore`. Every client on the same Redis sees the same items.
    Transient Redis errors are retried with backoff (:func:`~graphcore.backend.connection.retry_transient`).

    Raises:
        ValueError: a bad ``index`` or ``ttl`` (naming the setting).
    """

    def __init__(
        self, kv: redis.Redis, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None
    ) -> None:
        super().__init__(index=index, ttl=ttl)
        self.kv = kv

    def _record(self, namespace: tuple[str, ...], key: str, raw: dict[Any, Any]) -> Record | None:
        fields = {_text(k): _text(v) for k, v in raw.items()}
        if "value" not in fields:
            return None
        ttl = float(fields["ttl"]) if fields.get("ttl") else None
        expires = fields.get("expires_at")
        return Record(
            namespace,
            key,
            json.loads(fields["value"]),
            datetime.fromisoformat(fields["created_at"]),
            datetime.fromisoformat(fields["updated_at"]),
            ttl,
            datetime.fromisoformat(expires) if expires else None,
            json.loads(fields.get("vectors") or "{}"),
        )

    def _load(self, namespace: tuple[str, ...], key: str, now: datetime) -> Record | None:
        raw = retry_transient(self.kv.hgetall, keys.store_item(namespace, key))
        record = self._record(namespace, key, raw)
        return None if record is None or record.expired(now) else record

    def _save(self, record: Record) -> None:
        item = keys.store_item(record.namespace, record.key)
        dotted = ".".join(record.namespace)
        fields: dict[Any, Any] = {
            "value": json.dumps(record.value, ensure_ascii=False),
            "created_at": record.created_at.isoformat(),
            "updated_at": record.updated_at.isoformat(),
            "ttl": "" if record.ttl is None else repr(record.ttl),
            "expires_at": "" if record.expires_at is None else record.expires_at.isoformat(),
            "vectors": json.dumps(record.vectors),
        }

        def save() -> None:
            pipe = self.kv.pipeline(transaction=True)
            pipe.delete(item)
            pipe.hset(item, mapping=fields)
            if record.expires_at is not None:
                pipe.pexpireat(item, int(record.expires_at.timestamp() * 1000))
            pipe.zadd(keys.store_keys(dotted), {record.key: _ms(record.expires_at)})
            pipe.zadd(keys.store_namespaces(), {dotted: 0})
            pipe.execute()

        retry_transient(save)

    def _remove(self, namespace: tuple[str, ...], key: str) -> None:
        def remove() -> None:
            pipe = self.kv.pipeline(transaction=True)
            pipe.delete(keys.store_item(namespace, key))
            pipe.zrem(keys.store_keys(".".join(namespace)), key)
            pipe.execute()

        retry_transient(remove)

    def _namespaces(self, prefix: tuple[str, ...], now: datetime) -> list[tuple[str, ...]]:
        index = keys.store_namespaces()
        if prefix:
            dotted = ".".join(prefix)

            def ranges() -> list[Any]:  # the namespace itself, and those under it: one round trip
                pipe = self.kv.pipeline(transaction=False)
                pipe.zrangebylex(index, f"[{dotted}", f"[{dotted}")
                pipe.zrangebylex(index, f"[{dotted}.".encode(), b"[" + f"{dotted}.".encode() + _HIGH)
                exact, under = pipe.execute()
                return [*exact, *under]

            candidates = [_text(n) for n in retry_transient(ranges)]
        else:
            candidates = [_text(n) for n in retry_transient(self.kv.zrange, index, 0, -1)]
        if not candidates:
            return []
        prune = script(self.kv, "prune_store_namespaces")
        live = retry_transient(
            prune, [index, *(keys.store_keys(n) for n in candidates)], [_ms(now), *candidates]
        )
        return [tuple(_text(n).split(".")) for n in live]

    def _scan(self, prefix: tuple[str, ...], now: datetime) -> list[Record]:
        namespaces = self._namespaces(prefix, now)

        def members() -> list[Any]:
            pipe = self.kv.pipeline(transaction=False)
            for ns in namespaces:
                pipe.zrangebyscore(keys.store_keys(".".join(ns)), f"({_ms(now)}", "+inf")
            return pipe.execute()

        items = [
            (ns, _text(key))
            for ns, found in zip(namespaces, retry_transient(members), strict=True)
            for key in found
        ]

        def read() -> list[Any]:
            pipe = self.kv.pipeline(transaction=False)
            for ns, key in items:
                pipe.hgetall(keys.store_item(ns, key))
            return pipe.execute()

        records = [
            self._record(ns, key, raw) for (ns, key), raw in zip(items, retry_transient(read), strict=True)
        ]
        return [r for r in records if r is not None and not r.expired(now)]

    def _touch(self, records: list[Record]) -> None:
        def touch() -> None:
            pipe = self.kv.pipeline(transaction=True)
            for record in records:
                expires = record.expires_at
                assert expires is not None  # _refresh sets it on every record it touches
                item = keys.store_item(record.namespace, record.key)
                pipe.hset(item, "expires_at", expires.isoformat())
                pipe.pexpireat(item, int(expires.timestamp() * 1000))
                pipe.zadd(keys.store_keys(".".join(record.namespace)), {record.key: _ms(expires)}, xx=True)
            pipe.execute()

        retry_transient(touch)
