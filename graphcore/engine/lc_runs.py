"""LangChain chain runs of a graph and of its nodes, as LangGraph reports them to LangChain's callbacks: what
``astream_events`` (LangChain's v2 event stream) is made of.

* :func:`astream_events`: the graph's run (``on_chain_start`` with its input, ``on_chain_stream`` with each
  ``updates`` chunk, ``on_chain_end`` with the final state), through LangChain's own event stream, so the
  events, their filters (``include_names``, ``include_types``, ``include_tags`` and the ``exclude_*``) and
  the events of the LangChain calls inside nodes (``on_chat_model_stream``, ...) are LangChain's.
* :func:`node_run`: a node's run (``on_chain_start`` with the task's input, ``on_chain_stream`` and
  ``on_chain_end`` with what the node returned, ``on_chain_error``; tagged ``graph:step:<n>``, with the
  task's ``langgraph_*`` metadata), when the task's callbacks are a LangChain callback manager of a parent
  run (the graph runs inside a LangChain run: its ``astream_events``, or a chain that calls it). The
  LangChain calls in the node are children of the node's run.

Imported only when langchain-core is installed and used.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.callbacks import BaseCallbackManager, CallbackManager
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langchain_core.runnables.config import get_async_callback_manager_for_config
from langchain_core.tracers._streaming import _StreamingCallbackHandler

from graphcore.engine.config import TaskContext

__all__ = ["GraphRunnable", "astream_events", "node_run"]

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
    graph's run, reported as one chain run."""

    def __init__(self, graph: Any, given: Any) -> None:
        self.graph, self.given = graph, dict(given or {})
        self.name = graph.get_name()  # "LangGraph" for a graph compiled without a name, as LangGraph's

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self.graph.invoke(input, self._config(None), **kwargs)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """The graph's chunks of ``kwargs["stream_mode"]`` (``"updates"`` when not given), shaped as the
        graph's ``astream`` yields them, as its chain run's chunks; the run ends with the final state.
        ``kwargs``: :data:`RUN_KEYWORDS`."""
        config = ensure_config(config)
        manager = get_async_callback_manager_for_config(config)
        run = await manager.on_chain_start(
            None, input, name=config.get("run_name") or self.get_name(), run_id=config.pop("run_id", None)
        )
        final: dict[str, Any] = {}

        requested = kwargs.pop("stream_mode", "updates")
        several = not isinstance(requested, str)
        modes = list(requested) if several else [requested]
        subgraphs = bool(kwargs.get("subgraphs"))

        async def chunks() -> AsyncIterator[Any]:
            async for item in self.graph.astream(
                input, self._config(run.get_child()), stream_mode=["values", *modes], **kwargs
            ):
                ns, (mode, chunk) = (item[0], item[1:]) if subgraphs else ((), item)
                if mode == "values" and not ns:
                    final["output"] = chunk
                if mode in modes:
                    shaped = (mode, chunk) if several else (chunk,)
                    yield (ns, *shaped) if subgraphs else shaped if several else chunk

        stream = chunks()
        tap = next((h for h in run.handlers if isinstance(h, _StreamingCallbackHandler)), None)
        if tap is not None:
            stream = tap.tap_output_aiter(run.run_id, stream)
        try:
            async for chunk in stream:
                yield chunk
        except BaseException as exc:
            await run.on_chain_error(exc)
            raise
        await run.on_chain_end(final.get("output"))

    def _config(self, callbacks: Any) -> dict[str, Any]:
        given = {k: v for k, v in self.given.items() if k not in ("callbacks", "run_name", "run_id")}
        return {**given, "callbacks": callbacks} if callbacks is not None else given


def astream_events(
    graph: Any, input: Any, config: Any, version: str, kwargs: dict[str, Any]
) -> AsyncIterator[dict[str, Any]]:
    """LangChain's event stream (``version`` ``"v2"``, or its deprecated ``"v1"``) of ``graph``'s run (see
    the module docstring); ``kwargs``: LangChain's ``astream_events`` filters and the graph's
    :data:`RUN_KEYWORDS`.

    Raises:
        TypeError: a keyword argument that is not one of :data:`FILTERS` or :data:`RUN_KEYWORDS`, named.
        NotImplementedError: LangChain's, for another ``version`` (when iterated).
    """
    unknown = sorted(set(kwargs) - FILTERS - RUN_KEYWORDS)
    if unknown:
        raise TypeError(
            f"astream_events() got unexpected keyword argument(s) {unknown}; "
            f"takes {sorted(FILTERS | RUN_KEYWORDS)}"
        )
    given = dict(config or {})
    root = {k: given[k] for k in _ROOT_OPTIONS if k in given}
    runnable = GraphRunnable(graph, given)
    stream: Any = runnable.astream_events  # its version and filters checked by LangChain
    events: AsyncIterator[dict[str, Any]] = stream(input, root, version=version, **kwargs)
    return events


@contextmanager
def node_run(ctx: TaskContext, input: Any) -> Iterator[Callable[[Any], None]]:
    """The node's chain run around its call (see the module docstring); yields ``shown(output)``, to call
    with what the node returned. Nothing is reported when the task's callbacks belong to no parent run."""
    parent = ctx.config.callbacks
    if not isinstance(parent, BaseCallbackManager) or parent.parent_run_id is None:
        yield lambda output: None
        return
    metadata = {k: v for k, v in ctx.config["metadata"].items() if k.startswith("langgraph_")}
    manager = CallbackManager(
        handlers=parent.handlers,
        inheritable_handlers=parent.inheritable_handlers,
        parent_run_id=parent.parent_run_id,
        tags=[*parent.tags, f"graph:step:{metadata.get('langgraph_step')}"],
        inheritable_tags=parent.inheritable_tags,
        metadata={**parent.metadata, **metadata},
        inheritable_metadata=parent.inheritable_metadata,
    )
    run = manager.on_chain_start(None, input, name=ctx.node, run_id=uuid.uuid4())
    ctx.config = ctx.config.model_copy(update={"callbacks": run.get_child()})
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
