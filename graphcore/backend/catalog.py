"""The workflow catalog in Redis (R9): the workflows the workers serve, readable without their code.

Every worker process publishes the workflows it serves when it starts (:func:`publish`): for each, its
description (:func:`graphcore.engine.describe.describe`: channels, nodes with their settings, edges) under
its version hash, and that this worker serves that version. Nothing is written after that: a worker serves
what it published for as long as it lives, and "served by" is read through the worker registry
(:mod:`graphcore.backend.workers`), so a worker that dies drops out once its heartbeat expires (within
``GRAPHQ_LEASE_TTL_S``) without anyone cleaning up. Two workers with different code for one workflow name
publish two versions; both stay listed, each with the workers that serve it.

Housekeeping happens at publish: entries of workers no longer live are removed, and so are versions that no
live worker serves and that nobody published for :data:`STALE_VERSION_S` (a workflow's last version stays).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import WatchError

from graphcore import keys
from graphcore.backend.connection import retry_transient
from graphcore.backend.reaper import server_ms
from graphcore.backend.workers import live_worker_ids
from graphcore.engine.compiled import GraphSpec
from graphcore.engine.describe import describe, version_of
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.registry import Registry
from graphcore.engine.validate import canonical_json
from graphcore.errors import ConfigError, UnknownWorkflowError

__all__ = [
    "STALE_VERSION_S",
    "CatalogEntry",
    "CatalogVersion",
    "describe_all",
    "loaded_workflow",
    "publish",
    "read_catalog",
]

STALE_VERSION_S = 7 * 86_400
"""A version that no live worker serves is removed at a publish of its workflow once nobody published it
for this long, seconds (one week)."""


@dataclass(frozen=True)
class CatalogVersion:
    """One published version of a workflow.

    Attributes:
        version: the sha256 of the description's canonical JSON (64 hex digits).
        description: see :func:`graphcore.engine.describe.describe`.
        published_ms: when a worker last published it, ms since the epoch (Redis's clock).
        served_by: ids of the live workers that serve it, sorted (``graphq workers`` lists them).
    """

    version: str
    description: dict[str, Any]
    published_ms: int
    served_by: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CatalogEntry:
    """One workflow of the catalog and its versions, the last published first."""

    name: str
    versions: list[CatalogVersion]


def describe_all(graphs: Iterable[GraphSpec], limit: int | None = None) -> dict[str, tuple[str, str]]:
    """Workflow name → (version, description as canonical JSON) for ``graphs``.

    Raises:
        ConfigError: a node's settings are above ``limit`` (None → ``GRAPHQ_MAX_NODE_SETTINGS_LENGTH``) or
            not JSON, naming the workflow, the node, the size and the limit.
    """
    out: dict[str, tuple[str, str]] = {}
    for graph in graphs:
        try:
            description = describe(graph, limit)
        except ConfigError as exc:
            raise ConfigError(f"workflow {graph.name!r}: {exc}") from None
        out[graph.name] = (version_of(description), canonical_json(description))
    return out


def _write(kv: Any, worker_id: str, entries: dict[str, tuple[str, str]]) -> int:
    now = server_ms(kv)
    pipe = kv.pipeline(transaction=True)
    for name, (version, text) in entries.items():
        pipe.zadd(keys.catalog(), {name: now})
        pipe.hset(keys.catalog_versions(name), version, text)
        pipe.zadd(keys.catalog_seen(name), {version: now})
        pipe.zadd(keys.catalog_workers(name), {keys.catalog_member(version, worker_id): now})
    pipe.execute()
    return now


def _tidy(kv: Any, names: Iterable[str], now_ms: int) -> None:
    """Drop entries of workers that are not live, and stale versions nobody serves (see the module doc).

    Per workflow, the reads are watched: a worker that publishes meanwhile (its heartbeat, then its entry,
    after the live workers were read here) makes the removal start again, so that neither its entry nor
    the version it published again is taken for a dead one."""
    for name in names:
        while True:
            with kv.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(keys.catalog_workers(name), keys.catalog_seen(name))
                    _tidy_one(pipe, name, now_ms)
                    break
                except WatchError:
                    continue


def _tidy_one(pipe: Any, name: str, now_ms: int) -> None:
    live = set(live_worker_ids(pipe, now_ms))
    members = [m.decode() for m in pipe.zrange(keys.catalog_workers(name), 0, -1)]
    gone = [m for m in members if m.split(":", 1)[1] not in live]
    served = {m.split(":", 1)[0] for m in members if m not in gone}
    seen = pipe.zrangebyscore(keys.catalog_seen(name), "-inf", now_ms - STALE_VERSION_S * 1000)
    stale = [v.decode() for v in seen if v.decode() not in served]
    pipe.multi()
    if gone:
        pipe.zrem(keys.catalog_workers(name), *gone)
    if stale:
        pipe.hdel(keys.catalog_versions(name), *stale)
        pipe.zrem(keys.catalog_seen(name), *stale)
    pipe.execute()


def publish(kv: Any, worker_id: str, graphs: Iterable[GraphSpec], limit: int | None = None) -> dict[str, str]:
    """Publish the workflows worker ``worker_id`` serves (call it once its heartbeat is written).

    One MULTI writes every workflow's description, version and this worker; transient Redis errors are
    retried (``GRAPHQ_REDIS_RETRY_ATTEMPTS``; the writes are idempotent). Then housekeeping (module doc).

    Args:
        limit: largest node settings, bytes of compact JSON; None → ``GRAPHQ_MAX_NODE_SETTINGS_LENGTH``.

    Returns:
        Workflow name → the version published.

    Raises:
        ConfigError: a node's settings are above the limit or not JSON (nothing is written; the message
            names the workflow, the node, the size and the limit).
        redis.RedisError: Redis failed permanently, or transiently through every retry.
    """
    entries = describe_all(graphs, limit)
    if not entries:
        return {}
    now = retry_transient(_write, kv, worker_id, entries)
    retry_transient(_tidy, kv, list(entries), now)
    return {name: version for name, (version, _) in entries.items()}


def _entry(name: str, raw: list[Any], live: set[str]) -> CatalogEntry | None:
    descriptions, seen, members = raw
    serving: dict[str, list[str]] = {}
    for member in members:
        version, _, worker_id = member.decode().partition(":")
        if worker_id in live:
            serving.setdefault(version, []).append(worker_id)
    versions = [
        CatalogVersion(v.decode(), json.loads(descriptions[v]), int(ms), sorted(serving.get(v.decode(), [])))
        for v, ms in seen
        if v in descriptions
    ]
    return CatalogEntry(name, versions) if versions else None


def read_catalog(kv: Any, name: str | None = None) -> list[CatalogEntry]:
    """The catalog (or only workflow ``name``), by workflow name; each entry's versions newest first.

    Three reads per workflow in one pipeline, plus the live workers at Redis's clock now; transient Redis
    errors are retried (``GRAPHQ_REDIS_RETRY_ATTEMPTS``).

    Returns:
        The entries; empty when nothing (or nothing called ``name``) was published.

    Raises:
        redis.RedisError: Redis failed permanently, or transiently through every retry.
    """
    return retry_transient(_read, kv, name)


def _read(kv: Any, name: str | None) -> list[CatalogEntry]:
    now = server_ms(kv)
    live = set(live_worker_ids(kv, now))
    names = [name] if name is not None else sorted(n.decode() for n in kv.zrange(keys.catalog(), 0, -1))
    pipe = kv.pipeline(transaction=False)
    for n in names:
        pipe.hgetall(keys.catalog_versions(n))
        pipe.zrevrange(keys.catalog_seen(n), 0, -1, withscores=True)
        pipe.zrange(keys.catalog_workers(n), 0, -1)
    replies = pipe.execute() if names else []
    entries = (_entry(n, replies[3 * i : 3 * i + 3], live) for i, n in enumerate(names))
    return [e for e in entries if e is not None]


def loaded_workflow(registry: Registry, kv: Callable[[], Any], name: str) -> CompiledGraph:
    """The workflow ``name`` of ``registry`` (this process's code), to enqueue it: its input is checked
    against its state schema, which needs its code here.

    Args:
        kv: gives the Redis connection, called only when ``name`` is not loaded (to read the catalog).

    Raises:
        UnknownWorkflowError: not loaded here; when the workers published it (the catalog on ``kv()``, R9)
            the message says so and how to load it (``--workflows``).
    """
    try:
        return registry.get(name)
    except UnknownWorkflowError as exc:
        try:
            published = read_catalog(kv(), name)
        except Exception:  # the hint is a courtesy: the unknown name stays the error
            published = []
        if not published:
            raise
        served = max(len(v.served_by) for v in published[0].versions)
        raise UnknownWorkflowError(
            f"{exc}. {name!r} is in the workflow catalog (served by {served} live worker(s)), but its "
            "code is not loaded in this process: pass --workflows MODULE (or set GRAPHQ_WORKFLOWS)"
        ) from None
