"""Mermaid flowchart text of a drawable graph (:mod:`graphcore.engine.drawing`), in LangGraph's layout.

The text LangGraph's ``draw_mermaid()`` writes for the same nodes and edges: front matter with the curve
style, ``graph TD;``, one line per node (START and END as stadiums, the first and last node classed
``first`` / ``last``), one line per edge (``-->``, ``-.->`` for a conditional one, labels between
``&nbsp;``), a ``subgraph`` block for the nodes of an xray'd subgraph (ids ``sub:x``), then the classes.
Node ids are made mermaid-safe: characters other than letters, digits, ``_`` and ``-`` become ``\\<hex>``.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = ["mermaid_text"]

_SAFE = frozenset(string.ascii_letters + string.digits + "_-")
_MARKDOWN = tuple("*_`")
_LABEL_ESCAPES = {c: f"#{ord(c)};" for c in '[](){}"<>|'}
_CLASSES = {"default": "fill:#f2f0ff,line-height:1.2", "first": "fill-opacity:0", "last": "fill:#bfb6fc"}


class _Node(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def metadata(self) -> dict[str, Any] | None: ...


class _Edge(Protocol):
    @property
    def source(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def data(self) -> str | None: ...
    @property
    def conditional(self) -> bool: ...


def _safe_id(node_id: str) -> str:
    """``node_id`` as a mermaid node id (see the module docstring)."""
    return "".join(c if c in _SAFE else "\\" + format(ord(c), "x") for c in node_id)


def _escape(text: str) -> str:
    text = text.replace("#", "#35;")
    return "".join(_LABEL_ESCAPES.get(c, c) for c in text)


def _value(value: Any) -> str | None:
    scalars = (str, int, float, bool)
    if isinstance(value, scalars):
        return str(value)
    if isinstance(value, list | tuple | set) and all(isinstance(v, scalars) for v in value):
        items = [str(v) for v in value]
        return ", ".join(sorted(items) if isinstance(value, set) else items)
    return None


def _label(node: _Node) -> str:
    name = node.name.split(":")[-1]
    label = f"<p>{name}</p>" if name.startswith(_MARKDOWN) and name.endswith(_MARKDOWN) else name
    shown = {k: _value(v) for k, v in (node.metadata or {}).items()}
    lines = [_escape(f"{k} = {v}") for k, v in shown.items() if v is not None]
    return f"{label}<hr/><small><em>" + "\n".join(lines) + "</em></small>" if lines else label


def _node_line(node_id: str, node: _Node, first: str | None, last: str | None) -> str:
    shape = (
        "{0}([{1}]):::first" if node_id == first else "{0}([{1}]):::last" if node_id == last else "{0}({1})"
    )
    return "\t" + shape.format(_safe_id(node_id), _label(node)) + "\n"


def _edge_line(edge: _Edge, wrap: int) -> str:
    if edge.data is None:
        arrow = " -.-> " if edge.conditional else " --> "
    else:
        words = str(edge.data).split()
        text = str(edge.data)
        if len(words) > wrap:
            text = "&nbsp<br>&nbsp".join(" ".join(words[i : i + wrap]) for i in range(0, len(words), wrap))
        arrow = f" -. &nbsp;{text}&nbsp; .-> " if edge.conditional else f" -- &nbsp;{text}&nbsp; --> "
    return f"\t{_safe_id(edge.source)}{arrow}{_safe_id(edge.target)};\n"


def _prefix(node_id: str) -> str:
    return node_id.rpartition(":")[0]


def _shared_prefix(edge: _Edge) -> str:
    a, b = edge.source.split(":")[:-1], edge.target.split(":")[:-1]
    common = []
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common.append(x)
    return ":".join(common)


class _Writer:
    def __init__(
        self, nodes: Mapping[str, _Node], edges: Sequence[_Edge], marks: tuple[str | None, str | None]
    ) -> None:
        self.nodes, self.marks, self.out, self.styled, self.wrap = nodes, marks, [""], True, 9
        self.groups: dict[str, list[_Edge]] = {}
        for edge in edges:
            self.groups.setdefault(_shared_prefix(edge), []).append(edge)
        self.boxed: set[str] = set()

    def nodes_in(self, prefix: str) -> None:
        if self.styled:
            for key, node in self.nodes.items():
                if _prefix(key) == prefix:
                    self.out.append(_node_line(key, node, *self.marks))

    def block(self, prefix: str) -> None:
        edges = self.groups.get(prefix, [])
        boxed = bool(prefix) and not (len(edges) == 1 and edges[0].source == edges[0].target)
        if boxed:
            self.boxed.add(prefix)
            self.out.append(f"\tsubgraph {prefix.rpartition(':')[2]}\n")
            self.nodes_in(prefix)
        self.out += [_edge_line(e, self.wrap) for e in edges]
        for nested in self.groups:
            if prefix and nested.startswith(prefix + ":") and ":" not in nested[len(prefix) + 1 :]:
                self.block(nested)
        if boxed:
            self.out.append("\tend\n")


def mermaid_text(
    nodes: Mapping[str, _Node],
    edges: Sequence[_Edge],
    *,
    first: str | None,
    last: str | None,
    with_styles: bool = True,
    curve: str = "linear",
    colors: Any = None,
    wrap: int = 9,
) -> str:
    """The mermaid text of ``nodes`` (id → node with ``name`` and ``metadata``) and ``edges`` (with
    ``source``, ``target``, ``data``, ``conditional``); ``first`` / ``last``: the ids classed so;
    ``colors``: an object with ``default`` / ``first`` / ``last`` style strings, None for LangGraph's."""
    writer = _Writer(nodes, edges, (first, last))
    writer.styled, writer.wrap = with_styles, wrap
    head = (
        f"---\nconfig:\n  flowchart:\n    curve: {curve}\n---\ngraph TD;\n" if with_styles else "graph TD;\n"
    )
    writer.out = [head]
    writer.nodes_in("")
    writer.block("")
    for prefix in list(writer.groups):
        if prefix and ":" not in prefix:
            writer.block(prefix)
    for prefix in dict.fromkeys(_prefix(k) for k in nodes):
        if with_styles and prefix and ":" not in prefix and prefix not in writer.boxed:
            writer.out.append(f"\tsubgraph {prefix}\n")
            writer.nodes_in(prefix)
            writer.out.append("\tend\n")
    if with_styles:
        writer.out += [f"\tclassDef {k} {getattr(colors, k, None) or v}\n" for k, v in _CLASSES.items()]
    return "".join(writer.out)
