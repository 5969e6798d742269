"""Checkpoint stores: the protocol, the Redis-backed store and the in-memory store."""

from graphcore.store.base import CheckpointStore
from graphcore.store.kv import KVCheckpointStore
from graphcore.store.memory import InMemoryCheckpointStore

__all__ = ["CheckpointStore", "InMemoryCheckpointStore", "KVCheckpointStore", "RedisCheckpointStore"]

RedisCheckpointStore = KVCheckpointStore
"""The Redis store: ``RedisCheckpointStore(redis.Redis(...), schema)``."""
