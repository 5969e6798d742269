"""The public surface is small and pinned: a change to it is a deliberate change to this test."""

from __future__ import annotations

import graphcore
import graphcore.backend.store
import graphcore.checkpoints
import graphq


def test_graphcore_exports() -> None:
    assert set(graphcore.__all__) == {
        "END",
        "REMOVE_ALL_MESSAGES",
        "START",
        "BaseStore",
        "CachePolicy",
        "CancelToken",
        "Checkpoint",
        "CheckpointStreamPart",
        "CheckpointTuple",
        "Command",
        "CompiledGraph",
        "ConfigError",
        "CustomStreamPart",
        "DebugStreamPart",
        "DeltaChannel",
        "EmptyInputError",
        "ExecutionInfo",
        "GetOp",
        "GraphDrained",
        "GraphOutput",
        "GraphRecursionError",
        "GraphqError",
        "InMemoryCache",
        "InMemorySaver",
        "InMemoryStore",
        "Interrupt",
        "InvalidGraphError",
        "InvalidNamespaceError",
        "InvalidUpdateError",
        "IsLastStep",
        "Item",
        "ListNamespacesOp",
        "MatchCondition",
        "MemorySaver",
        "MessagesState",
        "MessagesStateModel",
        "MessagesStreamPart",
        "NodeError",
        "NodeTimeoutError",
        "Overwrite",
        "ParentCommand",
        "PregelTask",
        "PutOp",
        "RemainingSteps",
        "RemoveMessage",
        "RetryPolicy",
        "RunConfig",
        "RunControl",
        "Runtime",
        "SearchItem",
        "SearchOp",
        "Send",
        "SerializationError",
        "ServerInfo",
        "StateGraph",
        "StateSnapshot",
        "StateUpdate",
        "StepLimitError",
        "StreamPart",
        "StreamWriter",
        "TasksStreamPart",
        "TimeoutPolicy",
        "UntrackedValue",
        "UpdatesStreamPart",
        "ValuesStreamPart",
        "add_messages",
        "get_cancel_token",
        "get_config",
        "get_node_settings",
        "get_runtime",
        "get_store",
        "get_stream_writer",
        "interrupt",
        "push_message",
    }
    for name in graphcore.__all__:
        assert hasattr(graphcore, name), name


def test_store_exports() -> None:
    """Moved when the layers were drawn: ``graphcore.store`` became ``graphcore.checkpoints`` (no Redis in
    it) and the Redis store lives in the backend, ``graphcore.backend.store.RedisCheckpointStore``."""
    assert set(graphcore.checkpoints.__all__) == {
        "CheckpointStore",
        "InMemoryCheckpointStore",
        "KVCheckpointStore",
    }
    assert set(graphcore.backend.store.__all__) == {
        "KeyIndex",
        "RedisCheckpointStore",
        "plan_argv",
        "stage_prune",
    }


def test_graphq_exports() -> None:
    """The public face for client code: what the client snippet of *Writing a workflow* imports, the run
    statuses, the settings and the errors a client call raises."""
    assert set(graphq.__all__) == {
        "CheckpointNotFoundError",
        "Client",
        "ConfigError",
        "GraphqError",
        "InputTooLargeError",
        "InputTypeError",
        "InvalidUpdateError",
        "NotAwaitingInputError",
        "PermanentError",
        "RedisUnavailableError",
        "Registry",
        "RunExistsError",
        "RunNotFoundError",
        "RunRecord",
        "RunStatus",
        "SerializationError",
        "Settings",
        "ThreadActiveError",
        "TransientError",
        "UnknownWorkflowError",
        "connect_client",
        "get_settings",
    }
    for name in graphq.__all__:
        assert hasattr(graphq, name), name
