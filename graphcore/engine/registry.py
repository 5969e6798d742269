"""Finding workflows: the ``graphq.workflows`` entry-point group plus user modules.

An entry point ``name = "package.module:attr"`` names a compiled graph. A user module (``--workflows`` or
``GRAPHQ_WORKFLOWS``, comma-separated) contributes every module-level :class:`CompiledGraph`, under the
name it was compiled with (``compile(name=...)``), or else under the variable that holds it — a LangGraph
program's ``graph = builder.compile()`` is the workflow ``graph``, its ``agent = ...`` the workflow ``agent``.
Two kinds of module-level graph are not workflows: one held by a private name (``_inner = ...``), and one
compiled with ``checkpointer=True`` or ``False``, which are subgraph settings (a root graph cannot run with
them); an entry point naming a graph of the second kind is refused.

Loading the workflows builds their graphs, which allows the classes their state schemas name to be stored
and loaded (I5); the classes named by ``GRAPHQ_SERDE_ALLOWED_CLASSES`` are imported and allowed here too,
so that a bad entry fails at startup.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from graphcore.checkpoints import serde
from graphcore.engine.describe import describe, version_of
from graphcore.engine.executor import CompiledGraph
from graphcore.errors import ConfigError, UnknownWorkflowError

log = logging.getLogger("graphq.workflows")

__all__ = ["ENTRY_POINT_GROUP", "Registry", "entry_graph", "subgraph_only"]

ENTRY_POINT_GROUP = "graphq.workflows"


def _checked(graph: CompiledGraph) -> CompiledGraph:
    """Refuse a workflow whose run or request timeout is above the ceiling at registration (R11, R13; the
    options' own ranges are checked by ``compile``)."""
    try:
        graph.defaults.run_timeout()
        graph.defaults.check_request_timeout()
    except ConfigError as exc:
        raise ConfigError(f"workflow {graph.name!r}: {exc}") from None
    return graph


def subgraph_only(graph: CompiledGraph) -> str:
    """Why ``graph`` cannot be a workflow (``"compiled with checkpointer=True, a subgraph setting"``), or ""
    when it can: ``checkpointer=True``/``False`` say how a subgraph keeps its state in its parent's run."""
    if isinstance(graph.checkpointer, bool):
        return f"compiled with checkpointer={graph.checkpointer}, a subgraph setting"
    return ""


def _module_graphs(module: Any) -> dict[str, CompiledGraph]:
    """A workflow module's compiled graphs by workflow name: the name given to ``compile``, else the name of
    the variable holding the graph (which becomes its name). Skipped: a graph held only by a name starting
    with ``_`` (private), and one compiled with ``checkpointer=True`` or ``False`` (:func:`subgraph_only`).

    Raises:
        ConfigError: two graphs of the module have one name.
    """
    found: dict[str, CompiledGraph] = {}
    for attr, value in vars(module).items():
        if not isinstance(value, CompiledGraph) or any(value is seen for seen in found.values()):
            continue
        if attr.startswith("_") or subgraph_only(value):
            continue
        if not value.named:
            value.name, value.named = attr, True
        if value.name in found:
            raise ConfigError(
                f"workflow module {module.__name__!r}: two graphs are named {value.name!r}; "
                "give each its own compile(name=...)"
            )
        found[value.name] = _checked(value)
    return found


def _add_module(graphs: dict[str, CompiledGraph], owners: dict[str, str], name: str) -> None:
    """Import workflow module ``name`` and add its graphs to ``graphs`` (``owners``: the module of each
    name added so far).

    Raises:
        ConfigError: the module cannot be imported, or defines a graph whose name another module took.
    """
    try:
        module = importlib.import_module(name)
    except Exception as exc:
        raise ConfigError(f"cannot import workflow module {name!r}: {type(exc).__name__}: {exc}") from exc
    _refuse_langgraph(module)
    for workflow, graph in _module_graphs(module).items():
        other = graphs.get(workflow)
        if workflow in owners and other is not graph:
            raise ConfigError(
                f"workflow modules {owners[workflow]!r} and {name!r} both define a workflow named "
                f"{workflow!r}; give one of them another compile(name=...)"
            )
        if workflow not in owners and other is not None and other is not graph:
            log.warning(
                "workflow %r of module %r replaces the installed entry point of that name",
                workflow,
                name,
            )
        graphs[workflow] = graph
        owners.setdefault(workflow, name)


def _refuse_langgraph(module: Any) -> None:
    """Refuse a workflow module holding graphs compiled by LangGraph itself (its imports not changed): the
    workers cannot run them, and without a word the module would just have no workflows.

    Raises:
        ConfigError: naming the module, its LangGraph graphs and where the import map is.
    """
    foreign = sorted(k for k, value in vars(module).items() if not k.startswith("_") and _pregel(value))
    if foreign:
        raise ConfigError(
            f"workflow module {module.__name__!r}: {foreign} compiled by LangGraph, not graphq: change the "
            "module's imports to graphq's (docs/how-to/from-langgraph.md, the import map: "
            "from graphcore import StateGraph)"
        )


def _pregel(value: Any) -> bool:
    """Whether ``value`` is a graph LangGraph compiled (a ``langgraph`` ``Pregel``: its class or a base)."""
    return any(c.__name__ == "Pregel" and c.__module__.startswith("langgraph.") for c in type(value).__mro__)


def entry_graph(ep: EntryPoint) -> CompiledGraph:
    """The workflow an entry point names (``name = "package.module:attr"``), named ``name`` when compiled
    without a name.

    Raises:
        ConfigError: it cannot be loaded, is not a compiled graph, or is compiled with ``checkpointer=True``
            or ``False`` (:func:`subgraph_only`), or its options are out of range.
    """
    try:
        graph = ep.load()
    except Exception as exc:
        raise ConfigError(f"cannot load workflow entry point {ep.name} = {ep.value}: {exc}") from exc
    if not isinstance(graph, CompiledGraph):
        raise ConfigError(f"entry point {ep.name} = {ep.value} is not a compiled graph")
    if why := subgraph_only(graph):
        raise ConfigError(
            f"entry point {ep.name} = {ep.value} names a graph {why}: it runs only inside "
            "a parent graph; name the parent graph, or compile this one without checkpointer"
        )
    if not graph.named:
        graph.name, graph.named = ep.name, True
    return _checked(graph)


class Registry:
    """Workflow name → compiled graph."""

    def __init__(self, graphs: dict[str, CompiledGraph]) -> None:
        self.graphs = graphs
        self._versions: dict[str, str] = {}

    def version(self, name: str) -> str:
        """The catalog version of workflow ``name`` as loaded here: the sha256 of its description
        (:func:`graphcore.engine.describe.version_of`, 64 hex digits), computed once. A run created here
        records it (:attr:`graphcore.backend.runs.RunRecord.version`); a worker serves it.

        Raises:
            UnknownWorkflowError: no such workflow.
            ConfigError: a node's settings are above ``GRAPHQ_MAX_NODE_SETTINGS_LENGTH`` or not JSON.
        """
        if name not in self._versions:
            graph = self.get(name)
            try:
                self._versions[name] = version_of(describe(graph))
            except ConfigError as exc:
                raise ConfigError(f"workflow {name!r}: {exc}") from None
        return self._versions[name]

    @classmethod
    def load(cls, modules: Iterable[str] = ()) -> Registry:
        """Load entry points, then ``modules``, and the classes named by ``GRAPHQ_SERDE_ALLOWED_CLASSES``. A
        module's graph replaces an installed entry point's of the same name (a warning says so).

        Raises:
            ConfigError: a module cannot be imported, an entry point is not a compiled graph or names a
                subgraph (:func:`entry_graph`), two graphs of the modules have one name (two modules
                exporting the same graph object is fine), or an entry of ``GRAPHQ_SERDE_ALLOWED_CLASSES``
                is bad.
        """
        serde.allow_configured_classes()
        graphs = {ep.name: entry_graph(ep) for ep in entry_points(group=ENTRY_POINT_GROUP)}
        owners: dict[str, str] = {}  # workflow name -> the module that defined it
        for name in (m.strip() for m in modules):
            if name:
                _add_module(graphs, owners, name)
        return cls(graphs)

    @classmethod
    def of_module(cls, name: str) -> Registry:
        """The workflows of module ``name`` alone (no entry points): new code to compare with what runs.

        Raises:
            ConfigError: the module cannot be imported, or two of its graphs have one name.
        """
        graphs: dict[str, CompiledGraph] = {}
        _add_module(graphs, {}, name)
        return cls(graphs)

    def add(self, graph: CompiledGraph) -> None:
        """Register ``graph`` under its name.

        Raises:
            ConfigError: its options are out of range (e.g. a run timeout above the ceiling, R11).
        """
        self.graphs[graph.name] = _checked(graph)
        self._versions.pop(graph.name, None)

    def get(self, name: str) -> CompiledGraph:
        """The workflow called ``name``.

        Raises:
            UnknownWorkflowError: listing the known names.
        """
        try:
            return self.graphs[name]
        except KeyError:
            known = ", ".join(sorted(self.graphs)) or "none"
            raise UnknownWorkflowError(f"unknown workflow {name!r}; known workflows: {known}") from None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self.graphs)

    def only(self, names: Iterable[str]) -> Registry:
        """A registry of the workflows ``names`` of this one (a worker that serves only them).

        Raises:
            UnknownWorkflowError: a name is not registered here.
        """
        return Registry({name: self.get(name) for name in names})
