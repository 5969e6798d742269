"""Node result caching, as LangGraph 1.x's: ``add_node(..., cache_policy=CachePolicy(...))`` with
``compile(cache=InMemoryCache())``.

A task of a node with a cache policy (its own, or :meth:`~graphcore.StateGraph.set_node_defaults`'s) looks
up its writes under a key made from its input by the policy's ``key_func``: on a hit the node does not run,
its cached writes (state updates and next tasks) apply as if it had, and the ``updates`` stream marks the
chunk ``"__metadata__": {"cached": True}`` (no ``tasks`` result event, as LangGraph's). A task that
finished (not one that failed or paused) stores its writes for ``ttl`` seconds (None: no expiry). Entries
are per node: namespace ``("__pregel_ns_writes", "<module>.<qualname>" of the node's function, node)``,
which ``clear_cache(nodes)`` drops.

Cached values are serialised with graphq's checkpoint serde (no pickle): a hit gives copies. The default
key is a digest of the input in a canonical form (mapping keys sorted), serialised the same way.

Queued runs do not cache: ``client.enqueue`` refuses a workflow compiled with ``cache=``
(:func:`refuse_on_queue`): each step may run on another worker, with its own memory.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from graphcore.checkpoints import serde
from graphcore.checkpoints.layout import decode_writes, encode_writes
from graphcore.engine.cache_policy import CachePolicy, default_cache_key
from graphcore.engine.compiled import GraphSpec
from graphcore.engine.describe import subgraph_of
from graphcore.errors import ConfigError, SerializationError
from graphcore.types import TaskWrites

__all__ = [
    "CACHE_NS_WRITES",
    "CacheMethods",
    "CachePolicy",
    "InMemoryCache",
    "StepCache",
    "check_cache",
    "default_cache_key",
    "refuse_on_queue",
]

CACHE_NS_WRITES = "__pregel_ns_writes"
"""The first part of a node's cache namespace (LangGraph's)."""

Namespace = tuple[str, ...]
FullKey = tuple[Namespace, str]


class InMemoryCache:
    """A cache in this process's memory (LangGraph's ``InMemoryCache`` API: ``get``, ``set``, ``clear`` and
    their ``a``-forms), thread-safe. Values are stored serialised (graphq's checkpoint serde), so each
    ``get`` returns a copy."""

    def __init__(self) -> None:
        self._entries: dict[Namespace, dict[str, tuple[bytes, float | None]]] = {}
        self._lock = threading.RLock()

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        """The values of ``keys`` (``(namespace, key)`` pairs) that are cached and not expired."""
        now = _now()
        found: dict[FullKey, Any] = {}
        with self._lock:
            for ns, key in keys:
                entry = self._entries.get(tuple(ns), {}).get(key)
                if entry is None:
                    continue
                data, expiry = entry
                if expiry is None or now < expiry:
                    found[(tuple(ns), key)] = serde.loads(data)
                else:
                    del self._entries[tuple(ns)][key]
        return found

    def set(self, pairs: Mapping[FullKey, tuple[Any, float | None]]) -> None:
        """Store each ``(namespace, key) → (value, ttl)``: ``ttl`` seconds (None: no expiry).

        Raises:
            SerializationError: a value graphq's serde does not store.
        """
        now = _now()
        with self._lock:
            for (ns, key), (value, ttl) in pairs.items():
                expiry = None if ttl is None else now + ttl
                self._entries.setdefault(tuple(ns), {})[key] = (serde.dumps(value, path="cache"), expiry)

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Drop the entries of ``namespaces``; None: every entry."""
        with self._lock:
            if namespaces is None:
                self._entries.clear()
            for ns in namespaces or ():
                self._entries.pop(tuple(ns), None)

    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        """See :meth:`get`."""
        return self.get(keys)

    async def aset(self, pairs: Mapping[FullKey, tuple[Any, float | None]]) -> None:
        """See :meth:`set`."""
        self.set(pairs)

    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """See :meth:`clear`."""
        self.clear(namespaces)


def _now() -> float:
    return datetime.datetime.now(datetime.UTC).timestamp()


def check_cache(cache: Any) -> Any:
    """``compile(cache=...)``: None, or an object with the cache API (``get``, ``set``, ``clear``: graphq's
    :class:`InMemoryCache`, or LangGraph's caches).

    Raises:
        TypeError: anything else, naming ``graphcore.InMemoryCache()``.
    """
    if cache is None or all(callable(getattr(cache, m, None)) for m in ("get", "set", "clear")):
        return cache
    raise TypeError(
        f"compile(cache=...) takes a cache such as graphcore.InMemoryCache() (get, set, clear); got "
        f"{type(cache).__name__}"
    )


def _namespace(graph: GraphSpec, node: str) -> Namespace:
    fn = graph.nodes[node].fn
    target = fn if hasattr(fn, "__qualname__") else type(fn)
    module = getattr(target, "__module__", None)
    ident = f"{module}.{target.__qualname__}" if module else "__dynamic__"
    return (CACHE_NS_WRITES, ident, node)


def task_key(graph: GraphSpec, node: str, input: Any) -> tuple[FullKey, float | None] | None:
    """The cache key of a task of ``node`` on ``input`` and its ttl; None when the graph has no cache or
    the node no policy.

    Raises:
        ConfigError: the policy's ``key_func`` returned neither ``str`` nor ``bytes``.
        SerializationError: the default ``key_func`` met a value graphq's serde does not store; the message
            names the node and the way out (a ``key_func`` of one's own).
        Exception: what a ``key_func`` of one's own raised.
    """
    policy = graph.nodes[node].cache_policy
    if graph.cache is None or policy is None:
        return None
    try:
        made = policy.key_func(input)
    except SerializationError as exc:
        reason = str(exc)[len(exc.path) + 2 :]
        raise SerializationError(
            f"node {node!r}: {exc.path}", f"{reason}; give its CachePolicy a key_func of your own"
        ) from None
    if not isinstance(made, str | bytes):
        raise ConfigError(f"node {node!r}: CachePolicy.key_func must return str or bytes (got {made!r})")
    digest = hashlib.blake2b(made.encode() if isinstance(made, str) else made, digest_size=16).hexdigest()
    return (_namespace(graph, node), digest), policy.ttl


class StepCache:
    """The cache entries of one super-step's tasks (prepared tasks): each task's key is made once, from its
    input before its node runs (a node may change its input in place; LangGraph keys before the run too).

    Attributes:
        keys: task id → ``(full key, ttl)`` of each task whose node has a cache policy.
    """

    def __init__(self, graph: GraphSpec, tasks: Sequence[Any]) -> None:
        self.graph = graph
        made = {task.id: task_key(graph, task.node, task.input) for task in tasks}
        self.keys = {tid: key for tid, key in made.items() if key is not None}

    def hits(self) -> dict[str, TaskWrites]:
        """Task id → the cached writes of each task that has a cache entry, marked ``cached``."""
        if not self.keys:
            return {}
        wanted = {key: tid for tid, (key, _) in self.keys.items()}
        hits: dict[str, TaskWrites] = {}
        for key, data in self.graph.cache.get(list(wanted)).items():
            tid = wanted[(tuple(key[0]), key[1])]
            hits[tid] = dataclasses.replace(decode_writes(data), task_id=tid, cached=True)
        return hits

    def remember(self, tasks: Sequence[Any], outcomes: Mapping[str, Any]) -> None:
        """Store the writes of those of ``tasks`` that ran and finished (not paused nor stopped at a
        subgraph's breakpoint, not failed, not handled by an error handler, not cached) under their keys."""
        pairs: dict[FullKey, tuple[Any, float | None]] = {}
        for task in tasks:
            result, key = outcomes.get(task.id), self.keys.get(task.id)
            if key is None or not isinstance(result, TaskWrites) or result.cached or result.interrupts:
                continue
            if result.stopped or result.node != task.node:  # an error handler's writes: the node failed
                continue
            pairs[key[0]] = (encode_writes(dataclasses.replace(result, task_id="")), key[1])
        if pairs:
            self.graph.cache.set(pairs)


def refuse_on_queue(graph: GraphSpec) -> None:
    """Raises:
    ConfigError: ``graph``, or a subgraph it runs as a node (at any depth), was compiled with ``cache=``:
        queued runs do not cache node results.
    """
    cached = _with_cache(graph)
    if cached is None:
        return
    which = (
        f"workflow {graph.name!r}"
        if cached is graph
        else f"subgraph {cached.name!r} of workflow {graph.name!r}"
    )
    raise ConfigError(
        f"{which} was compiled with cache=...: queued runs do not cache node results (each step may run on "
        "another worker); compile the queue's graph without cache="
    )


def _with_cache(graph: GraphSpec) -> GraphSpec | None:
    """``graph`` when it has a cache, else the first subgraph node's graph (depth first) that has one."""
    if graph.cache is not None:
        return graph
    for spec in graph.nodes.values():
        inner = subgraph_of(spec)
        found = _with_cache(inner) if inner is not None else None
        if found is not None:
            return found
    return None


class CacheMethods:
    """``clear_cache`` / ``aclear_cache`` of a compiled graph (LangGraph's)."""

    def clear_cache(self, nodes: Sequence[str] | None = None) -> None:
        """Drop the cached results of ``nodes`` (None: every node's).

        Raises:
            ValueError: the graph has no cache (LangGraph's "No cache is set for this graph").
        """
        graph: GraphSpec = self  # type: ignore[assignment]
        if graph.cache is None:
            raise ValueError(f"graph {graph.name!r} has no cache (compile(cache=InMemoryCache())) to clear")
        graph.cache.clear([_namespace(graph, n) for n in nodes or graph.nodes if n in graph.nodes])

    async def aclear_cache(self, nodes: Sequence[str] | None = None) -> None:
        """See :meth:`clear_cache`."""
        self.clear_cache(nodes)
