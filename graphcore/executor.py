"""The compiled graph and its in-process executor: ``invoke`` and ``stream`` (G3, C1, C6).

The loop here is thin: it calls :func:`graphcore.algo.apply_input`, :func:`graphcore.step.run_step` and
:func:`graphcore.algo.apply_writes` — exactly what the RQ step job calls, one super-step per job.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from graphcore.algo import apply_input, apply_writes
from graphcore.checkpoint import Checkpoint
from graphcore.config import RunConfig, merge_config
from graphcore.errors import StepLimitError
from graphcore.step import run_step

if TYPE_CHECKING:
    from graphcore.algo import Task
    from graphcore.graph import Branch, NodeSpec, StateGraph
    from graphcore.store.base import CheckpointStore

__all__ = ["STREAM_MODES", "CompiledGraph", "step_limit_error"]

STREAM_MODES = ("values", "updates", "custom")


def step_limit_error(limit: int, cp: Checkpoint) -> StepLimitError:
    """The error for a run that still has tasks after ``limit`` super-steps (C1)."""
    pending = [t.node for t in cp.next_tasks]
    return StepLimitError(
        f"run needs more than max_super_steps={limit} super-steps (next tasks: {pending}); raise it with "
        "the run option max_super_steps or GRAPHQ_MAX_SUPER_STEPS"
    )


class CompiledGraph:
    """A validated graph, ready to run in-process or on the queue.

    Attributes:
        name: the workflow name.
        schema: the state schema and channels.
        nodes: node name → spec.
    """

    def __init__(
        self,
        builder: StateGraph,
        *,
        name: str,
        checkpointer: CheckpointStore | None,
        defaults: Mapping[str, Any],
    ) -> None:
        self.name = name
        self.formatter: Callable[[Any], str] | None = None
        """Renders a run's result for people (``graphq run`` prints it); None prints the state as JSON."""
        self.schema = builder.schema
        self.nodes: dict[str, NodeSpec] = dict(builder.nodes)
        self.checkpointer = checkpointer
        self.defaults = merge_config(defaults)
        self.edges_from: dict[str, list[str]] = {}
        for source, target in builder.edges:
            self.edges_from.setdefault(source, []).append(target)
        self.branches_from: dict[str, list[Branch]] = {}
        for branch in builder.branches:
            self.branches_from.setdefault(branch.source, []).append(branch)
        self.joins: list[tuple[str, tuple[str, ...], str]] = [
            ("+".join(sources) + ">" + target, sources, target) for sources, target in builder.joins
        ]
        self.joins_from: dict[str, list[tuple[str, tuple[str, ...], str]]] = {}
        for join in self.joins:
            for source in join[1]:
                self.joins_from.setdefault(source, []).append(join)

    def config_for(self, config: Mapping[str, Any] | RunConfig | None) -> RunConfig:
        """The run config: this graph's defaults merged with ``config`` (C4), with ids filled in."""
        cfg = merge_config(self.defaults, config)
        return cfg.model_copy(
            update={"thread_id": cfg.thread_id or uuid.uuid4().hex, "run_id": cfg.run_id or uuid.uuid4().hex}
        )

    def invoke(self, input: Any, config: Mapping[str, Any] | RunConfig | None = None) -> dict[str, Any]:
        """Run the graph to the end in this process and return the final state values.

        Args:
            input: the input update (a dict, or a model of the state schema).
            config: run options (see :class:`RunConfig`).

        Returns:
            Channel name → value after the last super-step.

        Raises:
            StepLimitError: more than ``max_super_steps`` super-steps were needed.
            NodeError: a node raised; ``.node`` and ``.error`` tell which and what.
            InvalidUpdateError: a node's writes were invalid or conflicting.
        """
        final: dict[str, Any] = {}
        for _, cp in self._run(input, config, None):
            final = cp.channel_values
        return dict(final)

    def stream(
        self,
        input: Any,
        config: Mapping[str, Any] | RunConfig | None = None,
        *,
        stream_mode: str | Sequence[str] = "values",
    ) -> Iterator[Any]:
        """Run the graph, yielding events as super-steps complete (C6).

        Modes: ``values`` (the full state after input and after each step), ``updates`` (``{node: writes}``
        per task), ``custom`` (chunks from ``get_stream_writer()``). With one mode, events are the
        payloads; with a list of modes, ``(mode, payload)`` pairs.

        Raises:
            ValueError: an unknown stream mode.
            StepLimitError, NodeError, InvalidUpdateError: as :meth:`invoke`.
        """
        modes = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
        bad = [m for m in modes if m not in STREAM_MODES]
        if bad:
            raise ValueError(f"unknown stream mode(s) {bad}; known: {list(STREAM_MODES)}")
        single = isinstance(stream_mode, str)
        for events, _ in self._run(input, config, modes):
            for mode, payload in events:
                yield payload if single else (mode, payload)

    def _run(
        self, input: Any, config: Mapping[str, Any] | RunConfig | None, modes: Sequence[str] | None
    ) -> Iterator[tuple[list[tuple[str, Any]], Checkpoint]]:
        cfg = self.config_for(config)
        limit = cfg.step_limit()
        meta = {"run_id": cfg.run_id}
        cp = apply_input(self, None, input, meta)
        self._save(cfg, cp, [])
        yield ([("values", dict(cp.channel_values))] if modes and "values" in modes else []), cp
        steps = 0
        while cp.next_tasks:
            if steps >= limit:
                raise step_limit_error(limit, cp)
            custom: list[tuple[str, Any]] = []

            def writer(task: Task, chunk: Any, sink: list[tuple[str, Any]] = custom) -> None:
                sink.append(("custom", chunk))

            outcome = run_step(self, cp, cfg, writer=writer)
            if outcome.error is not None:
                raise outcome.error
            cp = apply_writes(self, cp, outcome.results, meta)
            self._save(cfg, cp, outcome.results)
            steps += 1
            yield self._events(modes, custom, outcome.results, cp), cp

    @staticmethod
    def _events(
        modes: Sequence[str] | None, custom: list[tuple[str, Any]], results: Sequence[Any], cp: Checkpoint
    ) -> list[tuple[str, Any]]:
        if not modes:
            return []
        events = [e for e in custom if "custom" in modes]
        if "updates" in modes:
            events += [("updates", {r.node: dict(r.writes)}) for r in results]
        if "values" in modes:
            events.append(("values", dict(cp.channel_values)))
        return events

    def _save(self, cfg: RunConfig, cp: Checkpoint, results: Sequence[Any]) -> None:
        if self.checkpointer is not None and cfg.thread_id is not None:
            self.checkpointer.put(cfg.thread_id, cp)

    def get_graph_edges(self) -> list[tuple[str, str]]:
        """All static edges (source, target), joins expanded, for display."""
        edges = [(s, t) for s, targets in self.edges_from.items() for t in targets]
        edges += [(s, target) for _, sources, target in self.joins for s in sources]
        return edges
