"""The super-step algorithm (G3–G5), pure: checkpoint in → tasks out; task writes in → checkpoint out.

Both the in-process executor and the queued worker call exactly these functions, so they share semantics.
The Pregel/BSP shape follows LangGraph's ``pregel/_algo.py`` (prepare tasks, apply writes):

1. :func:`prepare_tasks` turns a checkpoint's ``next_tasks`` into runnable :class:`Task` objects with
   deterministic ids (same checkpoint → same ids, which is what makes partial-step recovery work, I2).
2. :func:`run_task` runs one node and its routers; its :class:`TaskWrites` are the task's pending writes.
3. :func:`apply_writes` applies every task's writes at once, in task order, and schedules the next step.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from functools import partial
from typing import Any

from graphcore.checkpoints.model import Checkpoint, new_checkpoint_id
from graphcore.checkpoints.model import task_id as task_id  # kept importable from here
from graphcore.engine.cancel import CancelToken
from graphcore.engine.channels import MISSING
from graphcore.engine.checkpointer import task_ns
from graphcore.engine.compiled import Branch, GraphSpec, NodeSpec, ran_as
from graphcore.engine.config import (
    ANSWERS_KEY,
    NODE_SETTINGS_KEY,
    RESERVED_PREFIX,
    RESUME_KEY,
    TASK_METADATA_KEY,
    RunConfig,
    TaskContext,
    TryInfo,
    progress_callbacks,
    remaining_steps,
    task_context,
)
from graphcore.engine.defer import HELD, hold
from graphcore.engine.interrupts import GraphInterrupt
from graphcore.engine.loops import run_coroutine
from graphcore.engine.nested import refusal
from graphcore.engine.params import keyword_args
from graphcore.engine.parent import for_parent, taking_commands
from graphcore.engine.schema import COMMAND_WRITER, Strictness
from graphcore.engine.task_metadata import PULL, langgraph_metadata, task_paths
from graphcore.engine.timeouts import IdleTimeout, Timeout, node_timeouts
from graphcore.errors import GraphqError, InvalidUpdateError, node_error, warn_caller, where
from graphcore.types import END, START, Command, PendingTask, Send, TaskWrites

__all__ = [
    "COMMAND_TASK_ID",
    "StartTask",
    "Task",
    "applied_input",
    "apply_input",
    "apply_updates",
    "apply_writes",
    "command_entry",
    "fork",
    "input_checkpoint",
    "input_writes",
    "is_input",
    "prepare_tasks",
    "run_task",
    "start_routes",
    "start_run",
    "task_spec",
    "with_command",
    "with_pushed",
]

COMMAND_TASK_ID = "!command"
"""The task id under which a run's input ``Command(update=..., goto=...)`` is saved as a pending write of
the checkpoint it goes on from (LangGraph's ``NULL_TASK_ID``; :func:`command_entry`): never a task's id, so
it marks no task finished."""


@dataclass(frozen=True)
class Task:
    """One node execution in a super-step.

    Attributes:
        id: 16 hex digits, sha1 of (checkpoint id, index, node): stable across re-execution.
        node: the node to run.
        input: the state view, or the Send's argument.
        index: position in the step; writes apply in this order.
        path: LangGraph's ``langgraph_path`` of the task (:func:`~graphcore.engine.task_metadata.task_paths`).
        timeout: its Send's timeout, used instead of the node's (None: the node's; :func:`task_spec`).
    """

    id: str
    node: str
    input: Any
    index: int
    path: tuple[Any, ...] = ()
    timeout: Timeout = None


def task_spec(graph: GraphSpec, task: Task) -> NodeSpec:
    """The node of ``task`` as the task runs it: with its Send's timeout instead of the node's, if any."""
    spec = graph.nodes[task.node]
    if task.timeout is None:
        return spec
    timeout_s, idle = send_timeouts(task.node, task.timeout)
    return dataclasses.replace(spec, timeout_s=timeout_s, idle=idle)


def send_timeouts(node: str, timeout: Timeout) -> tuple[float | None, IdleTimeout | None]:
    """A Send's ``timeout`` to ``node`` as :func:`~graphcore.engine.timeouts.node_timeouts` gives it.

    Raises:
        ConfigError: a timeout LangGraph's ``TimeoutPolicy`` refuses; the message names the Send's node.
    """
    return node_timeouts(f"Send(node={node!r}, timeout=...)", timeout)


def prepare_tasks(
    graph: GraphSpec, cp: Checkpoint, remaining: int | None = None, only: range | None = None
) -> list[Task]:
    """The tasks of the super-step that follows ``cp``, in order.

    Each state-triggered task gets its own view of the state, so a node that assigns into its input does
    not change what a parallel sibling reads (G3). With ``remaining`` (the super-steps the run may still
    take, this one included) the view holds the schema's managed values (:mod:`graphcore.managed`).
    ``only``: the positions of the tasks wanted (a batch of a split step), each task as the whole step
    would have it (same id, index and path); None: all.
    """
    tasks = []
    values = (
        cp.channel_values if remaining is None else graph.schema.with_managed(cp.channel_values, remaining)
    )
    positions = only if only is not None else range(len(cp.next_tasks))
    for index, path in zip(positions, task_paths(cp, positions), strict=True):
        pending = cp.next_tasks[index]
        reads = None if pending.send else graph.nodes[pending.node].reads
        arg = pending.arg if pending.send else graph.schema.reader_of(reads).view(values)
        tasks.append(
            Task(task_id(cp.id, index, pending.node), pending.node, arg, index, path, pending.timeout)
        )
    return tasks


def _apply(
    graph: GraphSpec, values: Mapping[str, Any], writes: Sequence[tuple[str, tuple[str, Any]]]
) -> tuple[dict[str, Any], set[str]]:
    """Apply ``(channel, (node, value))`` writes grouped per channel; returns (new values, changed keys)."""
    grouped: dict[str, list[tuple[str, Any]]] = {}
    for key, write in writes:
        grouped.setdefault(key, []).append(write)
    new = dict(values)
    for key, channel_writes in grouped.items():
        current = new.get(key, MISSING)
        try:
            new[key] = graph.schema.channels[key].update(key, current, channel_writes)
        except GraphqError:
            raise
        except Exception as exc:
            writers = [node for node, _ in channel_writes]
            error = InvalidUpdateError(
                f"reducer of channel {key!r} raised {type(exc).__name__}: {exc} "
                f"(writes from {', '.join(writers)})"
            )
            error.node = writers[0] if len(set(writers)) == 1 else None
            raise error from exc
    if any(key not in values for key in grouped):  # a key's first value: keep LangGraph's key order
        new = graph.schema.in_order(new)
    return new, set(grouped)


def _goto(target: str | Send) -> PendingTask:
    if isinstance(target, Send):
        if target.timeout is not None:
            send_timeouts(target.node, target.timeout)  # bad values fail where the Send is scheduled
        return PendingTask(target.node, send=True, arg=target.arg, timeout=target.timeout)
    return PendingTask(target)


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


def router_input(graph: GraphSpec, branch: Branch, values: Mapping[str, Any]) -> Any:
    """What ``branch``'s router is passed for the channel ``values``: them seen through its own input schema
    (:attr:`Branch.reads`, else the state schema's)."""
    return graph.schema.reader_of(branch.reads).view(values)


def call_router(branch: Branch, state: Any) -> Any:
    """What ``branch``'s router returns for ``state`` (:func:`router_input`): a coroutine for an async
    router."""
    if branch.injects:  # config / writer parameters (graphcore.engine.params)
        return branch.router(state, **keyword_args(branch.injects))
    return branch.router(state)


@contextmanager
def router_errors(branch: Branch) -> Iterator[None]:
    """Around a call of ``branch``'s router (and the await of an async one's result): an ``Exception`` it
    raises leaves as a :class:`~graphcore.errors.NodeError` naming the router and its node (also an
    instance of the router's error type, :func:`~graphcore.errors.node_error`); graphq's own errors pass
    unchanged."""
    try:
        yield
    except GraphqError:
        raise
    except Exception as exc:
        raise node_error(branch.source, exc, router=branch.name) from exc


def _route(
    graph: GraphSpec, branch: Branch, values: Mapping[str, Any], ctx: TaskContext | None = None
) -> list[PendingTask]:
    """The tasks ``branch``'s router chooses on ``values``; in task ``ctx`` (the router's node's), the
    router's call is reported to the task's callbacks (:func:`router_run`)."""
    with routing(ctx, graph, branch, values) as (state, shown):
        chosen = call_router(branch, state)
        if graph.async_routers and inspect.isawaitable(chosen):  # outside a task (START, update_state)
            chosen = run_coroutine(chosen)
        shown(chosen)
    return destinations(graph, branch, chosen)


@contextmanager
def routing(
    ctx: TaskContext | None, graph: GraphSpec, branch: Branch, values: Mapping[str, Any]
) -> Iterator[tuple[Any, Callable[[Any], None]]]:
    """Around one call of ``branch``'s router on the channel ``values`` (sync or awaited): yields what the
    router is passed (:func:`router_input`) and ``shown(chosen)``, to call with what it returned; its
    errors leave as :func:`router_errors` says, and the call is reported to the callbacks of its node's
    task ``ctx`` (:func:`router_run`)."""
    with router_errors(branch):
        state = router_input(graph, branch, values)
        with router_run(ctx, graph, branch, state) as shown:
            yield state, shown


def destinations(graph: GraphSpec, branch: Branch, chosen: Any) -> list[PendingTask]:
    """The next tasks for what a router of ``branch`` returned (names, END, Sends, or a list of them).

    Raises:
        InvalidUpdateError: a name outside the branch's ``path_map``, or a node (or a Send's node) the graph
            does not have; the message names the router and its node.
    """
    out = []
    router = where(branch.source, branch.name)
    for result in _as_list(chosen):
        if isinstance(result, Send):
            if result.node not in graph.nodes:
                raise InvalidUpdateError(f"{router} sent to unknown node {result.node!r}")
            out.append(_goto(result))
            continue
        dest = result
        if branch.path_map is not None:
            if result not in branch.path_map:
                raise InvalidUpdateError(f"{router} returned {result!r}, not one of {list(branch.path_map)}")
            dest = branch.path_map[result]
        if dest != END and dest not in graph.nodes:
            raise InvalidUpdateError(f"{router} returned unknown node {dest!r}")
        out.append(PendingTask(dest))
    return out


def _command_writes(graph: GraphSpec, node: str, update: Any, strict: Strictness) -> list[tuple[str, Any]]:
    """A ``Command(update=...)``'s writes: ``(key, value)`` pairs in their order (a key may repeat), as
    LangGraph's ``_update_as_tuples`` reads a list of them, else :meth:`StateSchema.writes_of`."""
    pairs = isinstance(update, list | tuple) and bool(update) and not graph.schema.root
    if pairs and all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in update):
        return [w for key, value in update for w in graph.schema.writes_of(node, {key: value}, strict=strict)]
    return graph.schema.writes_of(node, update, strict=strict)


def normalise(
    graph: GraphSpec, node: str, output: Any, *, strict: Strictness = False
) -> tuple[list[tuple[str, Any]], list[PendingTask]]:
    """A node's output as (writes, dynamic destinations). A list or tuple holding a Command (LangGraph's,
    e.g. ``ToolNode``'s when a tool returned one) is each of its items in turn: Commands and updates (for a
    root-channel state, values). A Command's ``update`` is a dict, a model, or ``(key, value)`` pairs in
    order, as LangGraph's. Keys that are no channel are ignored with a warning, as LangGraph ignores them
    (:meth:`StateSchema.writes_of`), or as ``strict`` says (``update_state``). A Command's ``resume`` is
    not a write: it is ignored.

    Raises:
        InvalidUpdateError: a ``goto`` to a node the graph does not have; unknown keys when ``strict``.
        ParentCommand: a ``Command(graph=Command.PARENT)`` (for the graph that runs this one).
    """
    if type(output) in (list, tuple) and any(isinstance(item, Command) for item in output):
        writes: list[tuple[str, Any]] = []
        gotos: list[PendingTask] = []
        for item in output:
            more, going = normalise(graph, node, item, strict=strict)
            writes += more
            gotos += going
        return writes, gotos
    if isinstance(output, Command):
        if output.graph is not None:  # Command.PARENT: for the graph that runs this one
            raise for_parent(node, output)
        writes = _command_writes(graph, node, output.update, strict)
        gotos = [_goto(t) for t in _as_list(output.goto)]
        unknown = [t.node for t in gotos if t.node != END and t.node not in graph.nodes]
        if unknown:
            raise InvalidUpdateError(f"node {node!r} returned Command(goto=...) to unknown node(s) {unknown}")
        return writes, gotos
    return graph.schema.writes_of(node, output, strict=strict), []


def with_pushed(graph: GraphSpec, ctx: TaskContext, writes: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """A task's ``writes`` after those of its node's ``push_message()`` calls (LangGraph's order); a
    key that is no channel is dropped with a warning, as in a returned update."""
    if not ctx.pushed:
        return writes
    pushed = [
        w for key, value in ctx.pushed for w in graph.schema.writes_of(ctx.node, {key: value}, strict=False)
    ]
    return [*pushed, *writes]


def _routes(
    graph: GraphSpec,
    node: str,
    values: Mapping[str, Any],
    writes: Sequence[tuple[str, Any]],
    remaining: int | None = None,
    ctx: TaskContext | None = None,
) -> list[PendingTask]:
    """Evaluate ``node``'s conditional edges on the state as the node sees it after its own writes (with the
    managed values of a super-step leaving ``remaining`` steps, when given), in the node's task ``ctx``
    when given."""
    branches = graph.branches_from.get(node, ())
    if not branches:
        return []
    local = route_values(graph, node, values, writes, remaining)
    return [pending for branch in branches for pending in _route(graph, branch, local, ctx)]


def route_values(
    graph: GraphSpec,
    node: str,
    values: Mapping[str, Any],
    writes: Sequence[tuple[str, Any]],
    remaining: int | None = None,
) -> dict[str, Any]:
    """The channel values ``node``'s routers see: ``values`` with the node's own ``writes`` applied, and the
    managed values of a super-step leaving ``remaining`` steps (``StateSchema.with_managed``) when given."""
    base = values if remaining is None else graph.schema.with_managed(values, remaining)
    local, _ = _apply(graph, base, [(key, (node, value)) for key, value in writes])
    return local


def task_config(
    config: RunConfig, step: int, task: Task, settings: Mapping[str, Any] | None = None
) -> RunConfig:
    """``config`` with the task's reserved keys (run, thread, step, task, idempotency key; I1), the
    node's ``settings`` (``NODE_SETTINGS_KEY``, ``{}`` when None; R9), the task's ``checkpoint_ns``
    (``graph_ns|node:task_id``, LangGraph's value in a node's config) and its LangGraph metadata
    (``TASK_METADATA_KEY``)."""
    run = config.run_id or ""
    ns = task_ns(config.checkpoint_ns, task.node, task.id)
    extra = {
        f"{RESERVED_PREFIX}run_id": run,
        f"{RESERVED_PREFIX}thread_id": config.thread_id,
        f"{RESERVED_PREFIX}step": step,
        f"{RESERVED_PREFIX}task_id": task.id,
        f"{RESERVED_PREFIX}node": task.node,
        f"{RESERVED_PREFIX}idempotency_key": f"{run}:{step}:{task.id}",
        NODE_SETTINGS_KEY: settings if settings is not None else {},
        TASK_METADATA_KEY: langgraph_metadata(task.node, step, task.path or (PULL, task.node), ns),
    }
    visible = {k: v for k, v in config.configurable.items() if k not in (RESUME_KEY, ANSWERS_KEY)}
    return config.model_copy(update={"configurable": {**visible, **extra}, "checkpoint_ns": ns})


def run_task(
    graph: GraphSpec,
    cp: Checkpoint,
    task: Task,
    config: RunConfig,
    writer: Callable[[Any], None],
    cancel: CancelToken | None = None,
    attempt: TryInfo | None = None,
) -> TaskWrites:
    """Run one task: the node, then its routers. Exceptions from user code propagate unchanged.

    Args:
        cancel: the task's cancel token, which the node reads through ``get_cancel_token()``.
        attempt: the try (its number, the first's start, its heartbeat: ``runtime.execution_info`` and
            ``runtime.heartbeat``); None: a first try.
        config: the run's config; ``configurable[RESUME_KEY]`` maps task id → answers of its
            ``interrupt()`` calls, in order (see :mod:`graphcore.engine.interrupts`).

    Returns:
        The task's writes and dynamic destinations; or, when the node paused in ``interrupt()``, no writes
        and the :class:`~graphcore.types.Interrupt` record.

    Raises:
        InvalidUpdateError: the node returned something that is not a valid update.
        Cancelled: the task's cancel token was set before the node started.
    """
    ctx = task_setup(graph, cp, task, config, writer, cancel, attempt)
    try:  # the node's run hears the pause (on_chain_error), as LangGraph's
        with node_run(ctx, task.input) as shown, task_context(ctx):
            output = call_node(graph.nodes[task.node], task, ctx.config)
            shown(output)
            writes, goto = normalise(graph, task.node, output)
            writes = with_pushed(graph, ctx, writes)
            goto += _routes(graph, task.node, cp.channel_values, writes, remaining_steps(config), ctx)
    except GraphInterrupt as paused:
        return paused_writes(task, ctx, paused)
    return TaskWrites(task.id, task.node, writes, goto, from_subgraph=ctx.from_subgraph)


def node_run(ctx: TaskContext, input: Any) -> AbstractContextManager[Callable[[Any], None]]:
    """The node's LangChain chain run around its call (:func:`graphcore.engine.lc_runs.node_run`) when the
    task has callbacks and langchain-core is installed; else a block that reports nothing."""
    runs = _lc_runs(ctx)
    return nullcontext(_unreported) if runs is None else runs.node_run(ctx, input)


def router_run(
    ctx: TaskContext | None, graph: GraphSpec, branch: Branch, state: Any
) -> AbstractContextManager[Callable[[Any], None]]:
    """A router's LangChain chain run around its call on ``state`` (:func:`graphcore.engine.lc_runs.
    router_run`) when its node's task ``ctx`` has callbacks and langchain-core is installed; else a block
    that reports nothing."""
    runs = _lc_runs(ctx)
    return nullcontext(_unreported) if runs is None else runs.router_run(ctx, graph, branch, state)


def _lc_runs(ctx: TaskContext | None) -> Any:
    """:mod:`graphcore.engine.lc_runs` when task ``ctx`` has callbacks and langchain-core is installed;
    else None (imported only then: no cost for a run without callbacks)."""
    if ctx is None or ctx.config.callbacks is None:
        return None
    try:
        from graphcore.engine import lc_runs
    except ImportError:
        return None
    return lc_runs


def _unreported(output: Any) -> None:
    return None


def task_setup(
    graph: GraphSpec,
    cp: Checkpoint,
    task: Task,
    config: RunConfig,
    writer: Callable[[Any], None],
    cancel: CancelToken | None,
    attempt: TryInfo | None = None,
) -> TaskContext:
    """The context a task's node runs in (see :func:`run_task`).

    Raises:
        Cancelled: ``cancel`` was set before the node started.
    """
    if cancel is not None:
        cancel.raise_if_cancelled()  # no node starts once its run was cancelled (X3)
    spec = graph.nodes[task.node]
    cfg = task_config(config, cp.step + 1, task, spec.settings)
    if spec.metadata:  # LangGraph's node metadata, in the task config's metadata
        cfg = cfg.model_copy(update={"metadata": {**cfg.metadata, **spec.metadata}})
    if attempt is not None and attempt.progress is not None:  # LangChain events count as progress (auto)
        cfg = progress_callbacks(cfg, attempt.progress)
    resume = list(config.configurable.get(RESUME_KEY, {}).get(task.id, []))
    answers = config.configurable.get(ANSWERS_KEY, {})
    return TaskContext(
        cfg,
        writer,
        cancel or CancelToken(),
        task.id,
        task.node,
        resume,
        answers=answers,
        checkpoint_id=cp.id,
        try_=attempt or TryInfo(),
    )


def call_node(spec: NodeSpec, task: Task, cfg: RunConfig) -> Any:
    """What ``spec``'s function returns for ``task`` (a coroutine for an async node); a Command a graph it
    ran sent up with ``Command.PARENT`` is its result (:mod:`graphcore.engine.parent`)."""
    if spec.injects:  # config / writer parameters (graphcore.engine.params)
        first = (task.input, cfg) if spec.takes_config else (task.input,)
        return taking_commands(spec.fn, *first, **keyword_args(spec.injects, cfg))
    return taking_commands(spec.fn, *((task.input, cfg) if spec.takes_config else (task.input,)))


def paused_writes(task: Task, ctx: TaskContext, paused: GraphInterrupt) -> TaskWrites:
    """The task's record when its node paused in ``interrupt()``: no writes, the open requests, and the
    answers it had consumed before its own first unanswered call; or, when a graph it ran stopped at a
    static breakpoint, where it stopped.

    Raises:
        ConcurrentInterruptError: the task paused having asked from several threads or asyncio tasks.
    """
    error = refusal(ctx)
    if error is not None:
        raise error
    own = [r.index for r in paused.records if r.task_id == task.id]
    consumed = ctx.resume[: own[0] if own else ctx.interrupt_calls]  # a nested graph's pause: all it used
    records = list(paused.records)
    return TaskWrites(task.id, task.node, interrupts=records, resume=consumed, stopped=paused.stop)


def _fire_joins(
    graph: GraphSpec, results: Sequence[TaskWrites], barriers: Mapping[str, list[str]]
) -> tuple[list[str], dict[str, list[str]]]:
    """Record finished join sources; returns (targets whose joins fired, remaining barrier state)."""
    state = {key: list(done) for key, done in barriers.items()}
    for result in results:
        for key, _, _ in graph.joins_from.get(result.node, ()):
            done = state.setdefault(key, [])
            if result.node not in done:
                done.append(result.node)
    fired = []
    for key, sources, target in graph.joins:
        if key in state and set(sources) <= set(state[key]):
            fired.append(target)
            del state[key]
    return fired, state


def _schedule(
    graph: GraphSpec, results: Sequence[TaskWrites], barriers: Mapping[str, list[str]]
) -> tuple[list[PendingTask], dict[str, list[str]]]:
    """Next step's tasks from static edges, dynamic gotos and joins; a node triggered twice runs once."""
    candidates: list[PendingTask] = []
    for result in results:
        candidates += [PendingTask(target) for target in graph.edges_from.get(result.node, ())]
        candidates += result.goto
    fired, state = _fire_joins(graph, results, barriers)
    candidates += [PendingTask(target) for target in fired]
    tasks: list[PendingTask] = []
    triggered: set[str] = set()
    for pending in candidates:
        if pending.send:
            tasks.append(pending)
        elif pending.node != END and pending.node not in triggered:
            triggered.add(pending.node)
            tasks.append(pending)
    if graph.deferred or HELD in state:  # add_node(..., defer=True): held until nothing else is pending
        return hold(graph.deferred, tasks, state)
    return tasks, state


def _bumped(versions: Mapping[str, int], changed: set[str]) -> dict[str, int]:
    """Channel versions after a step: each changed channel one higher (a channel's first write is 1)."""
    new = dict(versions)
    for key in changed:
        new[key] = new.get(key, 0) + 1
    return new


def apply_writes(
    graph: GraphSpec, cp: Checkpoint, results: Sequence[TaskWrites], metadata: Mapping[str, Any]
) -> Checkpoint:
    """Apply one super-step's task writes to ``cp`` and schedule the next step (G2, G3).

    Writes apply in LangGraph's order (:func:`write_order`; ``results`` ordered as the tasks were),
    independent of which task finished first.

    Raises:
        InvalidUpdateError: conflicting writes, e.g. two tasks writing one LastValue channel.
    """
    results = write_order(cp, results)
    flat = [(key, (r.node, value)) for r in results for key, value in r.writes]
    values, changed = _apply(graph, cp.channel_values, flat)
    versions = _bumped(cp.channel_versions, changed)
    seen = dict(cp.versions_seen)
    for result in results:
        seen[result.node] = dict(cp.channel_versions)
    next_tasks, barriers = _schedule(graph, results, cp.barriers)
    step = cp.step + 1
    meta = {**metadata, "source": "loop", "step": step, "writes": [r.node for r in results]}
    return Checkpoint(new_checkpoint_id(), cp.id, step, values, versions, seen, next_tasks, barriers, meta)


def stored_form(graph: GraphSpec, cp: Checkpoint) -> Checkpoint:
    """``cp`` as a checkpoint store keeps it: without the values of :class:`UntrackedValue` channels, nor
    their keys in the dict arguments of its ``Send`` tasks and input (LangGraph's: never checkpointed);
    ``cp`` itself when the graph has no such channel."""
    untracked = graph.schema.untracked
    if not untracked:
        return cp
    kept = {key: value for key, value in cp.channel_values.items() if key not in untracked}
    return dataclasses.replace(cp, channel_values=kept, next_tasks=_tracked_sends(untracked, cp.next_tasks))


def stored_writes(graph: GraphSpec, writes: TaskWrites) -> TaskWrites:
    """A task's ``writes`` as they are saved as pending writes: without writes to :class:`UntrackedValue`
    channels, nor their keys in its ``Send`` arguments (as :func:`stored_form`)."""
    untracked = graph.schema.untracked
    if not untracked:
        return writes
    kept = [(key, value) for key, value in writes.writes if key not in untracked]
    return dataclasses.replace(writes, writes=kept, goto=_tracked_sends(untracked, writes.goto))


def _tracked_sends(untracked: frozenset[str], tasks: list[PendingTask]) -> list[PendingTask]:
    """``tasks`` with the untracked keys taken out of each ``Send``'s dict argument (and of an input
    checkpoint's ``__start__`` task's input)."""
    return [
        dataclasses.replace(t, arg={k: v for k, v in t.arg.items() if k not in untracked})
        if (t.send or t.node == START) and isinstance(t.arg, dict)
        else t
        for t in tasks
    ]


def write_order(cp: Checkpoint, results: Sequence[TaskWrites]) -> Sequence[TaskWrites]:
    """A step's task results in the order their writes apply, LangGraph's: the tasks edges triggered by
    node name, then the ``Send`` tasks in the order they were sent. ``results`` are in task order, one per
    task of ``cp.next_tasks``; other lists (``update_state``'s) are returned unchanged."""
    if len(results) < 2 or len(results) != len(cp.next_tasks):
        return results
    keyed = []
    for index, (pending, result) in enumerate(zip(cp.next_tasks, results, strict=True)):
        if not ran_as(pending.node, result.node) or not result.task_id:  # a handled task: as its node's
            return results
        keyed.append(((1, index, "") if pending.send else (0, 0, pending.node), result))
    return [result for _, result in sorted(keyed, key=lambda pair: pair[0])]


def apply_input(
    graph: GraphSpec,
    parent: Checkpoint | None,
    input: Any,
    metadata: Mapping[str, Any],
    *,
    strict: Strictness = False,
    source: str = "input",
    remaining: int | None = None,
    start: StartTask | None = None,
    goto: Sequence[PendingTask] = (),
) -> Checkpoint:
    """``input`` applied through the reducers onto ``parent``'s state (or a fresh thread's defaults), with
    the entry nodes scheduled (edges and routers from START; with ``remaining``, the run's super-steps plus
    the input's, they read the managed values as LangGraph's; with ``start``, they run in the input's
    ``__start__`` task, :func:`start_routes`) and ``goto``'s tasks beside them: step ``parent.step + 1``
    (-1 without a parent), metadata ``source`` as given. A run's first checkpoint after its input
    checkpoint is this with ``source: loop`` (:func:`start_run`); ``update_state(..., as_node=START)``
    writes it as ``update``.

    Keys outside the input schema are dropped, as LangGraph drops them (a queued run's input was refused
    them at enqueue), or as ``strict`` says (``update_state(..., as_node=START)``:
    :meth:`StateSchema.writes_of`).

    Raises:
        InvalidUpdateError: the input is not a mapping, or has keys outside the input schema when ``strict``.
    """
    base = parent.channel_values if parent is not None else graph.schema.initial_values()
    writes = input_update(graph, input, strict)
    values, changed = _apply(graph, base, [(key, (START, value)) for key, value in writes])
    versions = _bumped(parent.channel_versions if parent is not None else {}, changed)
    seen = values if remaining is None else graph.schema.with_managed(values, remaining)
    routed = start_routes(graph, parent, seen, start)
    going = [*routed, *_input_goto(graph, input, strict), *goto]
    next_tasks, barriers = _schedule(graph, [TaskWrites("", START, [], going)], {})
    step = parent.step + 1 if parent is not None else -1
    meta = {**metadata, "source": source, "step": step, "writes": [START]}
    return Checkpoint(
        new_checkpoint_id(),
        parent.id if parent else None,
        step,
        values,
        versions,
        dict(parent.versions_seen) if parent else {},
        next_tasks,
        barriers,
        meta,
    )


@dataclass(frozen=True)
class StartTask:
    """What the routers from START are given when a run applies its input (LangGraph runs them in the
    ``__start__`` task): the run's config and the ``(task, chunk)`` sink of its ``custom`` stream."""

    config: RunConfig
    writer: Callable[[Task, Any], None]


HIDDEN_TAG = "langsmith:hidden"
"""The tag LangGraph gives the ``__start__`` task's config (its run is hidden in LangSmith)."""


def start_routes(
    graph: GraphSpec, cp: Checkpoint | None, values: Mapping[str, Any], start: StartTask | None
) -> list[PendingTask]:
    """The tasks the routers from START choose on ``values``, the input of input checkpoint ``cp`` applied.
    With ``start`` they run in that checkpoint's ``__start__`` task, as LangGraph's: a router's ``config``
    (and ``get_config()``) is the run's config of a task ``__start__`` of step ``cp.step + 1`` (its
    ``langgraph_*`` metadata, ``checkpoint_ns`` ``__start__:<task id>``, the tag ``langsmith:hidden``), its
    ``writer`` (and ``get_stream_writer()``) emits ``custom`` chunks through ``start.writer``; without
    ``start`` (``update_state(..., as_node=START)``) they run outside any task."""
    branches = graph.branches_from.get(START, ())
    if not branches or start is None or cp is None:
        return [p for b in branches for p in _route(graph, b, values)]
    task = Task(task_id(cp.id, 0, START), START, None, 0, (PULL, START))
    cfg = task_config(start.config, cp.step + 1, task)
    cfg = cfg.model_copy(update={"tags": [*cfg.tags, HIDDEN_TAG]})
    ctx = TaskContext(cfg, partial(start.writer, task), task_id=task.id, node=START, checkpoint_id=cp.id)
    with task_context(ctx):
        return [p for b in branches for p in _route(graph, b, values)]


def input_update(graph: GraphSpec, input: Any, strict: Strictness = False) -> list[tuple[str, Any]]:
    """The channel writes of a run's ``input``: a ``Command``'s ``update`` (any channel, as a node's
    Command writes it), else the input's keys of the input schema (:meth:`StateSchema.writes_of`)."""
    if isinstance(input, Command):
        return _command_writes(graph, COMMAND_WRITER, input.update, strict)
    return graph.schema.writes_of(START, input, strict=strict)


def command_entry(
    graph: GraphSpec, command: Command[Any], earlier: TaskWrites | None = None, strict: Strictness = False
) -> TaskWrites:
    """The pending write (task id :data:`COMMAND_TASK_ID`) of an input ``command`` given to a thread that
    has a checkpoint: its update's writes and its goto's tasks, after those of ``earlier`` (the entry of
    commands given before at the same checkpoint, kept: nothing given is lost). ``strict``: what becomes
    of the update's unknown keys (:data:`~graphcore.engine.schema.Strictness`; True on the queue).

    Raises:
        InvalidUpdateError: the update is not a dict of state updates, or a goto names a node the graph
            does not have; unknown keys when ``strict``.
    """
    writes = input_update(graph, command, strict)
    goto = _input_goto(graph, command, strict)
    if earlier is not None:
        writes, goto = [*earlier.writes, *writes], [*earlier.goto, *goto]
    return TaskWrites(COMMAND_TASK_ID, COMMAND_WRITER, writes, goto)


def with_command(
    graph: GraphSpec, cp: Checkpoint, pending: Mapping[str, TaskWrites], *, goto: bool = True
) -> tuple[Checkpoint, dict[str, TaskWrites]]:
    """``cp`` as a run going on from it sees it, and the pending writes of its step's tasks (``pending``
    without the input command's entry). With an entry (:func:`command_entry`): ``cp`` under the SAME id
    (its tasks' ids, and so their pending writes and open requests, stay valid) with the command's update
    applied through the reducers (versions bumped) and its goto's tasks added after its next tasks (a
    node already next runs once; not with ``goto=False``: a snapshot shows only the update, as LangGraph's
    ``get_state``); the next checkpoint committed from it holds them, as LangGraph applies its null task's
    writes before the step. ``cp`` itself without one.

    Raises:
        InvalidUpdateError: a reducer refused the update's value.
    """
    entry = pending.get(COMMAND_TASK_ID)
    rest = {tid: tw for tid, tw in pending.items() if tid != COMMAND_TASK_ID}
    if entry is None:
        return cp, rest
    values, changed = _apply(graph, cp.channel_values, [(k, (entry.node, v)) for k, v in entry.writes])
    tasks = list(cp.next_tasks)
    for going in entry.goto if goto else ():
        if going.send or going.node not in {t.node for t in tasks if not t.send}:
            tasks.append(going)
    view = dataclasses.replace(
        cp, channel_values=values, channel_versions=_bumped(cp.channel_versions, changed), next_tasks=tasks
    )
    return view, rest


def _input_goto(graph: GraphSpec, input: Any, strict: Strictness = False) -> list[PendingTask]:
    """The tasks an input ``Command(goto=...)`` adds to the entry nodes (LangGraph's). A target the graph
    does not have is dropped with a UserWarning naming it, as LangGraph drops it (with a logged warning);
    refused when ``strict`` is True (the queue's client: a typo must not reach a durable run).

    Raises:
        InvalidUpdateError: a goto to a node the graph does not have, named, when ``strict`` is True.
    """
    if not isinstance(input, Command):
        return []
    targets = _as_list(input.goto)
    unknown = [t for t in targets if (t.node if isinstance(t, Send) else t) not in graph.nodes]
    if unknown:
        message = f"input Command(goto=...) to unknown node(s) {unknown}"
        if strict is True:
            raise InvalidUpdateError(message)
        warn_caller(f"{message}: ignored")
    return [_goto(t) for t in targets if t not in unknown]


def input_checkpoint(
    graph: GraphSpec, parent: Checkpoint | None, input: Any, metadata: Mapping[str, Any]
) -> Checkpoint:
    """The checkpoint a run with ``input`` starts with, LangGraph's: ``parent``'s state unchanged (a fresh
    thread's defaults), step ``parent.step + 1`` (-1 on a fresh thread), ``source: input``, its one task
    ``__start__`` carrying the input (``next == ("__start__",)``). It shares every value with ``parent``:
    storing it costs a record and a history entry (O(change), I4)."""
    step = parent.step + 1 if parent is not None else -1
    meta = {**metadata, "source": "input", "step": step, "writes": []}
    return Checkpoint(
        new_checkpoint_id(),
        parent.id if parent is not None else None,
        step,
        dict(parent.channel_values) if parent is not None else graph.schema.initial_values(),
        dict(parent.channel_versions) if parent is not None else {},
        dict(parent.versions_seen) if parent is not None else {},
        [PendingTask(START, False, input)],
        dict(parent.barriers) if parent is not None else {},
        meta,
    )


def is_input(cp: Checkpoint) -> bool:
    """Whether ``cp`` is an input checkpoint whose input is not applied yet (its one task: ``__start__``; an
    input ``Command``'s goto may add more to it as a run sees it: :func:`with_command`)."""
    return bool(cp.next_tasks) and cp.next_tasks[0].node == START


def start_run(
    graph: GraphSpec,
    parent: Checkpoint | None,
    input: Any,
    metadata: Mapping[str, Any],
    remaining: int | None = None,
    start: StartTask | None = None,
) -> tuple[Checkpoint, Checkpoint]:
    """The two checkpoints a run with ``input`` writes before its first super-step, LangGraph's: the input
    checkpoint (:func:`input_checkpoint`, step ``s``) and the input applied (``source: loop``, step ``s +
    1``, the entry nodes next; ``remaining`` and ``start`` as in :func:`apply_input`).

    Raises:
        InvalidUpdateError: the input is not a mapping of the input schema's keys (see :func:`apply_input`).
    """
    first = input_checkpoint(graph, parent, input, metadata)
    return first, apply_input(graph, first, input, metadata, source="loop", remaining=remaining, start=start)


def input_writes(graph: GraphSpec, cp: Checkpoint) -> list[TaskWrites]:
    """The writes of input checkpoint ``cp``'s ``__start__`` task (:func:`is_input`): its input as the
    channel writes it makes, kept with the checkpoint after it (``tasks[0].result``, LangGraph's)."""
    writes = input_update(graph, cp.next_tasks[0].arg)  # as the run applies it
    return [TaskWrites(task_id(cp.id, 0, START), START, writes)]


def applied_input(
    graph: GraphSpec,
    cp: Checkpoint,
    metadata: Mapping[str, Any],
    remaining: int | None = None,
    start: StartTask | None = None,
) -> Checkpoint:
    """The input of input checkpoint ``cp`` (:func:`is_input`) applied: the checkpoint after it
    (``source: loop``), as a run that goes on from ``cp`` (``invoke(None, ...)``) writes it (``remaining``
    and ``start`` as in :func:`apply_input`); ``cp``'s other next tasks (an input Command's goto) run beside
    the entry nodes."""
    arg, goto = cp.next_tasks[0].arg, cp.next_tasks[1:]
    return apply_input(graph, cp, arg, metadata, source="loop", remaining=remaining, start=start, goto=goto)


def fork(cp: Checkpoint, metadata: Mapping[str, Any]) -> Checkpoint:
    """A new branch of a thread at ``cp`` (C3): the same state and next tasks under a new id, one step
    later (LangGraph's), recorded as ``source: fork`` with ``cp`` as its parent."""
    step = cp.step + 1
    meta = {**metadata, "source": "fork", "step": step, "writes": [], "forked_from": cp.id}
    return dataclasses.replace(
        cp, id=new_checkpoint_id(), parent_id=cp.id, step=step, metadata=meta, created_at=Checkpoint.now()
    )


def apply_updates(
    graph: GraphSpec,
    parent: Checkpoint,
    updates: Sequence[tuple[str, Any]],
    metadata: Mapping[str, Any],
    strict: Strictness = True,
) -> Checkpoint:
    """A checkpoint as if each node ``as_node`` had returned its ``values`` in the step after ``parent``
    (C3 ``update_state``; several at once are LangGraph's ``bulk_update_state`` super-step): the values (a
    node's return value: a dict, a model, a ``Command`` with ``update`` and ``goto``) go through the
    reducers, their writes apply together in order, the next tasks follow each node's edges, routers and
    ``goto``. Unknown keys: as ``strict`` says (:meth:`StateSchema.writes_of`).

    Raises:
        InvalidUpdateError: unknown node, unknown keys when ``strict`` is True, a ``goto`` to an unknown
            node, or conflicting writes.
        ParentCommand: a ``Command(graph=Command.PARENT)``.
    """
    results = []
    for as_node, values in updates:
        if as_node not in graph.nodes:
            raise InvalidUpdateError(f"update_state: no node {as_node!r}; nodes: {sorted(graph.nodes)}")
        writes, goto = normalise(graph, as_node, values, strict=strict)  # a Command: its update and goto
        goto += _routes(graph, as_node, parent.channel_values, writes)
        results.append(TaskWrites("", as_node, writes, goto))
    cp = apply_writes(graph, parent, results, metadata)
    cp.metadata["source"] = "update"
    return cp
