"""A workflow with node settings, for the catalog tests (R9).

``CATALOG_TEST_TEMPERATURE`` (read when the module is imported) sets one node's settings, so that two
processes can serve two versions of the same workflow. :func:`fetch_graph` builds a one-node graph with the
settings a test gives; :func:`catalog_env` is the environment of a `graphq worker` serving this module.
"""

from __future__ import annotations

import os
from typing import Any, TypedDict

from graphcore import END, START, RunConfig, StateGraph, get_node_settings
from graphcore.engine.config import NODE_SETTINGS_KEY
from tests.workers import worker_env

TEMPERATURE = float(os.environ.get("CATALOG_TEST_TEMPERATURE", "0.5"))
SETTINGS = {"model": "small", "temperature": TEMPERATURE, "stops": ["\n", "é"], "extra": {"n": 2, "x": None}}
SIZE = 80
"""Bytes of SETTINGS as compact JSON (79 characters, "é" takes two bytes)."""


class Conf(TypedDict, total=False):
    seen: dict[str, Any]
    via_config: dict[str, Any]
    plain_seen: dict[str, Any]


def configured(state: Conf, config: RunConfig) -> dict[str, Any]:
    return {"seen": get_node_settings(), "via_config": config.configurable[NODE_SETTINGS_KEY]}


def plain(state: Conf) -> dict[str, Any]:
    return {"plain_seen": get_node_settings()}


def route(state: Conf) -> str:
    return "plain" if state.get("seen") else END


_g = StateGraph(Conf)
_g.add_node("configured", configured, settings=SETTINGS, timeout=30)
_g.add_node("plain", plain)
_g.add_edge(START, "configured")
_g.add_conditional_edges("configured", route, {"plain": "plain", "end": END})
_g.add_edge("plain", END)
configured_graph = _g.compile(name="configured")


class Fetched(TypedDict, total=False):
    x: int


def fetch(state: Fetched) -> dict[str, Any]:
    return {"x": 1}


def fetch_graph(settings: Any) -> StateGraph:
    """A graph (not compiled) of one node, ``fetch``, added with ``settings``."""
    g = StateGraph(Fetched)
    g.add_node("fetch", fetch, settings=settings)
    g.add_edge(START, "fetch")
    g.add_edge("fetch", END)
    return g


def catalog_env(redis_url: str, **settings: str) -> dict[str, str]:
    """The environment of a `graphq worker` serving this module (lease TTL 2 s, heartbeat 0.5 s), with
    ``settings`` (``CATALOG_TEST_TEMPERATURE="0.7"``) over it."""
    short = {"GRAPHQ_LEASE_TTL_S": "2", "GRAPHQ_HEARTBEAT_INTERVAL_S": "0.5"}
    return worker_env(redis_url, "tests.workflows.catalog", **(short | settings))
