"""A workflow's graph laid out for an SVG drawing, from the catalog's description
(:func:`graphcore.engine.describe.describe`): :func:`layout`.

Nodes sit in ranks, top to bottom: a node's rank is the longest path to it from START, counted over the
edges that are not back edges (an edge closing a cycle, found by a depth-first walk from START in the order
the edges were added); END (when an edge reaches it) is alone in the last rank. In a rank, nodes keep the
order the graph added them and the rank is centred; a node no drawn edge reaches sits below START. An edge
to the next rank goes straight from the bottom of its source to the top of its target; any other (a back
edge, or one that skips ranks and would cross the nodes between) curves out on the right, each in a lane of
its own; an edge from a node to itself is a loop on its right. Conditional and ``Command`` edges are dashed; a
conditional edge whose router has no ``path_map`` (it may go anywhere) draws no edge: its source is listed
in :attr:`Diagram.open_routers`.

All lengths are SVG user units (pixels at scale 1).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Arrow", "Box", "Diagram", "layout"]

START = "__start__"
END = "__end__"
HEIGHT = 34
"""A node's height."""
RANK_GAP = 46
"""Vertical space between two ranks."""
GAP = 24
"""Horizontal space between two nodes of a rank."""
MARGIN = 16
LOOP = 44
"""How far right of its nodes an edge curves (one more :data:`LOOP_STEP` for each further one)."""
LOOP_STEP = 14
CHAR = 7.5
"""Width of a label's character (13 px sans-serif, roughly)."""
PAD = 24
MIN_WIDTH = 72


@dataclass(frozen=True)
class Box:
    """A node's box: its name, label (``START``/``END`` for those), rank, and top-left corner and size."""

    name: str
    label: str
    rank: int
    x: float
    y: float
    width: float
    height: float = HEIGHT

    @property
    def kind(self) -> str:
        """``start``, ``end`` or ``node``."""
        return {START: "start", END: "end"}.get(self.name, "node")

    @property
    def cx(self) -> float:
        """The horizontal centre."""
        return self.x + self.width / 2

    @property
    def cy(self) -> float:
        """The vertical centre."""
        return self.y + self.height / 2


@dataclass(frozen=True)
class Arrow:
    """An edge: its nodes, whether it is dashed (conditional or ``Command``) and whether it curves out on
    the right (``around``), and ``path``, its SVG path data (ending at the target, where the arrowhead
    goes)."""

    source: str
    target: str
    dashed: bool
    around: bool
    path: str


@dataclass(frozen=True)
class Diagram:
    """A laid-out graph: its size, boxes (in drawing order), arrows, and the nodes whose router may go to
    any node (no edge drawn)."""

    width: float
    height: float
    boxes: list[Box]
    arrows: list[Arrow]
    open_routers: list[str]


def _edges(description: dict[str, Any]) -> tuple[list[tuple[str, str, bool]], list[str]]:
    """``(source, target, dashed)`` of every edge, in order, without repeats; and the open routers."""
    found: list[tuple[str, str, bool]] = []
    routers: list[str] = []
    for edge in description.get("edges", []):
        dashed = edge["kind"] in ("conditional", "command")
        if edge["targets"] is None:
            routers += [s for s in edge["sources"] if s not in routers]
            continue
        for source in edge["sources"]:
            for target in edge["targets"]:
                if (source, target, dashed) not in found:
                    found.append((source, target, dashed))
    return found, routers


def _back_edges(names: list[str], edges: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges that close a cycle in a depth-first walk from START (then from each node not reached),
    following edges in order."""
    out: dict[str, list[str]] = {n: [] for n in names}
    for source, to in edges:
        out[source].append(to)
    state: dict[str, int] = {}  # 1: on the walk's path, 2: done
    back: set[tuple[str, str]] = set()
    for root in names:
        if root in state:
            continue
        stack = [(root, iter(out[root]))]
        state[root] = 1
        while stack:
            node, following = stack[-1]
            target = next(following, None)
            if target is None:
                state[node] = 2
                stack.pop()
            elif state.get(target) == 1:
                back.add((node, target))
            elif target not in state:
                state[target] = 1
                stack.append((target, iter(out[target])))
    return back


def _ranks(names: list[str], forward: list[tuple[str, str]]) -> dict[str, int]:
    """Each node's longest path from START over acyclic ``forward`` edges (a node without incoming edges
    but START: 1); END after every other node."""
    preds: dict[str, list[str]] = {n: [] for n in names}
    for source, target in forward:
        preds[target].append(source)
    rank: dict[str, int] = {}

    def of(node: str) -> int:  # forward edges have no cycle: the recursion ends
        if node not in rank:
            rank[node] = max((of(p) + 1 for p in preds[node]), default=0 if node == START else 1)
        return rank[node]

    for n in names:
        of(n)
    if END in rank:
        rank[END] = max((r for n, r in rank.items() if n != END), default=0) + 1
    return rank


def _width(label: str) -> float:
    return max(MIN_WIDTH, len(label) * CHAR + PAD)


def _boxes(names: list[str], rank: dict[str, int]) -> tuple[list[Box], float]:
    """The boxes, rank by rank, each rank centred on the widest; and the widest rank's width."""
    rows: dict[int, list[str]] = {}
    for n in names:
        rows.setdefault(rank[n], []).append(n)
    labels = {n: {START: "START", END: "END"}.get(n, n) for n in names}
    widths = {r: sum(_width(labels[n]) for n in row) + GAP * (len(row) - 1) for r, row in rows.items()}
    widest = max(widths.values(), default=0.0)
    boxes = []
    for r in sorted(rows):
        x = MARGIN + (widest - widths[r]) / 2
        for n in rows[r]:
            boxes.append(Box(n, labels[n], r, x, MARGIN + r * (HEIGHT + RANK_GAP), _width(labels[n])))
            x += _width(labels[n]) + GAP
    return boxes, widest


def _path(a: Box, b: Box, around: bool, lane: float) -> str:
    """The SVG path of an edge from ``a`` to ``b``; ``around``: curving out to x = ``lane``."""
    if a.name == b.name:
        right = a.x + a.width
        return (
            f"M {right:g} {a.cy - 8:g} C {right + 36:g} {a.cy - 26:g}, {right + 36:g} {a.cy + 26:g}, "
            f"{right:g} {a.cy + 8:g}"
        )
    if not around:
        return f"M {a.cx:g} {a.y + a.height:g} L {b.cx:g} {b.y:g}"
    return f"M {a.x + a.width:g} {a.cy:g} C {lane:g} {a.cy:g}, {lane:g} {b.cy:g}, {b.x + b.width:g} {b.cy:g}"


def layout(description: dict[str, Any]) -> Diagram:
    """The diagram of a workflow's description (its ``nodes`` and ``edges``; see the module doc).

    Raises:
        KeyError: the description lacks ``nodes`` or an edge lacks ``kind``, ``sources`` or ``targets``.
    """
    edges, routers = _edges(description)
    names = [START] + [n["name"] for n in description["nodes"]]
    names += [n for s, t, _ in edges for n in (s, t) if n not in names and n != END]  # named by edges only
    if any(t == END for _, t, _ in edges):
        names.append(END)
    back = _back_edges(names, [(s, t) for s, t, _ in edges])
    rank = _ranks(names, [(s, t) for s, t, _ in edges if (s, t) not in back])
    boxes, widest = _boxes(names, rank)
    at = {b.name: b for b in boxes}
    arrows = []
    lanes = 0
    for source, target, dashed in edges:
        a, b = at[source], at[target]
        around = source != target and b.rank != a.rank + 1
        lane = max(a.x + a.width, b.x + b.width) + LOOP + LOOP_STEP * lanes
        lanes += around
        arrows.append(Arrow(source, target, dashed, around, _path(a, b, around, lane)))
    ranks = max(rank.values(), default=0) + 1
    width = MARGIN * 2 + widest + LOOP + LOOP_STEP * lanes
    height = MARGIN * 2 + ranks * HEIGHT + (ranks - 1) * RANK_GAP
    return Diagram(width, height, boxes, arrows, routers)
