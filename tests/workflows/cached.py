"""Workflows with a node cache, which the queue refuses (tests/compat/test_cache.py): ``cached`` has one, and
``cached-inside`` runs a subgraph that has one."""

from __future__ import annotations

from typing import TypedDict

from graphcore import START, CachePolicy, InMemoryCache, StateGraph


class Query(TypedDict):
    query: str


_g = StateGraph(Query)
_g.add_node("rewrite", lambda s: {"query": f"q: {s['query']}"}, cache_policy=CachePolicy())
_g.add_edge(START, "rewrite")
cached = _g.compile(name="cached", cache=InMemoryCache())

_outer = StateGraph(Query)
_outer.add_node("inner", _g.compile(name="inner", cache=InMemoryCache()))
_outer.add_edge(START, "inner")
outer = _outer.compile(name="cached-inside")
