"""Stream modes (C6): which events a run emits, their payloads and how they reach the caller, as LangGraph's.

The payloads are LangGraph's: ``updates`` ``{node: update}`` per task (``None`` for a task that wrote
nothing; ``{"__interrupt__": (Interrupt, ...)}`` per task that paused), ``values`` the state after the input
and after each super-step that wrote a channel (and, on a pause, once per paused task with its interrupts,
then with the finished tasks' writes applied), ``tasks`` a start and a result event per task, ``checkpoints``
a snapshot-like dict per checkpoint saved (only with a checkpointer, the input checkpoint included),
``debug`` both wrapped in ``{"step", "timestamp", "type", "payload"}``. ``graphq runs watch`` prints a
queued run's ``checkpoints`` lines with :func:`checkpoint_payload` too.

:func:`stream_run` drives ``CompiledGraph.stream``. When events must arrive while a step runs (``custom``
chunks, each task's ``updates`` and ``tasks`` result as the task finishes, and with ``subgraphs=True`` the
events of graphs running inside the step's tasks) the run goes on in a thread of its own and the caller reads
its events from a queue; otherwise (``values``, ``checkpoints`` only) it runs in the caller's thread. As
LangGraph's, a step's task results come in the order its tasks finish; ``values`` and ``checkpoints`` at its
end.
"""

from __future__ import annotations

import contextvars
import logging
import queue
import threading
from collections.abc import Callable, Collection, Generator, Iterator, Mapping, Sequence
from concurrent.futures import wait
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from graphcore.checkpoints.model import Checkpoint, shown_metadata
from graphcore.engine.algo import Task, apply_writes, prepare_tasks, task_id
from graphcore.engine.compiled import GraphSpec
from graphcore.engine.config import (
    RunConfig,
    Scope,
    TaskContext,
    current_scope,
    current_task_or_none,
    on_worker,
    run_scope,
)
from graphcore.engine.durability import ExitStore
from graphcore.engine.messages_stream import MessagesHandler, Put, known_ids, written
from graphcore.engine.snapshot import checkpoint_config, subgraph_config, task_result
from graphcore.engine.task_metadata import step_metadata
from graphcore.engine.threads import start_thread
from graphcore.errors import GraphqError, warn_caller
from graphcore.types import START, Interrupt, TaskWrites

__all__ = [
    "INTERRUPT_KEY",
    "STREAM_MODES",
    "StepView",
    "check_modes",
    "check_version",
    "checkpoint_payload",
    "custom_writer",
    "debug_text",
    "failed_events",
    "logged_modes",
    "paused_events",
    "paused_view",
    "relay",
    "run_shown",
    "show_events",
    "start_events",
    "step_events",
    "step_view",
    "stopped_events",
    "stream_part",
    "stream_run",
    "task_labels",
    "task_payload",
    "task_start_payload",
    "update_payload",
    "v2_parts",
]

STREAM_MODES = ("values", "updates", "custom", "messages", "tasks", "checkpoints", "debug")

INTERRUPT_KEY = "__interrupt__"
"""Key of the open requests in ``invoke``'s result and in ``updates``/``values`` events when a run pauses."""

DEBUG_MODES = ("updates", "values")
"""What ``debug=True`` prints (LangGraph's: these two modes' events)."""

log = logging.getLogger("graphq.debug")

Event = tuple[str, Any]
"""``(mode, payload)``."""

Run = Iterator[tuple[list[Event], Checkpoint, list[Interrupt]]]
"""What ``CompiledGraph._execute`` yields: each step's events, its checkpoint, the interrupts it paused on."""


def check_modes(stream_mode: str | Sequence[str]) -> list[str]:
    """``stream_mode`` as a list of modes, without the unknown ones: LangGraph accepts an unknown mode and
    yields nothing for it; graphq does the same and warns (a UserWarning naming the modes)."""
    modes = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
    bad = [m for m in modes if m not in STREAM_MODES]
    if bad:
        warn_caller(f"unknown stream mode(s) {bad} yield nothing; known: {list(STREAM_MODES)}")
    return [m for m in modes if m in STREAM_MODES]


@dataclass(frozen=True)
class _Sink:
    """Where a streamed run's events go while it runs: the consumer's queue (``put``; None for a graph below
    a stream without ``subgraphs=True``), with the namespace of the graph emitting (``()`` for the stream's
    own graph, ``("node:task_id", ...)`` for graphs running inside its tasks), and ``also`` the sink of an
    enclosing stream (``subgraphs=True``) that this stream runs inside a task of, which sees them too.

    ``owner`` is the task the stream was started in (None at the top), or for a graph running inside a
    task of a ``subgraphs=True`` stream that task: the graph the sink is for runs there.
    """

    put: Callable[[tuple[tuple[str, ...], str, Any]], None] | None
    modes: tuple[str, ...]
    subgraphs: bool
    ns: tuple[str, ...] = ()
    owner: TaskContext | None = None
    also: _Sink | None = None

    def emit(self, events: Sequence[Event]) -> None:
        for mode, payload in events:
            if self.put is not None and mode in self.modes:
                self.put((self.ns, mode, payload))
            if self.also is not None and mode != "custom":  # custom chunks go to the innermost stream only
                self.also.emit([(mode, payload)])

    def wanted(self) -> tuple[str, ...]:
        """The modes some consumer of this sink wants."""
        own = self.modes if self.put is not None else ()
        enclosing = [m for m in self.also.wanted() if m != "custom"] if self.also else []
        return tuple(dict.fromkeys((*own, *enclosing)))

    def child(self, task: TaskContext, scope: Scope) -> _Sink | None:
        """The sink of a graph running inside ``task`` (checkpointing in ``scope``), None when no consumer
        shows it."""
        also = self.also.child(task, scope) if self.also is not None else None
        put = self.put if self.subgraphs else None
        if put is None and also is None:
            return None
        return _Sink(put, self.modes, self.subgraphs, _namespace(self.ns, task, scope), task, also)


_sink: contextvars.ContextVar[_Sink | None] = contextvars.ContextVar("graphq_stream_sink", default=None)


def _enclosing(scope: Scope) -> _Sink | None:
    """The sink for a graph starting now inside a task of a streamed run, None when there is none (or none
    that shows it)."""
    sink, task = _sink.get(), current_task_or_none()
    if sink is None or task is None or task is sink.owner:
        return None
    return sink.child(task, scope)


def _own_sink() -> _Sink | None:
    """The sink of the graph running now in this thread's task (None at the top), if it streams live."""
    sink = _sink.get()
    return sink if sink is not None and sink.owner is current_task_or_none() else None


def custom_writer(modes: Sequence[str] | None, buffer: list[Event]) -> Callable[[Task, Any], None]:
    """The ``get_stream_writer()`` sink of a run's tasks: straight to the consumer when the run streams
    ``custom`` live, else into ``buffer`` (emitted after the step; dropped when nobody streams). As
    LangGraph's, a chunk goes to the innermost stream showing the graph, not to enclosing ones."""
    sink = _sink.get()
    if modes is not None and "custom" in modes and sink is not None and sink.put and "custom" in sink.modes:
        put, ns = sink.put, sink.ns
        return lambda task, chunk: put((ns, "custom", chunk))
    return lambda task, chunk: buffer.append(("custom", chunk))


def messages_sink(modes: Sequence[str] | None) -> tuple[Put, bool, bool] | None:
    """Where a run's ``messages`` events go, straight to the consumer (they are live), under the run's
    namespace and the one given below it; whether the stream shows subgraphs; whether the run is relayed
    to an enclosing stream (a graph run in a task of a ``subgraphs=True`` stream, not a stream of its own).
    None when the run does not stream them (:mod:`graphcore.engine.messages_stream`)."""
    sink = _sink.get()
    if modes is None or "messages" not in modes or sink is None or sink.put is None:
        return None
    if "messages" not in sink.modes:
        return None
    put, ns = sink.put, sink.ns
    return (lambda below, pair: put(((*ns, *below), "messages", pair))), sink.subgraphs, ns != ()


def relay(modes: Sequence[str] | None, scope: Scope, run: Callable[[Sequence[str] | None], Run]) -> Run:
    """Run a graph; when it is invoked inside a task of a run streamed with ``subgraphs=True``, its events
    go to that stream (with the stream's modes) under its namespace as they happen.

    The namespace is the parent's and the task's ``node:task_id`` (``("node:task_id", ...)``), as
    LangGraph's, then the rest of the graph's checkpoint namespace below it (``"1"`` for the task's second
    graph call). A graph that is itself streamed (``modes`` given) is relayed by :func:`stream_run`.
    """
    child = _enclosing(scope) if modes is None else None
    if child is None:
        yield from run(modes)
        return
    token = _sink.set(child)
    try:
        steps: list[tuple[list[Event], Checkpoint, list[Interrupt]]] = []
        for events, cp, paused in run(child.wanted()):
            child.emit(events)
            steps.append(([], cp, paused))
    finally:
        _sink.reset(token)
    yield from steps


def _namespace(parent: tuple[str, ...], task: TaskContext, scope: Scope) -> tuple[str, ...]:
    """The stream namespace of the graph ``task`` runs in ``scope``, below its parent's (``parent``):
    ``(*parent, "node:task_id")``, then its call index; for a ``checkpointer=True`` subgraph its checkpoint
    namespace without task ids (``("node",)``, ``("outer", "node")``), as LangGraph's."""
    base = f"{task.node}:{task.task_id}"
    outer = current_scope()
    depth = len(outer.ns.split("|")) if outer is not None and outer.ns else 0
    parts = scope.ns.split("|") if scope.ns else []
    below = parts[depth:]
    if below[:1] == [task.node]:  # stateful: no task id in its namespace
        return tuple(parts[depth - len(parent) :])
    return (*parent, base, *(below[1:] if below[:1] == [base] else []))


def _wants(modes: Sequence[str] | None, *names: str) -> bool:
    return modes is not None and any(m in modes for m in names)


def _debug(cp_step: int, kind: str, payload: Any) -> Event:
    ts = datetime.now(UTC).isoformat()
    return "debug", {"step": cp_step, "timestamp": ts, "type": kind, "payload": payload}


def _checkpoint_events(graph: GraphSpec, modes: Sequence[str], cp: Checkpoint, scope: Scope) -> list[Event]:
    if scope.store is None or not _wants(modes, "checkpoints", "debug"):
        return []  # LangGraph: no checkpointer, no checkpoint events
    if isinstance(scope.store, ExitStore):  # durability="exit": name no checkpoint that is never saved
        cp = scope.store.as_saved(scope.thread_id, cp, ns=scope.ns)
    payload = checkpoint_payload(cp, scope.thread_id, scope.ns, graph, scope.parents)
    events: list[Event] = [("checkpoints", payload)] if "checkpoints" in modes else []
    return events + ([_debug(cp.step, "checkpoint", payload)] if "debug" in modes else [])


def _start_events(
    graph: GraphSpec,
    modes: Sequence[str],
    cp: Checkpoint,
    labels: Mapping[str, Any] | None,
    remaining: int | None,
) -> list[Event]:
    """The start of the tasks of the step after ``cp``; their input holds the schema's managed values of a
    step leaving ``remaining`` super-steps, as the nodes see them (LangGraph's)."""
    if not cp.next_tasks or not _wants(modes, "tasks", "debug"):
        return []
    events: list[Event] = []
    for task in prepare_tasks(graph, cp, remaining):
        payload = task_start_payload(graph, task, cp, _task_metadata(labels, graph.nodes[task.node].metadata))
        events += [("tasks", payload)] if "tasks" in modes else []
        events += [_debug(cp.step + 1, "task", payload)] if "debug" in modes else []
    return events


def _result_events(
    graph: GraphSpec, modes: Sequence[str], r: TaskWrites, step: int, values: Any
) -> list[Event]:
    events: list[Event] = []
    if r.stopped is not None:  # a graph it ran stopped at a breakpoint: shown once for the step
        return events
    if r.interrupts:
        paused = tuple(r.interrupts)
        events += [("updates", {INTERRUPT_KEY: paused})] if "updates" in modes else []
        if "values" in modes:  # the state and the task's interrupts (only those for a root-channel state)
            state = values if isinstance(values, dict) else {}
            events.append(("values", {**state, INTERRUPT_KEY: paused}))
    elif "updates" in modes:  # a cached task's is marked so, as LangGraph's
        cached = {"__metadata__": {"cached": True}} if r.cached else {}
        events.append(("updates", {**update_payload(graph, r), **cached}))
    if _wants(modes, "tasks", "debug") and not r.cached:
        payload = task_payload(r)
        events += [("tasks", payload)] if "tasks" in modes else []
        events += [_debug(step, "task_result", payload)] if "debug" in modes else []
    return events


def start_events(
    graph: GraphSpec,
    modes: Sequence[str] | None,
    made: Sequence[Checkpoint],
    scope: Scope,
    *,
    since: str,
    input: Any,
    done: Mapping[str, TaskWrites],
    labels: Mapping[str, Any] | None = None,
    custom: Sequence[Event] = (),
    remaining: int | None = None,
) -> list[Event]:
    """The events before a run's first step, ``made[-1]`` the checkpoint it runs from, in LangGraph's
    order: the ``custom`` chunks buffered while the input was applied (its routers from START wrote them),
    the checkpoints of ``made`` this run wrote (created since ``since``, an ISO time: the input checkpoint
    and the input applied, or a fork) with ``values`` (the input state when the input wrote; on a resume
    the current state) just before ``made[-1]``'s, the start of the step's tasks (all of them, on a resume
    too; their input with the managed values of a step leaving ``remaining`` super-steps), then an
    ``updates`` chunk ``{node: update, "__metadata__": {"cached": True}}`` per task that finished before
    (``done``: its pending writes, which are replayed, not run; no ``tasks`` result for it, as
    LangGraph's). ``labels``: :func:`task_labels`."""
    if not modes:
        return []
    events: list[Event] = [e for e in custom if "custom" in modes]
    cp = made[-1]
    fresh = cp.created_at >= since
    for made_cp in made[:-1]:
        if made_cp.created_at >= since:
            events += _checkpoint_events(graph, modes, made_cp, scope)
    if "values" in modes and (not fresh or not isinstance(input, Mapping) or input):
        events.append(("values", graph.schema.values_of(cp.channel_values)))
    if fresh:
        events += _checkpoint_events(graph, modes, cp, scope)
    events += _start_events(graph, modes, cp, labels, remaining)
    if "updates" in modes:
        replayed = [r for r in done.values() if not r.interrupts]
        cached = {"__metadata__": {"cached": True}}
        events += [("updates", {**update_payload(graph, r), **cached}) for r in replayed]
    return events


class StepView:
    """Which task results of a super-step a stream emits, and when, as LangGraph's: each task's ``updates``
    and ``tasks`` result as the task finishes (:meth:`finished`, ``run_step``'s ``on_task_done``, called
    from the task's thread), so in the order the tasks finish; never those of tasks replayed from pending
    writes (shown at the run's start).

    The events go to the run's live sink when it has one (:func:`stream_run` runs it in a thread of its
    own); otherwise, when several tasks run, :func:`run_shown` runs the step in a thread and hands them
    over as they come. A step of one task, or a run streaming no task results, emits them at its end.

    ``cp`` is the checkpoint the step starts from, ``replayed`` the ids of the tasks not run again (finished,
    or paused with no answer yet).
    """

    def __init__(
        self,
        graph: GraphSpec,
        modes: Sequence[str],
        cp: Checkpoint,
        replayed: Collection[str],
        shows: MessagesHandler | None = None,
        ns: str = "",
        metadata: Mapping[str, Any] | None = None,
    ):
        self.graph, self.modes, self.cp, self.replayed = graph, modes, cp, replayed
        wanted = _wants(modes, "updates", "tasks", "debug")
        self.sink = _own_sink() if wanted else None
        several = len(cp.next_tasks) - len(replayed) > 1
        self.parts: queue.SimpleQueue[Any] | None = (
            queue.SimpleQueue() if wanted and self.sink is None and several else None
        )
        self.shows = shows  # the run's `messages` handler: a task's written messages, as it finishes
        self.known = known_ids(cp.channel_values) if shows is not None else set()
        tasks = step_metadata(cp, ns) if shows is not None else {}
        self.tasks = {tid: {**(metadata or {}), **labels} for tid, labels in tasks.items()}
        self.live = self.sink is not None or self.parts is not None or shows is not None

    def finished(self, r: TaskWrites) -> None:
        """A task finished (or paused): the messages it wrote (``messages`` mode), then its result events,
        to the sink or to :func:`run_shown`."""
        if self.shows is not None:
            written(self.shows, r, self.known, self.tasks)
        if self.sink is None and self.parts is None:
            return
        state = self.graph.schema.values_of(self.cp.channel_values) if r.interrupts else None
        events = _result_events(self.graph, self.modes, r, self.cp.step + 1, state)
        if self.sink is not None:
            self.sink.emit(events)
        elif self.parts is not None:
            self.parts.put(events)

    def rest(self, results: Sequence[TaskWrites]) -> list[TaskWrites]:
        """The results still to emit at the step's end, in task order: those not shown as they finished, and
        a task still waiting for an answer (not run again: LangGraph's runs and pauses again)."""
        if self.live:
            return [r for r in results if r.interrupts and r.task_id in self.replayed]
        return [r for r in results if r.interrupts or r.task_id not in self.replayed]


def step_view(
    graph: GraphSpec,
    modes: Sequence[str] | None,
    cp: Checkpoint,
    replayed: Collection[str],
    shows: MessagesHandler | None = None,
    ns: str = "",
    metadata: Mapping[str, Any] | None = None,
) -> StepView | None:
    """A :class:`StepView` for the step after ``cp``, None when the run streams nothing (``invoke``);
    ``shows``: the run's ``messages`` handler, if it streams them; ``ns``: the graph's namespace;
    ``metadata``: the run config's, shown with each task's in the metadata of the messages it writes
    (LangGraph's)."""
    return StepView(graph, modes, cp, replayed, shows, ns, metadata) if modes else None


R = TypeVar("R")


def run_shown(
    view: StepView | None, cp: Checkpoint, scope: Scope, step: Callable[..., R]
) -> Generator[tuple[list[Event], Checkpoint, list[Interrupt]], None, R]:
    """Run a super-step, ``step(on_task_done=...)`` (``run_step`` with its other arguments bound) under
    ``run_scope(scope)``, and return its result. When ``view`` hands results over itself (several tasks,
    no live sink), the step runs in a thread of its own (in a copy of this context) while this generator
    yields ``(events, cp, [])`` as its tasks finish; closed early, it still waits for the step's end."""
    hook = view.finished if view is not None and view.live else None
    parts = view.parts if view is not None else None
    if parts is None:
        with run_scope(scope):
            return step(on_task_done=hook)

    def in_scope() -> R:
        with run_scope(scope):
            return step(on_task_done=hook)

    future = start_thread(in_scope, "graphq-stream-step")
    future.add_done_callback(lambda _: parts.put(_DONE))
    try:
        while (events := parts.get()) is not _DONE:
            yield events, cp, []
    finally:
        wait([future])
    return future.result()


def task_labels(cfg: RunConfig) -> dict[str, Any]:
    """What the ``tasks`` start payloads' ``metadata`` is made of (LangGraph's): the run's metadata (inside a
    task, the task's first: a graph invoked in a node inherits it, as LangGraph's config) without the keys
    LangGraph keeps to itself, and its tags (LangGraph's ``seq:step:*`` dropped)."""
    task = current_task_or_none()
    outer = task.config if task is not None else None
    meta = {**(outer.metadata if outer is not None else {}), **cfg.metadata}
    tags = list(dict.fromkeys([*(outer.tags if outer is not None else []), *cfg.tags]))
    return {
        "metadata": {k: v for k, v in meta.items() if k not in _PRIVATE_METADATA},
        "tags": [t for t in tags if not t.startswith("seq:step")],
    }


_PRIVATE_METADATA = frozenset(
    {"thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map", "langgraph_step", "langgraph_node"}
    | {"langgraph_triggers", "langgraph_path", "langgraph_checkpoint_ns"}
)
"""Metadata keys LangGraph leaves out of a ``tasks`` start payload."""


def step_events(
    graph: GraphSpec,
    modes: Sequence[str] | None,
    custom: list[Event],
    results: Sequence[TaskWrites],
    cp: Checkpoint,
    scope: Scope,
    view: StepView | None = None,
    labels: Mapping[str, Any] | None = None,
    remaining: int | None = None,
) -> list[Event]:
    """The events of a committed step, ``cp`` its new checkpoint: buffered ``custom`` chunks, each task's
    ``updates`` and ``tasks`` result (those ``view`` has not shown), ``values`` when a task wrote, the
    checkpoint, the next tasks' start (``labels``: :func:`task_labels`; their input with the managed values
    of a step leaving ``remaining`` super-steps)."""
    if not modes:
        return []
    events = [e for e in custom if "custom" in modes]
    for r in view.rest(results) if view is not None else results:
        events += _result_events(graph, modes, r, cp.step, None)
    if "values" in modes and any(r.writes for r in results):
        events.append(("values", graph.schema.values_of(cp.channel_values)))
    events += _checkpoint_events(graph, modes, cp, scope)
    return events + _start_events(graph, modes, cp, labels, remaining)


def failed_events(
    graph: GraphSpec,
    modes: Sequence[str],
    custom: list[Event],
    results: Sequence[TaskWrites],
    cp: Checkpoint,
    error: BaseException,
    view: StepView | None = None,
) -> list[Event]:
    """The events of a step that failed, before its error is raised: buffered ``custom`` chunks, the
    finished tasks' ``updates`` and ``tasks`` results (those ``view`` has not shown), and the failed task's
    result with its error (the node's own exception), as LangGraph's."""
    events = [e for e in custom if "custom" in modes]
    for r in view.rest(results) if view is not None else results:
        events += _result_events(graph, modes, r, cp.step + 1, None)
    if not _wants(modes, "tasks", "debug"):
        return events
    done = {r.task_id for r in results}
    failed = [t for t in prepare_tasks(graph, cp) if t.id not in done]
    node = getattr(error, "node", None)
    task = next((t for t in failed if t.node == node), failed[0] if failed else None)
    if task is not None:
        cause = getattr(error, "error", error)
        payload: dict[str, Any] = {"id": task.id, "name": task.node, "error": cause}
        payload.update(result={}, interrupts=[])
        events += [("tasks", payload)] if "tasks" in modes else []
        events += [_debug(cp.step + 1, "task_result", payload)] if "debug" in modes else []
    return events


def paused_view(graph: GraphSpec, cp: Checkpoint, results: Sequence[TaskWrites]) -> Checkpoint:
    """``cp`` with the writes of a paused step's finished tasks applied, unsaved: the state ``invoke``
    returns and the last ``values`` event shows on a pause, as LangGraph's (its pending writes applied).
    ``cp`` itself when no finished task wrote, or when their writes conflict (the error comes on resume)."""
    done = [r for r in results if not r.interrupts and r.stopped is None]
    if not any(r.writes for r in done):
        return cp
    try:
        return apply_writes(graph, cp, done, cp.metadata)
    except GraphqError:
        return cp


def paused_events(
    graph: GraphSpec,
    modes: Sequence[str] | None,
    custom: list[Event],
    results: Sequence[TaskWrites],
    cp: Checkpoint,
    view: Checkpoint,
    shown: StepView | None = None,
) -> list[Event]:
    """The events of a step that paused in ``interrupt()``: per task (those ``shown`` has not shown) its
    ``updates`` (for a paused task ``{"__interrupt__": (Interrupt, ...)}`` and a ``values`` event with
    them) and ``tasks`` result, then ``values`` with the finished tasks' writes applied (``view``) when they
    wrote."""
    if not modes:
        return []
    events = [e for e in custom if "custom" in modes]
    state = graph.schema.values_of(cp.channel_values)
    for r in shown.rest(results) if shown is not None else results:
        events += _result_events(graph, modes, r, cp.step + 1, state)
    if "values" in modes and view is not cp:
        events.append(("values", graph.schema.values_of(view.channel_values)))
    return events + (stopped_events(modes) if any(r.stopped for r in results) else [])


def stopped_events(modes: Sequence[str] | None) -> list[Event]:
    """The events of a stop at a static breakpoint, the run's own or one of a graph a task ran: one
    ``updates`` chunk ``{"__interrupt__": ()}`` (LangGraph's)."""
    return [("updates", {INTERRUPT_KEY: ()})] if modes and "updates" in modes else []


def update_payload(graph: GraphSpec, r: TaskWrites) -> dict[str, Any]:
    """A finished task's ``updates`` chunk (LangGraph's), in process and in a queued run's events:
    ``{node: update}``, ``{node: None}`` for a task that wrote nothing."""
    return {r.node: graph.schema.update_of(r.writes) if r.writes else None}


def task_start_payload(
    graph: GraphSpec, task: Task, cp: Checkpoint, metadata: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A task about to run, as the ``tasks`` mode shows it (LangGraph's): id, node name, input, triggers
    (``__pregel_push`` for a Send, else the node's: :func:`_node_triggers`), and ``metadata`` when it is not
    empty (:func:`_task_metadata`)."""
    pending = cp.next_tasks[task.index]
    triggers = ("__pregel_push",) if pending.send else _node_triggers(graph, task.node)
    payload = {"id": task.id, "name": task.node, "input": task.input, "triggers": triggers}
    return {**payload, "metadata": dict(metadata)} if metadata else payload


def _node_triggers(graph: GraphSpec, node: str) -> tuple[str, ...]:
    """The triggers LangGraph names for a task of ``node`` however it was scheduled (edge, router, join,
    ``Command(goto=...)``): every channel the node listens to, sorted — ``branch:to:<node>``, and
    ``join:<a>+<b>:<node>`` for each join into it (``add_edge(["a", "b"], node)``, sources as given)."""
    joins = {f"join:{'+'.join(sources)}:{node}" for _, sources, target in graph.joins if target == node}
    return tuple(sorted({f"branch:to:{node}", *joins}))


def _task_metadata(labels: Mapping[str, Any] | None, node_metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A task start payload's ``metadata`` (LangGraph's): the run's metadata, the node's, then the run's
    tags as ``"tags": [...]`` when it has any (``labels``: :func:`task_labels`)."""
    meta = {**(labels["metadata"] if labels else {}), **node_metadata}
    if labels and labels["tags"]:
        meta["tags"] = list(labels["tags"])
    return meta


def task_payload(tw: TaskWrites) -> dict[str, Any]:
    """A finished (or paused) task as the ``tasks`` mode shows it (LangGraph's): id, node name, error
    (None: a failed task raises instead), result (channel → value written; ``{"$writes": [...]}`` for a
    channel written several times), interrupts (``[{"value", "id"}]``)."""
    interrupts = [{"value": i.value, "id": i.id, "response_schema": i.response_schema} for i in tw.interrupts]
    result = task_result(tw.writes)
    return {"id": tw.task_id, "name": tw.node, "error": None, "result": result, "interrupts": interrupts}


def checkpoint_payload(
    cp: Checkpoint,
    thread_id: str,
    ns: str = "",
    graph: GraphSpec | None = None,
    parents: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A saved checkpoint as the ``checkpoints`` mode shows it (LangGraph's): ``config`` and
    ``parent_config`` (:func:`checkpoint_config`: ``{"configurable": {"thread_id", "checkpoint_ns",
    "checkpoint_id"}}``, a subgraph's with its ``checkpoint_map``; None without a parent), ``values`` (as
    ``graph``'s schema shows them: the value itself for a root-channel state; without ``graph`` the channel
    values), ``metadata`` (``source``, ``step``, ``parents``: namespace → checkpoint id of the graphs it
    runs in, :func:`~graphcore.checkpoints.model.shown_metadata`), ``next`` (node names) and ``tasks``
    (``{"id", "name", "interrupts": (), "state"}`` each: with ``graph``, a subgraph task's config,
    :func:`subgraph_config`; else None)."""
    return {
        "config": checkpoint_config(thread_id, ns, cp.id, parents),
        "parent_config": checkpoint_config(thread_id, ns, cp.parent_id, parents),
        "values": dict(cp.channel_values) if graph is None else graph.schema.values_of(cp.channel_values),
        "metadata": shown_metadata(cp.metadata, dict(parents or {}), copied=False),
        "next": [t.node for t in cp.next_tasks],
        "tasks": [
            _task_entry(graph, thread_id, ns, t.node, task_id(cp.id, i, t.node))
            for i, t in enumerate(cp.next_tasks)
        ],
    }


def _task_entry(graph: GraphSpec | None, thread_id: str, ns: str, node: str, tid: str) -> dict[str, Any]:
    state = None if graph is None else subgraph_config(graph, thread_id, ns, node, tid)
    return {"id": tid, "name": node, "interrupts": (), "state": state}


def logged_modes(debug: bool, print_mode: str | Sequence[str] = ()) -> tuple[str, ...] | None:
    """The modes a run prints (:func:`show_events`): ``updates`` and ``values`` with ``debug=True``, else
    ``print_mode``'s (LangGraph's: ``debug=True`` replaces ``print_mode``); None for none. An unknown mode of
    ``print_mode`` is left out, with a warning (:func:`check_modes`).
    """
    printed = tuple(dict.fromkeys(check_modes(print_mode))) if print_mode else ()
    return (DEBUG_MODES if debug else printed) or None


_BOLD, _YELLOW, _PLAIN = "\033[1m", "\033[1;30;33m", "\033[0m"
"""LangGraph's ANSI codes for a printed event: the mode in bold, a subgraph's namespace yellow."""


def debug_text(mode: str, payload: Any, ns: tuple[str, ...] = (), *, colour: bool = True) -> str:
    """One event as ``debug=True`` and ``print_mode`` show it, LangGraph's printed line: ``[mode] payload``
    (the payload's repr), ``[mode] [graph=('node:<task id>',)] payload`` for an event of a graph run
    inside a task (``subgraphs=True``). ``colour``: LangGraph's ANSI codes (mode bold, namespace yellow),
    printed whether or not stdout is a terminal, as LangGraph's; the logger's lines have none."""
    label, where = f"[{mode}]", f"[graph={ns}]" if ns else ""
    if colour:
        label, where = f"{_BOLD}{label}{_PLAIN}", f"{_YELLOW}{where}{_PLAIN}" if where else ""
    return " ".join(part for part in (label, where, repr(payload)) if part)


def show_events(
    events: Sequence[Event], ns: tuple[str, ...] = (), modes: Sequence[str] = DEBUG_MODES
) -> None:
    """Show the events of ``modes`` (what ``debug=True`` and ``print_mode`` do) as :func:`debug_text`:
    printed to stdout, as LangGraph's; in a queue worker's step job (``on_worker()``,
    :mod:`graphcore.engine.config`) logged at DEBUG on the logger ``graphq.debug``, without colour."""
    for mode, payload in events:
        if mode not in modes:
            continue
        if on_worker():
            if log.isEnabledFor(logging.DEBUG):  # the payload's repr is the whole state: made only if shown
                log.debug("%s", debug_text(mode, payload, ns, colour=False))
        else:
            print(debug_text(mode, payload, ns))


VERSIONS = ("v1", "v2")
"""The chunk shapes of ``stream`` and ``invoke`` (LangGraph's): v1 tuples, v2 typed dicts."""

Part = Callable[[tuple[str, ...], str, Any], dict[str, Any]]
"""Makes a v2 stream part of ``(namespace, mode, payload)``."""


def check_version(version: str) -> None:
    """Check ``stream``'s and ``invoke``'s ``version``: any value but ``"v2"`` gives v1's shapes, as
    LangGraph's does; one that is not ``"v1"`` either is named in a UserWarning."""
    if version not in VERSIONS:
        warn_caller(f"version={version!r} is not 'v1' (tuples) or 'v2' (stream parts); the run gives v1's")


def v2_parts(version: str, output: Callable[[Any], Any], state: Callable[[Any], Any]) -> Part | None:
    """How ``stream`` shapes its chunks for ``version``: None for v1's tuples, else a maker of LangGraph's v2
    stream parts (:func:`stream_part`) that coerces ``values`` data with ``output`` and the state values of
    ``checkpoints``/``debug`` checkpoint payloads with ``state``. Any ``version`` but ``"v2"`` is v1's
    (:func:`check_version` warns of an unknown one).
    """
    if version != "v2":
        return None
    return lambda ns, mode, payload: stream_part(ns, mode, payload, output, state)


def stream_part(
    ns: tuple[str, ...], mode: str, payload: Any, output: Callable[[Any], Any], state: Callable[[Any], Any]
) -> dict[str, Any]:
    """LangGraph's v2 stream part of one v1 event: ``{"type": mode, "ns": namespace, "data": payload}``; a
    ``values`` part moves ``"__interrupt__"`` out of the state into ``"interrupts"`` (a tuple, () for none)
    and its dict data goes through ``output``; a ``checkpoints`` or ``debug`` checkpoint payload's
    ``values`` go through ``state`` except at the input's checkpoint (``next`` holds ``__start__``)."""
    if mode == "values":
        interrupts: tuple[Interrupt, ...] = ()
        if isinstance(payload, dict):
            interrupts = tuple(payload.get(INTERRUPT_KEY, ()))
            payload = output({k: v for k, v in payload.items() if k != INTERRUPT_KEY})
        return {"type": mode, "ns": ns, "data": payload, "interrupts": interrupts}
    if mode in ("checkpoints", "debug"):
        payload = _coerced_checkpoint(payload, state)
    return {"type": mode, "ns": ns, "data": payload}


def _coerced_checkpoint(payload: Any, state: Callable[[Any], Any]) -> Any:
    """A copy of a ``checkpoints`` payload (or a ``debug`` checkpoint event) whose ``values`` went through
    ``state``; other payloads as they are."""
    if not isinstance(payload, dict):
        return payload
    if payload.get("type") == "checkpoint" and isinstance(payload.get("payload"), dict):
        return {**payload, "payload": _coerced_checkpoint(payload["payload"], state)}
    if isinstance(payload.get("values"), dict) and START not in payload.get("next", ()):
        return {**payload, "values": state(payload["values"])}
    return payload


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


_DONE, _STEP = object(), object()


def stream_run(
    open_run: Callable[[Sequence[str]], Iterator[tuple[list[Event], Any, Any]]],
    modes: Sequence[str],
    *,
    single: bool,
    subgraphs: bool,
    logged: Sequence[str] = (),
    part: Part | None = None,
) -> Iterator[Any]:
    """The events of a run as ``stream`` yields them: the payload (one mode), ``(mode, payload)`` (a list of
    modes), ``(namespace, payload)`` / ``(namespace, mode, payload)`` with ``subgraphs=True``; with ``part``
    (``version="v2"``, :func:`v2_parts`), what it makes of ``(namespace, mode, payload)``.

    ``open_run(modes)`` starts the run. The events of the ``logged`` modes are also printed (on a queue
    worker logged, :func:`show_events`), whether streamed or not.
    """
    wanted = tuple(modes)
    run_modes = tuple(dict.fromkeys((*wanted, *logged)))
    outer = _enclosing(Scope(None, ""))  # streamed inside a task of a subgraphs=True stream: it sees this too
    live = subgraphs or "custom" in wanted or "messages" in wanted or outer is not None
    events = _live(open_run, run_modes, subgraphs, outer) if live else _inline(open_run, run_modes)
    for ns, mode, payload in events:
        if logged:
            show_events([(mode, payload)], ns, logged)
        if mode not in wanted:
            continue
        if part is not None:
            yield part(ns, mode, payload)
        elif subgraphs:
            yield (ns, payload) if single else (ns, mode, payload)
        else:
            yield payload if single else (mode, payload)


def _inline(
    open_run: Callable[[Sequence[str]], Iterator[tuple[list[Event], Any, Any]]], modes: Sequence[str]
) -> Iterator[tuple[tuple[str, ...], str, Any]]:
    for events, _, _ in open_run(modes):
        for mode, payload in events:
            yield (), mode, payload


def _live(
    open_run: Callable[[Sequence[str]], Iterator[tuple[list[Event], Any, Any]]],
    modes: Sequence[str],
    subgraphs: bool,
    outer: _Sink | None,
) -> Iterator[tuple[tuple[str, ...], str, Any]]:
    """Run in a thread of its own (in a copy of the caller's context), events handed over by a queue as they
    are emitted. As lazy as LangGraph's: the next super-step starts once the consumer has taken every event
    of the last one and asks for more; closing the iterator stops the run there (waiting for the step in
    flight)."""
    events: queue.SimpleQueue[Any] = queue.SimpleQueue()
    go, stop = threading.Semaphore(0), threading.Event()
    sink = _Sink(events.put, tuple(modes), subgraphs, owner=current_task_or_none(), also=outer)

    def produce() -> None:
        _sink.set(sink)
        run = open_run(sink.wanted())
        try:
            for batch, _, _ in run:
                sink.emit(batch)
                events.put(_STEP)
                go.acquire()
                if stop.is_set():
                    break
        except BaseException as exc:  # handed to the consumer, which raises it
            events.put(_Failed(exc))
        finally:
            run.close()  # type: ignore[attr-defined]
            events.put(_DONE)

    thread = threading.Thread(
        target=contextvars.copy_context().run, args=(produce,), name="graphq-stream", daemon=True
    )
    thread.start()
    try:
        while (item := events.get()) is not _DONE:
            if item is _STEP:
                go.release()
            elif isinstance(item, _Failed):
                raise item.error
            else:
                yield item
    finally:
        stop.set()
        go.release()
        thread.join()
