"""Long-term memory: LangGraph's ``BaseStore`` API (``langgraph.store.base``), shared by graphq's stores.

A store keeps JSON objects (``value``, a dict) under a ``namespace`` (a tuple of labels, e.g.
``("users", "alice")``) and a ``key``, shared by every run of every thread: what a node ``put`` in one
run, a node of another run on another thread can ``get`` or ``search``. Nodes reach the graph's store
through ``get_store()``, ``runtime.store`` or a parameter named ``store`` (``compile(store=...)``).

This module holds everything that does not depend on where items live: the item and operation types, the
argument checks, the filter, TTL and semantic-search rules and the order of results. A store
(:class:`~graphcore.checkpoints.store_memory.InMemoryStore`, :class:`graphcore.backend.redis_store.
RedisStore`) implements five primitives on :class:`Record` (``_load``, ``_save``, ``_remove``,
``_namespaces``, ``_scan``, plus ``_touch`` for TTL refresh).

Rules (LangGraph's, except where said):

* Namespace labels are non-empty strings without ``.``; an item's namespace is not empty and does not start
  with ``"langgraph"`` (:class:`InvalidNamespaceError`, a ``ValueError``).
* Values are JSON objects (graphq: a value that JSON cannot encode is a ``TypeError`` naming ``value``;
  LangGraph's in-memory store keeps any object).
* ``search`` without ``query`` returns items newest first (``updated_at`` descending, then namespace and key:
  LangGraph's Postgres order; its in-memory store keeps insertion order). With a ``query`` and an ``index``,
  items by cosine similarity of the query's embedding to the item's (the best of its indexed fields), as
  ``score``; items without an embedding follow, unscored, to fill ``limit``.
* ``filter`` maps value keys to a value (equality, nested dicts and lists compared as JSON) or to operators
  ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte`` (the last four compare numbers; a missing or
  non-numeric value does not match, where LangGraph raises).
* TTL is in minutes (``put(..., ttl=)``, or the store's ``ttl={"default_ttl": ...}``); reading an item
  (``get``, ``search``) starts its TTL again unless ``refresh_ttl=False`` (or ``ttl={"refresh_on_read":
  False}``). LangGraph's in-memory store has no TTL; graphq's both have it.
* In one ``batch``, reads see the store as it was before the batch's puts; of two puts of one item, the
  last wins.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, NamedTuple, TypedDict, cast

__all__ = [
    "MAX_TTL_MINUTES",
    "NOT_PROVIDED",
    "BaseStore",
    "GetOp",
    "IndexConfig",
    "InvalidNamespaceError",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "NamespacePath",
    "Op",
    "PutOp",
    "Record",
    "Result",
    "SearchItem",
    "SearchOp",
    "TTLConfig",
    "cosine",
    "matches_filter",
    "text_at_path",
]

MAX_TTL_MINUTES = 3650 * 24 * 60
"""Longest TTL an item takes, minutes (ten years, as a schedule's durations): a longer one put the item's
expiry beyond what a datetime holds (``put(..., ttl=1e12)`` raised OverflowError)."""

NamespacePath = tuple[str, ...]
"""A namespace (or a prefix or suffix of one), e.g. ``("users", "alice")``; ``"*"`` matches any label in
:class:`MatchCondition` paths."""


class _NotProvided:
    """The default of ``put(..., ttl=)``: the store's ``default_ttl`` (None would mean "never expires")."""

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "NOT_PROVIDED"


NOT_PROVIDED: Any = _NotProvided()


class Item:
    """A stored item (LangGraph's ``Item``).

    Attributes:
        value: the stored JSON object.
        key: its key in the namespace.
        namespace: its namespace, a tuple of labels.
        created_at: when it was first put (UTC).
        updated_at: when it was last put (UTC).
    """

    __slots__ = ("created_at", "key", "namespace", "updated_at", "value")

    def __init__(
        self,
        *,
        value: dict[str, Any],
        key: str,
        namespace: tuple[str, ...],
        created_at: datetime | str,
        updated_at: datetime | str,
    ) -> None:
        self.value = value
        self.key = key
        self.namespace = tuple(namespace)
        self.created_at = datetime.fromisoformat(created_at) if isinstance(created_at, str) else created_at
        self.updated_at = datetime.fromisoformat(updated_at) if isinstance(updated_at, str) else updated_at

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Item):
            return False
        return self.dict() == other.dict()

    def __hash__(self) -> int:
        return hash((self.namespace, self.key))

    def dict(self) -> dict[str, Any]:
        """The item as JSON: ``namespace`` (a list), ``key``, ``value``, ``created_at``, ``updated_at``
        (ISO 8601)."""
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.dict().items())})"


class SearchItem(Item):
    """An item found by ``search``; ``score`` is the cosine similarity to the query (None without one)."""

    __slots__ = ("score",)

    def __init__(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        created_at: datetime | str,
        updated_at: datetime | str,
        score: float | None = None,
    ) -> None:
        super().__init__(
            value=value, key=key, namespace=namespace, created_at=created_at, updated_at=updated_at
        )
        self.score = score

    def dict(self) -> dict[str, Any]:
        """:meth:`Item.dict` and ``score``."""
        return {**super().dict(), "score": self.score}


class GetOp(NamedTuple):
    """Read one item; its result is the :class:`Item` or None."""

    namespace: tuple[str, ...]
    key: str
    refresh_ttl: bool = True


class SearchOp(NamedTuple):
    """Find items under ``namespace_prefix``; its result is a list of :class:`SearchItem`."""

    namespace_prefix: tuple[str, ...]
    filter: dict[str, Any] | None = None
    limit: int = 10
    offset: int = 0
    query: str | None = None
    refresh_ttl: bool = True


NamespaceMatchType = Literal["prefix", "suffix"]


class MatchCondition(NamedTuple):
    """A namespace condition of :class:`ListNamespacesOp`: ``path`` is its prefix or suffix (``"*"`` matches
    any one label)."""

    match_type: NamespaceMatchType
    path: NamespacePath


class ListNamespacesOp(NamedTuple):
    """List namespaces; its result is a sorted list of namespace tuples."""

    match_conditions: tuple[MatchCondition, ...] | None = None
    max_depth: int | None = None
    limit: int = 100
    offset: int = 0


class PutOp(NamedTuple):
    """Store (``value`` a dict) or delete (``value`` None) one item; its result is None.

    ``index``: None embeds the store's ``index["fields"]``, False nothing, a list those paths. ``ttl``:
    minutes, None for no expiry."""

    namespace: tuple[str, ...]
    key: str
    value: Mapping[str, Any] | None
    index: Literal[False] | list[str] | None = None  # type: ignore[assignment]  # shadows tuple.index
    ttl: float | None = None


Op = GetOp | SearchOp | ListNamespacesOp | PutOp
Result = Item | list[Item] | list[SearchItem] | list[tuple[str, ...]] | None


class InvalidNamespaceError(ValueError):
    """A namespace that a store cannot hold (an empty label, a label with ``.``, ...)."""


class TTLConfig(TypedDict, total=False):
    """A store's TTL settings (LangGraph's): ``default_ttl`` (minutes, for puts without ``ttl``),
    ``refresh_on_read`` (default True), ``sweep_interval_minutes`` (accepted; graphq's stores drop expired
    items as they are read, and Redis expires them itself)."""

    refresh_on_read: bool
    default_ttl: float | None
    sweep_interval_minutes: int | None


class IndexConfig(TypedDict, total=False):
    """Semantic search settings (LangGraph's ``index``): ``dims`` (the embedding length), ``embed`` (a
    callable ``list[str] -> list[list[float]]``, sync or async, or a LangChain ``Embeddings`` object) and
    ``fields`` (paths of the texts to embed: ``"$"`` the whole value, ``"a.b"``, ``"a[*].b"``, ``"a[0]"``;
    default ``["$"]``)."""

    dims: int
    embed: Any
    fields: list[str] | None


@dataclass
class Record:
    """An item as a store keeps it: the :class:`Item`'s fields, its TTL and its embeddings.

    Attributes:
        ttl: minutes, or None (no expiry).
        expires_at: when it expires (UTC), or None.
        vectors: indexed path → embedding.
    """

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    ttl: float | None = None
    expires_at: datetime | None = None
    vectors: dict[str, list[float]] = field(default_factory=dict)

    def item(self) -> Item:
        return Item(
            value=self.value,
            key=self.key,
            namespace=self.namespace,
            created_at=self.created_at,
            updated_at=self.updated_at,
        )

    def found(self, score: float | None) -> SearchItem:
        return SearchItem(self.namespace, self.key, self.value, self.created_at, self.updated_at, score)

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


# -- argument checks ---------------------------------------------------------------------------------


def check_labels(namespace: Any, parameter: str) -> tuple[str, ...]:
    """``namespace`` as a tuple of labels.

    Raises:
        InvalidNamespaceError: not a tuple/list of non-empty strings without ``.`` (naming ``parameter``).
    """
    if isinstance(namespace, str) or not isinstance(namespace, (tuple, list)):
        raise InvalidNamespaceError(f"{parameter}: a tuple of strings, got {namespace!r}")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"{parameter}: label {label!r} of {tuple(namespace)!r} must be a non-empty string without "
                "'.' or NUL"
            )
    return tuple(namespace)


def check_namespace(namespace: Any) -> tuple[str, ...]:
    """An item's namespace: labels as :func:`check_labels`, at least one, the first not ``"langgraph"``.

    Raises:
        InvalidNamespaceError: naming ``namespace``.
    """
    labels = check_labels(namespace, "namespace")
    if not labels:
        raise InvalidNamespaceError("namespace: cannot be empty")
    if labels[0] == "langgraph":
        raise InvalidNamespaceError(f'namespace: the root label cannot be "langgraph", got {labels!r}')
    return labels


def _check_count(value: Any, parameter: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{parameter}: an integer >= {least}, got {value!r}")
    return value


def _check_ttl(ttl: Any) -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl <= MAX_TTL_MINUTES:
        raise ValueError(f"ttl: minutes, a number > 0 and <= {MAX_TTL_MINUTES} (or None), got {ttl!r}")
    return float(ttl)


def _check_value(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"value: a dict (a JSON object), got {type(value).__name__}")
    try:
        decoded = json.loads(json.dumps(dict(value), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"value: must be JSON (a store keeps JSON objects): {exc}") from None
    return cast(dict[str, Any], decoded)


def check_op(op: Any) -> Op:
    """``op`` checked: its namespace labels, key, value, TTL, limit and offset.

    Raises:
        InvalidNamespaceError: a bad namespace.
        TypeError: not an op; a value that is not a JSON object; a key that is not a string.
        ValueError: a negative limit or offset, a TTL that is not a positive number, a bad filter.
    """
    checks: dict[type[Any], Callable[[Any], None]] = {
        PutOp: _check_put,
        GetOp: _check_get,
        SearchOp: _check_search,
        ListNamespacesOp: _check_list,
    }
    check = checks.get(type(op))
    if check is None:
        raise TypeError(f"ops: GetOp, SearchOp, ListNamespacesOp or PutOp, got {type(op).__name__}")
    check(op)
    return cast(Op, op)


def _check_put(op: PutOp) -> None:
    check_namespace(op.namespace)
    _check_key(op.key)
    if op.value is not None:
        _check_value(op.value)
    _check_ttl(op.ttl)
    paths = op.index
    if paths not in (None, False) and not (
        isinstance(paths, list) and all(isinstance(p, str) for p in paths)
    ):
        raise TypeError(f"index: False, None or a list of paths, got {paths!r}")


def _check_get(op: GetOp) -> None:
    check_labels(op.namespace, "namespace")
    _check_key(op.key)


def _check_search(op: SearchOp) -> None:
    check_labels(op.namespace_prefix, "namespace_prefix")
    _check_count(op.limit, "limit", 0)
    _check_count(op.offset, "offset", 0)
    check_filter(op.filter)
    if op.query is not None and not isinstance(op.query, str):
        raise TypeError(f"query: a string, got {type(op.query).__name__}")


def _check_list(op: ListNamespacesOp) -> None:
    for condition in op.match_conditions or ():
        if condition.match_type not in ("prefix", "suffix"):
            raise ValueError(f"match_type: 'prefix' or 'suffix', got {condition.match_type!r}")
        check_labels(condition.path, condition.match_type)
    if op.max_depth is not None:
        _check_count(op.max_depth, "max_depth", 1)
    _check_count(op.limit, "limit", 0)
    _check_count(op.offset, "offset", 0)


def _check_key(key: Any) -> None:
    if not isinstance(key, str):
        raise TypeError(f"key: a string, got {type(key).__name__}")


_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def check_filter(filter: Any, path: str = "filter") -> None:
    """Refuse a filter that is not a dict or names an unknown ``$`` operator.

    Raises:
        ValueError: naming the filter's path and the operator.
    """
    if filter is None:
        return
    if not isinstance(filter, Mapping):
        raise ValueError(f"{path}: a dict, got {type(filter).__name__}")
    for name, wanted in filter.items():
        if isinstance(name, str) and name.startswith("$") and name not in _OPERATORS:
            raise ValueError(f"{path}: unknown operator {name!r} (one of {', '.join(_OPERATORS)})")
        if isinstance(wanted, Mapping):
            check_filter(wanted, f"{path}.{name}")


# -- filters, paths, similarity -----------------------------------------------------------------------


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether an item's ``value`` satisfies ``filter`` (the module's filter rules)."""
    return not filter or all(_matches(value.get(name), wanted) for name, wanted in filter.items())


def _matches(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_compare(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, Mapping) and all(_matches(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(wanted)
            and all(_matches(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _compare(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    try:
        left, right = float(actual), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[op]


_TOKEN = re.compile(r"\[[^\]]*\]|[^.\[]+")


def text_at_path(value: Any, path: str) -> list[str]:
    """The texts at ``path`` in ``value``: ``"$"`` is the whole value as JSON (sorted keys), ``"a.b"`` a
    nested field, ``"a[*]"`` every element, ``"a[0]"`` / ``"a[-1]"`` one; a string, number or boolean is
    its ``str``, a list or dict its JSON, a missing field nothing."""
    if path == "$":
        return [json.dumps(value, sort_keys=True, ensure_ascii=False)]
    found = [value]
    for token in _TOKEN.findall(path):
        found = [child for obj in found for child in _children(obj, token)]
    texts = []
    for obj in found:
        if isinstance(obj, (str, int, float, bool)):
            texts.append(str(obj))
        elif isinstance(obj, (list, dict)):
            texts.append(json.dumps(obj, sort_keys=True, ensure_ascii=False))
    return texts


def _children(obj: Any, token: str) -> list[Any]:
    """What one path token (``name``, ``[*]``, ``[n]``) selects in ``obj``."""
    if not token.startswith("["):
        return [obj[token]] if isinstance(obj, Mapping) and token in obj else []
    if not isinstance(obj, list):
        return []
    inner = token[1:-1]
    if inner == "*":
        return list(obj)
    if re.fullmatch(r"-?\d+", inner) and -len(obj) <= int(inner) < len(obj):
        return [obj[int(inner)]]
    return []


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine similarity of two vectors of one length (0.0 when either is all zeros)."""
    norm = math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


# -- embeddings ----------------------------------------------------------------------------------------


class _Embedder:
    """``index["embed"]`` as documents/query embedding calls, sync and async."""

    def __init__(self, embed: Any, dims: int) -> None:
        if isinstance(embed, str):
            raise ValueError(
                f"index['embed']: {embed!r} names a provider; give a callable list[str] -> list[list[float]] "
                "or a LangChain Embeddings object"
            )
        self.is_object = hasattr(embed, "embed_documents") and hasattr(embed, "embed_query")
        if not self.is_object and not callable(embed):
            raise TypeError(f"index['embed']: a callable or an Embeddings object, got {type(embed).__name__}")
        self.embed, self.dims = embed, dims
        self.is_async = not self.is_object and inspect.iscoroutinefunction(embed)

    def _checked(self, vectors: Any, count: int) -> list[list[float]]:
        out = [[float(x) for x in v] for v in vectors]
        if len(out) != count or any(len(v) != self.dims for v in out):
            shape = [len(v) for v in out]
            raise ValueError(
                f"index['embed'] returned vectors of lengths {shape} for {count} texts; dims is {self.dims}"
            )
        return out

    def documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        if self.is_async:
            raise TypeError(
                "index['embed'] is an async function: use the async methods (aput, asearch, abatch)"
            )
        return self._checked(
            self.embed.embed_documents(texts) if self.is_object else self.embed(texts), len(texts)
        )

    def query(self, text: str) -> list[float]:
        if self.is_object:
            return self._checked([self.embed.embed_query(text)], 1)[0]
        return self.documents([text])[0]

    async def adocuments(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        if self.is_object and hasattr(self.embed, "aembed_documents"):
            return self._checked(await self.embed.aembed_documents(texts), len(texts))
        if self.is_async:
            return self._checked(
                await cast(Callable[[list[str]], Awaitable[Any]], self.embed)(texts), len(texts)
            )
        return await asyncio.to_thread(self.documents, texts)

    async def aquery(self, text: str) -> list[float]:
        if self.is_object and hasattr(self.embed, "aembed_query"):
            return self._checked([await self.embed.aembed_query(text)], 1)[0]
        if self.is_object:
            return await asyncio.to_thread(self.query, text)
        return (await self.adocuments([text]))[0]


def _index_config(index: Any) -> tuple[IndexConfig | None, _Embedder | None]:
    if index is None:
        return None, None
    if not isinstance(index, Mapping) or "embed" not in index or "dims" not in index:
        raise ValueError("index: a dict with 'embed' and 'dims' (and optionally 'fields')")
    dims = _check_count(index["dims"], "index['dims']", 1)
    fields = index.get("fields") or ["$"]
    if not isinstance(fields, list) or not all(isinstance(f, str) and f for f in fields):
        raise ValueError(f"index['fields']: a list of paths, got {fields!r}")
    config: IndexConfig = {"dims": dims, "embed": index["embed"], "fields": list(fields)}
    return config, _Embedder(index["embed"], dims)


def _ttl_config(ttl: Any) -> TTLConfig | None:
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping):
        raise ValueError("ttl: a dict with 'default_ttl' (minutes) and/or 'refresh_on_read'")
    unknown = set(ttl) - {"default_ttl", "refresh_on_read", "sweep_interval_minutes"}
    if unknown:
        raise ValueError(f"ttl: unknown settings {sorted(unknown)}")
    _check_ttl(ttl.get("default_ttl"))
    return cast(TTLConfig, dict(ttl))


class _Embeddings(NamedTuple):
    """The vectors a batch needs: per put op index, path → vector; per query text, its vector."""

    puts: dict[int, dict[str, list[float]]]
    queries: dict[str, list[float]]


# -- the store ---------------------------------------------------------------------------------------


class BaseStore(ABC):
    """LangGraph's ``BaseStore``: ``get``/``put``/``delete``/``search``/``list_namespaces``, their async
    twins (``aget``, ...) and ``batch``/``abatch`` of :class:`GetOp`, :class:`PutOp`, :class:`SearchOp`,
    :class:`ListNamespacesOp` (the module's rules).

    Args:
        index: semantic search settings (:class:`IndexConfig`), or None (``query`` is then ignored).
        ttl: TTL settings (:class:`TTLConfig`), or None (items never expire unless ``put(..., ttl=)``).

    Raises:
        ValueError: a bad ``index`` or ``ttl`` (naming the setting).
    """

    supports_ttl: bool = True

    def __init__(self, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None) -> None:
        self.index_config, self._embedder = _index_config(index)
        self.ttl_config = _ttl_config(ttl)

    # -- primitives each store implements ------------------------------------------------------------

    @abstractmethod
    def _load(self, namespace: tuple[str, ...], key: str, now: datetime) -> Record | None:
        """The live record of one item, or None."""

    @abstractmethod
    def _save(self, record: Record) -> None:
        """Store ``record`` (replacing the item), expiring at ``record.expires_at``."""

    @abstractmethod
    def _remove(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete one item (nothing when absent)."""

    @abstractmethod
    def _namespaces(self, prefix: tuple[str, ...], now: datetime) -> list[tuple[str, ...]]:
        """Every namespace that starts with ``prefix`` (exact labels) and holds a live item."""

    @abstractmethod
    def _scan(self, prefix: tuple[str, ...], now: datetime) -> list[Record]:
        """Every live record whose namespace starts with ``prefix``."""

    @abstractmethod
    def _touch(self, records: list[Record]) -> None:
        """Start the TTL of ``records`` (each has a ``ttl``) again from ``now``."""

    # -- batch ---------------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``; one result per op, in order (:class:`GetOp` → Item or None, :class:`SearchOp` →
        list of SearchItem, :class:`ListNamespacesOp` → list of namespaces, :class:`PutOp` → None).

        Raises:
            InvalidNamespaceError, TypeError, ValueError: a bad op (:func:`check_op`).
        """
        ops = [check_op(op) for op in ops]
        puts, queries = self._to_embed(ops)
        embedder = self._embedder
        vectors = _Embeddings({}, {})
        if embedder is not None:
            vectors = _Embeddings(
                self._spread(puts, embedder.documents([text for _, _, text in puts])),
                {q: embedder.query(q) for q in queries},
            )
        return self._run(ops, vectors)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` for async code: embeddings through the embedder's async calls, the store's I/O in a
        worker thread (the event loop never blocks)."""
        ops = [check_op(op) for op in ops]
        puts, queries = self._to_embed(ops)
        embedder = self._embedder
        vectors = _Embeddings({}, {})
        if embedder is not None:
            docs = await embedder.adocuments([text for _, _, text in puts])
            vectors = _Embeddings(self._spread(puts, docs), {q: await embedder.aquery(q) for q in queries})
        return await asyncio.to_thread(self._run, ops, vectors)

    def _to_embed(self, ops: list[Op]) -> tuple[list[tuple[int, str, str]], list[str]]:
        """The texts ``ops`` need embedded: ``(op index, path, text)`` of each put, and the queries."""
        if self.index_config is None:
            return [], []
        puts: list[tuple[int, str, str]] = []
        queries: list[str] = []
        for i, op in enumerate(ops):
            if isinstance(op, PutOp) and op.value is not None and op.index is not False:
                paths = self.index_config.get("fields") or ["$"] if op.index is None else op.index
                for path in paths:
                    texts = text_at_path(dict(op.value), path)
                    named = [path] if len(texts) == 1 else [f"{path}.{n}" for n in range(len(texts))]
                    puts += [(i, name, text) for name, text in zip(named, texts, strict=True)]
            elif isinstance(op, SearchOp) and op.query and op.query not in queries:
                queries.append(op.query)
        return puts, queries

    @staticmethod
    def _spread(
        puts: list[tuple[int, str, str]], vectors: list[list[float]]
    ) -> dict[int, dict[str, list[float]]]:
        out: dict[int, dict[str, list[float]]] = {}
        for (i, path, _), vector in zip(puts, vectors, strict=True):
            out.setdefault(i, {})[path] = vector
        return out

    def _run(self, ops: list[Op], vectors: _Embeddings) -> list[Result]:
        now = datetime.now(UTC)
        results: list[Result] = []
        writes: dict[tuple[tuple[str, ...], str], tuple[int, PutOp]] = {}
        for i, op in enumerate(ops):
            if isinstance(op, PutOp):
                writes[(tuple(op.namespace), op.key)] = (i, op)
                results.append(None)
            elif isinstance(op, GetOp):
                results.append(self._get(op, now))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, vectors.queries.get(op.query or ""), now))
            else:
                results.append(self._list(op, now))
        for i, op in writes.values():
            self._put(op, vectors.puts.get(i, {}), now)
        return results

    def _refreshes(self, refresh_ttl: bool | None) -> bool:
        if refresh_ttl is not None:
            return refresh_ttl
        return bool((self.ttl_config or {}).get("refresh_on_read", True))

    def _refresh(self, records: list[Record], refresh_ttl: bool, now: datetime) -> None:
        timed = [r for r in records if r.ttl is not None]
        if refresh_ttl and timed:
            for record in timed:
                record.expires_at = now + timedelta(minutes=cast(float, record.ttl))
            self._touch(timed)

    def _get(self, op: GetOp, now: datetime) -> Item | None:
        record = self._load(tuple(op.namespace), op.key, now)
        if record is None:
            return None
        self._refresh([record], op.refresh_ttl, now)
        return record.item()

    def _search(self, op: SearchOp, query: list[float] | None, now: datetime) -> list[SearchItem]:
        records = [
            r for r in self._scan(tuple(op.namespace_prefix), now) if matches_filter(r.value, op.filter)
        ]
        records.sort(key=lambda r: (r.namespace, r.key))
        records.sort(key=lambda r: r.updated_at, reverse=True)
        page: list[tuple[Record, float | None]]
        if query is None:
            page = [(r, None) for r in records[op.offset : op.offset + op.limit]]
        else:
            scored = [(r, max(cosine(query, v) for v in r.vectors.values())) for r in records if r.vectors]
            scored.sort(key=lambda pair: pair[1], reverse=True)
            ranked: list[tuple[Record, float | None]] = [
                *scored,
                *((r, None) for r in records if not r.vectors),
            ]
            page = ranked[op.offset : op.offset + op.limit]
        self._refresh([r for r, _ in page], op.refresh_ttl, now)
        return [r.found(score) for r, score in page]

    def _list(self, op: ListNamespacesOp, now: datetime) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        prefix: tuple[str, ...] = ()
        for condition in conditions:
            if condition.match_type == "prefix":
                fixed = tuple(
                    condition.path[: condition.path.index("*")] if "*" in condition.path else condition.path
                )
                prefix = fixed if len(fixed) > len(prefix) else prefix
        found = [ns for ns in self._namespaces(prefix, now) if all(_matches_path(c, ns) for c in conditions)]
        if op.max_depth is not None:
            found = list({ns[: op.max_depth] for ns in found})
        return sorted(found)[op.offset : op.offset + op.limit]

    def _put(self, op: PutOp, vectors: dict[str, list[float]], now: datetime) -> None:
        namespace = tuple(op.namespace)
        if op.value is None:
            self._remove(namespace, op.key)
            return
        old = self._load(namespace, op.key, now)
        ttl = _check_ttl(op.ttl)
        self._save(
            Record(
                namespace,
                op.key,
                _check_value(op.value),
                old.created_at if old is not None else now,
                now,
                ttl,
                None if ttl is None else now + timedelta(minutes=ttl),
                vectors,
            )
        )

    # -- the methods nodes call ------------------------------------------------------------------------

    def _ttl(self, ttl: Any) -> float | None:
        if ttl is NOT_PROVIDED:
            return (self.ttl_config or {}).get("default_ttl")
        return cast(float | None, ttl)

    def get(self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None) -> Item | None:
        """The item at ``namespace``/``key``, or None (also once expired). Reading starts its TTL again
        unless ``refresh_ttl`` is False (None: the store's ``refresh_on_read``)."""
        return cast(Item | None, self.batch([GetOp(namespace, key, self._refreshes(refresh_ttl))])[0])

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None = NOT_PROVIDED,
    ) -> None:
        """Store ``value`` (a JSON object) at ``namespace``/``key``, replacing what was there (its
        ``created_at`` is kept).

        Args:
            index: which paths to embed for semantic search: None the store's ``fields``, False none.
            ttl: minutes until it expires; None never; not given: the store's ``default_ttl``.

        Raises:
            InvalidNamespaceError: a bad namespace. TypeError: ``value`` is not a JSON object.
            ValueError: ``ttl`` is not a positive number.
        """
        self.batch([PutOp(namespace, key, value, index, self._ttl(ttl))])

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete the item at ``namespace``/``key`` (nothing when there is none)."""
        self.batch([PutOp(namespace, key, None)])

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """Items whose namespace starts with ``namespace_prefix`` (``()``: all), matching ``filter``, at
        most ``limit`` after skipping ``offset``: by similarity to ``query`` (with an ``index``), else
        newest first.

        Raises:
            ValueError: a negative ``limit``/``offset``; an unknown filter operator.
        """
        op = SearchOp(namespace_prefix, filter, limit, offset, query, self._refreshes(refresh_ttl))
        return cast(list[SearchItem], self.batch([op])[0])

    def list_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The namespaces holding items, sorted, matching ``prefix`` and ``suffix`` (``"*"`` matches any
        label), cut to their first ``max_depth`` labels (then deduplicated)."""
        return cast(
            list[tuple[str, ...]], self.batch([_list_op(prefix, suffix, max_depth, limit, offset)])[0]
        )

    async def aget(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """:meth:`get` for async code."""
        return cast(
            Item | None, (await self.abatch([GetOp(namespace, key, self._refreshes(refresh_ttl))]))[0]
        )

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None = NOT_PROVIDED,
    ) -> None:
        """:meth:`put` for async code."""
        await self.abatch([PutOp(namespace, key, value, index, self._ttl(ttl))])

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """:meth:`delete` for async code."""
        await self.abatch([PutOp(namespace, key, None)])

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """:meth:`search` for async code."""
        op = SearchOp(namespace_prefix, filter, limit, offset, query, self._refreshes(refresh_ttl))
        return cast(list[SearchItem], (await self.abatch([op]))[0])

    async def alist_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """:meth:`list_namespaces` for async code."""
        op = _list_op(prefix, suffix, max_depth, limit, offset)
        return cast(list[tuple[str, ...]], (await self.abatch([op]))[0])


def _list_op(
    prefix: NamespacePath | None, suffix: NamespacePath | None, max_depth: int | None, limit: int, offset: int
) -> ListNamespacesOp:
    given: list[tuple[NamespaceMatchType, NamespacePath | None]] = [("prefix", prefix), ("suffix", suffix)]
    conditions = [MatchCondition(kind, tuple(path)) for kind, path in given if path]
    return ListNamespacesOp(tuple(conditions), max_depth, limit, offset)


def _matches_path(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    part = (
        namespace[: len(path)]
        if condition.match_type == "prefix"
        else namespace[len(namespace) - len(path) :]
    )
    return all(p in ("*", n) for p, n in zip(path, part, strict=True))
