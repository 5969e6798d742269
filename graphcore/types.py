"""Values that nodes and routers return to steer a graph: START/END, Send, Command, Overwrite.

Names and meaning follow LangGraph's public API (``langgraph.types``) so that graphs port with few changes.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypedDict, TypeVar

from typing_extensions import TypeAliasType

from graphcore.errors import warn_caller

__all__ = [
    "END",
    "START",
    "CheckpointStreamPart",
    "Command",
    "CustomStreamPart",
    "DebugStreamPart",
    "GraphOutput",
    "Interrupt",
    "MessagesStreamPart",
    "Overwrite",
    "Send",
    "StreamPart",
    "TasksStreamPart",
    "TimeoutPolicy",
    "UpdatesStreamPart",
    "ValuesStreamPart",
    "unwrap_required",
]

START = "__start__"
"""Virtual source node: edges from START pick the entry node(s)."""

END = "__end__"
"""Virtual sink node: a task whose edges lead only here schedules nothing."""


@dataclass(frozen=True)
class TimeoutPolicy:
    """LangGraph's ``TimeoutPolicy``: ``run_timeout`` caps each try of a node, ``idle_timeout`` ends a try
    that makes no progress for that long (seconds or a ``timedelta``, see :mod:`graphcore.engine.timeouts`);
    ``refresh_on`` says what progress is: ``"auto"`` (stream writes and heartbeats) or ``"heartbeat"``.
    """

    run_timeout: float | timedelta | None = None
    idle_timeout: float | timedelta | None = None
    refresh_on: Literal["auto", "heartbeat"] = "auto"


@dataclass(frozen=True)
class Send:
    """Schedule one task of ``node`` in the next super-step with ``arg`` as its input (G4, map-reduce).

    Each Send is its own task, even when several name the same node; the node receives ``arg`` instead of
    the graph state. ``timeout`` (keyword only), as LangGraph's: this task's timeout instead of the node's,
    as a :class:`TimeoutPolicy` (seconds or a ``timedelta`` are its ``run_timeout``); it is stored with the
    task, so a queued run keeps it. Its values are checked when the Send is scheduled
    (:class:`~graphcore.errors.ConfigError` naming the node).
    """

    node: str
    arg: Any
    timeout: TimeoutPolicy | float | timedelta | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.timeout is not None and not isinstance(self.timeout, TimeoutPolicy):
            object.__setattr__(self, "timeout", TimeoutPolicy(run_timeout=self.timeout))

    def __repr__(self) -> str:
        """LangGraph's: ``Send(node='a', arg=1)``, with ``timeout=...`` when set."""
        shown = "" if self.timeout is None else f", timeout={self.timeout!r}"
        return f"Send(node={self.node!r}, arg={self.arg!r}{shown})"


if TYPE_CHECKING:
    ToolOutputMixin = object
else:
    try:  # a LangChain tool returns a Command as it is, not wrapped in a ToolMessage (as LangGraph's)
        from langchain_core.messages.tool import ToolOutputMixin
    except ImportError:
        ToolOutputMixin = object

N = TypeVar("N")
"""The node names a :class:`Command` may go to, as a return annotation: ``-> Command[Literal["a", "b"]]``."""


@dataclass(frozen=True)
class Command(Generic[N], ToolOutputMixin):
    """A node's return value that updates state and chooses where to go next (G5). Generic as LangGraph's:
    a node annotated ``-> Command[Literal["a", "b"]]`` declares that it may go to ``a`` and ``b`` (its
    ``destinations``; :meth:`graphcore.StateGraph.add_node`).

    Attributes:
        update: channel writes, as a node would return them (dict or None).
        goto: node name(s) or :class:`Send` packets to run in the next super-step, in addition to the
            node's static edges.
        resume: an answer for a pending interrupt (used by the human-in-the-loop layer).
        graph: None for the graph the node belongs to; :attr:`PARENT` sends the command to the graph that
            runs this one as a subgraph (LangGraph's ``Command.PARENT``): its update goes through the
            parent's reducers as the subgraph node's update, ``goto`` names the parent's nodes, and the
            subgraph's own writes are dropped. From a root graph it raises
            :class:`~graphcore.errors.ParentCommand`.
    """

    update: dict[str, Any] | None = None
    goto: str | Send | Sequence[str | Send] = ()
    resume: Any = None
    graph: str | None = None

    PARENT: ClassVar[Literal["__parent__"]] = "__parent__"
    """``Command(graph=Command.PARENT, ...)``: the command is for the parent graph."""

    def __repr__(self) -> str:
        """LangGraph's: the fields that are set (not empty), e.g. ``Command(update={'a': 1}, goto='b')``."""
        contents = ", ".join(
            f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if getattr(self, f.name)
        )
        return f"Command({contents})"


@dataclass(frozen=True)
class Overwrite:
    """Write ``value`` to a reducer channel as is, bypassing its reducer (G2). It wins its super-step, as in
    LangGraph: the channel's other writes of the step are dropped; two Overwrites of one channel in one step
    raise :class:`~graphcore.errors.InvalidUpdateError`."""

    value: Any


@dataclass(frozen=True)
class PendingTask:
    """A task scheduled for the next super-step, as stored in a checkpoint.

    Attributes:
        node: the node to run.
        send: True when the task came from a :class:`Send`; the node then receives ``arg``.
        arg: the Send's payload (None for state-triggered tasks).
        timeout: the Send's timeout, used instead of the node's (None: the node's).
    """

    node: str
    send: bool = False
    arg: Any = None
    timeout: TimeoutPolicy | float | timedelta | None = None


DEFAULT_INTERRUPT_ID = "placeholder-id"
"""The id of an ``Interrupt`` built without one (LangGraph's)."""


@dataclass(frozen=True)
class Interrupt:
    """A pause requested by ``interrupt(value)`` inside a node: a question for a human (G6, R16).

    As LangGraph 1.2's: built as ``Interrupt(value, id=..., response_schema=...)`` (``value`` first,
    positional or by keyword; ``id`` defaults to LangGraph's ``"placeholder-id"``; ``response_schema`` by
    keyword only), equal when ``value``, ``id`` and ``response_schema`` are, printed as
    ``Interrupt(value=..., id='...', response_schema=...)``, and not hashable. graphq's own fields (``node``
    to ``deadline_ms``) do not take part in ``==`` or the repr. Stored by field name
    (:mod:`graphcore.checkpoints.serde`), so the order of the fields is not part of the stored form.

    Attributes:
        value: the payload shown to the human (allow-listed types).
        id: 16 hex digits, sha1 of (task id, call index): unique per call site of a task and stable when the
            node re-runs from the same checkpoint.
        node: the node that asked.
        task_id: the task that asked.
        index: which ``interrupt()`` call of the task, counting from 0.
        created_at: ISO-8601 UTC time of the first time this call site paused.
        deadline_ms: when the request expires, ms since the epoch (``interrupt(value, timeout_s=...)`` or
            the workflow's ``request_timeout_s``, counted from ``created_at``; R13), None without one.
        response_schema: the JSON Schema (a dict) of the answer the asker expects, from
            ``interrupt(value, response_schema=...)`` (a class given there is stored as its JSON Schema);
            None without one. A class given here directly is kept as it is, but cannot be stored.
    """

    value: Any = field(repr=False)
    id: str = field(default=DEFAULT_INTERRUPT_ID, repr=False)
    node: str = field(default="", compare=False, repr=False)
    task_id: str = field(default="", compare=False, repr=False)
    index: int = field(default=0, compare=False, repr=False)
    created_at: str = field(default="", compare=False, repr=False)
    deadline_ms: int | None = field(default=None, compare=False, repr=False)
    response_schema: dict[str, Any] | type | None = field(default=None, kw_only=True, repr=False)

    __hash__: ClassVar[None] = None  # type: ignore[assignment]  # unhashable, as LangGraph's

    def __repr__(self) -> str:
        return f"Interrupt(value={self.value!r}, id={self.id!r}, response_schema={self.response_schema!r})"


OutputT = TypeVar("OutputT")
StateT = TypeVar("StateT")


@dataclass(frozen=True)
class GraphOutput(Generic[OutputT]):
    """What ``invoke``/``ainvoke`` return with ``version="v2"``, as LangGraph's.

    Attributes:
        value: the run's result: the final state (narrowed to the output schema; a model instance for a
            pydantic or dataclass output schema), the root value, or None.
        interrupts: the open requests of a run that paused in ``interrupt()``, in task order; () otherwise.
    """

    value: OutputT
    interrupts: tuple[Interrupt, ...] = ()

    def __getitem__(self, key: str) -> Any:
        """Deprecated (as in LangGraph): ``result["__interrupt__"]`` is ``interrupts``, another key reads
        ``value``'s key or attribute.

        Raises:
            KeyError: ``value`` has no such key or attribute."""
        _deprecated_access("result[key]")
        if key == "__interrupt__":
            return self.interrupts
        if isinstance(self.value, dict):
            return self.value[key]
        try:
            return getattr(self.value, key)
        except AttributeError:
            raise KeyError(key) from None

    def __contains__(self, key: object) -> bool:
        """Deprecated (as in LangGraph): whether ``__getitem__`` would find ``key``."""
        _deprecated_access("key in result")
        if key == "__interrupt__":
            return bool(self.interrupts)
        if isinstance(self.value, dict):
            return key in self.value
        return isinstance(key, str) and hasattr(self.value, key)


class ValuesStreamPart(TypedDict, Generic[OutputT]):
    """A ``values`` part of ``stream(..., version="v2")``: the state, the open requests apart."""

    type: Literal["values"]
    ns: tuple[str, ...]
    data: OutputT
    interrupts: tuple[Interrupt, ...]


class UpdatesStreamPart(TypedDict):
    """An ``updates`` part: ``{node: update}`` (or ``{"__interrupt__": (Interrupt, ...)}``)."""

    type: Literal["updates"]
    ns: tuple[str, ...]
    data: dict[str, Any]


class MessagesStreamPart(TypedDict):
    """A ``messages`` part: ``(message, metadata)``."""

    type: Literal["messages"]
    ns: tuple[str, ...]
    data: tuple[Any, dict[str, Any]]


class CustomStreamPart(TypedDict):
    """A ``custom`` part: what a node gave its stream writer."""

    type: Literal["custom"]
    ns: tuple[str, ...]
    data: Any


class CheckpointStreamPart(TypedDict, Generic[StateT]):
    """A ``checkpoints`` part: the checkpoint's payload (``values`` of the state's class)."""

    type: Literal["checkpoints"]
    ns: tuple[str, ...]
    data: dict[str, Any]


class TasksStreamPart(TypedDict):
    """A ``tasks`` part: a task's start or its result."""

    type: Literal["tasks"]
    ns: tuple[str, ...]
    data: dict[str, Any]


class DebugStreamPart(TypedDict, Generic[StateT]):
    """A ``debug`` part: ``{"step", "timestamp", "type", "payload"}``."""

    type: Literal["debug"]
    ns: tuple[str, ...]
    data: dict[str, Any]


StreamPart = TypeAliasType(
    "StreamPart",
    ValuesStreamPart[OutputT]
    | UpdatesStreamPart
    | MessagesStreamPart
    | CustomStreamPart
    | CheckpointStreamPart[StateT]
    | TasksStreamPart
    | DebugStreamPart[StateT],
    type_params=(StateT, OutputT),
)
"""A part of ``stream(..., version="v2")``, as LangGraph's: tell them apart by ``part["type"]``."""


def _deprecated_access(form: str) -> None:
    warn_caller(
        f"Accessing GraphOutput via `{form}` is deprecated. Use `result.value` to access the output value "
        "directly, or `result.interrupts` for interrupts.",
        DeprecationWarning,
    )


@dataclass(frozen=True)
class Stop:
    """Where a run stopped at a static breakpoint (:mod:`graphcore.engine.breakpoints`).

    Attributes:
        when: ``"before"`` (the next step's tasks include ``nodes``) or ``"after"`` (the step just run ran
            them).
        nodes: the breakpoint nodes concerned, in task order.
    """

    when: Literal["before", "after"]
    nodes: tuple[str, ...]


@dataclass
class TaskWrites:
    """What one finished task produced; persisted as the task's pending writes (I2).

    Attributes:
        task_id: the task's deterministic id (stable across re-execution of the step).
        node: the node that ran.
        writes: ``(channel, value)`` pairs in the order the node returned them.
        goto: dynamic destinations from routers and Commands, in order.
        interrupts: set when the node paused in ``interrupt()`` (then there are no writes): the task is not
            finished and runs again once answered.
        resume: for a paused task, the answers its earlier ``interrupt()`` calls already consumed, in order.
        stopped: set when a graph the node ran stopped at one of its static breakpoints (then there are no
            writes): the task is not finished, its parent stops too, and nothing of it is stored (it runs
            again when the run goes on, and that graph passes the breakpoint).
        cached: the writes came from the node's cache (:mod:`graphcore.engine.cache`), the node did not run.
        from_subgraph: the writes are the update of a ``Command(graph=Command.PARENT)`` that a graph the
            node ran sent up (:mod:`graphcore.engine.parent`); LangGraph's node run failed with it, so the
            ``messages`` stream shows none of them. Not stored.
    """

    task_id: str
    node: str
    writes: list[tuple[str, Any]] = field(default_factory=list)
    goto: list[PendingTask] = field(default_factory=list)
    interrupts: list[Interrupt] = field(default_factory=list)
    resume: list[Any] = field(default_factory=list)
    stopped: Stop | None = None
    cached: bool = False
    from_subgraph: bool = False


def unwrap_required(annotation: Any) -> Any:
    """``Required[T]`` / ``NotRequired[T]`` (TypedDict key markers, nested too) → ``T``; anything else
    unchanged."""
    while typing.get_origin(annotation) in (typing.Required, typing.NotRequired):
        annotation = typing.get_args(annotation)[0]
    return annotation
