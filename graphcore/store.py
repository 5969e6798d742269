"""Long-term memory, LangGraph's ``langgraph.store`` in graphq: the :class:`BaseStore` API, its operations
and items, :class:`InMemoryStore`, and :func:`get_store` (the running graph's store). The Redis store the
workers use is :class:`graphcore.backend.redis_store.RedisStore`. The rules are in
:mod:`graphcore.checkpoints.store_base`."""

from graphcore.checkpoints.store_base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NamespacePath,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from graphcore.checkpoints.store_memory import InMemoryStore
from graphcore.engine.runtime import get_store

__all__ = [
    "NOT_PROVIDED",
    "BaseStore",
    "GetOp",
    "InMemoryStore",
    "IndexConfig",
    "InvalidNamespaceError",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "NamespacePath",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
    "TTLConfig",
    "get_store",
]
