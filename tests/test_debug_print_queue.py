"""``debug=True`` and ``print_mode`` on a queue worker: in process they print LangGraph's lines
to stdout; in a worker's step job (a graph compiled with ``debug=True``, invoked inside a node) the same
lines are logged at DEBUG on the logger ``graphq.debug``, without colour, and nothing is printed."""

from __future__ import annotations

import logging
import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphcore import START, StateGraph
from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.workers import work


class Items(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def _inner() -> Any:
    builder = StateGraph(Items)
    builder.add_node("x", lambda s: {"items": ["x"]})
    builder.add_edge(START, "x")
    return builder.compile(name="debug-inner", debug=True)


INNER = _inner()


def outer(state: Items) -> dict[str, Any]:
    return {"items": INNER.invoke({"items": []})["items"]}


def _outer() -> Any:
    builder = StateGraph(Items)
    builder.add_node("outer", outer)
    builder.add_edge(START, "outer")
    return builder.compile(name="debug-outer")


REGISTRY = Registry({"debug-outer": _outer()})
LINES = ["[values] {'items': []}", "[updates] {'x': {'items': ['x']}}", "[values] {'items': ['x']}"]


def test_a_debug_graph_in_a_queued_step_logs_its_events_and_prints_nothing(
    client: Client, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="graphq.debug")
    run_id = client.enqueue("debug-outer", {"items": []})
    assert work(client)
    run = client.get_run(run_id)
    assert (run.status, run.result) == (RunStatus.COMPLETED, {"items": ["x"]})
    assert [r.getMessage() for r in caplog.records if r.name == "graphq.debug"] == LINES
    assert "[values]" not in capsys.readouterr().out
    caplog.clear()
    assert INNER.invoke({"items": []}) == {"items": ["x"]}  # in process: printed, not logged
    assert [r.getMessage() for r in caplog.records if r.name == "graphq.debug"] == []
    assert capsys.readouterr().out.splitlines() == [
        "\033[1m[values]\033[0m {'items': []}",
        "\033[1m[updates]\033[0m {'x': {'items': ['x']}}",
        "\033[1m[values]\033[0m {'items': ['x']}",
    ]
