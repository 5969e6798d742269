"""The graph builder (G1): nodes, plain and conditional edges, joins, and compile-time validation."""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, cast

from graphcore.checkpoints.protocol import CheckpointStore
from graphcore.checkpoints.store_base import BaseStore
from graphcore.engine import params
from graphcore.engine.cache import check_cache
from graphcore.engine.cache_policy import CachePolicy, check_policy
from graphcore.engine.checkpointer import check_checkpointer, check_store
from graphcore.engine.compiled import DEFAULT_ERROR_HANDLER, ERROR_HANDLER_PREFIX, Branch, NodeSpec
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.retry import NodeRetry, RetryPolicies, RetryPolicy
from graphcore.engine.schema import StateSchema
from graphcore.engine.subgraph import SubgraphNode
from graphcore.engine.timeouts import IdleTimeout, Timeout, node_timeouts
from graphcore.engine.validate import validate
from graphcore.errors import ConfigError, InvalidGraphError
from graphcore.types import END, START

__all__ = ["StateGraph"]


Node = Callable[..., Any] | CompiledGraph
"""What ``add_node`` runs: a function (or callable object), or a compiled graph (a subgraph)."""


class RunnableNode:
    """A LangChain ``Runnable`` as a node (as LangGraph takes one): called ``runnable.invoke(state, config)``,
    named after ``runnable.get_name()``. Any object with ``invoke`` that is not callable is taken for one."""

    def __init__(self, runnable: Any) -> None:
        self.runnable = runnable
        get_name = getattr(runnable, "get_name", None)
        self.__name__ = get_name() if callable(get_name) else type(runnable).__name__

    def __call__(self, state: Any, config: Any) -> Any:
        return self.runnable.invoke(state, config)


def _as_node(fn: Any) -> Any:
    """``fn``, a LangChain ``Runnable`` (not callable, has ``invoke``) wrapped as a :class:`RunnableNode`."""
    if isinstance(fn, CompiledGraph | str) or fn is None or callable(fn):
        return fn
    if callable(getattr(fn, "invoke", None)):
        return RunnableNode(fn)
    return fn


def _named(name: str | Node, fn: Node | None) -> tuple[str, Node]:
    """``add_node``'s (name, function): ``add_node(fn)`` takes a compiled graph's name, a function's
    ``__name__`` or else (a callable object) its class's name, as LangGraph's."""
    name, fn = _as_node(name), _as_node(fn)
    if isinstance(name, str):
        if fn is None:
            raise InvalidGraphError(f"add_node({name!r}) needs the node's function")
        return name, fn
    fn = name
    # a callable object without __name__ goes by its class's name, as LangGraph's
    found = fn.name if isinstance(fn, CompiledGraph) else getattr(fn, "__name__", type(fn).__name__)
    if not isinstance(found, str) or not found or found == "<lambda>":
        raise InvalidGraphError(f"add_node({fn!r}): name the node (add_node(name, fn)); it has no name")
    return found, fn


def _one_retry(name: str, retry: NodeRetry | None, retry_policy: object) -> NodeRetry | None:
    """``retry``, or LangGraph's ``retry_policy``: one policy, or a list of them (the first that matches an
    error applies, :class:`RetryPolicies`; an empty list is no retry, as in LangGraph)."""
    if retry_policy is None:
        return retry
    if retry is not None:
        raise ConfigError(f"node {name!r}: give retry or retry_policy, not both")
    if not isinstance(retry_policy, list | tuple):
        return cast("RetryPolicy", retry_policy)
    for policy in retry_policy:
        _check_retry(f"node {name!r}", policy, None)
    if len(retry_policy) <= 1:
        return retry_policy[0] if retry_policy else None
    return RetryPolicies(tuple(retry_policy))


def _check_node_options(name: str, retry: object, settings: object, error_handler: object) -> None:
    if settings is not None and not isinstance(settings, Mapping):
        kind = type(settings).__name__
        raise ConfigError(f"node {name!r}: settings must be a dict of JSON values (got a {kind})")
    _check_retry(f"node {name!r}", retry, error_handler)


def _check_retry(where: str, retry: object, error_handler: object) -> None:
    if retry is not None and not isinstance(retry, RetryPolicy | RetryPolicies):
        raise ConfigError(f"{where}: retry must be a RetryPolicy (got {type(retry).__name__})")
    if error_handler is not None and not callable(_as_node(error_handler)):
        raise ConfigError(f"{where}: error_handler must be a function (got {type(error_handler).__name__})")


def _own_copy(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """A deep copy of a node's settings (later changes to the caller's dict do not reach the graph); a value
    that cannot be copied is kept as it is (not JSON: :meth:`StateGraph.compile` refuses it, naming it)."""
    try:
        return copy.deepcopy(dict(settings or {}))
    except Exception:
        return dict(settings or {})


class StateGraph:
    """Builds a graph over a state schema (TypedDict or pydantic model).

    Example::

        g = StateGraph(State)
        g.add_node("a", a)
        g.add_edge(START, "a")
        g.add_edge("a", END)
        graph = g.compile(name="demo")
    """

    def __init__(
        self,
        state_schema: type[Any],
        context_schema: type[Any] | None = None,
        *,
        input_schema: type[Any] | None = None,
        output_schema: type[Any] | None = None,
    ) -> None:
        """A builder over ``state_schema``, LangGraph's ``StateGraph`` arguments.

        Args:
            state_schema: a TypedDict or pydantic model (one channel per key), or any type without fields
                (``int``, ``Annotated[list, operator.add]``): a root-channel state, the value itself.
            context_schema: the type of the run context (LangGraph's): a dict context given to ``invoke(...,
                context=...)`` or stored with a queued run is made into it when it is a dataclass or pydantic
                model (:mod:`graphcore.engine.runtime`).
            input_schema: the keys the graph's input may set (default: the state schema's).
            output_schema: the keys of ``invoke``'s result and a queued run's (default: the state schema's).

        Raises:
            InvalidGraphError: a schema is neither (see :meth:`StateSchema.of`).
        """
        self.schema = StateSchema.of(state_schema, input_schema, output_schema)
        self.context_schema = context_schema
        self.nodes: dict[str, NodeSpec] = {}
        self.edges: list[tuple[str, str]] = []
        self.joins: list[tuple[tuple[str, ...], str]] = []
        self.branches: list[Branch] = []
        self.node_defaults: tuple[NodeRetry | None, float | None, IdleTimeout | None] = (None, None, None)
        """``set_node_defaults``'s retry policy, timeout (seconds) and idle timeout, for nodes without their
        own."""
        self.error_handlers: dict[str, Callable[..., Any]] = {}
        """Error-handler node name → its function: ``__error_handler__<node>`` for ``add_node``'s,
        ``__default_error_handler__`` for ``set_node_defaults``'s (LangGraph's names)."""
        self.cache_default: CachePolicy[Any] | None = None
        """``set_node_defaults``'s cache policy, for nodes without their own."""

    def add_node(
        self,
        name: str | Node,
        fn: Node | None = None,
        *,
        timeout: Timeout = None,
        settings: Mapping[str, Any] | None = None,
        destinations: Sequence[str] | Mapping[str, str] = (),
        retry: RetryPolicy | None = None,
        defer: bool = False,
        metadata: Mapping[str, Any] | None = None,
        input_schema: type[Any] | None = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        cache_policy: CachePolicy[Any] | None = None,
        error_handler: object = None,
    ) -> StateGraph:
        """Add node ``name`` running ``fn``; ``add_node(fn)`` names the node after the function (its
        ``__name__``), the compiled graph (its name) or a callable object's class, as LangGraph's
        ``StateGraph.add_node`` does.

        Args:
            name: unique node name (or the node's function, named after it).
            fn: ``fn(state)``, a compiled graph (a subgraph, G7), or a LangChain ``Runnable`` (called
                ``invoke(state, config)``; ``add_node(runnable)`` names it ``runnable.get_name()``); a
                parameter named ``config`` gets the
                run config and one named ``writer`` the stream writer, as in LangGraph (and graphq's
                ``fn(state, cfg)``: a second positional parameter of another name gets the config; see
                :mod:`graphcore.engine.params`).
            timeout: node timeout in seconds, per try (G10), or None; also LangGraph's ``timedelta`` or
                ``TimeoutPolicy(run_timeout=..., idle_timeout=..., refresh_on=...)``
                (:mod:`graphcore.engine.timeouts`). A try still running after that many seconds (or without
                progress for ``idle_timeout`` seconds) fails with :class:`~graphcore.errors.NodeTimeoutError`
                and sees its cancel token set. None takes :meth:`set_node_defaults`'s.
            settings: the node's settings, a dict of JSON values (R9), copied here. The node reads them
                with :func:`~graphcore.engine.config.get_node_settings` or from its config,
                ``config.configurable["__graphq_node_settings"]`` (always there, ``{}`` when none were
                given); the workflow catalog shows them. Checked at :meth:`compile`: at most
                ``GRAPHQ_MAX_NODE_SETTINGS_LENGTH`` bytes of compact JSON.
            destinations: nodes reachable only through ``Command(goto=...)`` from this node, or a mapping
                node → label (the label drawn on its edge, as LangGraph's); by default the names of
                ``fn``'s return annotation ``Command[Literal["a", "b"]]``, if it has one.
            retry: the node's retry policy (G9); None takes :meth:`set_node_defaults`'s, else tries it once.
            defer: run the node only when nothing else is pending (LangGraph's deferred nodes, for joins of
                branches of different lengths; see :mod:`graphcore.engine.defer`).
            metadata: added to the ``metadata`` of the node's config (LangGraph's node metadata).
            input_schema: the TypedDict or model the node receives (its keys only; a key only it declares
                is a private channel); by default the annotation of ``fn``'s first parameter when that is
                one, else the state schema.
            retry_policy: LangGraph's name for ``retry``; also a list of policies, as LangGraph's: an error
                is retried under the first whose ``retry_on`` accepts it (:class:`RetryPolicies`).
            cache_policy: how the node's results are cached under ``compile(cache=...)`` (a
                :class:`~graphcore.engine.cache.CachePolicy`: ``key_func``, ``ttl``); None takes
                :meth:`set_node_defaults`'s. Unused without a cache, as in LangGraph.
            error_handler: runs when the node fails (after its retries) with an ``Exception``, as
                LangGraph's: ``handler(state, error)`` gets the node's input and, in a parameter named
                ``error``, the :class:`~graphcore.errors.NodeError` the run would have raised (``.node``,
                ``.error``: the node's exception). It runs in the same super-step as the node
                ``__error_handler__<name>``; its update (a dict, a ``Command``, None) is the task's writes,
                and the node's own edges are not followed (only the handler's ``Command(goto=...)``). If it
                raises, the run fails with its error. The node's failure is saved (a pending write of the
                step) before the handler runs: a run continued after the handler failed, or after a crash
                while it ran, runs only the handler, whose ``error.error`` is then the saved text
                (``"KeyError('x')"``), as LangGraph's.

        Raises:
            InvalidGraphError: the name is reserved, already used, or contains ':'; no function is given, or
                one to be named after has no name (a lambda).
            ConfigError: ``timeout`` is not above 0 (or a ``TimeoutPolicy`` has an unknown ``refresh_on``),
                ``retry`` is not a :class:`RetryPolicy`, ``settings`` is not a mapping, or ``error_handler``
                is not a function; ``cache_policy`` is not a ``CachePolicy`` or its ``ttl`` is below 0.
        """
        name, fn = _named(name, fn)
        if name in (START, END) or ":" in name or not name:
            raise InvalidGraphError(f"node name {name!r} is reserved or invalid (no ':' and not START/END)")
        if name in self.nodes:
            raise InvalidGraphError(f"node {name!r} is already in the graph")
        tries = _one_retry(name, retry, retry_policy)
        _check_node_options(name, tries, settings, error_handler)
        timeout_s, idle = node_timeouts(f"node {name!r}", timeout)
        handler = self._add_error_handler(f"{ERROR_HANDLER_PREFIX}{name}", error_handler)
        if isinstance(fn, CompiledGraph):
            fn = SubgraphNode(fn, self.schema)
        goes = tuple(destinations) or params.command_destinations(fn)
        reads = input_schema or params.input_schema_of(fn)
        if reads is not None:
            self.schema = self.schema.including(reads)
        self.nodes[name] = NodeSpec(
            name,
            fn,
            params.takes_positional_config(fn),
            timeout_s,
            _own_copy(settings),
            goes,
            tries,
            reads=None if reads is self.schema.schema else reads,
            injects=params.injected(fn),
            defer=defer,
            metadata=dict(metadata or {}),
            labels=dict(destinations) if isinstance(destinations, Mapping) else {},
            error_handler=handler,
            idle=idle,
            cache_policy=check_policy(f"node {name!r}", cache_policy),
        )
        return self

    def _add_error_handler(self, name: str, handler: object) -> str | None:
        """Keep ``handler`` (if given) as error-handler node ``name``; returns the name, or None."""
        if handler is None:
            return None
        if name in self.nodes or (name in self.error_handlers and name != DEFAULT_ERROR_HANDLER):
            raise InvalidGraphError(f"error handler node {name!r} is already in the graph")
        self.error_handlers[name] = cast("Callable[..., Any]", _as_node(handler))
        return name

    def set_node_defaults(
        self,
        *,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        cache_policy: CachePolicy[Any] | None = None,
        error_handler: object = None,
        timeout: Timeout = None,
    ) -> StateGraph:
        """Defaults for the nodes that set none of their own, applied at :meth:`compile` (LangGraph's
        ``set_node_defaults``; a subgraph does not inherit them). A default given as None keeps the one set
        before.

        Args:
            retry_policy: the retry policy of nodes added without one (one policy, or a list as
                ``add_node``'s).
            cache_policy: the cache policy of nodes added without one (used under ``compile(cache=...)``).
            error_handler: the error handler of nodes added without one (``add_node``'s
                ``error_handler``), node ``__default_error_handler__``; it handles no error handler's error.
            timeout: the timeout of nodes added without one: seconds, a ``timedelta`` or a
                ``TimeoutPolicy``.

        Raises:
            ConfigError: as :meth:`add_node` for these options.
        """
        retry = _one_retry("(defaults)", None, retry_policy)
        _check_retry("set_node_defaults", retry, error_handler)
        timeout_s, idle = node_timeouts("set_node_defaults", timeout)
        old_retry, old_timeout, old_idle = self.node_defaults
        if timeout is None:
            timeout_s, idle = old_timeout, old_idle
        self.node_defaults = (retry or old_retry, timeout_s, idle)
        self._add_error_handler(DEFAULT_ERROR_HANDLER, error_handler)
        self.cache_default = check_policy("set_node_defaults", cache_policy) or self.cache_default
        return self

    def add_sequence(self, nodes: Sequence[Node | tuple[str, Node]]) -> StateGraph:
        """Add ``nodes`` (functions, named after them, or ``(name, fn)`` pairs) and an edge from each to the
        next, as LangGraph's ``add_sequence``; the edges into the first and out of the last are the caller's.

        Raises:
            InvalidGraphError: ``nodes`` is empty, or as :meth:`add_node`.
        """
        if not nodes:
            raise InvalidGraphError("add_sequence needs at least one node")
        names = []
        for node in nodes:
            name, fn = _named(*node) if isinstance(node, tuple) else _named(node, None)
            self.add_node(name, fn)
            names.append(name)
        for source, target in itertools.pairwise(names):
            self.add_edge(source, target)
        return self

    def add_edge(self, source: str | Sequence[str], target: str) -> StateGraph:
        """Add a plain edge, or a join when ``source`` is a list: ``target`` runs once all sources ran."""
        if isinstance(source, str):
            self.edges.append((source, target))
        else:
            if not source:
                raise InvalidGraphError(f"join into {target!r} has no sources")
            self.joins.append((tuple(source), target))
        return self

    def add_conditional_edges(
        self,
        source: str,
        router: Callable[[Any], Any],
        path_map: Mapping[Hashable, str] | Sequence[str] | None = None,
    ) -> StateGraph:
        """After ``source`` runs, ``router`` chooses where to go (see :class:`Branch`): a node name, END, a
        ``Send`` or a list of them; ``path_map`` (a mapping or a list of names) is by default read from the
        router's return annotation ``Literal["a", "b"]``, as LangGraph does. A router taking ``config`` or
        ``writer`` gets them (:mod:`graphcore.engine.params`); a router from START gets those of the run's
        ``__start__`` task, which applies the input (:func:`~graphcore.engine.algo.start_routes`). A router
        whose first parameter is annotated with a TypedDict, pydantic model or dataclass is passed that
        schema's keys (a dict, or a model instance), as LangGraph's; its keys are channels of the graph,
        like a node input schema's.
        """
        if path_map is None:
            path_map = params.literal_returns(router)
        if path_map is not None and not isinstance(path_map, Mapping):
            path_map = {name: name for name in path_map}
        injects = params.injected(router)
        reads = params.input_schema_of(router)
        if reads is not None:
            self.schema = self.schema.including(reads)
        self.branches.append(Branch(source, router, path_map, injects, reads))
        return self

    def set_entry_point(self, node: str) -> StateGraph:
        """Shorthand for ``add_edge(START, node)``."""
        return self.add_edge(START, node)

    def set_conditional_entry_point(
        self,
        router: Callable[[Any], Any],
        path_map: Mapping[Hashable, str] | Sequence[str] | None = None,
    ) -> StateGraph:
        """Shorthand for ``add_conditional_edges(START, router, path_map)``, as LangGraph's."""
        return self.add_conditional_edges(START, router, path_map)

    def set_finish_point(self, node: str) -> StateGraph:
        """Shorthand for ``add_edge(node, END)``, as LangGraph's."""
        return self.add_edge(node, END)

    def validate(self) -> StateGraph:
        """Check the graph as :meth:`compile` does, without compiling it (LangGraph's ``validate``).

        Raises:
            InvalidGraphError: as :meth:`compile` (a ``ValueError``).
        """
        validate(self)
        return self

    def compile(
        self,
        checkpointer: CheckpointStore | bool | None = None,
        *,
        name: str | None = None,
        config: Mapping[str, Any] | None = None,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        debug: bool = False,
        store: BaseStore | None = None,
        cache: Any = None,
    ) -> CompiledGraph:
        """Validate the graph and freeze it; the arguments are LangGraph's ``compile`` arguments (the
        checkpointer may be given positionally) plus graphq's ``config``.

        Args:
            checkpointer: a store for :meth:`CompiledGraph.invoke` to persist checkpoints in
                (``InMemorySaver()``); None keeps the state only for the duration of the call (a subgraph's
                lives in its parent's task); True makes a subgraph keep its state across its parent's turns,
                False a subgraph that keeps none (see :mod:`graphcore.engine.checkpointer`).
            name: the workflow name it registers under (defaults to ``"graph"``).
            config: defaults merged under every run's config (tags, metadata, configurable, ...).
            interrupt_before: nodes to pause before (static breakpoints), or ``"*"`` for all: a run stops
                before a super-step that runs one of them, as LangGraph's (see
                :mod:`graphcore.engine.breakpoints`; on the queue it waits for ``graphq runs resume RUN``).
            interrupt_after: nodes to pause after, or ``"*"`` for all.
            debug: LangGraph's debug flag.
            store: the graph's long-term store (LangGraph's ``store``: ``InMemoryStore()``), which nodes
                reach through ``get_store()``, ``runtime.store`` or a ``store`` parameter. On the queue,
                ``graphq worker`` gives every graph the workers' Redis store instead, with this store's
                ``index`` and ``ttl`` settings (:mod:`graphcore.backend.redis_store`).
            cache: where the results of nodes with a ``cache_policy`` are cached (LangGraph's ``cache``:
                ``InMemoryCache()``; :mod:`graphcore.engine.cache`), in process only: a queued run of a graph
                with a cache is refused at enqueue.

        Raises:
            InvalidGraphError: unknown node in an edge, no entry, edge to nowhere; a breakpoint naming no
                node. A node no edge reaches compiles, with a warning
                (:func:`~graphcore.engine.validate.validate`).
            CheckpointerError: ``checkpointer`` is not a graphq checkpoint store, True, False or None (a
                ``TypeError``; a LangGraph checkpointer is refused, naming graphq's ``InMemorySaver``);
                ``store`` is not a graphq store or None (a LangGraph store is refused likewise).
            TypeError: ``cache`` has no ``get``, ``set`` and ``clear``.
            ConfigError: a node's settings hold a value that is not JSON (naming the node and the path) or
                are longer than ``GRAPHQ_MAX_NODE_SETTINGS_LENGTH`` (naming the node, the size and the limit);
                an option of ``config`` is unknown, of the wrong type or out of its range (naming the
                workflow, the option, the allowed range and the value).
        """
        validate(self)
        graph = CompiledGraph(
            self._with_node_defaults(),
            name=name or "graph",
            checkpointer=check_checkpointer(checkpointer),
            defaults=config or {},
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            debug=debug,
        )
        graph.named = name is not None
        graph.store = check_store(store)
        graph.cache = check_cache(cache)
        return graph

    def _with_node_defaults(self) -> StateGraph:
        """This builder, or a shallow copy whose nodes without a retry policy, timeout, error handler or cache
        policy have :meth:`set_node_defaults`'s, and which has the error-handler nodes (retry and timeout
        defaults apply to them too, as in LangGraph)."""
        retry, timeout_s, idle = self.node_defaults
        cache = self.cache_default
        if retry is None and timeout_s is None and idle is None and not self.error_handlers and cache is None:
            return self
        fallback = DEFAULT_ERROR_HANDLER if DEFAULT_ERROR_HANDLER in self.error_handlers else None
        parts = copy.copy(self)
        parts.nodes = {}
        for name, spec in self.nodes.items():  # a node's own handler just before it, as LangGraph adds it
            if ERROR_HANDLER_PREFIX + name in self.error_handlers:
                parts.nodes[ERROR_HANDLER_PREFIX + name] = self._handler_spec(ERROR_HANDLER_PREFIX + name)
            parts.nodes[name] = _defaulted(spec, retry, timeout_s, idle, fallback, cache)
        if fallback is not None:
            parts.nodes[fallback] = self._handler_spec(fallback)
        return parts

    def _handler_spec(self, name: str) -> NodeSpec:
        """Error-handler node ``name``: its function, with :meth:`set_node_defaults`'s retry policy and
        timeouts (as LangGraph gives them to handlers)."""
        retry, timeout_s, idle = self.node_defaults
        fn = self.error_handlers[name]
        return NodeSpec(
            name,
            fn,
            params.takes_positional_config(fn, params.HANDLER_INJECTED),
            timeout_s,
            retry=retry,
            injects=params.injected(fn, params.HANDLER_INJECTED),
            idle=idle,
        )


def _defaulted(
    spec: NodeSpec,
    retry: NodeRetry | None,
    timeout_s: float | None,
    idle: IdleTimeout | None,
    handler: str | None,
    cache: CachePolicy[Any] | None = None,
) -> NodeSpec:
    """``spec`` with the defaults it does not set itself: a node's own timeout (a cap or an idle timeout)
    replaces the default one whole, as in LangGraph."""
    own_timeout = spec.timeout_s is not None or spec.idle is not None
    return dataclasses.replace(
        spec,
        retry=spec.retry or retry,
        timeout_s=spec.timeout_s if own_timeout else timeout_s,
        idle=spec.idle if own_timeout else idle,
        error_handler=spec.error_handler or handler,
        cache_policy=spec.cache_policy or cache,
    )
