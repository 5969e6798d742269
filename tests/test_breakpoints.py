"""Static breakpoints (interrupt_before / interrupt_after), LangGraph's run config and durability: what the
compat suite (tests/compat/test_breakpoints.py, test_config.py) cannot see from outside — the checkpoints
written, graphq's refusals — in process."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphcore import END, START, StateGraph, interrupt
from graphcore.checkpoints.memory import InMemoryCheckpointStore
from graphcore.engine.breakpoints import NESTED_BREAKPOINTS
from graphcore.engine.config import RunConfig, merge_config
from graphcore.errors import ConfigError
from graphcore.types import Command


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def chain(*nodes: str) -> StateGraph:
    builder = StateGraph(State)
    previous = START
    for name in nodes:
        builder.add_node(name, lambda s, name=name: {"items": [name]})
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder


def test_a_stop_before_saves_the_checkpoint_whose_next_task_is_the_node() -> None:
    store = InMemoryCheckpointStore()
    app = chain("a", "b", "c").compile(store, interrupt_before=["b"])
    app.invoke({"items": ["x"]}, {"configurable": {"thread_id": "t"}})
    head = store.get("t")
    assert head is not None
    assert ([t.node for t in head.next_tasks], head.channel_values, head.source) == (
        ["b"],
        {"items": ["x", "a"]},
        "loop",
    )
    assert store.get_writes("t", head.id) == {}  # nothing of b ran


def test_a_stop_after_saves_the_step_that_ran_the_node() -> None:
    store = InMemoryCheckpointStore()
    app = chain("a", "b").compile(store, interrupt_after=["a"])
    app.invoke({"items": []}, {"configurable": {"thread_id": "t"}})
    head = store.get("t")
    assert head is not None
    assert (head.metadata["writes"], [t.node for t in head.next_tasks]) == (["a"], ["b"])


def test_a_graph_with_breakpoints_inside_a_node_is_refused() -> None:
    inner = chain("i").compile(interrupt_before=["i"])
    outer = StateGraph(State)
    outer.add_node("call", lambda s: {"items": inner.invoke({"items": []})["items"]})
    outer.add_edge(START, "call")
    with pytest.raises(ConfigError) as caught:
        outer.compile().invoke({"items": []})
    assert str(caught.value) == NESTED_BREAKPOINTS


def test_durability_exit_parents_the_last_checkpoint_to_where_the_run_started() -> None:
    store = InMemoryCheckpointStore()
    app = chain("a", "b").compile(store)
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"items": ["x"]}, config)
    before = store.get("t")
    assert before is not None
    app.invoke({"items": ["y"]}, config, durability="exit")
    cps = store.list("t")
    assert len(cps) == 4  # 3 from the first run (input, a, b), 1 from the second
    assert (cps[0].parent_id, cps[0].channel_values) == (before.id, {"items": ["x", "a", "b", "y", "a", "b"]})


def test_durability_exit_keeps_a_paused_step_and_resumes() -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"items": [str(interrupt("ok?"))]}

    builder = StateGraph(State)
    builder.add_node("a", lambda s: {"items": ["a"]})
    builder.add_node("ask", ask)
    builder.add_edge(START, "a")
    builder.add_edge("a", "ask")
    store = InMemoryCheckpointStore()
    app = builder.compile(store)
    config = {"configurable": {"thread_id": "t"}}
    paused = app.invoke({"items": []}, config, durability="exit")
    assert [i.value for i in paused["__interrupt__"]] == ["ok?"]
    head = store.get("t")
    assert head is not None
    assert (len(store.list("t")), head.parent_id, [t.node for t in head.next_tasks]) == (1, None, ["ask"])
    assert app.invoke(Command(resume="yes"), config, durability="exit") == {"items": ["a", "yes"]}


def test_run_config_takes_langgraphs_keys() -> None:
    cfg = merge_config(
        {"configurable": {"thread_id": 3, "checkpoint_id": "c1", "checkpoint_ns": "", "k": 1}},
        {"recursion_limit": 10, "run_name": "r", "max_concurrency": 2},
    )
    assert (cfg.thread_id, cfg.checkpoint_id, cfg.configurable, cfg.max_super_steps) == (
        "3",
        "c1",
        {"k": 1},
        9,
    )
    assert (cfg.run_name, cfg.max_concurrency, cfg.step_limit()) == ("r", 2, 9)
    assert cfg["configurable"] == {"k": 1, "thread_id": "3", "checkpoint_id": "c1", "checkpoint_ns": ""}
    assert (cfg["recursion_limit"], cfg["tags"], cfg.get("callbacks"), cfg.get("nope", 0)) == (
        10,
        [],
        None,
        0,
    )
    assert ("configurable" in cfg, "nope" in cfg, cfg.keys()[:3]) == (
        True,
        False,
        ["configurable", "tags", "metadata"],
    )
    with pytest.raises(KeyError):
        cfg["nope"]


@pytest.mark.parametrize(
    ("layers", "message"),
    [
        (
            [{"thread_id": "a", "configurable": {"thread_id": "b"}}],
            "run option thread_id='a' and configurable thread_id='b' differ; give one",
        ),
        (
            [{"recursion_limit": 5, "max_super_steps": 3}],
            "run options recursion_limit=5 and max_super_steps=3 differ (recursion_limit R is "
            "max_super_steps R - 1); give one",
        ),
        (
            [{"recursion_limit": "5"}],
            "run option recursion_limit: must be an integer ≥ 2 (LangGraph's recursion_limit R allows R - 1 "
            "super-steps, graphq's max_super_steps; 1 allows none) (got '5')",
        ),
        (
            [{"durability": "later"}],
            "run option durability: Input should be 'sync', 'async' or 'exit' (got 'later')",
        ),
        ([{"max_concurrency": 0}], "run option max_concurrency: must be 1 ≤ value (got 0)"),
    ],
)
def test_run_config_refusals(layers: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        merge_config(*layers)
    assert str(caught.value) == message


def test_a_later_layers_recursion_limit_wins() -> None:
    assert merge_config({"max_super_steps": 3}, {"recursion_limit": 8}).max_super_steps == 7
    assert merge_config(RunConfig(max_super_steps=3), {"recursion_limit": 8})["recursion_limit"] == 8
