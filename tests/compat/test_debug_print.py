"""``debug=True`` and ``print_mode=``: the same program, LangGraph's imports or graphq's, prints
LangGraph's lines to stdout (``[mode] payload``, the mode in bold; a subgraph's events with ``[graph=ns]`` in
yellow) and returns the same result. Random ids (task ids in namespaces and ``tasks`` payloads) are masked
before comparing."""

from __future__ import annotations

import asyncio
import operator
import re
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports

BOLD, YELLOW, PLAIN = "\033[1m", "\033[1;30;33m", "\033[0m"


class State(TypedDict):
    items: Annotated[list[str], operator.add]
    n: int


def a_then_b(lg: Imports, debug: bool = False) -> Any:
    builder = lg.StateGraph(State)
    builder.add_node("a", lambda s: {"items": ["a"], "n": 1})
    builder.add_node("b", lambda s: {"items": ["b"]})
    builder.add_edge(lg.START, "a")
    builder.add_edge("a", "b")
    return builder.compile(debug=debug)


def printed(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The lines printed since the last read, task ids masked as ``<id>``."""
    out = capsys.readouterr().out
    out = re.sub(r"(child:|'id': ')[0-9a-f-]{16,36}", r"\1<id>", out)
    return out.splitlines()


def test_debug_prints_updates_and_values(lg: Imports, capsys: pytest.CaptureFixture[str]) -> None:
    """LangGraph: ``debug=True`` per call (invoke, stream, ainvoke) or at compile prints each ``values`` and
    ``updates`` event as ``[mode] payload``, the mode in bold, and changes no result."""
    lines = [
        f"{BOLD}[values]{PLAIN} {{'items': []}}",
        f"{BOLD}[updates]{PLAIN} {{'a': {{'items': ['a'], 'n': 1}}}}",
        f"{BOLD}[values]{PLAIN} {{'items': ['a'], 'n': 1}}",
        f"{BOLD}[updates]{PLAIN} {{'b': {{'items': ['b']}}}}",
        f"{BOLD}[values]{PLAIN} {{'items': ['a', 'b'], 'n': 1}}",
    ]
    assert a_then_b(lg).invoke({"items": []}, debug=True) == {"items": ["a", "b"], "n": 1}
    assert printed(capsys) == lines
    assert a_then_b(lg, debug=True).invoke({"items": []}) == {"items": ["a", "b"], "n": 1}
    assert printed(capsys) == lines
    assert list(a_then_b(lg).stream({"items": []}, debug=True)) == [
        {"a": {"items": ["a"], "n": 1}},
        {"b": {"items": ["b"]}},
    ]
    assert printed(capsys) == lines
    assert asyncio.run(a_then_b(lg).ainvoke({"items": []}, debug=True)) == {"items": ["a", "b"], "n": 1}
    assert printed(capsys) == lines
    assert a_then_b(lg).invoke({"items": []}) == {"items": ["a", "b"], "n": 1}
    assert printed(capsys) == []


def test_print_mode_prints_its_modes(lg: Imports, capsys: pytest.CaptureFixture[str]) -> None:
    """LangGraph: ``print_mode`` prints its modes' events whether streamed or not; ``debug=True`` prints
    ``updates`` and ``values`` instead of them."""
    assert a_then_b(lg).invoke({"items": []}, print_mode="updates") == {"items": ["a", "b"], "n": 1}
    assert printed(capsys) == [
        f"{BOLD}[updates]{PLAIN} {{'a': {{'items': ['a'], 'n': 1}}}}",
        f"{BOLD}[updates]{PLAIN} {{'b': {{'items': ['b']}}}}",
    ]
    chunks = list(a_then_b(lg).stream({"items": []}, stream_mode="updates", print_mode=["tasks"]))
    assert chunks == [{"a": {"items": ["a"], "n": 1}}, {"b": {"items": ["b"]}}]
    assert printed(capsys) == [
        f"{BOLD}[tasks]{PLAIN} {{'id': '<id>', 'name': 'a', 'input': {{'items': []}}, "
        "'triggers': ('branch:to:a',)}",
        f"{BOLD}[tasks]{PLAIN} {{'id': '<id>', 'name': 'a', 'error': None, "
        "'result': {'items': ['a'], 'n': 1}, 'interrupts': []}",
        f"{BOLD}[tasks]{PLAIN} {{'id': '<id>', 'name': 'b', 'input': {{'items': ['a'], 'n': 1}}, "
        "'triggers': ('branch:to:b',)}",
        f"{BOLD}[tasks]{PLAIN} {{'id': '<id>', 'name': 'b', 'error': None, "
        "'result': {'items': ['b']}, 'interrupts': []}",
    ]
    a_then_b(lg).invoke({"items": []}, debug=True, print_mode="tasks")
    assert [line.split(" ")[0] for line in printed(capsys)] == [f"{BOLD}[values]{PLAIN}"] + [
        f"{BOLD}[updates]{PLAIN}",
        f"{BOLD}[values]{PLAIN}",
    ] * 2


def test_a_subgraphs_events_print_with_its_namespace(lg: Imports, capsys: pytest.CaptureFixture[str]) -> None:
    """LangGraph: with ``subgraphs=True`` a subgraph's printed events carry ``[graph=(namespace,)]`` in
    yellow after the mode."""
    builder = lg.StateGraph(State)
    builder.add_node("child", a_then_b(lg))
    builder.add_edge(lg.START, "child")
    chunks = list(builder.compile().stream({"items": []}, print_mode="updates", subgraphs=True))
    assert [chunk[1] for chunk in chunks] == [
        {"a": {"items": ["a"], "n": 1}},
        {"b": {"items": ["b"]}},
        {"child": {"items": ["a", "b"], "n": 1}},
    ]
    assert printed(capsys) == [
        f"{BOLD}[updates]{PLAIN} {YELLOW}[graph=('child:<id>',)]{PLAIN} {{'a': {{'items': ['a'], 'n': 1}}}}",
        f"{BOLD}[updates]{PLAIN} {YELLOW}[graph=('child:<id>',)]{PLAIN} {{'b': {{'items': ['b']}}}}",
        f"{BOLD}[updates]{PLAIN} {{'child': {{'items': ['a', 'b'], 'n': 1}}}}",
    ]


def test_a_pause_prints_its_interrupts(lg: Imports, capsys: pytest.CaptureFixture[str]) -> None:
    """LangGraph: a run that pauses in ``interrupt()`` under ``debug=True`` prints the ``__interrupt__``
    update and the state with its requests, each ``Interrupt`` as its repr."""

    def ask(state: State) -> dict[str, Any]:
        return {"items": [lg.interrupt("ok?")]}

    builder = lg.StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(lg.START, "ask")
    graph = builder.compile(checkpointer=lg.InMemorySaver())
    out = graph.invoke({"items": []}, {"configurable": {"thread_id": "t"}}, debug=True)
    assert [i.value for i in out["__interrupt__"]] == ["ok?"]
    asked = "(Interrupt(value='ok?', id='<id>', response_schema=None),)"
    assert [re.sub(r"id='[0-9a-f]+'", "id='<id>'", line) for line in printed(capsys)] == [
        f"{BOLD}[values]{PLAIN} {{'items': []}}",
        f"{BOLD}[updates]{PLAIN} {{'__interrupt__': {asked}}}",
        f"{BOLD}[values]{PLAIN} {{'items': [], '__interrupt__': {asked}}}",
    ]
