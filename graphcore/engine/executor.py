"""The compiled graph and its in-process executor: ``invoke`` and ``stream`` (G3, C1, C6).

The loop here is thin: it calls :func:`graphcore.engine.algo.apply_input`,
:func:`graphcore.engine.step.run_step` and :func:`graphcore.engine.algo.apply_writes` — exactly what the
RQ step job calls, one super-step per job. The compiled graph's data is
:class:`graphcore.engine.compiled.GraphSpec`; :class:`CompiledGraph` adds this loop to it.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import Any

from graphcore.checkpoints.memory import InMemoryCheckpointStore
from graphcore.checkpoints.model import Checkpoint
from graphcore.checkpoints.protocol import CheckpointStore
from graphcore.engine import aio, messages_stream
from graphcore.engine import stream as streaming
from graphcore.engine.algo import (
    COMMAND_TASK_ID,
    StartTask,
    applied_input,
    apply_writes,
    command_entry,
    fork,
    input_writes,
    is_input,
    start_run,
    stored_form,
    stored_writes,
    with_command,
)
from graphcore.engine.batch import BatchMethods
from graphcore.engine.breakpoints import NO_BREAKPOINTS, Breakpoints, Stop, stop_of
from graphcore.engine.cache import CacheMethods
from graphcore.engine.checkpointer import replay_of, replayed_head, resumes, stateful_ns, store_of, task_ns
from graphcore.engine.compiled import GraphSpec
from graphcore.engine.config import (
    ANSWERS_KEY,
    RESERVED_PREFIX,
    RESUME_KEY,
    RunConfig,
    Scope,
    TaskContext,
    budget_from,
    checkpoint_metadata,
    current_scope,
    current_task_or_none,
    merge_config,
    named_checkpoints,
    outside_any_task,
    passed_on,
    replays_snapshot,
    run_scope,
    steps_left,
    with_remaining_steps,
)
from graphcore.engine.drawing import DrawMethods
from graphcore.engine.durability import check_durability, durable
from graphcore.engine.failures import failure_entries, raised
from graphcore.engine.handlers import handled_of
from graphcore.engine.interrupts import GraphInterrupt, match_answer, pending_interrupts, resume_plan
from graphcore.engine.loops import raise_if_abandoned
from graphcore.engine.nested import call_namespace, fresh_calls
from graphcore.engine.run_start import check_thread, empty_input, nothing_to_resume, unasked
from graphcore.engine.runtime import RunControl, with_context
from graphcore.engine.saving import TaskSaver
from graphcore.engine.snapshot import StateMethods, carried_answers, request_ahead
from graphcore.engine.step import StepResult, arun_step, has_async_tasks, run_step
from graphcore.errors import CheckpointNotFoundError, GraphDrained, StepLimitError, warn_caller
from graphcore.types import Command, GraphOutput, Interrupt, TaskWrites

__all__ = ["INTERRUPT_KEY", "STREAM_MODES", "CompiledGraph", "start_point", "step_limit_error", "with_resume"]

STREAM_MODES = streaming.STREAM_MODES
INTERRUPT_KEY = streaming.INTERRUPT_KEY


def start_point(
    store: CheckpointStore | None, thread: str, cfg: RunConfig, ns: str = "", *, answering: bool = False
) -> tuple[Checkpoint | None, bool]:
    """The checkpoint a new run of ``thread`` starts from, and whether starting there forks the thread.

    ``cfg.checkpoint_id`` picks one (C3): a fork unless it is the thread's latest; otherwise the latest,
    when ``cfg.resume_if_exists`` (C2); None for a fresh start. A root run given a subgraph's config (its
    ``checkpoint_map`` names the root's checkpoint, :func:`replays_snapshot`) forks even at the latest,
    unless it is ``answering`` the open question there (LangGraph's replay).

    Raises:
        CheckpointNotFoundError: the thread has no checkpoint ``cfg.checkpoint_id``.
    """
    if store is None:
        return None, False
    replays = not ns and replays_snapshot(cfg) is not None and not answering
    if cfg.checkpoint_id is None or ns:
        return (store.get(thread, ns=ns) if cfg.resume_if_exists or ns else None), replays
    chosen = store.get(thread, cfg.checkpoint_id)
    if chosen is None:
        raise CheckpointNotFoundError(f"thread {thread!r} has no checkpoint {cfg.checkpoint_id!r}")
    latest = store.get(thread)
    return chosen, replays or (latest is not None and latest.id != chosen.id)


def with_resume(cfg: RunConfig, resume: Mapping[str, list[Any]], answers: Mapping[str, Any]) -> RunConfig:
    """``cfg`` carrying the answers for the paused tasks of the next step: task id → answers of its own
    ``interrupt()`` calls in order, and every answer by interrupt id (for paused subgraphs)."""
    if not resume and not answers:
        return cfg
    extra = {RESUME_KEY: dict(resume), ANSWERS_KEY: dict(answers)}
    return cfg.model_copy(update={"configurable": {**cfg.configurable, **extra}})


def continued_run(
    cfg: RunConfig, start: Checkpoint, parents: Mapping[str, str] | None = None
) -> tuple[RunConfig, dict[str, Any]]:
    """``cfg`` and the checkpoint metadata (with the graph's ``parents``, a subgraph's:
    :func:`checkpoint_metadata`) of a run that starts at ``start``: a run that continues a
    checkpoint's step (``Command(resume=...)``, or ``invoke(None)`` after a failure) is that checkpoint's run
    again and keeps its run id, so its tasks' idempotency keys (``"<run>:<step>:<task>"``, I1) are the same
    on every resume, as on the queue."""
    run = start.metadata.get("run_id") or cfg.run_id
    if run != cfg.run_id:
        cfg = cfg.model_copy(update={"run_id": run})
    return cfg, checkpoint_metadata(cfg, parents=parents)


def step_limit_error(limit: int, cp: Checkpoint, counted_from: int = 0) -> StepLimitError:
    """The error for a run that still has tasks after ``limit`` super-steps (C1), counted from
    ``counted_from`` (:func:`~graphcore.engine.config.budget_from`: a call without input takes more)."""
    pending = [t.node for t in cp.next_tasks]
    more = f" ({limit - counted_from} in a call without input)" if counted_from else ""
    return StepLimitError(
        f"run needs more than max_super_steps={limit} super-steps{more} (next tasks: {pending}); raise "
        f"it with the run option max_super_steps (or LangGraph's recursion_limit, {limit + 1} now) or "
        "GRAPHQ_MAX_SUPER_STEPS"
    )


class CompiledGraph(StateMethods, DrawMethods, BatchMethods, CacheMethods, GraphSpec):
    """A validated graph, ready to run in-process (``invoke``, ``stream``) or on the queue (its data,
    :class:`~graphcore.engine.compiled.GraphSpec`, is what the step job reads)."""

    def invoke(
        self,
        input: Any,
        config: Mapping[str, Any] | RunConfig | None = None,
        *,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        durability: str | None = None,
        stream_mode: str | Sequence[str] = "values",
        subgraphs: bool = False,
        debug: bool | None = None,
        context: Any = None,
        print_mode: str | Sequence[str] = (),
        version: str = "v1",
        control: RunControl | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run the graph to the end in this process and return the final state values.

        Args:
            input: the input update (a dict, or a model of the state schema); or a ``Command``: on a thread
                with a checkpoint the run goes on from it (its ``update`` applied first, its ``goto``'s nodes
                added to the step, its ``resume`` the answer; kept with that checkpoint, so ``get_state``
                shows the update), on a fresh thread its ``update`` is the input, as LangGraph's.
            config: run options (see :class:`RunConfig`; LangGraph's config dict is accepted as it is).
            interrupt_before: static breakpoints of this call (node names or ``"*"``), replacing the
                compiled ones when given: the run stops before a super-step that runs one of them and
                returns the state; ``invoke(None, config)`` goes on from there (LangGraph's breakpoints,
                :mod:`graphcore.engine.breakpoints`).
            interrupt_after: the same, stopping after a super-step that ran one of them.
            durability: ``"sync"``, ``"async"`` or ``"exit"`` (LangGraph's; what each means here:
                :mod:`graphcore.engine.durability`); None → the config's ``durability``, else ``"sync"``.
            stream_mode: ``"values"`` (the default) returns the final state; another mode or a list of modes
                returns the list of what :meth:`stream` yields with it, as LangGraph's ``invoke``.
            subgraphs, debug, print_mode: as :meth:`stream`.
            version: ``"v1"`` (the default) or ``"v2"``: a :class:`~graphcore.types.GraphOutput` (``value``,
                ``interrupts``) instead of the state, or with another ``stream_mode`` the list of v2 stream
                parts, as LangGraph's.
            context: the run's context (LangGraph's; nodes read it through a ``runtime`` parameter or
                ``get_runtime()``, :mod:`graphcore.engine.runtime`); graphs invoked inside nodes inherit it.
            control: a :class:`~graphcore.engine.runtime.RunControl` to drain the run with (LangGraph's):
                once drained, no further super-step starts and :class:`GraphDrained` is raised. None: the
                run has its own (``runtime.control``); a graph invoked inside a node has its parent's.
            kwargs: any other keyword argument is ignored, as LangGraph's ``invoke`` ignores it, with a
                UserWarning naming it (:func:`ignore_unknown`).

        Returns:
            Channel name → value after the last super-step, narrowed to the output schema's keys (None
            when none has a value), or the value itself for a root-channel state (as LangGraph's
            ``invoke``). When a node paused in ``interrupt()``, the state with the paused step's finished
            tasks' writes applied (as LangGraph's) plus ``"__interrupt__"``: the open requests; continue with
            ``invoke(Command(resume=answer), config)`` on the same thread (needs a checkpointer).

        Raises:
            StepLimitError: more than ``max_super_steps`` super-steps were needed.
            NodeError: a node or one of its routers raised (also an instance of the error's type);
                ``.node`` and ``.error`` tell which and what, the message names the router.
            SystemExit, KeyboardInterrupt: a node raised it: the very exception, as LangGraph lets it
                propagate (on the queue it fails the run like any node error).
            InvalidUpdateError: a node's writes were invalid or conflicting, or a router sent to a node the
                graph does not have.
            ThreadRequiredError: (a ``ValueError``) the graph has a checkpointer and ``config`` no thread id.
            EmptyInputError: ``input`` is None and there is nothing to continue (no checkpointer, or a thread
                without a checkpoint), as LangGraph's.
            GraphDrained: ``control`` was asked to drain; the super-steps before are committed.
        """
        ignore_unknown("invoke", kwargs)
        config = with_context(config, context)
        if stream_mode != "values":
            chunks = self.stream(
                input,
                config,
                stream_mode=stream_mode,
                subgraphs=subgraphs,
                debug=debug,
                durability=durability,
                interrupt_before=interrupt_before,
                interrupt_after=interrupt_after,
                print_mode=print_mode,
                version=version,
                control=control,
            )
            return list(chunks)
        final: Any = None
        durability, call = self._checked(version, durability, interrupt_before, interrupt_after)
        logged = streaming.logged_modes(self.debug if debug is None else debug, print_mode)
        for events, cp, paused in self._run(input, config, logged, durability, call, control=control):
            streaming.show_events(events, modes=logged or ())
            final = self._result(cp, paused, version)
        return final

    def _checked(
        self, version: str, durability: str | None, before: Sequence[str] | None, after: Sequence[str] | None
    ) -> tuple[str | None, Breakpoints]:
        """A call's options as its run takes them: ``version`` checked, ``durability``
        (:func:`check_durability`), and the graph's breakpoints with the call's ``interrupt_before`` /
        ``interrupt_after`` applied (:meth:`Breakpoints.with_call`); an unknown value warns (UserWarning)."""
        streaming.check_version(version)
        return check_durability(durability), self.breakpoints.with_call(before, after, self.nodes)

    def _result(self, cp: Checkpoint, paused: list[Interrupt], version: str = "v1") -> Any:
        """What ``invoke`` returns when its run ends at ``cp``, paused on ``paused``: for ``version="v2"``
        a :class:`GraphOutput` of the same."""
        if version == "v2":
            value = self.schema.result(cp.channel_values)
            if isinstance(value, dict):
                value = self.schema.v2_coercion(self.schema.output_schema)(value)
            return GraphOutput(value, tuple(paused))
        return self.schema.result(cp.channel_values, {INTERRUPT_KEY: paused} if paused else None)

    def stream(
        self,
        input: Any,
        config: Mapping[str, Any] | RunConfig | None = None,
        *,
        stream_mode: str | Sequence[str] = "updates",
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        durability: str | None = None,
        subgraphs: bool = False,
        debug: bool | None = None,
        context: Any = None,
        print_mode: str | Sequence[str] = (),
        version: str = "v1",
        control: RunControl | None = None,
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Run the graph, yielding events as they happen (C6), as LangGraph's ``stream``.

        Modes (payloads: :mod:`graphcore.engine.stream`): ``updates`` (the default: ``{node: update}`` per
        task, ``{node: None}`` for one that wrote nothing, ``{"__interrupt__": (Interrupt, ...)}`` per task
        that paused), ``values`` (the state after the input and after each step that wrote), ``custom``
        (``get_stream_writer()`` chunks, live), ``tasks`` (each task's start and result), ``checkpoints``
        (each checkpoint saved, the input's included; only with a checkpointer), ``messages`` (``(message,
        metadata)``: the tokens of LangChain chat models called in nodes, live, and the messages nodes write;
        :mod:`graphcore.engine.messages_stream`), ``debug`` (those two,
        wrapped in ``{"step", "timestamp", "type", "payload"}``). One mode yields its payloads; a list yields
        ``(mode, payload)``; ``subgraphs=True`` yields ``(namespace, payload)`` / ``(namespace, mode,
        payload)`` with the events of graphs run as nodes or invoked inside nodes, as they happen (namespace
        ``("node:task_id", ...)``, ``()`` for this graph). ``debug=True`` (or ``compile(debug=True)``) prints
        the ``updates`` and ``values`` events to stdout as LangGraph's (``[mode] payload``; in a queue
        worker's step job they are logged at DEBUG on ``graphq.debug``:
        :func:`graphcore.engine.stream.show_events`), and so does ``print_mode`` for its modes (printed
        whether streamed or not; ``debug=True`` replaces it). ``version="v2"`` yields
        LangGraph's v2 stream parts instead, whatever the modes and ``subgraphs``: ``{"type": mode, "ns":
        namespace, "data": payload}``, a ``values`` part with ``"interrupts"`` (the open requests, moved out
        of the state) and its data a model instance for a pydantic or dataclass output schema
        (:func:`graphcore.engine.stream.stream_part`). Breaking out of the loop stops the run after the
        step in flight. The ``checkpoints``
        payloads are those ``graphq runs watch`` prints for a queued run. A stop at a breakpoint is one
        ``updates`` event ``{"__interrupt__": ()}``, as LangGraph's. ``interrupt_before``,
        ``interrupt_after``, ``durability``, ``context``, ``control`` and other keyword arguments: as
        :meth:`invoke`. An unknown stream mode yields nothing, as LangGraph's, with a UserWarning naming it.

        Raises:
            StepLimitError, NodeError, InvalidUpdateError, GraphDrained: as :meth:`invoke`.
        """
        config = with_context(config, context)
        ignore_unknown("stream", kwargs)
        modes = streaming.check_modes(stream_mode)
        durability, call = self._checked(version, durability, interrupt_before, interrupt_after)
        schema = self.schema
        part = streaming.v2_parts(
            version, schema.v2_coercion(schema.output_schema), schema.v2_coercion(schema.schema)
        )
        yield from streaming.stream_run(
            lambda run_modes: self._run(input, config, run_modes, durability, call, control=control),
            modes,
            single=isinstance(stream_mode, str),
            subgraphs=subgraphs,
            logged=streaming.logged_modes(self.debug if debug is None else debug, print_mode) or (),
            part=part,
        )

    async def ainvoke(
        self, input: Any, config: Mapping[str, Any] | RunConfig | None = None, **kwargs: Any
    ) -> Any:
        """:meth:`invoke` awaited from a running event loop, as LangGraph's ``ainvoke``: the same result and
        errors, the same keyword arguments. No node blocks the caller's loop: the run's async nodes and
        routers run on it, sync nodes in threads; the step loop itself runs on it or in a thread of its
        own (which, and why: :mod:`graphcore.engine.aio`). Cancelling the awaiting task cancels the async
        nodes running for it and starts no further super-step (a step of sync nodes only finishes and is
        committed: Python cannot stop a thread).
        """
        if not self._drives_on_loop(kwargs):
            return await aio.ainvoke(self.invoke, input, config, **kwargs)
        return await self._ainvoke_on_loop(input, config, **kwargs)

    def _drives_on_loop(self, kwargs: Mapping[str, Any]) -> bool:
        """Whether ``ainvoke(**kwargs)`` runs its steps on the caller's loop (:func:`aio.drive`): the rule is
        in :mod:`graphcore.engine.aio` (an unknown keyword goes the threaded way, where ``invoke`` warns of
        it and ignores it)."""
        debug = kwargs.get("debug")
        return (
            bool(self.async_tasks)
            and not self.async_start
            and current_task_or_none() is None
            and (self.checkpointer in (None, False) or type(self.checkpointer) is InMemoryCheckpointStore)
            and kwargs.keys() <= _INVOKE_KEYWORDS
            and kwargs.get("stream_mode", "values") == "values"
            and not streaming.logged_modes(
                self.debug if debug is None else debug, kwargs.get("print_mode", ())
            )
        )

    async def _ainvoke_on_loop(
        self,
        input: Any,
        config: Mapping[str, Any] | RunConfig | None = None,
        *,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        durability: str | None = None,
        stream_mode: str | Sequence[str] = "values",
        subgraphs: bool = False,
        debug: bool | None = None,
        context: Any = None,
        print_mode: str | Sequence[str] = (),
        version: str = "v1",
        control: RunControl | None = None,
    ) -> Any:
        """:meth:`invoke`'s run, each super-step awaited on the running loop (:func:`aio.drive`); takes
        :meth:`invoke`'s arguments (``stream_mode`` is ``"values"``, nothing is printed: see
        :meth:`_drives_on_loop`, and ``subgraphs`` does nothing then, as under ``invoke``)."""
        config = with_context(config, context)
        durability, call = self._checked(version, durability, interrupt_before, interrupt_after)
        last = await aio.drive(
            self._run(input, config, None, durability, call, on_loop=True, control=control)
        )
        return None if last is None else self._result(last[1], last[2], version)

    def astream(
        self, input: Any, config: Mapping[str, Any] | RunConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """:meth:`stream` as an async iterator, as LangGraph's ``astream``: the same events in the same
        order, the same keyword arguments and errors; as lazy as ``stream`` (the next super-step runs when
        the next event is asked for). Async nodes run on the caller's loop (:mod:`graphcore.engine.aio`).
        """
        return aio.astream(self.stream, input, config, **kwargs)

    def astream_events(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        version: str = "v2",
        **kwargs: Any,
    ) -> AsyncIterator[dict[str, Any]]:
        """LangChain's event stream of a run, as LangGraph's ``astream_events`` (needs langchain-core; v2
        events, or LangChain's deprecated v1 with ``version="v1"``):
        ``{"event", "name", "run_id", "parent_ids", "tags", "metadata", "data"}`` dicts —
        ``on_chain_start``/``on_chain_stream``/``on_chain_end`` of the graph (its input, each ``updates``
        chunk, the final state) and of each node (``metadata["langgraph_node"]``, ``langgraph_step``; tag
        ``graph:step:<n>``), and the events of the LangChain calls in nodes (``on_chat_model_stream`` with
        each token's ``AIMessageChunk`` as ``data["chunk"]``, ...). ``kwargs``: LangChain's filters
        (``include_names``, ``include_types``, ``include_tags``, ``exclude_*``).

        Raises:
            ImportError: langchain-core is not installed.
            TypeError: another keyword argument, named.
        """
        from graphcore.engine.lc_runs import astream_events

        return astream_events(self, input, config, version, kwargs)

    def _run(
        self,
        input: Any,
        config: Mapping[str, Any] | RunConfig | None,
        modes: Sequence[str] | None,
        durability: str | None = None,
        stops: Breakpoints = NO_BREAKPOINTS,
        *,
        on_loop: bool = False,
        control: RunControl | None = None,
    ) -> Generator[tuple[list[tuple[str, Any]], Checkpoint, list[Interrupt]], Any, None]:
        """The run's steps (:meth:`_execute`). ``durability``: the call's, checked (:func:`check_durability`);
        ``stops``: the run's breakpoints, the call's own applied (:meth:`Breakpoints.with_call`);
        ``on_loop``: driven by :func:`aio.drive`; ``control``: :meth:`invoke`'s."""
        cfg, scope = self._placement(config)
        scope = dataclasses.replace(scope, control=control or scope.control or RunControl())
        with (
            durable(scope, durability or cfg.durability) as scope,
            self._chain_run(input, cfg) as (cfg, reached),
        ):

            def steps(m: Sequence[str] | None) -> Generator[Any, Any, None]:
                run = self._execute(input, cfg, m, scope, stops, on_loop=on_loop)
                return run if reached is None else _reaching(run, reached)

            yield from streaming.relay(modes, scope, steps)

    def _chain_run(
        self, input: Any, cfg: RunConfig
    ) -> AbstractContextManager[tuple[RunConfig, Callable[[Checkpoint], None] | None]]:
        """The run's LangChain chain run (:func:`graphcore.engine.lc_runs.graph_run`) when ``cfg`` has
        callbacks and langchain-core is installed: ``cfg`` with its callbacks the run's, and the function to
        tell each checkpoint reached; else ``(cfg, None)``, reporting nothing."""
        if cfg.callbacks is not None:
            try:
                from graphcore.engine.lc_runs import graph_run
            except ImportError:
                pass
            else:
                return graph_run(self, input, cfg, current_task_or_none())
        return nullcontext((cfg, None))

    def _placement(self, config: Mapping[str, Any] | RunConfig | None) -> tuple[RunConfig, Scope]:
        """The run's config and where it checkpoints (G7).

        Called inside a running task (a node invoking a graph), the graph inherits the parent's
        ``configurable``, context and store; an explicit thread id starts a lineage in that thread's root
        namespace, otherwise it checkpoints in the parent's thread under the namespace
        ``parent_ns|node:task_id`` (also when given the node's own config: :func:`passed_on`).
        """
        parent, task = current_scope(), current_task_or_none()
        if parent is None or task is None or self.checkpointer is False or self._own_thread(config):
            cfg = self.config_for(config, wrap=False)  # LangGraph's errors in process
            if task is None:  # a root run: no namespace, and a checkpointer needs a thread (LangGraph's)
                cfg = outside_any_task(cfg)
                check_thread(self.checkpointer, self.defaults, config)
            elif cfg.callbacks is None and task.config.callbacks is not None:  # the node's, as LangChain's
                cfg = cfg.model_copy(update={"callbacks": task.config.callbacks})
            inside = parent is not None and task is not None
            store = store_of(self.checkpointer, inside)
            memory = parent.memory if inside and parent is not None else self.store
            control = parent.control if inside and parent is not None else None
            return cfg, Scope(store, cfg.thread_id or "", "", memory, control, run_id=self._named_run(config))
        inherited = {k: v for k, v in task.config.configurable.items() if not k.startswith(RESERVED_PREFIX)}
        outer = {
            "configurable": inherited,
            "context": task.config.context,
            "callbacks": task.config.callbacks,
            "max_super_steps": task.config.max_super_steps,  # LangGraph's child config keeps recursion_limit
            "metadata": _inherited_metadata(task, parent.ns),
        }
        given = merge_config(outer, passed_on(config))
        cfg = self.config_for(given, wrap=False)
        named = given.run_id  # the call's own: the node's run id is not passed on (passed_on)
        if given.thread_id is not None:  # an explicit thread: that thread's own lineage
            own = Scope(parent.store, cfg.thread_id or "", "", parent.memory, parent.control, run_id=named)
            return cfg, own
        ns = call_namespace(parent.ns, task)  # parent_ns|node:task_id, then ...|1 for its second call
        ns = stateful_ns(ns) if self.checkpointer is True else ns  # keeps its state across turns
        ids = {"thread_id": parent.thread_id, "run_id": task.config.run_id, "checkpoint_ns": ns}
        parents = {**parent.parents, parent.ns: task.checkpoint_id}  # LangGraph's checkpoint_map
        return cfg.model_copy(update=ids), Scope(
            parent.store, parent.thread_id, ns, parent.memory, parent.control, parent.replay, named, parents
        )

    def _named_run(self, config: Mapping[str, Any] | RunConfig | None) -> str | None:
        """The run id the caller gave this call (``config``'s ``run_id``, else the graph's defaults'; a
        node's own config passed on gives none, :func:`passed_on`), None when none: what its nodes see in
        ``runtime.execution_info`` (LangGraph's)."""
        return merge_config(self.defaults, passed_on(config)).run_id

    def _own_thread(self, config: Mapping[str, Any] | RunConfig | None) -> bool:
        """Whether this graph, invoked inside a task, checkpoints in its own store: it has one and ``config``
        names a thread. Without a thread it is placed in its parent's thread as a subgraph of
        ``checkpointer=None`` is, as LangGraph lends a subgraph its parent's saver."""
        if self.checkpointer in (None, True, False):
            return False
        return merge_config(self.defaults, passed_on(config)).thread_id is not None

    def _execute(
        self,
        input: Any,
        cfg: RunConfig,
        modes: Sequence[str] | None,
        scope: Scope,
        stops: Breakpoints = NO_BREAKPOINTS,
        *,
        on_loop: bool = False,
    ) -> Generator[tuple[list[tuple[str, Any]], Checkpoint, list[Interrupt]], Any, None]:
        """Run the graph's super-steps, yielding each one's ``(events, checkpoint, interrupts)``.

        ``on_loop`` (``ainvoke`` on the caller's loop, no ``modes``): each super-step is yielded as an
        :class:`aio.StepCall` for the driver (:func:`aio.drive`) to await, which sends its result back.
        """
        limit = cfg.step_limit()
        meta = checkpoint_metadata(cfg, parents=scope.parents)
        since = Checkpoint.now() if modes else ""
        scope = _travelling(scope, cfg, input)
        routed: list[tuple[str, Any]] = []  # the routers from START's custom chunks, when not live
        entry = StartTask(cfg, streaming.custom_writer(modes, routed))
        with run_scope(scope):
            made, finished, answers, passing, input = self._start(cfg, input, meta, scope, entry)
        cp = made[-1]
        counted_from = budget_from(input is not None, passing)  # LangGraph's count of such a call
        cfg, meta = continued_run(cfg, cp, scope.parents)
        cfg, shows = _with_messages_handler(cfg, modes, scope.ns)
        labels = streaming.task_labels(cfg) if modes else None  # the tasks' metadata in `tasks` events
        start = streaming.start_events(
            self,
            modes,
            made,
            scope,
            since=since,
            input=input,
            done=finished,
            labels=labels,
            custom=routed,
            remaining=steps_left(cfg, counted_from),
        )
        yield start, cp, []
        handled = self._handled(scope, cp) if passing else {}
        task = current_task_or_none()
        cancel = task.cancel_token if task is not None else None  # a subgraph stops with its parent (X3)
        again = passing and isinstance(input, Command) and input.resume is None  # paused tasks ask again
        steps = 0
        while cp.next_tasks:
            raise_if_abandoned()  # the ainvoke awaiting it was cancelled: no further super-step
            if steps + counted_from >= limit:
                raise step_limit_error(limit, cp, counted_from)
            stop = stops.stop(cp, passing and steps == 0) if stops else None
            if stop is not None:
                yield from self._stop_at(stop, modes, cp, scope)
                return
            _raise_if_drained(scope, task)  # after the breakpoints, as LangGraph's
            custom: list[tuple[str, Any]] = []
            writer = streaming.custom_writer(modes, custom)
            finished, resume = resume_plan(finished, answers, again=again and steps == 0)
            shown = streaming.step_view(self, modes, cp, finished, shows, scope.ns, cfg.metadata)  # live
            resumed = with_remaining_steps(with_resume(cfg, resume, answers), steps + counted_from)
            saver = TaskSaver(scope, cp, len(cp.next_tasks) - len(finished), self)
            step = partial(
                run_step,
                self,
                cp,
                resumed,
                finished=finished,
                writer=writer,
                cancel=cancel,
                handled=handled,
                on_handled=saver.handled,
            )
            if on_loop:  # awaited by the driver on the caller's loop, which sends the result back
                outcome = yield self._step_call(scope, cp, saver, step)  # type: ignore[misc]
            else:  # under run_scope
                outcome = yield from streaming.run_shown(shown, cp, scope, saver.step(step))
            if outcome.error is not None:  # the finished tasks keep their writes: they do not run again (I2)
                unsaved = saver.unsaved(outcome.results)
                records = failure_entries(outcome.failed, kept=saver.handled_ids | handled.keys())
                self._save_writes(scope, cp, [*unsaved, *records])
                if modes:  # what finished, and the failure, as LangGraph streams them before raising
                    failed = streaming.failed_events(
                        self, modes, custom, outcome.results, cp, outcome.error, shown
                    )
                    yield failed, cp, []
                raise raised(outcome.error)
            finished, answers, handled = {}, {}, {}
            paused = [i for r in outcome.results for i in r.interrupts]
            stopped = stop_of(outcome.results)
            if paused or stopped:  # the step does not commit: its finished tasks wait as pending writes (I2)
                self._save_writes(scope, cp, saver.unsaved(outcome.results))
                view = streaming.paused_view(self, cp, outcome.results)
                events = streaming.paused_events(self, modes, custom, outcome.results, cp, view, shown)
                yield events, view, paused
                if scope.ns:  # a graph a node invoked: the node pauses with it (LangGraph's nested graphs)
                    raise GraphInterrupt(*paused, stop=stopped)
                return
            cp = apply_writes(self, cp, outcome.results, meta)
            self._save(scope, cp, outcome.results)
            steps += 1
            left = steps_left(cfg, steps + counted_from)  # the next step's (its tasks' managed values)
            events = streaming.step_events(
                self, modes, custom, outcome.results, cp, scope, shown, labels, remaining=left
            )
            yield events, cp, []
        stop = stops.stop(cp, passing and steps == 0) if stops else None  # interrupt_after on the last step
        if stop is not None:
            yield from self._stop_at(stop, modes, cp, scope)

    def _step_call(
        self, scope: Scope, cp: Checkpoint, saver: TaskSaver, step: partial[StepResult]
    ) -> aio.StepCall:
        """``step`` (``run_step`` with its arguments) as a step call for :func:`aio.drive`: ``arun_step``
        with the same arguments."""
        awaited = saver.step(partial(arun_step, *step.args, **step.keywords))
        return aio.StepCall(scope, awaited, has_async_tasks(self, cp.next_tasks))

    @staticmethod
    def _stop_at(
        stop: Stop, modes: Sequence[str] | None, cp: Checkpoint, scope: Scope
    ) -> Iterator[tuple[list[tuple[str, Any]], Checkpoint, list[Interrupt]]]:
        """A stop at a static breakpoint before the step after ``cp`` (or after the last): its events;
        for a graph a node runs in its parent's thread, the node stops with it and so does its parent
        (LangGraph's), which shows the stop.

        Raises:
            GraphInterrupt: carrying ``stop``, for a graph run inside a node (``scope.ns``).
        """
        if scope.ns:
            raise GraphInterrupt(stop=stop)
        yield streaming.stopped_events(modes), cp, []

    def _start(
        self, cfg: RunConfig, input: Any, meta: Mapping[str, Any], scope: Scope, entry: StartTask
    ) -> tuple[list[Checkpoint], dict[str, TaskWrites], dict[str, Any], bool, Any]:
        """Where a run starts (C2, C3, G6): the scope's head (to resume or continue), a fork, or a new
        input checkpoint and the input applied after it (LangGraph's two). Returns the checkpoints up to
        the one the first step runs from (the last; those before it this run wrote), the pending writes of
        its step, the answers given, whether the run goes on from there (without input, with an answer, or
        a graph run inside a node that continues where it stopped): its first step passes the static
        breakpoints (LangGraph's); and the input the run started with: ``input``, or for a
        ``Command(resume=...)`` no interrupt waits for (a fresh thread, or its run ended) what
        :func:`~graphcore.engine.run_start.unasked` makes of it (the answer dropped, with a warning).
        ``entry``: what the routers from START get when the input is applied."""
        store = scope.store
        answering = isinstance(input, Command) and input.resume is not None
        parent, forks = start_point(store, scope.thread_id, cfg, scope.ns, answering=answering)
        if scope.ns and self.checkpointer is True and scope.replay is not None and store is not None:
            parent, forks = replayed_head(store, scope.thread_id, scope.ns, scope.replay)  # its state then
        if scope.ns and self.checkpointer is None and fresh_calls():  # a retried try's calls start again
            parent = None
        made: list[Checkpoint] = []
        if forks and parent is not None:
            parent = fork(parent, meta)
            self._save(scope, parent)
            made.append(parent)
        pending = (
            {}
            if store is None or parent is None
            else store.get_writes(scope.thread_id, parent.id, ns=scope.ns)
        )
        if scope.ns and store is not None and parent is not None:  # a subgraph again in its task: go on
            view, finished = with_command(self, parent, pending)  # with a Command given in an earlier call
            task = current_task_or_none()
            given = task.answers if task is not None else {}
            answers = carried_answers(view, finished, given)
            if resumes(self.checkpointer, view, finished, given) and not is_input(view):
                return [view], finished, answers, True, input
        if answering and store is None:
            raise nothing_to_resume()
        if answering and (parent is None or not parent.next_tasks):  # nobody asked: LangGraph drops it
            input, answering = unasked(input, scope.thread_id, fresh=parent is None), False
        finished = {}
        if store is not None and parent is not None:  # its pending writes, an input Command applied
            parent, finished = self._commanded(scope, parent, input, pending)
        if answering and parent is not None:
            asked = pending_interrupts(finished) or request_ahead(parent)  # none open: update_state moved on
            return [parent], finished, match_answer(asked, input.resume, None), True, input
        applied = None if isinstance(input, Command) and parent is not None else input  # a Command goes on
        return (*self._begin(cfg, applied, meta, scope, parent, made, entry, finished), input)

    def _commanded(
        self, scope: Scope, head: Checkpoint, input: Any, pending: Mapping[str, TaskWrites]
    ) -> tuple[Checkpoint, dict[str, TaskWrites]]:
        """``head`` as a run going on from it sees it, and its step's pending writes (``pending``, as
        stored; :func:`~graphcore.engine.algo.with_command`). An input ``Command`` holding an ``update`` or
        a ``goto`` (answering or not) is saved as ``head``'s pending write (:func:`command_entry`, after
        those of commands given there before) once it applies: a later continuation and ``get_state`` apply
        it too.

        Raises:
            InvalidUpdateError: the command's update or goto is invalid (nothing is saved).
        """
        if not (isinstance(input, Command) and (input.update is not None or input.goto)):
            return with_command(self, head, pending)
        entry = command_entry(self, input, pending.get(COMMAND_TASK_ID))
        seen = with_command(self, head, {**pending, COMMAND_TASK_ID: entry})  # a reducer's refusal: unsaved
        self._save_writes(scope, head, [entry])
        return seen

    def _begin(
        self,
        cfg: RunConfig,
        input: Any,
        meta: Mapping[str, Any],
        scope: Scope,
        parent: Checkpoint | None,
        made: list[Checkpoint],
        entry: StartTask,
        finished: Mapping[str, TaskWrites],
    ) -> tuple[list[Checkpoint], dict[str, TaskWrites], dict[str, Any], bool]:
        """:meth:`_start` for a run that answers nothing: it goes on from ``parent`` (its input applied
        first when it is an input checkpoint; ``finished``: its step's pending writes), or starts with
        ``input`` (``made``: the fork made first)."""
        store = scope.store
        remaining = cfg.step_limit() + 1  # the run's super-steps and its input's (managed values)
        if input is None and store is not None and parent is not None and is_input(parent):
            left = remaining - budget_from(False, False)  # no input checkpoint spent (LangGraph's)
            cp = applied_input(self, parent, meta, left, entry)  # not applied yet: update_state, a fork
            self._save(scope, cp, input_writes(self, parent))
            return [*made, cp], {}, {}, False
        if input is None and store is not None and parent is not None:
            return [parent], dict(finished), {}, True
        if input is None:  # nothing to continue (LangGraph's EmptyInputError)
            raise empty_input(store is not None, scope.thread_id)
        first, cp = start_run(self, parent, input, meta, remaining, entry)
        self._save(scope, first)
        self._save(scope, cp, input_writes(self, first))
        return [first, cp], {}, {}, False

    @staticmethod
    def _handled(scope: Scope, cp: Checkpoint) -> dict[str, str]:
        """Task id → saved failure text of each task of the step after ``cp`` whose error handler took its
        failure in an earlier run (:mod:`graphcore.engine.handlers`): a run going on from ``cp`` runs only
        those handlers."""
        if scope.store is None:
            return {}
        return handled_of(scope.store.get_writes_and_errors(scope.thread_id, cp.id, ns=scope.ns)[1])

    def _save(self, scope: Scope, cp: Checkpoint, writes: Sequence[TaskWrites] = ()) -> None:
        """Store ``cp`` (and the task ``writes`` that made it, as its parent's pending writes) in the
        scope's store, without what is never checkpointed (:func:`stored_form`, :func:`stored_writes`)."""
        if scope.store is not None:
            kept = [stored_writes(self, w) for w in writes]
            scope.store.put(scope.thread_id, stored_form(self, cp), ns=scope.ns, writes=kept)

    def _save_writes(self, scope: Scope, cp: Checkpoint, results: Sequence[TaskWrites]) -> None:
        if scope.store is not None:
            for result in results:
                scope.store.put_writes(scope.thread_id, cp.id, stored_writes(self, result), ns=scope.ns)


def _travelling(scope: Scope, cfg: RunConfig, input: Any) -> Scope:
    """``scope`` of a root run, with its :class:`Replay` when it goes on from a checkpoint given by id
    without answering (LangGraph's time travel: ``invoke(None | input, config_with_checkpoint_id)``)."""
    answering = isinstance(input, Command) and input.resume is not None
    if scope.ns or scope.store is None or answering:
        return scope
    at = named_checkpoints(cfg)  # a subgraph snapshot's config names its checkpoints
    replay = replay_of(scope.store, scope.thread_id, cfg.checkpoint_id, Checkpoint.now(), at)
    return scope if replay is None else dataclasses.replace(scope, replay=replay)


_INVOKE_KEYWORDS = frozenset(inspect.signature(CompiledGraph.invoke).parameters) - {
    "self",
    "input",
    "config",
    "kwargs",
}
"""The keyword arguments of ``invoke`` (and ``ainvoke``)."""


def ignore_unknown(call: str, kwargs: Mapping[str, Any]) -> None:
    """Warn (a UserWarning) of the keyword arguments ``call`` (``invoke``, ``stream``) does not know, which it
    ignores, as LangGraph's take them into ``**kwargs``: a misspelt option must not pass unseen."""
    if kwargs:
        warn_caller(f"{call}() ignores unknown keyword argument(s) {sorted(kwargs)}")


def _reaching(
    run: Generator[Any, Any, None], reached: Callable[[Checkpoint], None]
) -> Generator[Any, Any, None]:
    """``run`` (a graph's steps), telling ``reached`` each checkpoint it yields; what a driver sends
    (:func:`aio.drive`) goes on to ``run``, and closing this closes ``run``."""
    sent: Any = None
    try:
        while True:
            try:
                item = run.send(sent)
            except StopIteration:
                return
            if isinstance(item, tuple):  # (events, checkpoint, interrupts); not a driver's step call
                reached(item[1])
            sent = yield item
    finally:
        run.close()


def _raise_if_drained(scope: Scope, task: TaskContext | None) -> None:
    """Raise :class:`GraphDrained` when the run's :class:`RunControl` was asked to drain; a graph invoked
    inside a node (``task``) runs on: its parent's run stops at its own next super-step.

    Raises:
        GraphDrained: naming the drain's reason.
    """
    if task is None and scope.control is not None and scope.control.drain_requested:
        raise GraphDrained(scope.control.drain_reason or "shutdown")


def _inherited_metadata(task: TaskContext, parent_ns: str) -> dict[str, Any]:
    """The metadata a graph invoked in ``task`` (of a graph in namespace ``parent_ns``) inherits, as
    LangChain's child config: the task's run metadata, with ``checkpoint_ns`` the namespace of the
    outermost such task (``sub:<task id>``, kept when already there; LangGraph's)."""
    return {"checkpoint_ns": task_ns(parent_ns, task.node, task.task_id), **task.config.metadata}


def _with_messages_handler(
    cfg: RunConfig, modes: Sequence[str] | None, graph_ns: str
) -> tuple[RunConfig, messages_stream.MessagesHandler | None]:
    """``cfg`` with a ``messages`` LangChain callback in its callbacks when the run streams ``messages``, and
    the handler of the run's ``messages`` events (``graph_ns``: the graph's checkpoint namespace). A graph
    invoked in a node whose events are streamed (``subgraphs=True``) keeps its parent's callback (its
    models' tokens go under its namespace) and shows its nodes' written messages under its own namespace,
    each id once across both (LangGraph's). A graph streamed in a node (``inner.stream(...)``) adds its own
    callback: its stream shows its models' tokens, and the enclosing stream's callback still hears them and
    is shown its nodes' written messages."""
    sink = streaming.messages_sink(modes)
    if sink is None:
        return cfg, None
    put, subgraphs, relayed = sink
    parent = next(
        (
            h.shows
            for h in messages_stream.handlers(cfg.callbacks)
            if isinstance(getattr(h, "shows", None), messages_stream.MessagesHandler)
        ),
        None,
    )
    if parent is not None and relayed:
        return cfg, parent.sharing(put)
    return messages_stream.listening(cfg, put, graph_ns, subgraphs, also=parent)
