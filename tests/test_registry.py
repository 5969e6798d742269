"""Workflow names of a module's graphs: LangGraph programs compile without a name."""

from __future__ import annotations

import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from graphcore.engine.registry import ENTRY_POINT_GROUP, Registry, entry_graph
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


def test_two_modules_with_one_workflow_name_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both modules' unnamed ``graph`` registered as 'graph' and the later module won silently (found by a
    new-user trial: tutorials all call their graph ``graph``); now the second is refused, naming both."""
    first, second = _module(tmp_path, monkeypatch, "flows_one"), _module(tmp_path, monkeypatch, "flows_two")
    with pytest.raises(ConfigError) as caught:
        Registry.load([first, second])
    assert str(caught.value) == (
        "workflow modules 'flows_one' and 'flows_two' both define a workflow named 'subgraph'; give one of "
        "them another compile(name=...)"
    )


def test_a_module_re_exporting_anothers_graph_is_fine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _module(tmp_path, monkeypatch, "flows_origin")
    (tmp_path / "flows_reexport.py").write_text("from flows_origin import graph\n")
    registry = Registry.load([first, "flows_reexport"])
    assert registry.get("graph").invoke({"n": 0}) == {"n": 1}


def test_a_module_replacing_an_entry_point_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    module = _module(tmp_path, monkeypatch, "flows_mine", 'mine = build(5).compile(name="approval")')
    with caplog.at_level("WARNING", logger="graphq.workflows"):
        registry = Registry.load([module])
    assert registry.get("approval").invoke({"n": 0}) == {"n": 5}
    assert [r.getMessage() for r in caplog.records] == [
        "workflow 'approval' of module 'flows_mine' replaces the installed entry point of that name"
    ]


def test_private_and_subgraph_only_graphs_are_not_workflows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trial's flows.py registered its private ``_counter2`` and its ``checkpointer=True`` subgraph
    ``counter`` as workflows (a root run with checkpointer=True, which graphq refuses in process); now a
    private name and a checkpointer=True/False graph are skipped, and the parent graph using them is one."""
    extra = """
from graphcore import InMemorySaver
_private = build(2).compile()
counter = build(3).compile(name="counter", checkpointer=True)
scratch = build(4).compile(checkpointer=False)
saved = build(5).compile(checkpointer=InMemorySaver())
outer = StateGraph(State)
outer.add_node("sub", counter)
outer.add_node("priv", _private)
outer.add_edge(START, "sub")
outer.add_edge("sub", "priv")
parent = outer.compile(name="parent")
"""
    registry = Registry.load([_module(tmp_path, monkeypatch, "flows_private", extra)])
    mine = {"graph", "subgraph", "saved", "parent", "_private", "counter", "scratch"} & set(registry.graphs)
    assert mine == {"graph", "subgraph", "saved", "parent"}
    assert registry.get("parent").invoke({"n": 0}) == {"n": 5}


@pytest.mark.parametrize("attr", ["counter", "scratch"])
def test_an_entry_point_naming_a_subgraph_only_graph_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attr: str
) -> None:
    extra = 'counter = build(3).compile(name="counter", checkpointer=True)\n'
    extra += "scratch = build(4).compile(checkpointer=False)"
    module = _module(tmp_path, monkeypatch, "flows_entry", extra)
    ep = EntryPoint(name="mine", value=f"{module}:{attr}", group=ENTRY_POINT_GROUP)
    with pytest.raises(ConfigError) as caught:
        entry_graph(ep)
    flag = {"counter": True, "scratch": False}[attr]
    assert str(caught.value) == (
        f"entry point mine = flows_entry:{attr} names a graph compiled with checkpointer={flag}, a subgraph "
        "setting: it runs only inside a parent graph; name the parent graph, or compile this one without "
        "checkpointer"
    )
    plain = EntryPoint(name="mine", value=f"{module}:graph", group=ENTRY_POINT_GROUP)
    assert entry_graph(plain).name == "mine"
