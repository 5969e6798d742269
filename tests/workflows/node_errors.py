"""Workflows whose nodes raise (G4): the queued run's error record of a node's own exception."""

from __future__ import annotations

from typing import Any, TypedDict

import redis

from graphcore import START, StateGraph


class S(TypedDict, total=False):
    n: int


def lookup(state: S) -> dict[str, Any]:
    raise KeyError("k")


def redis_down(state: S) -> dict[str, Any]:
    raise redis.ConnectionError("down")  # the node's own Redis, not graphq's: the node failed


_k = StateGraph(S)
_k.add_node("lookup", lookup)
_k.add_edge(START, "lookup")
keyerror = _k.compile(name="keyerror")

_r = StateGraph(S)
_r.add_node("redis_down", redis_down)
_r.add_edge(START, "redis_down")
redisdown = _r.compile(name="redisdown")
