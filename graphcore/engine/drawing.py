"""A compiled graph as a drawable graph of nodes and edges: ``get_graph()`` (LangGraph's shape).

LangGraph's ``app.get_graph()`` returns a graph whose ``nodes`` map an id to a node (``id``, ``name``,
``data``, ``metadata``) and whose ``edges`` list ``(source, target, data, conditional)``; programs read them
and draw them with ``draw_mermaid()``. Here the nodes and edges come from the graph's description
(:func:`graphcore.engine.describe.edge_parts`, the workflow catalog's walk), laid out by LangGraph's rules:

* nodes: ``__start__``, the nodes in the order they were added, then ``__end__`` when an edge reaches it;
* edges: plain edges and joins (not conditional), a conditional edge's ``path_map`` targets (conditional,
  ``data`` the path_map key when it differs from the target), a node's ``Command`` destinations
  (conditional); only edges from nodes those edges reach from START, sorted by (source, target, conditional,
  data). A router without a path_map draws no edge (only the router knows its targets). A deferred node
  gets LangGraph's implicit conditional edges from the nodes of the step before it runs
  (:func:`_deferred_edges`). Edges to END are
  drawn for conditional ones; otherwise every node that is a target but no source gets one to END;
* ``xray``: a subgraph node is replaced by the subgraph's own nodes, ids prefixed ``node:`` (``True``: all
  levels, an int: that many levels).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from typing import Any, NamedTuple

from graphcore.engine.breakpoints import ALL, Nodes
from graphcore.engine.compiled import GraphSpec, NodeSpec
from graphcore.engine.describe import edge_parts, subgraph_of
from graphcore.engine.mermaid import mermaid_text
from graphcore.types import END, START

__all__ = ["DrawMethods", "DrawableGraph", "Edge", "Node", "draw"]

NO_IMAGES = (
    "graphq renders no images (LangGraph sends the mermaid text to the mermaid.ink web service or runs "
    "graphviz): draw the text with draw_mermaid() and render it with any mermaid tool"
)


class Node(NamedTuple):
    """A node of the drawing: ``id`` (``sub:x`` inside an xray'd subgraph), ``name`` (the node's name),
    ``data`` (the node's function, the subgraph's compiled graph, or None for START / END), ``metadata``
    (the node's metadata, plus ``defer`` and ``__interrupt`` as LangGraph's; None when empty)."""

    id: str
    name: str
    data: Any
    metadata: dict[str, Any] | None

    def copy(self, *, id: str | None = None) -> Node:
        """The node under another id."""
        return self._replace(id=id or self.id)


class Edge(NamedTuple):
    """An edge of the drawing: node ids, ``data`` (a path_map key, or None) and ``conditional``."""

    source: str
    target: str
    data: str | None = None
    conditional: bool = False

    def copy(self, *, source: str | None = None, target: str | None = None) -> Edge:
        """The edge with another source or target."""
        return self._replace(source=source or self.source, target=target or self.target)


class DrawableGraph:
    """What ``get_graph()`` returns: ``nodes`` (id → :class:`Node`, in drawing order) and ``edges``
    (a list of :class:`Edge`), with LangGraph's drawing methods."""

    def __init__(self, nodes: dict[str, Node], edges: list[Edge]) -> None:
        self.nodes = nodes
        self.edges = edges

    def __repr__(self) -> str:
        return f"DrawableGraph(nodes={list(self.nodes)}, edges={[tuple(e) for e in self.edges]})"

    def to_json(self, *, with_schemas: bool = False) -> dict[str, list[dict[str, Any]]]:
        """The graph as JSON values, in LangGraph's shape: ``{"nodes": [...], "edges": [...]}``.

        Each node is ``{"id", "type": "runnable", "data": {"id": path, "name": id}}`` plus ``"metadata"``
        when it has some (END is only ``{"id": "__end__"}``); ``path`` names the node's code as a list of
        module parts and its qualified name (LangGraph names its own wrapper class there; START's is
        ``["graphcore", "types", "START"]``). Each edge is ``{"source", "target"}`` plus ``"data"`` (a path
        map key) and ``"conditional": True`` when set. ``with_schemas`` is LangGraph's and changes nothing
        here (no node's data is a schema).
        """
        nodes: list[dict[str, Any]] = []
        for node in self.nodes.values():
            entry: dict[str, Any] = {"id": node.id}
            if node.name != END:
                entry["type"] = "runnable"
                entry["data"] = {"id": _code_path(node), "name": node.id}
            if node.metadata is not None:
                entry["metadata"] = node.metadata
            nodes.append(entry)
        edges: list[dict[str, Any]] = []
        for edge in self.edges:
            item: dict[str, Any] = {"source": edge.source, "target": edge.target}
            if edge.data is not None:
                item["data"] = edge.data
            if edge.conditional:
                item["conditional"] = True
            edges.append(item)
        return {"nodes": nodes, "edges": edges}

    def first_node(self, exclude: tuple[str, ...] = ()) -> Node | None:
        """The one node no edge leads to (ignoring ``exclude``), or None when there is none or several."""
        targets = {e.target for e in self.edges if e.source not in exclude}
        found = [n for n in self.nodes.values() if n.id not in exclude and n.id not in targets]
        return found[0] if len(found) == 1 else None

    def last_node(self, exclude: tuple[str, ...] = ()) -> Node | None:
        """The one node no edge leaves (ignoring ``exclude``), or None when there is none or several."""
        sources = {e.source for e in self.edges if e.target not in exclude}
        found = [n for n in self.nodes.values() if n.id not in exclude and n.id not in sources]
        return found[0] if len(found) == 1 else None

    def draw_mermaid(
        self,
        *,
        with_styles: bool = True,
        curve_style: Any = "linear",
        node_colors: Any = None,
        wrap_label_n_words: int = 9,
    ) -> str:
        """The graph as mermaid flowchart text, laid out as LangGraph's ``draw_mermaid()``.

        Args:
            with_styles: the front matter, node lines and class definitions (else edges only).
            curve_style: the edges' curve, a name (``"linear"``) or an enum with that ``value``.
            node_colors: an object with ``default``, ``first`` and ``last`` style strings, or None.
            wrap_label_n_words: an edge label longer than this many words is broken into lines.
        """
        first, last = self.first_node(), self.last_node()
        return mermaid_text(
            self.nodes,
            self.edges,
            first=first.id if first else None,
            last=last.id if last else None,
            with_styles=with_styles,
            curve=str(getattr(curve_style, "value", curve_style)),
            colors=node_colors,
            wrap=wrap_label_n_words,
        )

    def draw_mermaid_png(self, **_: Any) -> bytes:
        """Not available: raises ValueError (LangGraph's error without network) naming draw_mermaid()."""
        raise ValueError(f"draw_mermaid_png: {NO_IMAGES}")

    def draw_png(self, *_: Any, **__: Any) -> bytes | None:
        """Not available: raises ImportError (LangGraph's error without pygraphviz) naming draw_mermaid()."""
        raise ImportError(f"draw_png: {NO_IMAGES}")

    def draw_ascii(self) -> str:
        """The graph as ASCII art, through the ``grandalf`` layout LangGraph uses (langchain-core's renderer).

        Raises:
            ImportError: ``grandalf`` is not installed (LangGraph's message), or langchain-core is not.
        """
        if importlib.util.find_spec("grandalf") is None:
            raise ImportError("Install grandalf to draw graphs: `pip install grandalf`.")
        if importlib.util.find_spec("langchain_core") is None:
            raise ImportError("draw_ascii renders through langchain-core: `pip install langchain-core`.")
        renderer: Any = importlib.import_module("langchain_core.runnables.graph_ascii")
        return str(renderer.draw_ascii({n.id: n.name for n in self.nodes.values()}, self.edges))

    def print_ascii(self) -> None:
        """Print :meth:`draw_ascii`."""
        print(self.draw_ascii())

    def trim(self) -> None:
        """Drop the first node (and the last) when it has one edge and another node would take its place."""
        first = self.first_node()
        if (
            first
            and self.first_node((first.id,))
            and len({e for e in self.edges if e.source == first.id}) == 1
        ):
            self._remove(first.id)
        last = self.last_node()
        if last and self.last_node((last.id,)) and len({e for e in self.edges if e.target == last.id}) == 1:
            self._remove(last.id)

    def _remove(self, node: str) -> None:
        self.nodes.pop(node)
        self.edges = [e for e in self.edges if node not in (e.source, e.target)]


class DrawMethods:
    """``get_graph`` / ``aget_graph`` of :class:`~graphcore.engine.executor.CompiledGraph`."""

    def get_graph(self, config: Any = None, *, xray: int | bool = False) -> DrawableGraph:
        """The graph's nodes and edges, drawable (LangGraph's ``get_graph``); ``config`` is accepted and
        not read. ``xray``: draw subgraphs' own nodes, ``True`` for every level or an int for that many.

        Raises:
            ConfigError: a node's settings are not JSON (the description checks them).
        """
        assert isinstance(self, GraphSpec)
        return draw(self, xray)

    async def aget_graph(self, config: Any = None, *, xray: int | bool = False) -> DrawableGraph:
        """:meth:`get_graph` for ``async`` code."""
        return self.get_graph(config, xray=xray)


def _metadata(spec: NodeSpec, before: Nodes, after: Nodes) -> dict[str, Any] | None:
    meta = dict(spec.metadata)
    if spec.defer:
        meta["defer"] = True
    stops = [w for w, nodes in (("before", before), ("after", after)) if nodes != ALL and spec.name in nodes]
    if stops:
        meta["__interrupt"] = ",".join(stops)
    return meta or None


def _edge_set(graph: GraphSpec) -> set[Edge]:
    found: set[Edge] = set()
    for part in edge_parts(graph):
        conditional = part.kind in ("conditional", "command")
        labels: list[str | None] = [*part.labels] if part.labels else [None] * len(part.targets or ())
        for source in part.sources:
            for target, label in zip(part.targets or (), labels, strict=True):
                if target == END and not conditional:
                    continue  # LangGraph draws END edges of its own (see _end_edges)
                found.add(Edge(source, target, None if label == target else label, conditional))
    return found


def _deferred_edges(graph: GraphSpec, edges: set[Edge]) -> set[Edge]:
    """LangGraph's implicit edges into a deferred node: walking the graph step by step (each step's nodes
    go to all their targets), a deferred node waits until no other node is pending, then runs after the
    last step's nodes; when none of them goes to it, LangGraph draws a conditional edge from each."""
    deferred = {name for name, spec in graph.nodes.items() if spec.defer}
    if not deferred:
        return set()
    targets: dict[str, set[str]] = {}
    for e in edges:
        targets.setdefault(e.source, set()).add(e.target)
    implicit: set[Edge] = set()
    step, waiting = targets.get(START, set()) - {END}, set[str]()
    seen: set[tuple[frozenset[str], frozenset[str]]] = set()
    while step and (frozenset(step), frozenset(waiting)) not in seen:  # a loop ends the walk
        seen.add((frozenset(step), frozenset(waiting)))
        reached = {t for node in step for t in targets.get(node, ())} - {END}
        waiting |= reached & deferred
        following = reached - deferred
        if not following and waiting:  # the deferred nodes run now, after this step's nodes
            implicit |= {Edge(src, node, None, True) for node in waiting - reached for src in step}
            following, waiting = waiting, set()
        step = following
    return implicit


def _reached(edges: set[Edge]) -> list[Edge]:
    """The edges from nodes reachable from START, sorted as LangGraph sorts them."""
    seen, stack = set(), [START]
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(e.target for e in edges if e.source == node)
    kept = [e for e in edges if e.source in seen]
    return sorted(kept, key=lambda e: (e.source, e.target, e.conditional, e.data is not None, e.data or ""))


def _end_edges(edges: list[Edge]) -> list[Edge]:
    ends = {e.target for e in edges if e.target != END} - {e.source for e in edges}
    return [Edge(node, END) for node in sorted(ends)]


def _code_path(node: Node) -> list[str]:
    """A drawn node's code as ``[*module parts, qualified name]``: its function's, or its callable object's
    or compiled graph's class's; START's is ``["graphcore", "types", "START"]``."""
    if node.data is None:
        return ["graphcore", "types", "START"]
    code = node.data if inspect.isfunction(node.data) or inspect.ismethod(node.data) else type(node.data)
    return [*getattr(code, "__module__", "").split("."), getattr(code, "__qualname__", repr(code))]


def draw(graph: GraphSpec, xray: int | bool = False) -> DrawableGraph:
    """The drawable graph of ``graph`` (see the module's rules); ``xray`` as in ``get_graph``."""
    before, after = graph.breakpoints.before, graph.breakpoints.after
    nodes = {START: Node(START, START, None, None)}
    for spec in graph.nodes.values():
        data = subgraph_of(spec) or spec.fn
        nodes[spec.name] = Node(spec.name, spec.name, data, _metadata(spec, before, after))
    found = _edge_set(graph)
    edges = _reached(found | _deferred_edges(graph, found))
    edges += _end_edges(edges)
    if any(e.target == END for e in edges):
        nodes[END] = Node(END, END, None, None)
    drawing = DrawableGraph(nodes, edges)
    if xray:
        deeper = xray if isinstance(xray, bool) or xray <= 0 else xray - 1
        for spec in graph.nodes.values():
            sub = subgraph_of(spec)
            if sub is not None:
                _inline(drawing, spec.name, draw(sub, deeper))
    return drawing


def _inline(drawing: DrawableGraph, name: str, sub: DrawableGraph) -> None:
    """Replace node ``name`` by the subgraph's nodes (ids ``name:<id>``), as LangGraph's xray."""
    if len(sub.nodes) <= 1 or not sub.first_node() or not sub.last_node():
        return
    sub.trim()
    first, last = sub.first_node(), sub.last_node()
    drawing.nodes.pop(name)
    drawing.nodes.update({f"{name}:{k}": n.copy(id=f"{name}:{k}") for k, n in sub.nodes.items()})
    inner = [e.copy(source=f"{name}:{e.source}", target=f"{name}:{e.target}") for e in sub.edges]
    head = f"{name}:{first.id}" if first else name
    tail = f"{name}:{last.id}" if last else name
    drawing.edges = [
        e.copy(source=tail if e.source == name else None, target=head if e.target == name else None)
        for e in drawing.edges
    ] + inner
