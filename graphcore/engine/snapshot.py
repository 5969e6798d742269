"""A compiled graph's state API over its checkpoints, shaped like LangGraph's (C3):
``get_state``, ``get_state_history``, ``update_state`` and ``bulk_update_state``.

A snapshot is a :class:`StateSnapshot` (LangGraph's NamedTuple: values, next, config, metadata, created_at,
parent_config, tasks, interrupts); a config names a checkpoint as LangGraph's does,
``{"configurable": {"thread_id", "checkpoint_ns", "checkpoint_id"}}``. Differences from LangGraph (see
docs/reference/langgraph-differences.md): graphq's input checkpoint (step -1, ``source: input``) already
holds the input, so a thread has no separate checkpoint before it and its steps count one lower;
``result`` is known only for the tasks of a paused step (their pending writes), not for committed ones.
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from graphcore.checkpoints.model import Checkpoint, new_checkpoint_id, shown_metadata
from graphcore.checkpoints.protocol import CheckpointStore
from graphcore.checkpoints.saver import matching, older_than
from graphcore.engine.algo import (
    apply_input,
    apply_updates,
    apply_writes,
    fork,
    input_checkpoint,
    is_input,
    normalise,
    stored_form,
    with_command,
)
from graphcore.engine.algo import task_id as task_id_of
from graphcore.engine.checkpointer import stateful_ns, task_ns
from graphcore.engine.compiled import GraphSpec
from graphcore.engine.config import RunConfig, checkpoint_metadata, merge_config
from graphcore.engine.interrupts import interrupt_id, pending_interrupts
from graphcore.engine.schema import Strictness
from graphcore.errors import CheckpointNotFoundError, ConfigError, InvalidUpdateError, NoCheckpointerError
from graphcore.types import END, START, Interrupt, TaskWrites

__all__ = [
    "PregelTask",
    "StateMethods",
    "StateSnapshot",
    "StateUpdate",
    "bulk_update_state",
    "carried_answers",
    "checkpoint_config",
    "get_state",
    "get_state_history",
    "last_writer",
    "request_ahead",
    "subgraph_config",
    "task_result",
    "update_checkpoint",
    "update_state",
]

PULL = "__pregel_pull"
PUSH = "__pregel_push"


class PregelTask(NamedTuple):
    """One task of a snapshot's step (LangGraph's ``PregelTask``).

    Attributes:
        id: the task id (16 hex digits, stable for the step).
        name: the node it runs.
        path: ``("__pregel_pull", node)`` for a task the state triggered, ``("__pregel_push", i, False)``
            for the ``i``-th task of the step started by a ``Send``.
        error: for a task that failed (and has not run again since), the ``repr`` of the exception its
            node raised, e.g. ``"KeyError('x')"`` (LangGraph's value read back from its checkpointer); else
            None.
        interrupts: the requests the task paused on (:class:`~graphcore.types.Interrupt`), in call order.
        state: for a subgraph node (or a node whose function names a compiled graph it invokes): the config
            of the subgraph's checkpoints
            (``{"configurable": {"thread_id", "checkpoint_ns"}}``), or with ``get_state(subgraphs=True)``
            its :class:`StateSnapshot`; None for other nodes and ``checkpointer=False`` subgraphs.
        result: the task's writes (channel → value) when it finished in a paused step; else None.
    """

    id: str
    name: str
    path: tuple[Any, ...]
    error: Exception | str | None = None
    interrupts: tuple[Interrupt, ...] = ()
    state: Any = None
    result: dict[str, Any] | None = None


class StateSnapshot(NamedTuple):
    """A thread's state at one checkpoint (LangGraph's ``StateSnapshot``).

    Attributes:
        values: channel → value (read live: with the writes of the tasks that finished in a paused step).
        next: the nodes of the tasks still to run (read live: those that have not finished).
        config: ``{"configurable": {"thread_id", "checkpoint_ns", "checkpoint_id"}}`` of this checkpoint;
            pass it to ``get_state``, ``update_state`` or ``invoke(None, config)`` (a fork when not the
            latest).
        metadata: the checkpoint's ``source`` (input | loop | update | fork), ``step`` (-1 for the input
            checkpoint), ``parents`` (namespace → checkpoint id of the graphs it runs in), plus graphq's
            ``run_id`` and ``writes`` (the nodes whose writes made it); None for a thread without checkpoints.
        created_at: ISO-8601 UTC; None without a checkpoint.
        parent_config: the config of the checkpoint it came from; None for a thread's first.
        tasks: the tasks of the step after it (:class:`PregelTask`), in order.
        interrupts: the requests of those tasks (read live: the open ones).
    """

    values: dict[str, Any]
    next: tuple[str, ...]
    config: dict[str, Any]
    metadata: dict[str, Any] | None
    created_at: str | None
    parent_config: dict[str, Any] | None
    tasks: tuple[PregelTask, ...]
    interrupts: tuple[Interrupt, ...]


class StateUpdate(NamedTuple):
    """One update of a ``bulk_update_state`` super-step (LangGraph's ``StateUpdate``): ``values`` as if
    node ``as_node`` had returned them; ``task_id`` is accepted and not used."""

    values: dict[str, Any] | Any | None
    as_node: str | None = None
    task_id: str | None = None


@dataclass(frozen=True)
class _At:
    """What a config addresses: the store, the (sub)graph, its thread, namespace and checkpoint."""

    store: CheckpointStore
    graph: GraphSpec
    thread_id: str
    ns: str
    given_ns: str
    checkpoint_id: str | None
    parents: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Namespace → checkpoint id of the graphs it runs in (a subgraph's config's ``checkpoint_map``)."""


def _store(graph: GraphSpec, what: str) -> CheckpointStore:
    store = graph.checkpointer
    if store is None or isinstance(store, bool):
        raise NoCheckpointerError(
            f"{what} needs a checkpointer (graph {graph.name!r} has none): compile it with "
            "checkpointer=InMemorySaver()"
        )
    return store


def _subgraph(graph: GraphSpec, node: str) -> GraphSpec | None:
    """The graph ``node`` runs: its subgraph, or else a compiled graph its function refers to (by a global
    or closure name: ``inner.invoke(...)`` in its body), as LangGraph finds one; None when there is none or
    it keeps no checkpoints (``checkpointer=False``)."""
    spec = graph.nodes.get(node)
    if spec is None:
        return None
    inner = getattr(spec.fn, "graph", None)
    if isinstance(inner, GraphSpec):
        return inner
    fn = inspect.unwrap(spec.fn)
    if not inspect.isfunction(fn):
        return None
    names = inspect.getclosurevars(fn)
    found = (v for v in (*names.nonlocals.values(), *names.globals.values()) if isinstance(v, GraphSpec))
    return next((g for g in found if g.checkpointer is not False), None)


def _address(graph: GraphSpec, config: Mapping[str, Any] | RunConfig | None, what: str) -> _At:
    """Where ``config`` points: ``configurable``'s ``thread_id``, ``checkpoint_ns`` (a subgraph's, as a
    snapshot's ``tasks[i].state`` gives it) and ``checkpoint_id``, or graphq's options of those names
    (:func:`_ids`).

    Raises:
        NoCheckpointerError: the graph has no checkpoint store.
        ConfigError: no thread id; a namespace that names no subgraph node.
    """
    store = _store(graph, what)
    conf = _ids(config)
    thread = conf.get("thread_id")
    if thread is None:
        raise ConfigError(f"{what} needs a thread: config={{'configurable': {{'thread_id': ...}}}}")
    given = str(conf.get("checkpoint_ns") or "")
    target = graph
    for part in given.split("|") if given else ():
        inner = _subgraph(target, part.split(":")[0])
        if inner is None:
            raise ConfigError(f"{what}: checkpoint_ns {given!r} names no subgraph node ({part!r})")
        target = inner
    ns = stateful_ns(given) if target.checkpointer is True else given
    known = conf.get("checkpoint_map")
    named = known.items() if given and isinstance(known, Mapping) else ()
    parents = {str(k): str(v) for k, v in named if k != given}
    return _At(store, target, str(thread), ns, given, conf.get("checkpoint_id"), parents)


_ID_KEYS = ("thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map")


def _ids(config: Mapping[str, Any] | RunConfig | None) -> dict[str, Any]:
    """``thread_id``, ``checkpoint_ns``, ``checkpoint_id`` and ``checkpoint_map`` of ``config`` (each None
    when not given): its ``configurable`` keys, else graphq's options of those names (a mapping's top-level
    keys, a :class:`RunConfig`'s fields)."""
    if isinstance(config, RunConfig):
        view = config["configurable"]  # LangGraph's view: the options under their configurable names
        return {k: view.get(k) for k in _ID_KEYS}
    data = dict(config or {})
    conf = dict(data.get("configurable") or {})
    return {k: conf.get(k) or data.get(k) for k in _ID_KEYS}


def checkpoint_config(
    thread: str, ns: str, checkpoint_id: str | None, parents: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """The config of checkpoint ``checkpoint_id`` (a snapshot's, a ``checkpoints`` event's):
    ``{"configurable": {"thread_id", "checkpoint_ns", "checkpoint_id"}}``, None without an id; a
    subgraph's (``ns``) also has LangGraph's ``checkpoint_map``: namespace → checkpoint id of the graphs it
    runs in (``parents``) and of itself, which ``invoke(None, config)`` goes back to."""
    if checkpoint_id is None:
        return None
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
    if ns:
        conf["checkpoint_map"] = {**(parents or {}), ns: checkpoint_id}
    return {"configurable": conf}


def _empty(config: Mapping[str, Any] | RunConfig | None) -> StateSnapshot:
    given = config.model_dump(exclude_unset=True) if isinstance(config, RunConfig) else dict(config or {})
    return StateSnapshot({}, (), given, None, None, None, (), ())


def subgraph_config(graph: GraphSpec, thread_id: str, ns: str, node: str, tid: str) -> dict[str, Any] | None:
    """The ``state`` of task ``tid`` of ``node`` in ``graph`` (checkpointing in ``ns`` of ``thread_id``), as a
    snapshot's tasks and the ``checkpoints``/``debug`` streams show it without recursing (LangGraph's):
    ``{"configurable": {"thread_id", "checkpoint_ns": "ns|node:tid"}}`` when the node runs a graph that
    keeps checkpoints, else None."""
    inner = _subgraph(graph, node)
    if inner is None or inner.checkpointer is False:
        return None
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": task_ns(ns, node, tid)}}


def _task_state(
    at: _At, cp: Checkpoint, node: str, tid: str, recurse: bool, parents: Mapping[str, str]
) -> Any:
    shallow = subgraph_config(at.graph, at.thread_id, at.given_ns, node, tid)
    if shallow is None or not recurse:
        return shallow
    inner = _subgraph(at.graph, node)
    assert inner is not None  # shallow
    child = task_ns(at.given_ns, node, tid)
    ns = stateful_ns(child) if inner.checkpointer is True else child
    sub = dataclasses.replace(at, graph=inner, ns=ns, given_ns=ns, checkpoint_id=None)  # LangGraph's
    head = at.store.get(at.thread_id, ns=ns)
    if head is None:
        return _empty({"configurable": {"thread_id": at.thread_id, "checkpoint_ns": child}})
    return _snapshot(sub, head, live=True, recurse=True, parents={**parents, at.ns: cp.id})


def task_result(writes: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """A finished task's writes as LangGraph shows its ``result`` (``tasks[i].result``, the ``tasks``
    stream): channel → value written, ``{"$writes": [...]}`` (in order) for a channel written several
    times."""
    grouped: dict[str, list[Any]] = {}
    for key, value in writes:
        grouped.setdefault(key, []).append(value)
    return {key: values[0] if len(values) == 1 else {"$writes": values} for key, values in grouped.items()}


def _snapshot(
    at: _At, cp: Checkpoint, *, live: bool, recurse: bool, parents: Mapping[str, str]
) -> StateSnapshot:
    """The snapshot of ``cp``; ``live`` (the latest, read without a checkpoint id) counts the tasks that
    finished in a paused step as done, as LangGraph's ``get_state`` does. ``parents`` (namespace →
    checkpoint id of the graphs it runs in) are those ``cp`` stored when it has them (a subgraph's,
    LangGraph's metadata), else those given (a config's ``checkpoint_map``, the graphs a recursing snapshot
    went through)."""
    parents = cp.metadata.get("parents") or parents
    finished, errors = at.store.get_writes_and_errors(at.thread_id, cp.id, ns=at.ns)
    cp, finished = with_command(at.graph, cp, finished, goto=False)  # an input Command's update
    tasks: list[PregelTask] = []
    done: list[TaskWrites] = []
    pushes = 0
    for index, pending in enumerate(cp.next_tasks):
        tid = task_id_of(cp.id, index, pending.node)
        tw = finished.get(tid)
        ok = tw is not None and not tw.interrupts
        path: tuple[Any, ...] = (PUSH, pushes, False) if pending.send else (PULL, pending.node)
        pushes += pending.send
        state = _task_state(at, cp, pending.node, tid, recurse, parents)
        asked = tuple(tw.interrupts) if tw is not None else ()
        result = task_result(tw.writes) if tw is not None and ok else None
        error = errors.get(tid)  # it failed (LangGraph's: kept when a later try wrote, as in the history)
        tasks.append(PregelTask(tid, pending.node, path, error, asked, state, result))
        if ok and tw is not None:
            done.append(tw)
    values = at.graph.schema.values_of(cp.channel_values)  # the value itself for a root-channel state
    if live and done:
        values = at.graph.schema.values_of(apply_writes(at.graph, cp, done, {}).channel_values)
    finished_ids = {tw.task_id for tw in done} if live else set()
    return StateSnapshot(
        values,
        tuple(t.name for t in tasks if t.id not in finished_ids),
        checkpoint_config(at.thread_id, at.given_ns, cp.id, parents) or {},
        shown_metadata(cp.metadata, dict(parents)),
        cp.created_at,
        checkpoint_config(at.thread_id, at.given_ns, cp.parent_id, parents),
        tuple(tasks),
        tuple(i for t in tasks for i in t.interrupts),
    )


def get_state(
    graph: GraphSpec, config: Mapping[str, Any] | RunConfig | None, subgraphs: bool = False
) -> StateSnapshot:
    """The snapshot of the thread's latest checkpoint, or of ``configurable.checkpoint_id`` (LangGraph's
    ``get_state``): an empty snapshot (values ``{}``, metadata None) when there is none. The latest is read
    live: tasks that finished in a paused step count as done (their writes in ``values``, not in ``next``).
    With ``subgraphs=True`` the tasks of subgraph nodes carry the subgraph's snapshot in ``state``.

    Raises:
        NoCheckpointerError: the graph has no checkpoint store (a ``ValueError``, as LangGraph's).
        ConfigError: no thread id in ``config``.
    """
    at = _address(graph, config, "get_state")
    cp = at.store.get(at.thread_id, at.checkpoint_id, ns=at.ns)
    if cp is None:
        return _empty(config)
    return _snapshot(at, cp, live=at.checkpoint_id is None, recurse=subgraphs, parents=at.parents)


def get_state_history(
    graph: GraphSpec,
    config: Mapping[str, Any] | RunConfig | None,
    *,
    filter: Mapping[str, Any] | None = None,
    before: Mapping[str, Any] | None = None,
    limit: int | None = None,
) -> Iterator[StateSnapshot]:
    """The thread's snapshots, newest first (LangGraph's ``get_state_history``; a generator: errors are
    raised when it is first iterated).

    Args:
        config: the thread (with ``checkpoint_id``: that checkpoint only).
        filter: metadata key → value that every snapshot's metadata must hold (``{"source": "update"}``).
        before: a snapshot config: only checkpoints older than it.
        limit: at most this many (after ``filter`` and ``before``).

    Raises:
        NoCheckpointerError: the graph has no checkpoint store.
        ConfigError: no thread id in ``config``.
    """
    at = _address(graph, config, "get_state_history")
    narrowed = filter or before or at.checkpoint_id
    cps = at.store.list(at.thread_id, ns=at.ns, limit=None if narrowed else limit)
    if at.checkpoint_id is not None:
        cps = [c for c in cps if c.id == at.checkpoint_id]
    if before is not None:
        cps = older_than(cps, _address(graph, before, "get_state_history(before=...)").checkpoint_id)
    for cp in cps[:limit] if filter is None else matching(cps, filter, limit):
        yield _snapshot(at, cp, live=False, recurse=False, parents=at.parents)


def request_ahead(cp: Checkpoint) -> list[Interrupt]:
    """Where ``Command(resume=value)`` goes on a checkpoint without open requests (e.g. written by
    ``update_state`` while a run was paused): the first ``interrupt()`` call of the step's task, as
    LangGraph's resume answers the next call; none (the resume is refused) unless the step has one task."""
    if len(cp.next_tasks) != 1 or is_input(cp):  # an input not applied yet asks nothing
        return []
    node = cp.next_tasks[0].node
    tid = task_id_of(cp.id, 0, node)
    return [Interrupt(None, interrupt_id(tid, 0), node, tid, 0, cp.created_at)]


def carried_answers(
    head: Checkpoint, finished: Mapping[str, TaskWrites], given: Mapping[str, Any]
) -> dict[str, Any]:
    """The answers a subgraph going on at ``head`` (its step's pending writes ``finished``) takes from its
    parent task's answers ``given`` (interrupt id → answer): those of its open requests; when it has none
    because ``update_state`` moved it on (LangGraph: the resumed subgraph reads the update), the one answer
    given goes to its next request (:func:`request_ahead`)."""
    asked = pending_interrupts(finished)
    answers = {i.id: given[i.id] for i in asked if i.id in given}
    if asked or len(given) != 1:
        return answers
    return {i.id: next(iter(given.values())) for i in request_ahead(head)}


def update_state(
    graph: GraphSpec,
    config: Mapping[str, Any] | RunConfig | None,
    values: Any,
    as_node: str | None = None,
    task_id: str | None = None,
) -> dict[str, Any]:
    """Write a checkpoint as if node ``as_node`` had returned ``values`` (LangGraph's ``update_state``):
    through the reducers, next tasks from ``as_node``'s edges and routers. See :func:`bulk_update_state`.

    Returns:
        The new checkpoint's config.
    """
    return _updated(graph, config, [[StateUpdate(values, as_node, task_id)]], "update_state")


def bulk_update_state(
    graph: GraphSpec,
    config: Mapping[str, Any] | RunConfig | None,
    supersteps: Sequence[Sequence[StateUpdate | tuple[Any, ...]]],
) -> dict[str, Any]:
    """Apply ``supersteps`` in order, each one checkpoint on the thread (LangGraph's ``bulk_update_state``).

    Each super-step is a list of updates ``(values, as_node[, task_id])``, applied together. The first
    starts from the thread's latest checkpoint, or ``configurable.checkpoint_id`` (then the thread forks
    there), or a fresh thread. ``as_node`` rules, as LangGraph's: None → the node that wrote last (START on a
    fresh thread or before any node ran: the values then act as input); START → as input, the entry nodes
    next; ``(None, END)`` → the paused step ends: its finished tasks' writes apply, the others are dropped;
    ``"__copy__"`` → a copy of the checkpoint, and with a list of updates as its values, those updates on
    the copy as the next super-step. An update as a node (or START) that the checkpoint schedules is stored
    as that task's writes (the history's ``tasks[i].result``), unless the task has writes already.

    Returns:
        The config of the last checkpoint written.

    Raises:
        InvalidUpdateError: no super-steps or an empty one (a ``ValueError``); an ambiguous update (the
            last step ran several nodes) or several updates without ``as_node``; an unknown node or key.
        NoCheckpointerError: the graph has no checkpoint store.
        CheckpointNotFoundError: ``checkpoint_id`` is not the thread's.
    """
    return _updated(graph, config, supersteps, "bulk_update_state")


def _updated(
    graph: GraphSpec,
    config: Mapping[str, Any] | RunConfig | None,
    supersteps: Sequence[Sequence[StateUpdate | tuple[Any, ...]]],
    what: str,
) -> dict[str, Any]:
    at = _address(graph, config, what)
    if not supersteps:
        raise InvalidUpdateError(f"{what}: No supersteps provided")  # LangGraph's words
    if any(len(step) == 0 for step in supersteps):
        raise InvalidUpdateError(f"{what}: No updates provided (a superstep is empty)")
    head = at.store.get(at.thread_id, at.checkpoint_id, ns=at.ns)
    if head is None and at.checkpoint_id is not None:
        raise CheckpointNotFoundError(f"thread {at.thread_id!r} has no checkpoint {at.checkpoint_id!r}")
    cfg = config if isinstance(config, RunConfig) else merge_config(config)
    copied = {k: v for k, v in checkpoint_metadata(cfg).items() if k != "run_id"}  # LangGraph's savers'
    for step in _with_copies(supersteps):
        base = head
        head = update_checkpoint(at.store, at.graph, at.thread_id, head, step, at.ns, copied, strict=False)
        at.store.put(at.thread_id, stored_form(at.graph, head), ns=at.ns)
        if base is not None:
            _keep_results(at, base, step)
    assert head is not None
    return checkpoint_config(at.thread_id, at.given_ns, head.id, at.parents) or {}


def _with_copies(
    supersteps: Sequence[Sequence[StateUpdate | tuple[Any, ...]]],
) -> Iterator[list[StateUpdate]]:
    """``supersteps`` as lists of updates, a copy given updates (``[StateUpdate([...], "__copy__")]``)
    as two: the copy, then those updates on it, grouped by node in the order the nodes first appear
    (LangGraph's ``bulk_update_state``).

    Raises:
        InvalidUpdateError: an item of a copy's updates that is not an update.
    """
    for step in supersteps:
        updates = [StateUpdate(*u) for u in step]
        values = updates[0].values
        if len(updates) > 1 or updates[0].as_node != AS_COPY or not isinstance(values, list) or not values:
            yield updates
            continue
        yield [StateUpdate(None, AS_COPY)]
        grouped: dict[Any, list[StateUpdate]] = {}
        for item in values:
            if not isinstance(item, Sequence) or isinstance(item, str):
                raise InvalidUpdateError(
                    f"update_state: invalid update item {item!r} when copying a checkpoint"
                )
            update = StateUpdate(*item)
            grouped.setdefault(update.as_node, []).append(update)
        yield [update for group in grouped.values() for update in group]


def _keep_results(at: _At, base: Checkpoint, updates: Sequence[StateUpdate]) -> None:
    """Store each update given ``as_node`` (a node, or START) as the writes of the task of that node
    ``base`` schedules (the first such task for the node's first update, ...; or the update's ``task_id``),
    so the history shows them as the task's ``result``, as LangGraph's; a task that has writes keeps them."""
    finished = at.store.get_writes(at.thread_id, base.id, ns=at.ns)
    open_ids: dict[str, list[str]] = {}
    for index, pending in enumerate(base.next_tasks):
        tid = task_id_of(base.id, index, pending.node)
        if tid not in finished:
            open_ids.setdefault(pending.node, []).append(tid)
    for update in updates:
        node = update.as_node
        ids = open_ids.get(node or "", [])
        if not ids or (update.task_id is not None and update.task_id not in ids):
            continue
        tid = update.task_id or ids[0]
        ids.remove(tid)
        with warnings.catch_warnings():  # its unknown keys were warned of as it was applied: dropped here
            warnings.simplefilter("ignore", UserWarning)
            if node == START:
                writes = at.graph.schema.writes_of(START, update.values, strict="warn")
            else:
                writes = normalise(at.graph, str(node), update.values, strict="warn")[0]
        at.store.put_writes(at.thread_id, base.id, TaskWrites(tid, str(node), writes), ns=at.ns)


def update_checkpoint(
    store: CheckpointStore,
    graph: GraphSpec,
    thread_id: str,
    head: Checkpoint | None,
    updates: Sequence[StateUpdate],
    ns: str = "",
    copied: Mapping[str, Any] | None = None,
    *,
    strict: bool = True,
) -> Checkpoint:
    """The checkpoint one super-step of ``updates`` makes on ``head`` (None: a fresh thread), not written
    (the one rule for ``update_state`` in process and on the queue, LangGraph's): ``as_node`` None → the
    node that wrote last (:func:`last_writer`); START → the values act as input; ``(None, END)`` → the
    paused step ends with its finished tasks' writes (read from ``store``). Metadata: ``source: update``,
    ``run_id`` None, and ``copied`` (the update's config keys, as a run's: :func:`checkpoint_metadata`).
    Keys outside the schema (the input schema for START) are refused when ``strict`` (the queue's
    ``client.update_state``); otherwise ignored with a UserWarning naming them (in process, as LangGraph
    ignores them).

    Raises:
        InvalidUpdateError: an ambiguous update; several updates without ``as_node``; an unknown node; an
            unknown key when ``strict``.
    """
    keys: Strictness = True if strict else "warn"
    meta = {"run_id": None, **(copied or {})}
    base = head or Checkpoint(new_checkpoint_id(), None, -1, graph.schema.initial_values())
    if len(updates) > 1 and any(u.as_node in (None, START, END, AS_INPUT, AS_COPY) for u in updates):
        raise InvalidUpdateError("update_state: several updates in one superstep each need as_node (a node)")
    first = updates[0]
    as_node = first.as_node
    if as_node is None and len(updates) == 1:
        as_node = last_writer(store, graph, thread_id, head, ns)
    source = "update"
    if as_node == AS_COPY:
        return _copy(thread_id, head, first.values)
    if as_node == END and first.values is None:
        cp = apply_writes(graph, base, _finished(store, thread_id, base, ns), meta)
    elif as_node in (START, AS_INPUT):
        if as_node == AS_INPUT and first.values is None:
            raise InvalidUpdateError(
                f"update_state: as_node {AS_INPUT!r} needs input values (got {first.values!r})"
            )
        if as_node == AS_INPUT:  # a run's input checkpoint (step -1 on a fresh thread): the run applies it
            graph.schema.writes_of(START, first.values, strict=keys)  # refused now, not when the run starts
            cp, source = input_checkpoint(graph, head, first.values, meta), "input"
        else:
            cp = apply_input(graph, base, first.values, meta, strict=keys)
    else:
        cp = apply_updates(graph, base, [(u.as_node or as_node or "", u.values) for u in updates], meta, keys)
    cp.metadata["source"] = source
    return cp if head is not None else dataclasses.replace(cp, parent_id=None)


def _copy(thread_id: str, head: Checkpoint | None, values: Any) -> Checkpoint:
    """``as_node="__copy__"``: ``head`` again under a new id, as LangGraph's: the same values and next tasks
    (their pending writes not copied), the same parent, one step later, ``source: fork``.

    Raises:
        InvalidUpdateError: no checkpoint to copy, or values given with it.
    """
    if head is None:
        raise InvalidUpdateError(
            f"update_state: as_node {AS_COPY!r}: thread {thread_id!r} has no checkpoint to copy"
        )
    if values is not None:
        raise InvalidUpdateError(
            f"update_state: as_node {AS_COPY!r} takes no values (got {values!r}); give updates to the copy "
            "as the next superstep of bulk_update_state"
        )
    return dataclasses.replace(fork(head, {"run_id": None}), parent_id=head.parent_id)  # no config keys


AS_INPUT = "__input__"
"""``update_state(..., as_node=AS_INPUT)``: the values are a run's input (a checkpoint of ``source: input``,
the entry nodes next), as LangGraph's."""

AS_COPY = "__copy__"
"""``update_state(config, None, as_node=AS_COPY)``: a copy of the checkpoint (``source: fork``), as
LangGraph's."""


def _finished(store: CheckpointStore, thread_id: str, cp: Checkpoint, ns: str) -> list[TaskWrites]:
    """The writes of the tasks that finished in the paused step after ``cp``, in task order."""
    if not cp.next_tasks:
        return []
    finished = store.get_writes(thread_id, cp.id, ns=ns)
    order = [task_id_of(cp.id, i, t.node) for i, t in enumerate(cp.next_tasks)]
    return [finished[t] for t in order if t in finished and not finished[t].interrupts]


def last_writer(
    store: CheckpointStore, graph: GraphSpec, thread_id: str, head: Checkpoint | None, ns: str = ""
) -> str:
    """The node an update without ``as_node`` is attributed to (LangGraph's rule): the one that wrote
    last, looking back from ``head`` past fork checkpoints; START when that is a run's input (the
    checkpoint before a run's first node, the thread's later runs too) or no node has run.

    Raises:
        InvalidUpdateError: the last step that ran nodes ran several
            (``update_state: ambiguous update, the last step ran ['a', 'b']: specify as_node``).
    """
    cp = head
    while cp is not None:
        writes = cp.metadata.get("writes", [])
        if START in writes:  # a run's input: the values act as input again, as LangGraph's
            return START
        nodes = list(dict.fromkeys(n for n in writes if n in graph.nodes))
        if len(nodes) == 1:
            return str(nodes[0])
        if nodes:
            raise InvalidUpdateError(
                f"update_state: ambiguous update, the last step ran {nodes}: specify as_node"
            )
        cp = store.get(thread_id, cp.parent_id, ns=ns) if cp.parent_id else None
    return START


Config = Mapping[str, Any] | RunConfig | None


class StateMethods:
    """The state API of :class:`~graphcore.engine.executor.CompiledGraph` (a mixin over its
    :class:`~graphcore.engine.compiled.GraphSpec`), as LangGraph's compiled graph has it; the ``a``-methods
    are the same for ``async`` code (the store is read in the calling thread)."""

    def _spec(self) -> GraphSpec:
        return cast("GraphSpec", self)

    def get_state(self, config: Config, *, subgraphs: bool = False) -> StateSnapshot:
        """See :func:`get_state`."""
        return get_state(self._spec(), config, subgraphs)

    def get_state_history(
        self,
        config: Config,
        *,
        filter: Mapping[str, Any] | None = None,
        before: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[StateSnapshot]:
        """See :func:`get_state_history`."""
        return get_state_history(self._spec(), config, filter=filter, before=before, limit=limit)

    def update_state(
        self, config: Config, values: Any, as_node: str | None = None, task_id: str | None = None
    ) -> dict[str, Any]:
        """See :func:`update_state`."""
        return update_state(self._spec(), config, values, as_node, task_id)

    def bulk_update_state(
        self, config: Config, supersteps: Sequence[Sequence[StateUpdate | tuple[Any, ...]]]
    ) -> dict[str, Any]:
        """See :func:`bulk_update_state`."""
        return bulk_update_state(self._spec(), config, supersteps)

    async def aget_state(self, config: Config, *, subgraphs: bool = False) -> StateSnapshot:
        """See :func:`get_state`."""
        return get_state(self._spec(), config, subgraphs)

    async def aget_state_history(
        self,
        config: Config,
        *,
        filter: Mapping[str, Any] | None = None,
        before: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[StateSnapshot]:
        """See :func:`get_state_history`."""
        for snapshot in get_state_history(self._spec(), config, filter=filter, before=before, limit=limit):
            yield snapshot

    async def aupdate_state(
        self, config: Config, values: Any, as_node: str | None = None, task_id: str | None = None
    ) -> dict[str, Any]:
        """See :func:`update_state`."""
        return update_state(self._spec(), config, values, as_node, task_id)

    async def abulk_update_state(
        self, config: Config, supersteps: Sequence[Sequence[StateUpdate | tuple[Any, ...]]]
    ) -> dict[str, Any]:
        """See :func:`bulk_update_state`."""
        return bulk_update_state(self._spec(), config, supersteps)
