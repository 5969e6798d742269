"""Compile-time checks of a graph's parts, as the builder (:class:`~graphcore.engine.builder.StateGraph`)
holds them (G1)."""

from __future__ import annotations

from graphcore.engine.compiled import GraphParts
from graphcore.errors import InvalidGraphError
from graphcore.types import END, START

__all__ = ["validate"]


def _check_edges(graph: GraphParts, known: set[str]) -> None:
    for source, target in graph.edges:
        if source != START and source not in known:
            raise InvalidGraphError(f"edge {source!r} -> {target!r}: unknown source node {source!r}")
        if target == START:
            raise InvalidGraphError(f"edge {source!r} -> START: START cannot be a target")
        if target != END and target not in known:
            raise InvalidGraphError(f"edge {source!r} -> {target!r}: edge to nowhere, no node {target!r}")


def _check_joins(graph: GraphParts, known: set[str]) -> None:
    for sources, target in graph.joins:
        unknown = [s for s in sources if s not in known]
        if unknown:
            raise InvalidGraphError(f"join {list(sources)} -> {target!r}: unknown source node {unknown[0]!r}")
        if target not in known and target != END:
            raise InvalidGraphError(f"join {list(sources)} -> {target!r}: edge to nowhere")


def _check_dynamic(graph: GraphParts, known: set[str]) -> None:
    for spec in graph.nodes.values():
        bad = [d for d in spec.destinations if d != END and d not in known]
        if bad:
            raise InvalidGraphError(f"node {spec.name!r}: destination {bad[0]!r} is not a node")
    for branch in graph.branches:
        if branch.source != START and branch.source not in known:
            raise InvalidGraphError(f"conditional edge from unknown node {branch.source!r}")
        bad = [d for d in branch.destinations() or [] if d != END and d not in known]
        if bad:
            raise InvalidGraphError(
                f"conditional edge from {branch.source!r}: path_map leads to unknown node {bad[0]!r}"
            )


def _check_names(graph: GraphParts) -> None:
    known = set(graph.nodes)
    _check_edges(graph, known)
    _check_joins(graph, known)
    _check_dynamic(graph, known)


def _successors(graph: GraphParts) -> dict[str, set[str]]:
    succ: dict[str, set[str]] = {name: set() for name in [START, *graph.nodes]}
    for source, target in graph.edges:
        succ[source].add(target)
    for sources, target in graph.joins:
        for source in sources:
            succ[source].add(target)
    for name, spec in graph.nodes.items():
        succ[name].update(spec.destinations)
    for branch in graph.branches:
        # A router without a path_map may go anywhere (including Send targets): treat all nodes as reachable.
        succ[branch.source].update(branch.destinations() or graph.nodes)
    return succ


def validate(graph: GraphParts) -> None:
    """Reject graphs that cannot run as written.

    Raises:
        InvalidGraphError: with a message naming the offending node or edge: unknown node, edge to
            nowhere, no entry point (nothing leaves START), or a node that no path from START reaches.
    """
    if not graph.nodes:
        raise InvalidGraphError("graph has no nodes")
    _check_names(graph)
    succ = _successors(graph)
    if not succ[START]:
        raise InvalidGraphError("graph has no entry point: add an edge from START (add_edge(START, node))")
    seen: set[str] = set()
    stack = [START]
    while stack:
        node = stack.pop()
        if node in seen or node == END:
            continue
        seen.add(node)
        stack.extend(succ.get(node, ()))
    unreachable = sorted(set(graph.nodes) - seen)
    if unreachable:
        raise InvalidGraphError(f"node(s) {unreachable} cannot be reached from START")
