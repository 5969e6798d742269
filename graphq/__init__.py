"""graphq — durable distributed graph workflows on Redis and RQ: the public face for client code.

``connect_client(url, registry=...)`` returns a :class:`Client` that enqueues runs, waits for them
(:class:`RunRecord`, its :class:`RunStatus`) and reads their checkpoints; :class:`Settings` (read by
:func:`get_settings` from ``GRAPHQ_*`` variables) configures it. The errors below are the ones a client call
raises. Graphs are built with :mod:`graphcore` (``from graphcore import StateGraph, START, END``).

The worker, scheduler, CLI and example workflows are the subpackages ``graphq.worker``, ``graphq.scheduler``,
``graphq.cli`` and ``graphq.examples``.
"""

from graphcore.backend.client import Client
from graphcore.backend.runs import RunRecord, RunStatus
from graphcore.backend.ttl import ThreadActiveError
from graphcore.engine.inputs import InputTooLargeError, InputTypeError
from graphcore.engine.interrupts import NotAwaitingInputError
from graphcore.engine.registry import Registry
from graphcore.errors import (
    CheckpointNotFoundError,
    ConfigError,
    GraphqError,
    InvalidUpdateError,
    PermanentError,
    RedisUnavailableError,
    RunExistsError,
    RunNotFoundError,
    SerializationError,
    TransientError,
    UnknownWorkflowError,
)
from graphcore.settings import Settings, get_settings
from graphq.worker.queue import connect_client

__all__ = [
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
]
