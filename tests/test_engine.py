"""Engine semantics (G1-G5, C1, C4, C5) with exact expected values; pure in-process, no Redis."""

from __future__ import annotations

import dataclasses
import logging
import operator
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any, NotRequired, TypedDict

import pytest
from pydantic import BaseModel

from graphcore import (
    END,
    START,
    Command,
    CompiledGraph,
    ConfigError,
    InvalidGraphError,
    InvalidUpdateError,
    NodeError,
    Overwrite,
    RemoveMessage,
    Send,
    StateGraph,
    StepLimitError,
    add_messages,
    get_config,
    get_stream_writer,
)
from graphcore.checkpoints.memory import InMemoryCheckpointStore
from graphcore.errors import OutsideRunError
from graphcore.messages import AIMessage, AnyMessage, HumanMessage
from graphcore.settings import get_settings

# --------------------------------------------------------------------------------------------------------
# States and helpers
# --------------------------------------------------------------------------------------------------------


class S(TypedDict, total=False):
    """General-purpose state: a LastValue pair and an append log."""

    x: int
    y: int
    log: Annotated[list[str], operator.add]


class Pair(TypedDict, total=False):
    """Two LastValue keys and nothing else, for exact stream payloads."""

    x: int
    y: int


class Counters(TypedDict, total=False):
    """Reducers that are not list concatenation."""

    total: Annotated[int, operator.add]
    best: Annotated[int, max]


class Chat(TypedDict, total=False):
    """A message channel."""

    messages: Annotated[list[AnyMessage], add_messages]


class Mapped(TypedDict, total=False):
    """Fan-out: Send arguments in, squares out."""

    n: int
    results: Annotated[list[int], operator.add]
    total: int


def noop(state: Any) -> None:
    """A node that writes nothing."""
    return None


def writes(**update: Any) -> Callable[[Any], dict[str, Any]]:
    """A node that always returns ``update``."""
    return lambda state: dict(update)


def logs(name: str, delay: float = 0.0) -> Callable[[Any], dict[str, Any]]:
    """A node that appends its name to ``log`` after ``delay`` seconds."""

    def node(state: Any) -> dict[str, Any]:
        time.sleep(delay)
        return {"log": [name]}

    return node


def chain(state: type[Any], *nodes: tuple[str, Callable[..., Any]], **compile_kw: Any) -> CompiledGraph:
    """START → nodes[0] → … → nodes[-1] → END."""
    g = StateGraph(state)
    names = [name for name, _ in nodes]
    for name, fn in nodes:
        g.add_node(name, fn)
    for src, dst in zip([START, *names], [*names, END], strict=True):
        g.add_edge(src, dst)
    return g.compile(**compile_kw)


def log_chain(n: int) -> CompiledGraph:
    """A chain of ``n`` logging nodes n0 … n{n-1}: it needs exactly ``n`` super-steps."""
    return chain(S, *[(f"n{i}", logs(f"n{i}")) for i in range(n)])


def parallel(state: type[Any], *nodes: tuple[str, Callable[..., Any]]) -> CompiledGraph:
    """START → every node (one super-step, all in parallel) → END."""
    g = StateGraph(state)
    for name, fn in nodes:
        g.add_node(name, fn)
        g.add_edge(START, name)
        g.add_edge(name, END)
    return g.compile()


def loop_to(k: int) -> CompiledGraph:
    """A self-loop ``tick`` that runs exactly ``k`` times (k super-steps)."""
    g = StateGraph(S)
    g.add_node("tick", lambda s: {"x": s.get("x", 0) + 1})
    g.add_edge(START, "tick")
    g.add_conditional_edges("tick", lambda s: "tick" if s["x"] < k else END, ["tick", END])
    return g.compile()


@pytest.fixture
def fresh_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Settings re-read from the (patched) environment, and forgotten again afterwards."""
    monkeypatch.delenv("GRAPHQ_MAX_SUPER_STEPS", raising=False)
    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


# --------------------------------------------------------------------------------------------------------
# G1: compile-time validation
# --------------------------------------------------------------------------------------------------------


def _unknown_source(g: StateGraph) -> None:
    g.add_edge(START, "a")
    g.add_edge("ghost", "a")


def _edge_to_nowhere(g: StateGraph) -> None:
    g.add_edge(START, "a")
    g.add_edge("a", "nowhere")


def _join_to_nowhere(g: StateGraph) -> None:
    g.add_edge(START, "a")
    g.add_edge(["a"], "nowhere")


def _join_unknown_source(g: StateGraph) -> None:
    g.add_edge(START, "a")
    g.add_edge(["a", "ghost"], "a")


def _no_entry(g: StateGraph) -> None:
    g.add_edge("a", END)


def _unreachable(g: StateGraph) -> None:
    g.add_node("island", noop)
    g.add_edge(START, "a")
    g.add_edge("island", END)


def _path_map_to_unknown(g: StateGraph) -> None:
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "go", {"go": "ghost"})


def _destination_unknown(g: StateGraph) -> None:
    g.add_node("b", noop, destinations=["ghost"])
    g.add_edge(START, "a")
    g.add_edge("a", "b")


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (_unknown_source, "Found edge starting at unknown node 'ghost'"),
        (_edge_to_nowhere, "edge to nowhere, no node 'nowhere'"),
        (_join_to_nowhere, "'nowhere': edge to nowhere"),
        (_join_unknown_source, "Found edge starting at unknown node 'ghost'"),
        (_no_entry, "no entry point"),
        (_path_map_to_unknown, "unknown node 'ghost'"),
        (_destination_unknown, "destination 'ghost' is not a node"),
    ],
)
def test_compile_rejects_broken_graph_naming_the_node(
    build: Callable[[StateGraph], None], expected: str
) -> None:
    g = StateGraph(S)
    g.add_node("a", noop)
    build(g)
    with pytest.raises(InvalidGraphError) as info:
        g.compile()
    assert expected in str(info.value)


def test_a_node_no_edge_reaches_compiles_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """An orphan compiles, as in LangGraph, and never runs; the warning names it."""
    g = StateGraph(S)
    g.add_node("a", writes(x=1))
    _unreachable(g)
    with caplog.at_level(logging.WARNING, logger="graphcore.engine.validate"):
        graph = g.compile()
    assert graph.invoke({}) == {"x": 1, "log": []}
    assert [r.getMessage()[:59] for r in caplog.records] == [
        "node(s) ['island'] cannot be reached from START by an edge:"
    ]


def test_empty_graph_is_rejected() -> None:
    with pytest.raises(InvalidGraphError, match="no nodes"):
        StateGraph(S).compile()


def test_duplicate_node_is_rejected_naming_it() -> None:
    g = StateGraph(S).add_node("dup", noop)
    with pytest.raises(InvalidGraphError, match="node 'dup' is already in the graph"):
        g.add_node("dup", noop)


@pytest.mark.parametrize("name", [START, END, "a:b", ""])
def test_reserved_or_invalid_node_name_is_rejected(name: str) -> None:
    with pytest.raises(InvalidGraphError) as info:
        StateGraph(S).add_node(name, noop)
    assert repr(name) in str(info.value)


def test_a_dataclass_schema_has_its_fields_and_a_type_without_fields_is_a_root() -> None:
    """A dataclass's fields are its channels; a type without fields (``dict``) is a root-channel state, as
    LangGraph's."""

    @dataclasses.dataclass
    class Point:
        x: int

    assert list(StateGraph(Point).schema.channels) == ["x"]
    assert StateGraph(dict).schema.root


# --------------------------------------------------------------------------------------------------------
# G2: channels and reducers
# --------------------------------------------------------------------------------------------------------


def test_lastvalue_conflict_names_key_and_both_nodes() -> None:
    graph = parallel(S, ("alpha", writes(x=1)), ("beta", writes(x=2)))
    with pytest.raises(InvalidUpdateError) as info:
        graph.invoke({})
    message = str(info.value)
    assert "'x'" in message
    assert "alpha" in message
    assert "beta" in message


def test_reducer_applies_in_task_order_not_finish_order() -> None:
    finished: list[str] = []
    lock = threading.Lock()

    def node(name: str, delay: float) -> Callable[[Any], dict[str, Any]]:
        def fn(state: Any) -> dict[str, Any]:
            time.sleep(delay)
            with lock:
                finished.append(name)
            return {"log": [name]}

        return fn

    graph = parallel(S, ("b", node("b", 0.05)), ("c", node("c", 0.0)))
    assert graph.invoke({"log": ["in"]}) == {"log": ["in", "b", "c"]}
    assert finished == ["c", "b"]  # c finished first, yet b's write applied first


def test_int_counter_reducer_sums_every_write() -> None:
    graph = parallel(Counters, *[(f"n{i}", writes(total=i)) for i in (1, 2, 3)])
    assert graph.invoke({"total": 10}) == {"total": 16, "best": 0}


def test_any_binary_operator_is_a_reducer() -> None:
    graph = parallel(Counters, *[(f"n{v}", writes(best=v)) for v in (3, 9, 5)])
    assert graph.invoke({}) == {"total": 0, "best": 9}


def test_add_messages_append_replace_remove_and_auto_id() -> None:
    """Messages are read as LangGraph's add_messages reads them (dicts with a role become message
    objects, ids are uuid4 strings); before, dicts stayed dicts and ids were 32 hex digits."""
    graph = chain(
        Chat,
        ("append", lambda s: {"messages": [{"id": "2", "role": "ai", "content": "yo"}, ("user", "bye")]}),
        ("replace", lambda s: {"messages": {"id": "1", "role": "user", "content": "HI"}}),
        ("remove", lambda s: {"messages": [RemoveMessage("2")]}),
        ("auto", lambda s: {"messages": "no id"}),
    )
    out = graph.invoke({"messages": [{"id": "1", "role": "user", "content": "hi"}]})
    messages = out["messages"]
    assert messages[0] == HumanMessage("HI", id="1")
    assert [(type(m), m.content) for m in messages] == [
        (HumanMessage, "HI"),
        (HumanMessage, "bye"),
        (HumanMessage, "no id"),
    ]
    uuid4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    assert all(re.fullmatch(uuid4, m.id) for m in messages[1:])


def test_add_messages_does_not_modify_left_and_rejects_unknown_removal() -> None:
    left = [AIMessage("a", id="1")]
    assert add_messages(left, {"id": "1", "role": "ai", "content": "b"}) == [AIMessage("b", id="1")]
    assert left == [AIMessage("a", id="1")]
    with pytest.raises(InvalidUpdateError, match=r"doesn't exist \('9'\)") as refused:
        add_messages(left, RemoveMessage("9"))
    assert isinstance(refused.value, ValueError)
    with pytest.raises(InvalidUpdateError, match="must have 'role' \\(or 'type'\\) and 'content' keys"):
        add_messages(left, {"id": "2", "text": "no role"})


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        (["b"], Overwrite(["c"]), ["c"]),  # b appends, then c's Overwrite replaces everything
        (Overwrite(["b"]), ["c"], ["b"]),  # b's Overwrite wins its step: c's append is dropped (LangGraph)
    ],
)
def test_overwrite_bypasses_reducer_and_wins_its_step(first: Any, second: Any, expected: list[str]) -> None:
    graph = parallel(S, ("b", lambda s: {"log": first}), ("c", lambda s: {"log": second}))
    assert graph.invoke({"log": ["in"]}) == {"log": expected}


def test_overwrite_on_lastvalue_stores_the_value() -> None:
    graph = chain(Pair, ("a", lambda s: {"x": Overwrite(7)}))
    assert graph.invoke({"x": 1}) == {"x": 7}


def test_two_overwrites_in_one_step_conflict() -> None:
    graph = parallel(S, ("b", lambda s: {"log": Overwrite([])}), ("c", lambda s: {"log": Overwrite([])}))
    with pytest.raises(InvalidUpdateError) as info:
        graph.invoke({})
    assert "'log'" in str(info.value)
    assert "from b, c" in str(info.value)


def test_write_to_unknown_key_is_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """A node's keys that are no channel are dropped, as LangGraph drops them, and logged; its other keys
    are written. ``update_state`` as that node drops them too, with a UserWarning (tests/compat/test_state.py;
    the queue's ``client.update_state`` refuses them)."""
    graph = chain(S, ("writer", lambda s: {"x": 2, "nope": 1}), checkpointer=InMemoryCheckpointStore())
    config = {"configurable": {"thread_id": "t"}}
    with caplog.at_level(logging.WARNING, logger="graphcore.engine.schema"):
        assert graph.invoke({"x": 1}, config) == {"x": 2, "log": []}
    assert [r.getMessage() for r in caplog.records] == [
        "node 'writer' wrote unknown state key(s) ['nope']; known keys: ['x', 'y', 'log']: ignored"
    ]
    with pytest.warns(UserWarning, match=r"^update_state: node .writer. wrote unknown state key\(s\)"):
        graph.update_state(config, {"nope": 2, "x": 3}, as_node="writer")
    assert graph.get_state(config).values == {"x": 3, "log": []}


def test_input_with_unknown_key_is_dropped_also_as_a_state_update() -> None:
    """In process the input's unknown keys are dropped, as LangGraph drops them (the queue refuses them at
    enqueue); ``update_state(..., as_node=START)`` drops them too, with a UserWarning."""
    graph = chain(S, ("a", lambda s: {"log": sorted(s)}), checkpointer=InMemoryCheckpointStore())
    assert graph.invoke({"x": 1, "nope": 1}, {"configurable": {"thread_id": "t"}}) == {
        "x": 1,
        "log": ["log", "x"],
    }
    with pytest.warns(UserWarning, match=r"^update_state: the input has unknown state key\(s\) \[.nope.\]"):
        graph.update_state({"configurable": {"thread_id": "t"}}, {"nope": 2, "x": 5}, as_node=START)
    assert graph.get_state({"configurable": {"thread_id": "t"}}).values == {"x": 5, "log": ["log", "x"]}


def test_node_returning_non_mapping_is_rejected() -> None:
    with pytest.raises(InvalidUpdateError, match="node 'a' returned int"):
        chain(S, ("a", lambda s: 3)).invoke({})


def test_not_required_annotated_key_keeps_its_reducer() -> None:
    class Loose(TypedDict):
        log: NotRequired[Annotated[list[str], operator.add]]

    graph = parallel(Loose, ("b", logs("b")), ("c", logs("c")))
    assert graph.invoke({"log": ["in"]}) == {"log": ["in", "b", "c"]}


# --------------------------------------------------------------------------------------------------------
# G3: super-step (BSP) visibility, joins
# --------------------------------------------------------------------------------------------------------


def _bsp_graph() -> CompiledGraph:
    """a writes x; b and c run in parallel (b writes y, c reads y late); d is triggered by both."""

    def b(s: S) -> dict[str, Any]:
        return {"y": 2, "log": [f"b:x={s.get('x')},y={s.get('y')}"]}

    def c(s: S) -> dict[str, Any]:
        time.sleep(0.05)  # b has long finished; its write must still be invisible here
        return {"log": [f"c:x={s.get('x')},y={s.get('y')}"]}

    def d(s: S) -> dict[str, Any]:
        return {"log": [f"d:x={s.get('x')},y={s.get('y')}"]}

    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": 1})
    for name, fn in (("b", b), ("c", c), ("d", d)):
        g.add_node(name, fn)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("a", "c")
    g.add_edge("b", "d")
    g.add_edge("c", "d")
    return g.compile()


def test_bsp_next_step_sees_writes_parallel_nodes_do_not() -> None:
    out = _bsp_graph().invoke({})
    assert out == {"x": 1, "y": 2, "log": ["b:x=1,y=None", "c:x=1,y=None", "d:x=1,y=2"]}


def test_node_triggered_by_two_sources_in_one_step_runs_once() -> None:
    updates = [next(iter(u)) for u in _bsp_graph().stream({}, stream_mode="updates")]
    assert [updates[0], sorted(updates[1:3]), updates[3:]] == ["a", ["b", "c"], ["d"]]  # b, c as they finish


def test_mutating_the_input_does_not_leak_to_a_parallel_sibling() -> None:
    def mutator(s: dict[str, Any]) -> None:
        s["x"] = 99

    def reader(s: dict[str, Any]) -> dict[str, Any]:
        time.sleep(0.05)
        return {"log": [f"x={s['x']}"]}

    graph = parallel(S, ("mutator", mutator), ("reader", reader))
    assert graph.invoke({"x": 1}) == {"x": 1, "log": ["x=1"]}


def test_join_waits_for_branches_of_different_lengths() -> None:
    g = StateGraph(S)
    for name in ("a", "b", "b2", "c", "d"):
        g.add_node(name, logs(name))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("a", "c")
    g.add_edge("b", "b2")
    g.add_edge(["b2", "c"], "d")
    g.add_edge("d", END)
    graph = g.compile()
    assert graph.invoke({}) == {"log": ["a", "b", "c", "b2", "d"]}
    steps = [list(u) for u in graph.stream({}, stream_mode="updates")]  # b, c: in the order they finish
    assert [steps[0], sorted(steps[1:3]), *steps[3:]] == [["a"], [["b"], ["c"]], ["b2"], ["d"]]


# --------------------------------------------------------------------------------------------------------
# G4: Send fan-out
# --------------------------------------------------------------------------------------------------------


def _fan_out_graph(count: int) -> CompiledGraph:
    def square(arg: dict[str, int]) -> dict[str, Any]:
        time.sleep((count - arg["n"]) * 0.003)  # the first Send finishes last
        return {"results": [arg["n"] ** 2]}

    g = StateGraph(Mapped)
    g.add_node("square", square)
    g.add_node("collect", lambda s: {"total": sum(s["results"])})
    g.add_conditional_edges(START, lambda s: [Send("square", {"n": i}) for i in range(s["n"])])
    g.add_edge("square", "collect")
    g.add_edge("collect", END)
    return g.compile()


def test_send_fan_out_one_task_per_send_results_in_send_order() -> None:
    graph = _fan_out_graph(10)
    squares = [i * i for i in range(10)]
    assert graph.invoke({"n": 10}) == {"n": 10, "results": squares, "total": 285}
    updates = list(graph.stream({"n": 10}, stream_mode="updates"))  # as each task finishes (LangGraph's)
    assert sorted(u["square"]["results"][0] for u in updates[:-1]) == squares
    assert updates[-1] == {"collect": {"total": 285}}
    assert updates[0] != {"square": {"results": [0]}}  # the first Send finishes last


def test_send_fan_out_of_zero_ends_the_run() -> None:
    assert _fan_out_graph(0).invoke({"n": 0}) == {"n": 0, "results": []}


# --------------------------------------------------------------------------------------------------------
# G5: Command
# --------------------------------------------------------------------------------------------------------


def _command_graph(goto: Any, *, destinations: tuple[str, ...] = ("b",)) -> StateGraph:
    g = StateGraph(S)
    g.add_node("a", lambda s: Command(update={"x": 1, "log": ["a"]}, goto=goto), destinations=destinations)
    g.add_node("b", lambda s: {"log": [f"b:{s.get('x', s.get('n'))}"]})
    g.add_edge(START, "a")
    return g


def test_command_update_and_goto_node() -> None:
    assert _command_graph("b").compile().invoke({}) == {"x": 1, "log": ["a", "b:1"]}


def test_command_goto_send_passes_the_argument() -> None:
    graph = _command_graph([Send("b", {"n": 5}), Send("b", {"n": 6})]).compile()
    assert graph.invoke({}) == {"x": 1, "log": ["a", "b:5", "b:6"]}


def test_command_goto_end_stops() -> None:
    assert _command_graph(END).compile().invoke({}) == {"x": 1, "log": ["a"]}


def test_node_reachable_only_by_an_undeclared_command_runs_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="graphcore.engine.validate"):
        graph = _command_graph("b", destinations=()).compile()
    assert graph.invoke({}) == {"x": 1, "log": ["a", "b:1"]}
    assert [r.getMessage()[:54] for r in caplog.records] == [
        "node(s) ['b'] cannot be reached from START by an edge:"
    ]


def test_command_goto_unknown_node_is_rejected() -> None:
    graph = _command_graph("ghost").compile()
    with pytest.raises(InvalidUpdateError, match=r"node 'a' returned Command\(goto=...\) to unknown node"):
        graph.invoke({})


# --------------------------------------------------------------------------------------------------------
# Conditional edges
# --------------------------------------------------------------------------------------------------------


def _branching(path_map: Any) -> CompiledGraph:
    g = StateGraph(S)
    g.add_node("start", logs("start"))
    g.add_node("l", logs("l"))
    g.add_node("r", logs("r"))
    g.add_edge(START, "start")
    g.add_conditional_edges("start", lambda s: ["left", "right", "stop"][s["x"]], path_map)
    return g.compile()


@pytest.mark.parametrize(("x", "expected"), [(0, ["start", "l"]), (1, ["start", "r"]), (2, ["start"])])
def test_conditional_edge_with_path_map_dict(x: int, expected: list[str]) -> None:
    graph = _branching({"left": "l", "right": "r", "stop": END})
    assert graph.invoke({"x": x}) == {"x": x, "log": expected}


def test_conditional_edge_with_path_map_list() -> None:
    g = StateGraph(S)
    g.add_node("start", logs("start"))
    g.add_node("l", logs("l"))
    g.add_edge(START, "start")
    g.add_conditional_edges("start", lambda s: "l" if s["x"] else END, ["l", END])
    graph = g.compile()
    assert graph.invoke({"x": 1}) == {"x": 1, "log": ["start", "l"]}
    assert graph.invoke({"x": 0}) == {"x": 0, "log": ["start"]}


def test_router_value_outside_path_map_is_an_error() -> None:
    graph = _branching({"left": "l", "right": "r"})
    with pytest.raises(InvalidUpdateError) as info:
        graph.invoke({"x": 2})
    expected = "router '<lambda>' after node 'start' returned 'stop', not one of ['left', 'right']"
    assert str(info.value) == expected


def test_router_sees_its_own_nodes_writes() -> None:
    g = StateGraph(S)
    g.add_node("start", lambda s: {"x": 1})
    g.add_node("l", logs("l"))
    g.add_edge(START, "start")
    g.add_conditional_edges("start", lambda s: "l" if s["x"] == 1 else END)
    assert g.compile().invoke({"x": 0}) == {"x": 1, "log": ["l"]}


# --------------------------------------------------------------------------------------------------------
# C1: max_super_steps
# --------------------------------------------------------------------------------------------------------


def test_exactly_n_steps_pass_with_limit_n() -> None:
    out = log_chain(4).invoke({}, {"max_super_steps": 4})
    assert out == {"log": ["n0", "n1", "n2", "n3"]}


def test_n_plus_one_steps_fail_naming_the_setting() -> None:
    with pytest.raises(StepLimitError) as info:
        log_chain(4).invoke({}, {"max_super_steps": 3})
    assert "max_super_steps=3" in str(info.value)
    assert "['n3']" in str(info.value)


def test_limit_zero_runs_no_super_step() -> None:
    """0 is LangGraph's recursion_limit 1: the run fails before its first super-step."""
    with pytest.raises(StepLimitError) as info:
        log_chain(1).invoke({}, {"max_super_steps": 0})
    assert str(info.value).startswith(
        "run needs more than max_super_steps=0 super-steps (next tasks: ['n0'])"
    )


def test_limit_below_zero_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as err:
        log_chain(1).invoke({}, {"max_super_steps": -1})
    assert str(err.value) == "run option max_super_steps: must be 0 ≤ value (got -1)"


def test_default_limit_is_langgraphs(fresh_settings: pytest.MonkeyPatch) -> None:
    """LangGraph 1.x's default recursion_limit 10007 allows 10006 super-steps; so does graphq's default."""
    assert get_settings().max_super_steps == 10_006
    assert loop_to(10_006).invoke({}) == {"x": 10_006, "log": []}
    with pytest.raises(StepLimitError, match="max_super_steps=10006"):
        loop_to(10_007).invoke({})


def test_limit_from_environment(fresh_settings: pytest.MonkeyPatch) -> None:
    fresh_settings.setenv("GRAPHQ_MAX_SUPER_STEPS", "3")
    get_settings.cache_clear()
    assert loop_to(3).invoke({}) == {"x": 3, "log": []}
    with pytest.raises(StepLimitError, match="max_super_steps=3"):
        loop_to(4).invoke({})
    assert loop_to(5).invoke({}, {"max_super_steps": 5}) == {"x": 5, "log": []}  # run option wins


def test_environment_limit_zero_fails_at_run(fresh_settings: pytest.MonkeyPatch) -> None:
    fresh_settings.setenv("GRAPHQ_MAX_SUPER_STEPS", "0")
    get_settings.cache_clear()
    graph = log_chain(1)  # compiling does not read the setting
    with pytest.raises(ConfigError, match="GRAPHQ_MAX_SUPER_STEPS"):
        graph.invoke({})


# --------------------------------------------------------------------------------------------------------
# C4 / C5: config merge, get_config, stream writer
# --------------------------------------------------------------------------------------------------------


def _config_probe(seen: list[Any]) -> CompiledGraph:
    def probe(state: S) -> None:
        seen.append(get_config())

    def probe_arg(state: S, config: Any) -> None:
        seen.append(config)

    defaults = {
        "tags": ["a", "b"],
        "metadata": {"m": 1, "k": "default"},
        "configurable": {"model": "x", "t": 0},
    }
    return chain(S, ("first", probe), ("second", probe_arg), config=defaults)


def test_config_merges_with_compile_defaults() -> None:
    seen: list[Any] = []
    run = {"tags": ["b", "c", "c"], "metadata": {"k": "run"}, "configurable": {"t": 1}, "run_id": "run-1"}
    _config_probe(seen).invoke({}, run)
    first, second = seen
    assert first.tags == ["a", "b", "c"]
    assert first.metadata == {"m": 1, "k": "run"}
    user = {k: v for k, v in first.configurable.items() if not k.startswith("__graphq_")}
    assert user == {"model": "x", "t": 1}
    assert first.run_id == "run-1"
    assert second.configurable["__graphq_node"] == "second"


def test_reserved_keys_and_idempotency_key() -> None:
    seen: list[Any] = []
    _config_probe(seen).invoke({}, {"run_id": "run-1", "thread_id": "th-1"})
    for step, (node, cfg) in enumerate(zip(["first", "second"], seen, strict=True), 1):
        conf = cfg.configurable
        assert re.fullmatch(r"[0-9a-f]{16}", conf["__graphq_task_id"])
        assert conf["__graphq_run_id"] == "run-1"
        assert conf["__graphq_thread_id"] == "th-1"
        assert conf["__graphq_step"] == step
        assert conf["__graphq_node"] == node
        assert conf["__graphq_idempotency_key"] == f"run-1:{step}:{conf['__graphq_task_id']}"


def test_user_configurable_with_reserved_prefix_is_rejected() -> None:
    with pytest.raises(ConfigError, match="__graphq_step"):
        log_chain(1).invoke({}, {"configurable": {"__graphq_step": 3}})
    with pytest.raises(ConfigError, match="__graphq_x"):
        g = StateGraph(S).add_node("a", noop).add_edge(START, "a")
        g.compile(config={"configurable": {"__graphq_x": 1}})


def test_unknown_run_option_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"unknown run option\(s\) \['recursion_limt'\]"):
        log_chain(1).invoke({}, {"recursion_limt": 5})


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"max_concurrent_runs": 0}, "max_concurrent_runs: must be 1 ≤ value ≤ 1000000 (got 0)"),
        (
            {"max_concurrent_runs_per_tenant": 1_000_001},
            "max_concurrent_runs_per_tenant: must be 1 ≤ value ≤ 1000000 (got 1000001)",
        ),
        ({"run_timeout_s": 0}, "run_timeout_s: must be 0 < value (got 0)"),
        ({"run_timeout_s": -1.5}, "run_timeout_s: must be 0 < value (got -1.5)"),
        ({"max_super_steps": -1}, "max_super_steps: must be 0 ≤ value (got -1)"),
        (
            {"max_concurrent_runs": "two"},
            "max_concurrent_runs: Input should be a valid integer, unable to parse string as an integer "
            "(got 'two')",
        ),
        ({"tags": "nightly"}, "tags: must be a list of strings (got 'nightly')"),
        ({"metadata": [1]}, "metadata: must be a mapping (got [1])"),
        (
            {"max_concurrent_runs": 2, "max_concurrent_runs_per_tenant": 3},
            "max_concurrent_runs_per_tenant=3 must be in 1..max_concurrent_runs=2",
        ),
    ],
)
def test_compile_options_out_of_range_name_the_workflow_option_and_range(
    options: dict[str, Any], problem: str
) -> None:
    """compile(config=...) refuses a bad option with a ConfigError (not pydantic's ValidationError): the
    workflow, the option, its allowed range and the value given."""
    g = StateGraph(S).add_node("a", noop).add_edge(START, "a")
    with pytest.raises(ConfigError) as err:
        g.compile(name="limited", config=options)
    assert str(err.value) == f"workflow 'limited': run option {problem}"
    g.compile(name="fine", config={"max_concurrent_runs": 2, "max_concurrent_runs_per_tenant": 2})


@pytest.mark.parametrize("accessor", [get_config, get_stream_writer])
def test_context_accessors_outside_a_run_raise(accessor: Callable[[], Any]) -> None:
    with pytest.raises(OutsideRunError, match="inside a node"):
        accessor()
    with pytest.raises(RuntimeError):
        accessor()


def test_custom_stream_mode_yields_writer_chunks() -> None:
    def talker(state: S) -> None:
        write = get_stream_writer()
        write({"progress": 1})
        write("done")

    graph = chain(S, ("talker", talker), ("quiet", noop))
    assert list(graph.stream({}, stream_mode="custom")) == [{"progress": 1}, "done"]


def _pair_chain() -> CompiledGraph:
    return chain(Pair, ("a", lambda s: {"x": s["x"] + 1}), ("b", lambda s: {"y": s["x"] * 10}))


def test_stream_updates_exact() -> None:
    assert list(_pair_chain().stream({"x": 0}, stream_mode="updates")) == [{"a": {"x": 1}}, {"b": {"y": 10}}]


def test_stream_values_exact() -> None:
    assert list(_pair_chain().stream({"x": 0}, stream_mode="values")) == [
        {"x": 0},
        {"x": 1},
        {"x": 1, "y": 10},
    ]


def test_stream_several_modes_yields_tagged_pairs() -> None:
    assert list(_pair_chain().stream({"x": 0}, stream_mode=["updates", "values"])) == [
        ("values", {"x": 0}),
        ("updates", {"a": {"x": 1}}),
        ("values", {"x": 1}),
        ("updates", {"b": {"y": 10}}),
        ("values", {"x": 1, "y": 10}),
    ]


def test_an_unknown_stream_mode_yields_nothing_with_a_warning() -> None:
    """As LangGraph's: the unknown mode yields nothing, the known one its chunks
    (tests/compat/test_stream.py)."""
    with pytest.warns(UserWarning, match=r"^unknown stream mode\(s\) \['bogus'\] yield nothing; known: "):
        chunks = list(_pair_chain().stream({"x": 0}, stream_mode=["values", "bogus"]))
    assert chunks == [("values", {"x": 0}), ("values", {"x": 1}), ("values", {"x": 1, "y": 10})]


# --------------------------------------------------------------------------------------------------------
# pydantic state, node errors
# --------------------------------------------------------------------------------------------------------


class Doc(BaseModel):
    """A pydantic state: an append channel with a default and a LastValue field."""

    items: Annotated[list[str], operator.add] = []
    title: str = ""


def test_pydantic_state_nodes_receive_models_and_invoke_returns_dict() -> None:
    received: list[type[Any]] = []

    def shout(state: Doc) -> dict[str, Any]:
        received.append(type(state))
        return {"items": [f"a:{len(state.items)}"], "title": state.title.upper()}

    def add_model(state: Doc) -> Doc:
        received.append(type(state))
        return Doc(items=[f"b:{state.title}"])  # its default title '' is written too, as LangGraph's

    graph = chain(Doc, ("shout", shout), ("add_model", add_model))
    out = graph.invoke({"items": ["x"], "title": "hello"})
    assert out == {"items": ["x", "a:1", "b:HELLO"], "title": ""}
    assert received == [Doc, Doc]
    assert graph.invoke({}) == {"items": ["a:0", "b:"], "title": ""}


def test_node_exception_is_wrapped_with_node_name() -> None:
    boom = ValueError("bad input")

    def explode(state: S) -> None:
        raise boom

    with pytest.raises(NodeError) as info:
        chain(S, ("ok", noop), ("explode", explode)).invoke({})
    assert info.value.node == "explode"
    assert info.value.error is boom
    assert str(info.value) == "node 'explode' raised ValueError: bad input"


def test_first_failure_in_task_order_is_reported() -> None:
    def fail(message: str, delay: float) -> Callable[[Any], None]:
        def fn(state: Any) -> None:
            time.sleep(delay)
            raise KeyError(message)

        return fn

    graph = parallel(S, ("early", fail("e", 0.05)), ("late", fail("l", 0.0)))
    with pytest.raises(NodeError) as info:
        graph.invoke({})
    assert info.value.node == "early"


def test_reducer_error_names_the_channel_and_writers() -> None:
    class S(TypedDict, total=False):
        total: Annotated[int, operator.add]

    g = StateGraph(S)
    g.add_node("bad", lambda s: {"total": "x"})
    g.add_edge(START, "bad")
    with pytest.raises(InvalidUpdateError, match=r"reducer of channel 'total' raised TypeError.*from bad"):
        g.compile().invoke({"total": 1})


def test_default_second_parameter_is_not_the_config() -> None:
    class S(TypedDict, total=False):
        out: int

    g = StateGraph(S)
    g.add_node("n", lambda s, i=7: {"out": i})
    g.add_edge(START, "n")
    assert g.compile().invoke({}) == {"out": 7}


def test_stream_tasks_and_checkpoints_modes() -> None:
    class S2(TypedDict, total=False):
        x: int

    g = StateGraph(S2)
    g.add_node("a", lambda s: {"x": 1})
    g.add_edge(START, "a")
    store = InMemoryCheckpointStore()
    events = list(
        g.compile(checkpointer=store).stream({}, {"thread_id": "t"}, stream_mode=["tasks", "checkpoints"])
    )
    assert [mode for mode, _ in events] == ["checkpoints", "checkpoints", "tasks", "tasks", "checkpoints"]
    (_, empty), (_, first), (_, start), (_, done), (_, cp) = events
    assert (empty["metadata"], empty["next"], empty["values"], empty["parent_config"]) == (
        {"source": "input", "step": -1, "parents": {}},
        ["__start__"],
        {},
        None,
    )
    assert first["parent_config"] == empty["config"]
    assert start == {"id": done["id"], "name": "a", "input": {}, "triggers": ("branch:to:a",)}
    assert done == {"id": start["id"], "name": "a", "error": None, "result": {"x": 1}, "interrupts": []}
    assert len(done["id"]) == 16
    assert first["config"] == cp["parent_config"]  # the input applied, then the step's
    assert (first["metadata"], first["next"], first["values"]) == (
        {"source": "loop", "step": 0, "parents": {}},
        ["a"],
        {},
    )
    assert first["tasks"] == [{"id": start["id"], "name": "a", "interrupts": (), "state": None}]
    assert (cp["metadata"]["step"], cp["metadata"]["source"], cp["next"], cp["tasks"]) == (1, "loop", [], [])
    assert cp["config"] == {
        "configurable": {"checkpoint_ns": "", "thread_id": "t", "checkpoint_id": store.get("t").id}
    }
    assert [m for m, _ in g.compile().stream({}, stream_mode=["tasks", "checkpoints"])] == ["tasks", "tasks"]


def test_stream_debug_mode_tags_tasks_and_checkpoints() -> None:
    class S3(TypedDict, total=False):
        x: int

    g = StateGraph(S3)
    g.add_node("a", lambda s: {"x": 2})
    g.add_edge(START, "a")
    events = list(
        g.compile(checkpointer=InMemoryCheckpointStore()).stream({}, {"thread_id": "t"}, stream_mode="debug")
    )
    assert [(e["type"], e["step"]) for e in events] == [
        ("checkpoint", -1),
        ("checkpoint", 0),
        ("task", 1),
        ("task_result", 1),
        ("checkpoint", 1),
    ]
    assert events[3]["payload"]["result"] == {"x": 2}
    assert [e["payload"]["metadata"]["source"] for e in events if e["type"] == "checkpoint"] == [
        "input",
        "loop",
        "loop",
    ]
    assert all(e["timestamp"].endswith("+00:00") for e in events)
