"""Checkpoints: the model, the msgpack serde, the store protocol and layout, and the in-memory store.

Nothing here talks to Redis: the Redis store is :class:`graphcore.backend.store.RedisCheckpointStore`.
"""

from graphcore.checkpoints.kv import KVCheckpointStore
from graphcore.checkpoints.memory import InMemoryCheckpointStore
from graphcore.checkpoints.protocol import CheckpointStore

__all__ = ["CheckpointStore", "InMemoryCheckpointStore", "KVCheckpointStore"]
