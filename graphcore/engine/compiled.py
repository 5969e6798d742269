"""The compiled graph's data (G1), apart from the loop that executes it: node specs, branches, and
:class:`GraphSpec` (nodes, edges, branches, joins, schema, run defaults)."""

from __future__ import annotations

import copy as copying
import uuid
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Self

from graphcore.checkpoints.protocol import CheckpointStore
from graphcore.checkpoints.store_base import BaseStore
from graphcore.engine.breakpoints import Breakpoints, nodes_of
from graphcore.engine.checkpointer import check_checkpointer, check_store
from graphcore.engine.config import RunConfig, merge_config
from graphcore.engine.loops import is_async_callable
from graphcore.engine.retry import NodeRetry
from graphcore.engine.runtime import coerce_context
from graphcore.engine.schema import StateSchema, context_json_schema, json_schema
from graphcore.engine.timeouts import IdleTimeout
from graphcore.errors import ConfigError, InvalidUpdateError
from graphcore.types import START, PendingTask

if TYPE_CHECKING:
    from graphcore.engine.cache_policy import CachePolicy

__all__ = [
    "DEFAULT_ERROR_HANDLER",
    "ERROR_HANDLER_PREFIX",
    "Branch",
    "GraphParts",
    "GraphSpec",
    "NodeSpec",
    "ran_as",
]

ERROR_HANDLER_PREFIX = "__error_handler__"
"""``add_node(name, ..., error_handler=h)`` makes ``h`` node ``__error_handler__<name>`` (LangGraph's)."""
DEFAULT_ERROR_HANDLER = "__default_error_handler__"
"""The node of ``set_node_defaults(error_handler=...)`` (LangGraph's name)."""


def ran_as(node: str, ran: str) -> bool:
    """Whether a task of ``node`` that finished as node ``ran`` (its writes' node) is that node's task: the
    node itself, or its error handler (:mod:`graphcore.engine.handlers`)."""
    return ran == node or ran in (DEFAULT_ERROR_HANDLER, ERROR_HANDLER_PREFIX + node)


@dataclass(frozen=True)
class NodeSpec:
    """One node: its function and options.

    Attributes:
        name: unique node name.
        fn: ``fn(state)`` or ``fn(state, config)``; returns a dict update, a Command, or None.
        takes_config: whether ``fn`` accepts a second ``config`` argument.
        timeout_s: node timeout in seconds, per try (enforced by :mod:`graphcore.engine.step`, G10), or None.
        settings: JSON-serialisable per-node settings, passed through untouched.
        destinations: nodes this node may reach through ``Command(goto=...)``, for reachability checks.
        labels: destination → the label its drawn edge carries (``add_node(destinations={node: label})``).
        retry: how the node is tried again after an error (G9): a policy, LangGraph's list of them, or
            None for a single try.
        reads: the node's input schema (the keys it sees, :meth:`StateSchema.reader_of`); None for the
            state schema.
        injects: the parameters ``fn`` takes by keyword (``config``, ``writer``; see
            :mod:`graphcore.engine.params`), read once at ``add_node``.
        defer: the node runs only when nothing else is pending (:mod:`graphcore.engine.defer`).
        metadata: added to the ``metadata`` of the node's task config.
        idle: the node's idle timeout (``TimeoutPolicy(idle_timeout=...)``, :mod:`graphcore.engine.timeouts`),
            or None.
        error_handler: the node that runs when this one fails (``add_node(..., error_handler=...)``;
            :mod:`graphcore.engine.handlers`), or None.
        cache_policy: how the node's results are cached when the graph has a cache
            (:mod:`graphcore.engine.cache`); None: not cached.
    """

    name: str
    fn: Callable[..., Any]
    takes_config: bool
    timeout_s: float | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    destinations: tuple[str, ...] = ()
    retry: NodeRetry | None = None
    reads: type[Any] | None = None
    injects: tuple[str, ...] = ()
    defer: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    error_handler: str | None = None
    idle: IdleTimeout | None = None
    cache_policy: CachePolicy[Any] | None = None


@dataclass(frozen=True)
class Branch:
    """A conditional edge: ``router(state)`` picks destinations, optionally mapped through ``path_map``.

    The router returns a node name, END, a Send, or a list of those. ``path_map`` (a mapping, or a list of
    allowed names) translates or restricts the router's return values.
    """

    source: str
    router: Callable[[Any], Any]
    path_map: Mapping[Hashable, str] | None = None
    injects: tuple[str, ...] = ()
    """The parameters ``router`` takes by keyword (``config``, ``writer``; :mod:`graphcore.engine.params`)."""
    reads: type[Any] | None = None
    """The router's own input schema (the TypedDict, pydantic model or dataclass annotating its first
    parameter; its keys are channels, private ones too): what it is passed. None: the state schema."""

    @property
    def name(self) -> str:
        """The router's name, as errors give it: its function's ``__name__`` (``<lambda>`` for a lambda),
        else its type's."""
        return str(getattr(self.router, "__name__", type(self.router).__name__))

    def destinations(self) -> list[str] | None:
        """The nodes this branch may reach, when ``path_map`` says; None when only the router knows."""
        return None if self.path_map is None else list(self.path_map.values())


class GraphParts(Protocol):
    """What a graph is built from (the builder, :class:`~graphcore.engine.builder.StateGraph`, has these)."""

    schema: StateSchema
    nodes: dict[str, NodeSpec]
    edges: list[tuple[str, str]]
    joins: list[tuple[tuple[str, ...], str]]
    branches: list[Branch]


class GraphSpec:
    """The compiled graph's data: nodes, edges, branches, joins, schema and run defaults (G1).

    :class:`~graphcore.engine.executor.CompiledGraph` adds the in-process loop; the super-step algorithm
    and the step runner need only this.

    Attributes:
        name: the workflow name.
        schema: the state schema and channels.
        nodes: node name → spec.
    """

    def __init__(
        self,
        parts: GraphParts,
        *,
        name: str,
        checkpointer: CheckpointStore | bool | None,
        defaults: Mapping[str, Any],
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        debug: bool = False,
    ) -> None:
        self.name = name
        self.named = True
        """Whether the name was given (``compile(name=...)``); a module's unnamed graph registers under the
        variable that holds it (:mod:`graphcore.engine.registry`)."""
        self.formatter: Callable[[Any], str] | None = None
        """Renders a run's result for people (``graphq run`` prints it); None prints the state as JSON."""
        self.schema = parts.schema
        self.context_schema: Any = getattr(parts, "context_schema", None)
        """The type of the run context (LangGraph's ``context_schema``; :mod:`graphcore.engine.runtime`)."""
        self.nodes: dict[str, NodeSpec] = dict(parts.nodes)
        self.checkpointer = checkpointer
        self.store: BaseStore | None = None
        """The long-term store (``compile(store=...)``; :mod:`graphcore.checkpoints.store_base`)."""
        self.cache: Any = None
        """The node result cache (``compile(cache=...)``; :mod:`graphcore.engine.cache`), or None."""
        self.breakpoints = Breakpoints(
            nodes_of(interrupt_before, self.nodes, "interrupt_before"),
            nodes_of(interrupt_after, self.nodes, "interrupt_after"),
        )
        """compile's ``interrupt_before`` / ``interrupt_after``, checked (nodes to pause before / after, or
        ``"*"``; :mod:`graphcore.engine.breakpoints`; an unknown node is an InvalidGraphError)."""
        self.debug = debug
        try:
            self.defaults = merge_config(defaults)
        except ConfigError as exc:  # compile(config=...): say which workflow
            raise ConfigError(f"workflow {name!r}: {exc}") from None
        self.edges_from: dict[str, list[str]] = {}
        for source, target in parts.edges:
            self.edges_from.setdefault(source, []).append(target)
        self.branches_from: dict[str, list[Branch]] = {}
        for branch in parts.branches:
            self.branches_from.setdefault(branch.source, []).append(branch)
        self.deferred = frozenset(name for name, node in self.nodes.items() if node.defer)
        """The nodes added with ``defer=True`` (:mod:`graphcore.engine.defer`)."""
        self.async_routers = any(is_async_callable(b.router) for b in parts.branches)
        """Whether a router is ``async def`` (its result is awaited)."""
        self.async_start = any(is_async_callable(b.router) for b in parts.branches if b.source == START)
        """Whether a router from START is ``async def`` (awaited where the run's input is applied)."""
        self.async_nodes = frozenset(name for name, node in self.nodes.items() if is_async_callable(node.fn))
        """The ``async def`` nodes (detected once, here)."""
        self.async_tasks = self.async_nodes | {
            b.source for b in parts.branches if is_async_callable(b.router) and b.source in self.nodes
        }
        """The nodes whose tasks run on an event loop: ``async def`` nodes, and nodes with an async router."""
        self.joins: list[tuple[str, tuple[str, ...], str]] = [
            ("+".join(sources) + ">" + target, sources, target) for sources, target in parts.joins
        ]
        self.joins_from: dict[str, list[tuple[str, tuple[str, ...], str]]] = {}
        for join in self.joins:
            for source in join[1]:
                self.joins_from.setdefault(source, []).append(join)

    def with_config(self, config: Mapping[str, Any] | RunConfig | None = None, **options: Any) -> Self:
        """A copy of this graph whose run defaults are its own merged with ``config`` and then ``options``
        (LangGraph's ``with_config``: ``graph.with_config({"configurable": {"user": "ann"}})``,
        ``graph.with_config(recursion_limit=5)``); a run's own config still wins. This graph is unchanged.

        Raises:
            ConfigError: an option is unknown, of the wrong type or out of its range (as in
                ``compile(config=...)``).
        """
        return self.copy({"config": merge_config(self.defaults, config, options)})

    def copy(self, update: Mapping[str, Any] | None = None) -> Self:
        """A shallow copy of this graph (nodes shared) with ``update`` applied, as LangGraph's ``copy``:
        ``"name"``, ``"config"`` (the run defaults, replaced), ``"checkpointer"``, ``"store"`` or
        ``"debug"`` → its new value, checked as :meth:`StateGraph.compile` checks it.

        Raises:
            ConfigError: another key (naming it and the keys taken), or a ``"config"`` refused as
                ``compile(config=...)`` refuses it.
            CheckpointerError: a ``"checkpointer"`` or ``"store"`` that ``compile`` refuses.
        """
        clone = copying.copy(self)
        for key, value in (update or {}).items():
            if key == "name":
                clone.name, clone.named = value, True
            elif key == "config":
                clone.defaults = merge_config(value)
            elif key == "checkpointer":
                clone.checkpointer = check_checkpointer(value)
            elif key == "store":
                clone.store = check_store(value)
            elif key == "debug":
                clone.debug = bool(value)
            else:
                raise ConfigError(
                    f"copy(update): unknown key {key!r}; graphq takes 'name', 'config', 'checkpointer', "
                    "'store' and 'debug'"
                )
        return clone

    def get_input_jsonschema(self, config: Any = None) -> dict[str, Any]:
        """The JSON schema (a dict) of the graph's input schema, as LangGraph's (``config`` is unused);
        a root-channel state's is titled ``<name>Input`` (:func:`~graphcore.engine.schema.json_schema`).

        Raises:
            pydantic.errors.PydanticUserError: a ``typing.TypedDict`` on Python < 3.12, as in LangGraph.
        """
        return json_schema(self.schema.input_schema, self.get_name("Input"))

    def get_output_jsonschema(self, config: Any = None) -> dict[str, Any]:
        """The JSON schema of the graph's output schema, as :meth:`get_input_jsonschema`."""
        return json_schema(self.schema.output_schema, self.get_name("Output"))

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        """The JSON schema of the context schema, None without one, as LangGraph's.

        Raises:
            ValueError: the context schema is not a pydantic model, a TypedDict or a dataclass.
        """
        return context_json_schema(self.context_schema)

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        """LangGraph's (LangChain's) ``get_name``: ``name``, else the graph's name (``"LangGraph"`` when
        ``compile`` was given none, LangGraph's default), with ``suffix`` appended: title-cased after a
        name starting upper-case, else after ``_`` in lower case."""
        base = name or (self.name if self.named else "LangGraph")
        if not suffix:
            return base
        return base + suffix.title() if base[:1].isupper() else f"{base}_{suffix.lower()}"

    def config_for(self, config: Mapping[str, Any] | RunConfig | None, *, wrap: bool = True) -> RunConfig:
        """The run config: this graph's defaults merged with ``config`` (C4), with ids filled in (and a dict
        ``context`` made into the graph's context schema, :func:`~graphcore.engine.runtime.coerce_context`).

        Args:
            wrap: a context that does not fit the context schema is a ConfigError (enqueue, the workers);
                False raises the schema's own error (TypeError, pydantic's ValidationError), as LangGraph
                does in process.

        Raises:
            ConfigError: an option is invalid; the context does not fit the context schema (when ``wrap``).
            TypeError, pydantic.ValidationError: the context does not fit the context schema (unless
                ``wrap``).
        """
        cfg = merge_config(self.defaults, config)
        ids = {"thread_id": cfg.thread_id or uuid.uuid4().hex, "run_id": cfg.run_id or uuid.uuid4().hex}
        if cfg.context is not None and self.context_schema is not None:  # a dict made into the schema
            ids["context"] = coerce_context(self.context_schema, cfg.context, wrap=wrap)
        return cfg.model_copy(update=ids)

    def check_tasks(self, thread_id: str, checkpoint_id: str, tasks: Sequence[PendingTask]) -> None:
        """Refuse ``tasks`` (the next tasks of checkpoint ``checkpoint_id`` of ``thread_id``) when they name
        nodes this graph does not have: the checkpoint is another graph's (a run of another workflow on the
        thread).

        Raises:
            InvalidUpdateError: naming the nodes, sorted.
        """
        unknown = sorted({task.node for task in tasks} - self.nodes.keys() - {START})  # START: an input's
        if unknown:
            raise InvalidUpdateError(
                f"checkpoint {checkpoint_id} of thread {thread_id!r}: its next tasks run nodes {unknown} "
                f"that workflow {self.name!r} does not have (a checkpoint of another workflow)"
            )
