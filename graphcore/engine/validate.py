"""Compile-time checks of a graph's parts, as the builder (:class:`~graphcore.engine.builder.StateGraph`)
holds them (G1), and of node settings (R9)."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from typing import Any

from graphcore.engine.compiled import GraphParts
from graphcore.errors import ConfigError, InvalidGraphError
from graphcore.settings import get_settings
from graphcore.types import END, START

__all__ = ["canonical_json", "check_node_settings", "validate"]

log = logging.getLogger(__name__)


def canonical_json(value: Any) -> str:
    """``value`` as canonical compact JSON: keys sorted, no spaces, UTF-8 characters kept (not escaped).

    The same value gives the same text in every process (version hashes of the workflow catalog).

    Raises:
        ValueError: ``value`` holds NaN or an infinity; TypeError: a value JSON cannot carry.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _non_json_path(value: Any, path: str) -> tuple[str, str] | None:
    """The first place in ``value`` that is not plain JSON, as (path, what is there), or None."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, f"{value} is not a JSON number")
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _non_json_path(item, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return path, f"key {key!r} is {_a(type(key).__name__)}, not a string"
            found = _non_json_path(item, f"{path}.{key}")
            if found:
                return found
        return None
    return (
        path,
        f"{_a(type(value).__name__)} is not a JSON value (use dict, list, str, int, float, bool, None)",
    )


def check_node_settings(node: str, settings: Mapping[str, Any], limit: int | None = None) -> str:
    """Check one node's settings (R9) and return them as canonical compact JSON.

    Args:
        node: the node's name, for the messages.
        settings: the node's settings: a dict of JSON values (dict with string keys, list, str, int,
            finite float, bool, None; tuples and other types are refused, not converted).
        limit: largest size in bytes of the compact JSON (UTF-8); None → ``GRAPHQ_MAX_NODE_SETTINGS_LENGTH``.
            Empty settings always pass.

    Raises:
        ConfigError: a value is not JSON (naming the node and the path, e.g. ``settings.retries[2]``), or the
            JSON is longer than ``limit`` (naming the node, the size and the limit, in bytes).
    """
    if not settings:
        return "{}"  # no settings: nothing to measure (the settings are not read either)
    found = _non_json_path(dict(settings), "settings")
    if found:
        raise ConfigError(f"node {node!r}: {found[0]}: {found[1]}")
    text = canonical_json(dict(settings))
    limit = get_settings().max_node_settings_length if limit is None else limit
    size = len(text.encode("utf-8"))
    if size > limit:
        raise ConfigError(
            f"node {node!r}: settings are {size} bytes of JSON, above GRAPHQ_MAX_NODE_SETTINGS_LENGTH={limit}"
        )
    return text


_UNKNOWN_SOURCE = "Found edge starting at unknown node"
"""LangGraph's words for an edge (plain, join or conditional) from a node the graph does not have."""


def _check_edges(graph: GraphParts, known: set[str]) -> None:
    for source, target in graph.edges:
        if source != START and source not in known:
            raise InvalidGraphError(f"{_UNKNOWN_SOURCE} {source!r} (edge {source!r} -> {target!r})")
        if target == START:
            raise InvalidGraphError(f"edge {source!r} -> START: START cannot be a target")
        if target != END and target not in known:
            raise InvalidGraphError(f"edge {source!r} -> {target!r}: edge to nowhere, no node {target!r}")


def _check_joins(graph: GraphParts, known: set[str]) -> None:
    for sources, target in graph.joins:
        unknown = [s for s in sources if s not in known]
        if unknown:
            raise InvalidGraphError(f"{_UNKNOWN_SOURCE} {unknown[0]!r} (join {list(sources)} -> {target!r})")
        if target not in known and target != END:
            raise InvalidGraphError(f"join {list(sources)} -> {target!r}: edge to nowhere")


def _check_dynamic(graph: GraphParts, known: set[str]) -> None:
    for spec in graph.nodes.values():
        bad = [d for d in spec.destinations if d != END and d not in known]
        if bad:
            raise InvalidGraphError(f"node {spec.name!r}: destination {bad[0]!r} is not a node")
    for branch in graph.branches:
        if branch.source != START and branch.source not in known:
            raise InvalidGraphError(f"{_UNKNOWN_SOURCE} {branch.source!r} (a conditional edge)")
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
    """Reject graphs that cannot run as written. A node that no path from START reaches (edges, path maps
    and declared Command destinations) compiles, as in LangGraph (a ``Send`` or an undeclared
    ``Command(goto=...)`` may run it), with a warning on this module's logger saying how to declare it.

    Raises:
        InvalidGraphError: with a message naming the offending node or edge: unknown node, edge to
            nowhere, no entry point (nothing leaves START).
        ConfigError: a node's settings are not JSON or are above ``GRAPHQ_MAX_NODE_SETTINGS_LENGTH``
            (see :func:`check_node_settings`).
    """
    if not graph.nodes:
        raise InvalidGraphError("graph has no nodes")
    for spec in graph.nodes.values():
        check_node_settings(spec.name, spec.settings)
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
        log.warning("%s", _unreachable_message(unreachable))


def _unreachable_message(nodes: list[str]) -> str:
    """Which nodes no edge reaches and how to declare a ``Command(goto=...)`` that reaches them (LangGraph
    compiles such nodes silently: an orphan never runs, a Command's or a Send's target runs)."""
    names = ", ".join(repr(n) for n in nodes)
    return (
        f"node(s) {nodes} cannot be reached from START by an edge: they run only when a Send or a "
        "Command(goto=...) goes there; add an edge to them, or declare the node whose Command(goto=...) goes "
        f"there: add_node(..., destinations={tuple(nodes)!r}) or a return annotation "
        f"-> Command[Literal[{names}]] on its function"
    )


def _a(noun: str) -> str:
    """``noun`` with its indefinite article: ``an int``, ``a tuple``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"
