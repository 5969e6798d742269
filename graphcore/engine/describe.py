"""A compiled graph described as plain JSON data, with a version hash (the workflow catalog's entry, R9).

The description names what the graph is made of, not its code: the state's channels, the nodes (settings,
timeout, retry, subgraph), and every edge — plain edges, joins, conditional edges with the targets their
``path_map`` allows (``None`` when only the router knows, e.g. a router returning ``Send``), and the
``Command(goto=...)`` destinations a node declares. The version is the sha256 of its canonical JSON
(:func:`~graphcore.engine.validate.canonical_json`), so two processes with the same workflow code compute
the same version, and changing a node's settings, an edge or a node's function name changes it; a change
inside a function's body does not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, NamedTuple

from graphcore.engine.channels import AnyChannel, ReducerChannel
from graphcore.engine.compiled import GraphSpec, NodeSpec
from graphcore.engine.retry import RetryPolicies, RetryPolicy
from graphcore.engine.validate import canonical_json, check_node_settings

__all__ = ["FORMAT", "EdgePart", "channel_entry", "describe", "edge_parts", "subgraph_of", "version_of"]

FORMAT = 2
"""Version of the description's shape (``"format"`` in it). 2: each channel names its kind and its reducer
(``module.qualname``); 1 said only ``"reducer": true | false``."""


def _name(fn: Callable[..., Any]) -> str:
    """``module.qualname`` of a function (or of a callable's class), stable across processes."""
    target = fn if hasattr(fn, "__qualname__") else type(fn)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"


def channel_entry(name: str, channel: AnyChannel) -> dict[str, Any]:
    """One channel's entry: ``{"name", "kind": "LastValue" | "ReducerChannel" | "DeltaChannel" |
    "UntrackedValue", "reducer": "module.qualname" | None}``."""
    reducer = _name(channel.reducer) if isinstance(channel, ReducerChannel) else None
    return {"name": name, "kind": type(channel).__name__, "reducer": reducer}


def subgraph_of(spec: NodeSpec) -> GraphSpec | None:
    """The compiled graph a subgraph node runs (:class:`~graphcore.engine.subgraph.SubgraphNode` holds it
    as ``graph``), or None for a node that is a function."""
    sub = getattr(spec.fn, "graph", None)
    return sub if isinstance(sub, GraphSpec) else None


class EdgePart(NamedTuple):
    """One edge of a graph as built: ``kind`` is ``"edge"``, ``"conditional"``, ``"join"`` or
    ``"command"``; ``targets`` None when only a router knows them; ``labels`` beside ``targets``: the
    ``path_map`` keys (as strings) of a conditional edge with one, a command edge's labels
    (``add_node(destinations={node: label})``, else the node's name), else None; ``router`` its function."""

    kind: str
    sources: list[str]
    targets: list[str] | None
    labels: list[str] | None = None
    router: Callable[..., Any] | None = None


def _retry(spec: NodeSpec) -> dict[str, Any] | list[dict[str, Any]] | None:
    policy = spec.retry
    if policy is None:
        return None
    if isinstance(policy, RetryPolicies):
        return [_policy(p) for p in policy.policies]
    return _policy(policy)


def _policy(policy: RetryPolicy) -> dict[str, Any]:
    return {
        "initial_interval_s": policy.initial_interval_s,
        "backoff_factor": policy.backoff_factor,
        "max_interval_s": policy.max_interval_s,
        "max_attempts": policy.max_attempts,
        "jitter": policy.jitter,
    }


def _node(spec: NodeSpec, limit: int | None) -> dict[str, Any]:
    """One node's entry; its settings checked again (R9: refused when published, too)."""
    settings = json.loads(check_node_settings(spec.name, spec.settings, limit))
    sub = subgraph_of(spec)
    return {
        "name": spec.name,
        "fn": None if sub is not None else _name(spec.fn),
        "subgraph": None if sub is None else {"name": sub.name, "version": version_of(describe(sub, limit))},
        "settings": settings,
        "timeout_s": spec.timeout_s,
        "retry": _retry(spec),
    }


def edge_parts(graph: GraphSpec) -> list[EdgePart]:
    """Every edge in the order the graph was built: plain, conditional, joins, then Command destinations
    (the one walk over a graph's edges: the description and :mod:`graphcore.engine.drawing` read it)."""
    edges = [EdgePart("edge", [s], [t]) for s, targets in graph.edges_from.items() for t in targets]
    for source, branches in graph.branches_from.items():
        for b in branches:
            labels = None if b.path_map is None else [str(k) for k in b.path_map]
            edges.append(EdgePart("conditional", [source], b.destinations(), labels, b.router))
    edges += [EdgePart("join", list(sources), [target]) for _, sources, target in graph.joins]
    edges += [
        EdgePart("command", [n.name], list(n.destinations), [n.labels.get(d, d) for d in n.destinations])
        for n in graph.nodes.values()
        if n.destinations
    ]
    return edges


def _edges(graph: GraphSpec) -> list[dict[str, Any]]:
    return [
        {
            "kind": e.kind,
            "sources": e.sources,
            "targets": e.targets,
            "router": None if e.router is None else _name(e.router),
        }
        for e in edge_parts(graph)
    ]


def describe(graph: GraphSpec, limit: int | None = None) -> dict[str, Any]:
    """The JSON description of ``graph``.

    Args:
        limit: largest node settings, bytes of compact JSON; None → ``GRAPHQ_MAX_NODE_SETTINGS_LENGTH``.

    Returns:
        ``{"format": 2, "name": str, "channels": [{"name": str, "kind": str, "reducer": str | None}],
        "nodes": [{"name", "fn": "module.qualname" | None, "subgraph": {"name", "version"} | None,
        "settings": {...}, "timeout_s": float | None, "retry": {...} | [{...}, ...] | None}], "edges":
        [{"kind": "edge" | "conditional" | "join" | "command", "sources": [str], "targets": [str] | None,
        "router": str | None}]}`` (a channel's entry: :func:`channel_entry`); START and END appear as
        ``"__start__"`` and ``"__end__"``. ``targets`` is None for a conditional edge without a
        ``path_map`` (its router may go anywhere).

    Raises:
        ConfigError: a node's settings are not JSON or are above the limit (naming the node, size, limit).
    """
    return {
        "format": FORMAT,
        "name": graph.name,
        "channels": [channel_entry(k, ch) for k, ch in graph.schema.channels.items()],
        "nodes": [_node(spec, limit) for spec in graph.nodes.values()],
        "edges": _edges(graph),
    }


def version_of(description: dict[str, Any]) -> str:
    """The version of a description: the sha256 of its canonical JSON, 64 hex digits."""
    return hashlib.sha256(canonical_json(description).encode("utf-8")).hexdigest()
