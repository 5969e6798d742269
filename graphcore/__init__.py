"""graphcore — the graph engine of graphq: builder, channels, the pure super-step algorithm, checkpoints."""

from graphcore.checkpoints.memory import InMemorySaver, MemorySaver
from graphcore.checkpoints.model import Checkpoint
from graphcore.checkpoints.saver import CheckpointTuple
from graphcore.engine.builder import StateGraph
from graphcore.engine.cache import InMemoryCache
from graphcore.engine.cache_policy import CachePolicy
from graphcore.engine.cancel import CancelToken
from graphcore.engine.channels import DeltaChannel, UntrackedValue
from graphcore.engine.config import (
    RunConfig,
    get_cancel_token,
    get_config,
    get_node_settings,
    get_stream_writer,
)
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.interrupts import interrupt
from graphcore.engine.messages_stream import push_message
from graphcore.engine.retry import RetryPolicy
from graphcore.engine.runtime import (
    ExecutionInfo,
    RunControl,
    Runtime,
    ServerInfo,
    StreamWriter,
    get_runtime,
    get_store,
)
from graphcore.engine.snapshot import PregelTask, StateSnapshot, StateUpdate
from graphcore.engine.timeouts import TimeoutPolicy
from graphcore.errors import (
    ConfigError,
    EmptyInputError,
    GraphDrained,
    GraphqError,
    GraphRecursionError,
    InvalidGraphError,
    InvalidUpdateError,
    NodeError,
    NodeTimeoutError,
    ParentCommand,
    SerializationError,
    StepLimitError,
)
from graphcore.managed import IsLastStep, RemainingSteps
from graphcore.messages import (
    REMOVE_ALL_MESSAGES,
    MessagesState,
    MessagesStateModel,
    RemoveMessage,
    add_messages,
)
from graphcore.store import (
    BaseStore,
    GetOp,
    InMemoryStore,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)
from graphcore.types import (
    END,
    START,
    CheckpointStreamPart,
    Command,
    CustomStreamPart,
    DebugStreamPart,
    GraphOutput,
    Interrupt,
    MessagesStreamPart,
    Overwrite,
    Send,
    StreamPart,
    TasksStreamPart,
    UpdatesStreamPart,
    ValuesStreamPart,
)

__all__ = [
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
]
