"""Run context, as LangGraph's ``context_schema`` and ``Runtime``: immutable values of one run (a user id, a
model name) that every node can read, given with ``invoke(input, context=...)`` (``stream``, ``ainvoke``,
``astream`` too) or, for a queued run, in its config (``client.enqueue(wf, input, config={"context":
{...}})``).

The context travels in the run config (:attr:`~graphcore.engine.config.RunConfig.context`): graphs invoked
inside a node (and subgraphs) inherit it, and a queued run stores it with its config, as JSON (a dataclass or
pydantic context is stored as its fields). When the graph has a ``context_schema`` that is a dataclass or a
pydantic model, a dict context is turned into it (LangGraph's rule), so a node reads ``runtime.context.user``
in process and on a worker alike.

A node or router parameter named ``runtime`` gets a :class:`Runtime` (:mod:`graphcore.engine.params`);
:func:`get_runtime` returns the same inside a node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from graphcore.engine.config import RunConfig, Scope, TaskContext, current_scope, current_task, merge_config
from graphcore.errors import ConfigError

__all__ = [
    "ExecutionInfo",
    "RunControl",
    "Runtime",
    "ServerInfo",
    "StreamWriter",
    "coerce_context",
    "get_runtime",
    "get_store",
    "run_store",
    "runtime_of",
    "with_context",
]

ContextT = TypeVar("ContextT")

StreamWriter = Callable[[Any], None]
"""LangGraph's ``StreamWriter``: what a node's ``writer`` parameter is (``writer(chunk)`` emits a ``custom``
stream event)."""


@dataclass(frozen=True)
class ExecutionInfo:
    """Where the running node's try is (LangGraph's ``ExecutionInfo``, ``runtime.execution_info``).

    Attributes:
        checkpoint_id: the id of the checkpoint the super-step starts from.
        checkpoint_ns: the task's namespace, ``"<node>:<task_id>"`` (after ``"<graph's namespace>|"`` in a
            graph invoked inside a node).
        task_id: the task's id (graphq's: 16 hex digits).
        thread_id: the run's thread, None for a run without one (no checkpointer).
        run_id: the id the run's caller gave it (a config's ``run_id``; a queued run's id), None when it
            gave none (LangGraph's; :attr:`~graphcore.engine.config.Scope.run_id`).
        node_attempt: the number of this try (1 for the first; more under a retry policy).
        node_first_attempt_time: when the task's first try started, Unix time in seconds.
    """

    checkpoint_id: str
    checkpoint_ns: str
    task_id: str
    thread_id: str | None = None
    run_id: str | None = None
    node_attempt: int = 1
    node_first_attempt_time: float | None = None

    def patch(self, **overrides: Any) -> ExecutionInfo:
        """A copy with the fields ``overrides`` names replaced.

        Raises:
            TypeError: a name is not a field.
        """
        return dataclasses.replace(self, **overrides)


@dataclass(frozen=True)
class ServerInfo:
    """LangGraph Server's metadata (``runtime.server_info``): always None in graphq, which has no server."""

    assistant_id: str
    graph_id: str
    user: Any = None


class RunControl:
    """Drains a running graph at its next super-step (LangGraph's ``RunControl``).

    Pass one to ``invoke``, ``stream``, ``ainvoke`` or ``astream`` (``control=RunControl()``); a run given
    none has its own. After :meth:`request_drain` (from any thread, e.g. a signal handler's), the run runs
    no further super-step: the step in flight finishes and is committed, then the call raises
    :class:`~graphcore.errors.GraphDrained`; ``invoke(None, config)`` on the thread goes on from there. A
    node reads the request as ``runtime.drain_requested``. One control per run: once drained, it stays so.

    On the queue, ``runtime.control`` is its worker's: drained once the worker is asked to stop (SIGTERM);
    the run's next super-step then waits for another worker, as for any worker that drains.
    """

    __slots__ = ("_reason",)

    def __init__(self) -> None:
        self._reason: str | None = None

    def request_drain(self, reason: str = "shutdown") -> None:
        """Ask the run to stop before its next super-step; ``reason`` is :class:`GraphDrained`'s."""
        self._reason = reason

    @property
    def drain_requested(self) -> bool:
        """Whether :meth:`request_drain` was called."""
        return self._reason is not None

    @property
    def drain_reason(self) -> str | None:
        """The reason given to :meth:`request_drain`, None before."""
        return self._reason


def _no_stream_writer(chunk: Any) -> None:
    """A runtime's ``stream_writer`` outside a run: drops the chunk."""


def _no_heartbeat() -> None:
    """``runtime.heartbeat()`` outside a node: nothing to record."""


@dataclass(frozen=True)
class Runtime(Generic[ContextT]):
    """What a node is given besides its state and config (LangGraph's ``Runtime``, its fields in its order).

    Attributes:
        context: the run's context (None when the run was given none).
        store: the run's long-term store (``compile(store=...)``; on the queue, the workers' Redis store;
            :mod:`graphcore.checkpoints.store_base`), or None.
        stream_writer: ``stream_writer(chunk)`` emits a ``custom`` stream event.
        heartbeat: ``heartbeat()`` records progress for the node's ``idle_timeout``
            (:mod:`graphcore.engine.timeouts`); outside a try with one it does nothing.
        previous: LangGraph's functional-API return value; always None here.
        execution_info: the running try's :class:`ExecutionInfo`; None outside a node.
        server_info: LangGraph Server's; always None.
        control: the run's :class:`RunControl`; None outside a run.
    """

    context: ContextT = None  # type: ignore[assignment]
    store: Any = None
    stream_writer: StreamWriter = _no_stream_writer
    heartbeat: Callable[[], None] = _no_heartbeat
    previous: Any = None
    execution_info: ExecutionInfo | None = None
    server_info: ServerInfo | None = None
    control: RunControl | None = None

    def merge(self, other: Runtime[ContextT]) -> Runtime[ContextT]:
        """This runtime with each field ``other`` sets (not None, not falsy, not the no-op writer or
        heartbeat) taken from ``other``, as LangGraph's ``merge``."""
        return Runtime(
            context=other.context or self.context,
            store=other.store or self.store,
            stream_writer=self.stream_writer
            if other.stream_writer is _no_stream_writer
            else other.stream_writer,
            heartbeat=self.heartbeat if other.heartbeat is _no_heartbeat else other.heartbeat,
            previous=self.previous if other.previous is None else other.previous,
            execution_info=other.execution_info or self.execution_info,
            server_info=other.server_info or self.server_info,
            control=other.control or self.control,
        )

    def override(self, **overrides: Any) -> Runtime[ContextT]:
        """A copy with the fields ``overrides`` names replaced.

        Raises:
            TypeError: a name is not a field.
        """
        return dataclasses.replace(self, **overrides)

    def patch_execution_info(self, **overrides: Any) -> Runtime[ContextT]:
        """A copy whose :attr:`execution_info` has the fields ``overrides`` names replaced.

        Raises:
            RuntimeError: this runtime has no execution info (outside a node).
        """
        if self.execution_info is None:
            raise RuntimeError("Cannot patch execution_info before it has been set")
        return dataclasses.replace(self, execution_info=self.execution_info.patch(**overrides))

    @property
    def drain_requested(self) -> bool:
        """Whether the run's :class:`RunControl` was asked to drain (False without one)."""
        return self.control is not None and self.control.drain_requested

    @property
    def drain_reason(self) -> str | None:
        """The drain's reason, None when none was asked for."""
        return None if self.control is None else self.control.drain_reason


def coerce_context(schema: Any, context: Any, *, wrap: bool = True) -> Any:
    """``context`` as the run's context: a dict made into ``schema`` when that is a dataclass or pydantic
    model (as LangGraph's ``invoke`` does), anything else unchanged.

    Args:
        schema: the graph's ``context_schema``, or None.
        context: the run's context.
        wrap: raise a dict that does not fit as a ConfigError (enqueue, the workers); False raises the
            schema's own error, as LangGraph's ``invoke`` does (in process).

    Raises:
        ConfigError: the dict does not fit the schema (naming the schema and the error), when ``wrap``.
        TypeError: it does not fit a dataclass schema (its ``__init__``'s error), unless ``wrap``.
        pydantic.ValidationError: it does not fit a pydantic schema, unless ``wrap``.
    """
    if context is None or schema is None or not isinstance(context, dict):
        return context
    if not (dataclasses.is_dataclass(schema) or (isinstance(schema, type) and issubclass(schema, BaseModel))):
        return context
    make: Any = schema
    try:
        return make(**context)
    except Exception as exc:  # TypeError for a dataclass, ValidationError for a model
        if not wrap:
            raise
        name = getattr(schema, "__name__", repr(schema))
        raise ConfigError(f"run option context: does not fit the context schema {name}: {exc}") from None


def runtime_of(task: TaskContext) -> Runtime[Any]:
    """The :class:`Runtime` of a running task: one per try, built on first use (``get_runtime()`` is the
    node's ``runtime``, as in LangGraph)."""
    if task.runtime is None:
        scope = current_scope()
        task.runtime = Runtime(
            context=task.config.context,
            store=None if scope is None else scope.memory,
            stream_writer=task.stream_writer,
            heartbeat=task.try_.heartbeat,
            execution_info=_execution_info(task, scope),
            control=None if scope is None else scope.control,
        )
    runtime: Runtime[Any] = task.runtime
    return runtime


def _execution_info(task: TaskContext, scope: Scope | None) -> ExecutionInfo:
    """``task``'s :class:`ExecutionInfo`; no thread when the run keeps no checkpoints (LangGraph's)."""
    own = f"{task.node}:{task.task_id}"
    ns = "" if scope is None else scope.ns
    has_checkpoints = scope is not None and scope.store is not None
    return ExecutionInfo(
        checkpoint_id=task.checkpoint_id,
        checkpoint_ns=f"{ns}|{own}" if ns else own,
        task_id=task.task_id,
        thread_id=task.config.thread_id if has_checkpoints else None,
        run_id=None if scope is None else scope.run_id,
        node_attempt=task.try_.number,
        node_first_attempt_time=task.try_.first_at,
    )


def run_store() -> Any:
    """The long-term store of the graph running now (:attr:`~graphcore.engine.config.Scope.memory`), or
    None."""
    scope = current_scope()
    return None if scope is None else scope.memory


def get_store() -> Any:
    """The running graph's long-term store (LangGraph's ``get_store()``): the one given to
    ``compile(store=...)``, a parent graph's for a graph invoked inside a node, the workers' Redis store on
    the queue; None when the graph has none.

    Raises:
        OutsideRunError: called outside a running node.
    """
    current_task("get_store")
    return run_store()


def get_runtime(context_schema: type[ContextT] | None = None) -> Runtime[ContextT]:
    """The running node's :class:`Runtime` (LangGraph's ``get_runtime()``); ``context_schema`` only types
    the result (as LangGraph's), it is not checked.

    Raises:
        OutsideRunError: called outside a running node.
    """
    return runtime_of(current_task("get_runtime"))


def with_context(config: Any, context: Any) -> Any:
    """``config`` (a mapping, a :class:`RunConfig` or None) with the run option ``context`` set, when
    ``context`` is not None (``invoke(..., context=...)``).

    Raises:
        ConfigError: as :func:`~graphcore.engine.config.merge_config`.
    """
    if context is None:
        return config
    cfg: RunConfig = merge_config(config, {"context": context})
    return cfg
