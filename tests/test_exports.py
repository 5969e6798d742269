"""The public surface is small and pinned: a change to it is a deliberate change to this test."""

from __future__ import annotations

import graphcore
import graphcore.store


def test_graphcore_exports() -> None:
    assert set(graphcore.__all__) == {
        "END",
        "START",
        "CancelToken",
        "Checkpoint",
        "Command",
        "CompiledGraph",
        "ConfigError",
        "GraphqError",
        "Interrupt",
        "InvalidGraphError",
        "InvalidUpdateError",
        "NodeError",
        "NodeTimeoutError",
        "Overwrite",
        "RemoveMessage",
        "RetryPolicy",
        "RunConfig",
        "Send",
        "SerializationError",
        "StateGraph",
        "StepLimitError",
        "add_messages",
        "get_cancel_token",
        "get_config",
        "get_stream_writer",
        "interrupt",
    }
    for name in graphcore.__all__:
        assert hasattr(graphcore, name), name


def test_store_exports() -> None:
    assert set(graphcore.store.__all__) == {
        "CheckpointStore",
        "InMemoryCheckpointStore",
        "KVCheckpointStore",
        "RedisCheckpointStore",
    }
