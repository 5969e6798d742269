"""The default graph name: LangGraph's is ``"LangGraph"``, the name of the root run of
``astream_events`` and ``get_name()``'s; a name given to ``compile`` replaces it. Each case runs with
LangGraph's imports and with graphq's."""

import asyncio
from typing import Any

import pytest

from tests.compat.conftest import Imports


def _graph(lg: Imports, **options: Any) -> Any:
    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("n", lambda state: {})
    builder.add_edge(lg.START, "n")
    return builder.compile(**options)


async def _root_names(graph: Any) -> list[str]:
    events = [event async for event in graph.astream_events({"messages": []}, version="v2")]
    root = events[0]["run_id"]
    return [event["name"] for event in events if event["run_id"] == root]


@pytest.mark.parametrize(("options", "name"), [({}, "LangGraph"), ({"name": "weather"}, "weather")])
def test_the_root_run_is_named_after_the_graph(lg: Imports, options: dict[str, Any], name: str) -> None:
    """LangGraph: ``astream_events``' root chain run (its start, stream and end events) has the graph's
    name, ``"LangGraph"`` when ``compile`` was given none."""
    assert asyncio.run(_root_names(_graph(lg, **options))) == [name] * 3


def test_get_name_is_langgraphs(lg: Imports) -> None:
    """LangGraph: ``get_name()`` is the graph's name, ``"LangGraph"`` by default; a suffix is title-cased
    after a capital and joined with ``_`` in lower case otherwise."""
    unnamed, named = _graph(lg), _graph(lg, name="weather")
    assert [unnamed.get_name(), unnamed.get_name("input"), named.get_name(), named.get_name("Input")] == [
        "LangGraph",
        "LangGraphInput",
        "weather",
        "weather_input",
    ]
