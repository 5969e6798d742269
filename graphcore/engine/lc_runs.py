"""LangChain chain runs of a graph and of its nodes, as LangGraph reports them to LangChain's callbacks
(``config["callbacks"]`` of ``invoke``, ``stream``, ``ainvoke``, ``astream``) and what ``astream_events``
(LangChain's v2 event stream) is made of: one mechanism for both.

* :func:`graph_run`: the graph's run (``on_chain_start`` with its input, ``on_chain_end`` with the final
  state, ``on_chain_error``), when the run has callbacks; a graph invoked inside a node (a subgraph) has its
  own run, a child of the node's.
* :func:`node_run`: a node's run (``on_chain_start`` with the task's input, ``on_chain_stream`` and
  ``on_chain_end`` with what the node returned, ``on_chain_error``; tagged ``graph:step:<n>``, with the
  task's ``langgraph_*`` metadata), a child of the graph's run. The LangChain calls in the node are
  children of the node's run (tagged ``seq:step:1``, as LangGraph's).
* :func:`router_run`: a conditional edge's router's run (``on_chain_start`` with what the router is
  passed, ``on_chain_end`` with what it returned, ``on_chain_error``; named as the router), a child of
  its node's run tagged ``seq:step:<k>`` as LangGraph's; the LangChain calls in the router are its
  children.
* :func:`astream_events`: LangChain's own event stream of the graph's ``astream`` (:class:`GraphRunnable`),
  so the events, their filters (``include_names``, ``include_types``, ``include_tags`` and the
  ``exclude_*``) and the events of the LangChain calls inside nodes (``on_chat_model_stream``, ...) are
  LangChain's; the graph's chunks are its run's ``on_chain_stream`` events.

Imported only when langchain-core is installed and a run has callbacks.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, cast

from langchain_core.callbacks import BaseCallbackManager, CallbackManager
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langchain_core.tracers._streaming import _StreamingCallbackHandler

from graphcore.engine.compiled import Branch, GraphSpec
from graphcore.engine.config import RunConfig, TaskContext, task_context
from graphcore.engine.messages_stream import handlers
from graphcore.errors import warn_caller
from graphcore.types import END

__all__ = ["GraphRunnable", "astream_events", "graph_run", "node_run", "router_run"]

_ROOT_OPTIONS = ("callbacks", "tags", "metadata", "run_name", "run_id")
"""The options of the caller's config that belong to the graph's chain run; the graph's own run takes the
others (LangChain's defaults, e.g. its ``recursion_limit`` of 25, are not imposed on it), and its tags and
metadata."""

FILTERS = frozenset(
    {"include_names", "include_types", "include_tags", "exclude_names", "exclude_types", "exclude_tags"}
)
"""LangChain's ``astream_events`` filters."""

RUN_KEYWORDS = frozenset(
    {"stream_mode", "subgraphs", "durability", "interrupt_before", "interrupt_after", "debug", "context"}
)
"""The graph's ``astream`` keywords ``astream_events`` passes on to the run, as LangChain's does for
LangGraph's: ``stream_mode`` (and ``subgraphs``) shape the graph's ``on_chain_stream`` chunks."""


class GraphRunnable(Runnable[Any, Any]):
    """A compiled graph as a LangChain ``Runnable`` for LangChain's event stream: its ``astream`` is the
    graph's ``astream``, whose chain run (:func:`graph_run`) the event stream hears."""

    def __init__(self, graph: Any, given: Any) -> None:
        self.graph, self.given = graph, dict(given or {})
        self.name = graph.get_name()  # "LangGraph" for a graph compiled without a name, as LangGraph's

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self.graph.invoke(input, self._config(ensure_config(config)), **kwargs)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """The graph's ``astream`` chunks (``stream_mode`` ``"updates"`` when not given), also as its chain
        run's ``on_chain_stream`` chunks. ``kwargs``: :data:`RUN_KEYWORDS`."""
        config = ensure_config(config)
        run_id = config.pop("run_id", None) or uuid.uuid4()
        kwargs.setdefault("stream_mode", "updates")
        stream = self.graph.astream(input, {**self._config(config), "run_id": run_id}, **kwargs)
        tap = next(
            (h for h in handlers(config.get("callbacks")) if isinstance(h, _StreamingCallbackHandler)), None
        )
        async for chunk in stream if tap is None else tap.tap_output_aiter(run_id, stream):
            yield chunk

    def _config(self, config: RunnableConfig) -> dict[str, Any]:
        """The graph's config: the options given to ``astream_events`` but the chain run's, which are
        LangChain's (``config``)."""
        given = {k: v for k, v in self.given.items() if k not in _ROOT_OPTIONS}
        return {**given, **{k: config[k] for k in _ROOT_OPTIONS if config.get(k)}}  # type: ignore[literal-required]


def astream_events(
    graph: Any, input: Any, config: Any, version: str, kwargs: dict[str, Any]
) -> AsyncIterator[dict[str, Any]]:
    """LangChain's event stream (``version`` ``"v2"``, or its deprecated ``"v1"``) of ``graph``'s run (see
    the module docstring); ``kwargs``: LangChain's ``astream_events`` filters and the graph's
    :data:`RUN_KEYWORDS`.

    Another keyword argument is ignored, as LangGraph's, with a UserWarning naming it.

    Raises:
        NotImplementedError: LangChain's, for another ``version`` (when iterated).
    """
    unknown = sorted(set(kwargs) - FILTERS - RUN_KEYWORDS)
    if unknown:  # LangGraph passes them on to astream, which ignores them
        warn_caller(f"astream_events() ignores unknown keyword argument(s) {unknown}")
        kwargs = {k: v for k, v in kwargs.items() if k not in unknown}
    given = dict(config or {})
    root = {k: given[k] for k in _ROOT_OPTIONS if k in given}
    runnable = GraphRunnable(graph, given)
    stream: Any = runnable.astream_events  # its version and filters checked by LangChain
    events: AsyncIterator[dict[str, Any]] = stream(input, root, version=version, **kwargs)
    return events


@contextmanager
def graph_run(
    graph: Any, input: Any, cfg: RunConfig, task: TaskContext | None
) -> Iterator[tuple[RunConfig, Callable[[Any], None]]]:
    """The graph's chain run around its run, as LangGraph reports it to ``cfg.callbacks`` (see the module
    docstring): ``on_chain_start`` with ``input`` (named ``cfg.run_name``, else the graph's name; with
    ``cfg``'s tags and metadata, and ``ls_integration: "langgraph"``), then ``on_chain_end`` with the final
    state, or ``on_chain_error`` with what the run raised.

    ``task``: the task the graph is invoked in (its run inherits the task's tags and metadata, as LangChain
    passes a config on); None for a root run, whose chain run id is ``cfg.run_id`` when that is a UUID.
    Yields ``cfg`` whose callbacks are the run's children (its nodes' runs, :func:`node_run`), and
    ``reached(checkpoint)``, to call with each checkpoint the run reaches: the last one's state is the
    run's output."""
    outer = _passed_on(task)
    manager = CallbackManager.configure(
        cfg.callbacks,
        inheritable_tags=[*outer.get("tags", []), *cfg.tags],
        inheritable_metadata={**outer.get("metadata", {}), **cfg["metadata"]},
    )
    if "ls_integration" not in manager.metadata:
        manager.add_metadata({"ls_integration": "langgraph"})
    run = manager.on_chain_start(
        None, input, name=cfg.run_name or graph.get_name(), run_id=_uuid(cfg.run_id) if task is None else None
    )
    last: list[Any] = [None]
    try:
        yield cfg.model_copy(update={"callbacks": run.get_child()}), partial(last.__setitem__, 0)
    except BaseException as exc:
        run.on_chain_error(exc)
        raise
    run.on_chain_end(None if last[0] is None else graph.schema.result(last[0].channel_values))


def _passed_on(task: TaskContext | None) -> dict[str, Any]:
    """``task``'s config as LangChain passes it on to a call (``ensure_config``); empty for no task."""
    return {} if task is None else dict(ensure_config(cast(RunnableConfig, dict(task.config))))


def _uuid(run_id: str | None) -> uuid.UUID | None:
    """``run_id`` as a UUID; None when it is not one (a run id of graphq's may be any string)."""
    try:
        return uuid.UUID(run_id) if run_id else None
    except ValueError:
        return None


@contextmanager
def node_run(ctx: TaskContext, input: Any) -> Iterator[Callable[[Any], None]]:
    """The node's chain run around its call (see the module docstring); yields ``shown(output)``, to call
    with what the node returned. Nothing is reported when the task's callbacks belong to no parent run."""
    parent = ctx.config.callbacks
    if not isinstance(parent, BaseCallbackManager) or parent.parent_run_id is None:
        yield lambda output: None
        return
    metadata = _task_metadata(ctx)
    manager = CallbackManager(
        handlers=parent.handlers,
        inheritable_handlers=parent.inheritable_handlers,
        parent_run_id=parent.parent_run_id,
        tags=sorted({*parent.tags, f"graph:step:{metadata.get('langgraph_step')}"}),
        inheritable_tags=parent.inheritable_tags,
        metadata={**parent.metadata, **metadata},
        inheritable_metadata=parent.inheritable_metadata,
    )
    run = manager.on_chain_start(None, input, name=ctx.node, run_id=uuid.uuid4())
    ctx.config = ctx.config.model_copy(update={"callbacks": run.get_child("seq:step:1")})  # LangGraph's tag
    outputs: list[Any] = []

    def shown(output: Any) -> None:
        outputs.append(output)
        for handler in run.handlers:
            if isinstance(handler, _StreamingCallbackHandler):
                for _ in handler.tap_output_iter(run.run_id, iter([output])):
                    pass

    try:
        yield shown
    except BaseException as exc:
        run.on_chain_error(exc)
        raise
    run.on_chain_end(outputs[-1] if outputs else None, inputs=input)


@contextmanager
def router_run(
    ctx: TaskContext, graph: GraphSpec, branch: Branch, state: Any
) -> Iterator[Callable[[Any], None]]:
    """The chain run of ``branch``'s router around its call on ``state`` (see the module docstring), in the
    node's run (:func:`node_run`) of task ``ctx``; yields ``shown(chosen)``, to call with what the router
    returned. Nothing is reported outside a node's run."""
    parent = ctx.config.callbacks
    if not isinstance(parent, BaseCallbackManager) or parent.parent_run_id is None:
        yield lambda chosen: None
        return
    metadata = {**parent.inheritable_metadata, **_task_metadata(ctx)}
    manager = CallbackManager(  # what the node's run's get_child(f"seq:step:{k}") gives
        handlers=parent.inheritable_handlers,
        inheritable_handlers=parent.inheritable_handlers,
        parent_run_id=parent.parent_run_id,
        tags=[*parent.inheritable_tags, f"seq:step:{_seq_step(graph, branch)}"],
        inheritable_tags=parent.inheritable_tags,
        metadata=metadata,
        inheritable_metadata=metadata,
    )
    run = manager.on_chain_start(None, state, name=branch.name, run_id=uuid.uuid4())
    node_config = ctx.config
    ctx.config = node_config.model_copy(update={"callbacks": run.get_child()})  # the router's calls
    chosen: list[Any] = []
    try:
        with task_context(ctx):  # LangChain's current config too, for calls not passed the config
            yield chosen.append
    except BaseException as exc:
        run.on_chain_error(exc)
        raise
    finally:
        ctx.config = node_config
    run.on_chain_end(chosen[-1] if chosen else None, inputs=state)


def _task_metadata(ctx: TaskContext) -> dict[str, Any]:
    """The task's ``langgraph_*`` metadata, as LangGraph gives it to its node's run and routers' runs."""
    return {k: v for k, v in ctx.config["metadata"].items() if k.startswith("langgraph_")}


def _seq_step(graph: GraphSpec, branch: Branch) -> int:
    """The step of ``branch``'s router in LangGraph's sequence of its node: the node (1), its state writes
    (2), a write per edge from the node to a node (a plain edge or a join) then its routers, in order."""
    node = branch.source
    edges = [target for target in graph.edges_from.get(node, ()) if target != END]
    routers = graph.branches_from[node]
    return (
        3
        + len(edges)
        + len(graph.joins_from.get(node, ()))
        + next(i for i, b in enumerate(routers) if b is branch)
    )
