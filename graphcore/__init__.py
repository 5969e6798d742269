"""graphcore — the graph engine of graphq: builder, channels, the pure super-step algorithm, checkpoints."""

from graphcore.cancel import CancelToken
from graphcore.channels import RemoveMessage, add_messages
from graphcore.checkpoint import Checkpoint
from graphcore.config import RunConfig, get_cancel_token, get_config, get_stream_writer
from graphcore.errors import (
    ConfigError,
    GraphqError,
    InvalidGraphError,
    InvalidUpdateError,
    NodeError,
    NodeTimeoutError,
    SerializationError,
    StepLimitError,
)
from graphcore.executor import CompiledGraph
from graphcore.graph import StateGraph
from graphcore.interrupts import interrupt
from graphcore.retry import RetryPolicy
from graphcore.types import END, START, Command, Interrupt, Overwrite, Send

__all__ = [
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
]
