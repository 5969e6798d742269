"""Workflow names of a module's graphs: LangGraph programs compile without a name (issue 11)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError

PROGRAM = """
from typing import TypedDict
from graphcore import END, START, StateGraph

class State(TypedDict):
    n: int

def build(step):
    g = StateGraph(State)
    g.add_node("bump", lambda s: {"n": s["n"] + step})
    g.add_edge(START, "bump")
    g.add_edge("bump", END)
    return g

subgraph = build(10).compile()
graph = build(1).compile()
alias = graph
{extra}
"""


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, extra: str = "") -> str:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(PROGRAM.replace("{extra}", extra)))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_unnamed_graphs_take_their_variable_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, both unnamed graphs registered as 'graph' and the later one won silently; now each is the
    workflow of its variable (the first variable when two hold one graph), and a named one keeps its name."""
    module = _module(tmp_path, monkeypatch, "flows_unnamed", 'named = build(100).compile(name="hundred")')
    registry = Registry.load([module])
    assert {"graph", "hundred", "subgraph"} <= set(registry.graphs)  # besides the installed entry points
    assert "alias" not in registry.graphs
    assert [registry.get(n).invoke({"n": 0}) for n in ("graph", "hundred", "subgraph")] == [
        {"n": 1},
        {"n": 100},
        {"n": 10},
    ]
    assert registry.get("subgraph").name == "subgraph"


def test_two_graphs_with_one_name_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _module(
        tmp_path,
        monkeypatch,
        "flows_clash",
        'one = build(1).compile(name="same")\nother = build(2).compile(name="same")',
    )
    with pytest.raises(ConfigError) as caught:
        Registry.load([module])
    assert str(caught.value) == (
        "workflow module 'flows_clash': two graphs are named 'same'; give each its own compile(name=...)"
    )
