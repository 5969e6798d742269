"""The run config: LangGraph's ``RunnableConfig`` dict (``configurable.thread_id``, ``recursion_limit``,
``tags``, ``metadata``, ``max_concurrency``, ...) and ``durability``, as LangGraph 1.x takes them."""

from __future__ import annotations

import asyncio
import operator
import threading
import time
import uuid
import warnings
from typing import Annotated, Any, TypedDict

import pytest

from graphcore.errors import ConfigError
from tests.compat.conftest import Imports


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def chain(lg: Imports, n: int, checkpointer: Any = None) -> Any:
    """START → n0 → n1 → ... → END, each node appending its name."""
    builder = lg.StateGraph(State)
    previous = lg.START
    for i in range(n):
        builder.add_node(f"n{i}", lambda s, i=i: {"items": [f"n{i}"]})
        builder.add_edge(previous, f"n{i}")
        previous = f"n{i}"
    return builder.compile(checkpointer=checkpointer)


def reading(lg: Imports, read: Any) -> tuple[Any, dict[str, Any]]:
    """A one-node graph whose node takes ``config`` and keeps ``read(config)``."""
    seen: dict[str, Any] = {}

    def node(state: State, config) -> dict[str, Any]:  # type: ignore[no-untyped-def]  # LangGraph reads the name
        seen["value"] = read(config)
        return {"items": ["n"]}

    builder = lg.StateGraph(State)
    builder.add_node("n", node)
    builder.add_edge(lg.START, "n")
    return builder.compile(checkpointer=lg.InMemorySaver()), seen


def test_configurable_thread_id_picks_the_thread(lg: Imports) -> None:
    """LangGraph: {"configurable": {"thread_id": ...}} names the thread: a second invoke on it starts from
    its state (the reducer appends), another thread starts empty."""
    app = chain(lg, 1, lg.InMemorySaver())
    one = {"configurable": {"thread_id": "1"}}
    assert app.invoke({"items": ["x"]}, one) == {"items": ["x", "n0"]}
    assert app.invoke({"items": ["y"]}, one) == {"items": ["x", "n0", "y", "n0"]}
    assert app.invoke({"items": ["z"]}, {"configurable": {"thread_id": "2"}}) == {"items": ["z", "n0"]}


def test_an_integer_thread_id_is_a_thread(lg: Imports) -> None:
    """LangGraph: a thread id given as an int names a thread as well."""
    app = chain(lg, 1, lg.InMemorySaver())
    app.invoke({"items": ["x"]}, {"configurable": {"thread_id": 7}})
    assert app.invoke({"items": ["y"]}, {"configurable": {"thread_id": 7}}) == {
        "items": ["x", "n0", "y", "n0"]
    }


def test_a_node_reads_configurable_like_a_dict(lg: Imports) -> None:
    """LangGraph: a node's config is read as a dict: configurable holds the thread id and the caller's
    own keys."""
    app, seen = reading(lg, lambda c: (c["configurable"]["thread_id"], c["configurable"]["user"]))
    app.invoke({"items": []}, {"configurable": {"thread_id": "t-1", "user": "ada"}})
    assert seen["value"] == ("t-1", "ada")


def test_a_node_reads_tags_and_metadata(lg: Imports) -> None:
    """LangGraph: config["tags"] holds the run's tags; config.get("metadata", {}) the run's metadata, plus
    langgraph_node and langgraph_step (1 for the first node)."""

    def read(c: Any) -> Any:
        meta = c.get("metadata", {})
        return c["tags"], meta["team"], meta["langgraph_node"], meta["langgraph_step"]

    app, seen = reading(lg, read)
    app.invoke(
        {"items": []}, {"configurable": {"thread_id": "1"}, "tags": ["nightly"], "metadata": {"team": "x"}}
    )
    assert seen["value"] == (["nightly"], "x", "n", 1)


def test_get_config_reads_like_a_dict(lg: Imports) -> None:
    """LangGraph: get_config() inside a node returns the running config, read as a dict."""
    seen: dict[str, Any] = {}

    def node(state: State) -> dict[str, Any]:
        config = lg.get_config()
        seen["value"] = (config["configurable"]["thread_id"], config.get("nope", "default"))
        return {"items": ["n"]}

    builder = lg.StateGraph(State)
    builder.add_node("n", node)
    builder.add_edge(lg.START, "n")
    builder.compile(checkpointer=lg.InMemorySaver()).invoke(
        {"items": []}, {"configurable": {"thread_id": "9"}}
    )
    assert seen["value"] == ("9", "default")


@pytest.mark.parametrize(
    ("steps", "limit", "fits"),
    [(1, 2, True), (1, 1, False), (3, 3, False), (3, 4, True), (5, 6, True), (5, 5, False)],
)
def test_recursion_limit_bounds_the_super_steps(lg: Imports, steps: int, limit: int, fits: bool) -> None:
    """LangGraph: recursion_limit R lets a run take R - 1 super-steps; one more is a GraphRecursionError
    (also a RecursionError)."""
    app = chain(lg, steps)
    if fits:
        assert app.invoke({"items": []}, {"recursion_limit": limit}) == {
            "items": [f"n{i}" for i in range(steps)]
        }
        return
    with pytest.raises(lg.GraphRecursionError) as caught:
        app.invoke({"items": []}, {"recursion_limit": limit})
    assert isinstance(caught.value, RecursionError)
    if lg.is_langgraph:
        assert str(caught.value).startswith(
            f"Recursion limit of {limit} reached without hitting a stop condition"
        )
    else:
        assert str(caught.value).startswith(f"run needs more than max_super_steps={limit - 1} super-steps")


@pytest.mark.parametrize("limit", [1, 3])
def test_a_run_reaching_its_recursion_limit(lg: Imports, limit: int) -> None:
    """LangGraph: recursion_limit R (1 too: it is accepted, not refused up front) fails a run of R super-steps
    with GraphRecursionError, raised by the run after its input is applied. LangGraph runs the R-th
    super-step before raising (the Deliberate differences row "a run reaching its recursion_limit R");
    graphq raises before it: its budget, max_super_steps R - 1, lets no further super-step start."""
    ran: list[str] = []
    builder = lg.StateGraph(State)
    previous = lg.START
    for name in [f"n{i}" for i in range(limit)]:
        builder.add_node(name, lambda s, name=name: ran.append(name) or {"items": [name]})
        builder.add_edge(previous, name)
        previous = name
    app = builder.compile(checkpointer=lg.InMemorySaver())
    config = {"configurable": {"thread_id": "1"}, "recursion_limit": limit}
    chunks: list[Any] = []
    with pytest.raises(lg.GraphRecursionError) as caught:
        chunks.extend(app.stream({"items": ["x"]}, config, stream_mode="values"))
    assert isinstance(caught.value, RecursionError)
    steps = limit if lg.is_langgraph else limit - 1
    names = [f"n{i}" for i in range(steps)]
    assert ran == names
    assert chunks == [{"items": ["x", *names[:i]]} for i in range(steps + 1)]
    state = app.get_state(config)
    assert (state.values, state.next) == ({"items": ["x", *names]}, () if lg.is_langgraph else (f"n{steps}",))
    if not lg.is_langgraph:
        assert str(caught.value) == (
            f"run needs more than max_super_steps={limit - 1} super-steps (next tasks: ['n{steps}']); raise "
            f"it with the run option max_super_steps (or LangGraph's recursion_limit, {limit} now) or "
            "GRAPHQ_MAX_SUPER_STEPS"
        )


def test_a_node_reads_the_recursion_limit(lg: Imports) -> None:
    """LangGraph: config["recursion_limit"] in a node is the run's limit."""
    app, seen = reading(lg, lambda c: c["recursion_limit"])
    app.invoke({"items": []}, {"configurable": {"thread_id": "1"}, "recursion_limit": 12})
    assert seen["value"] == 12


def test_without_a_recursion_limit_a_node_reads_none(lg: Imports) -> None:
    """LangGraph: a run that sets no recursion_limit has none in its nodes' config (the default applies:
    LangGraph's 10007, graphq's GRAPHQ_MAX_SUPER_STEPS 10006, the same bound)."""
    app, seen = reading(lg, lambda c: c.get("recursion_limit"))
    app.invoke({"items": []}, {"configurable": {"thread_id": "1"}})
    assert seen["value"] is None


def test_a_nodes_config_unpacks_like_a_dict(lg: Imports) -> None:
    """LangGraph: a node's config is a dict: ``{**config}`` and ``dict(config)`` copy it (as code deriving a
    config for a call does), and ``"recursion_limit" in config`` agrees with ``config.get`` (absent when the
    run sets none, present when it does)."""

    def read(config: Any) -> Any:
        copied = {**config, "run_name": "copy"}
        whole = dict(config)
        limit = whole.get("recursion_limit")
        return ("recursion_limit" in config, copied["configurable"]["thread_id"], whole["tags"], limit)

    app, seen = reading(lg, read)
    app.invoke({"items": []}, {"configurable": {"thread_id": "1"}, "tags": ["t"]})
    assert seen["value"] == (False, "1", ["t"], None)
    app.invoke({"items": []}, {"configurable": {"thread_id": "2"}, "tags": ["u"], "recursion_limit": 7})
    assert seen["value"] == (True, "2", ["u"], 7)


def test_a_recursion_limit_below_one_is_refused(lg: Imports) -> None:
    """LangGraph: recursion_limit 0 is a ValueError before anything runs; graphq's is a ValueError too (a
    ConfigValueError naming the option)."""
    app = chain(lg, 1)
    with pytest.raises(ValueError) as caught:
        app.invoke({"items": []}, {"recursion_limit": 0})
    if lg.is_langgraph:
        assert str(caught.value) == "recursion_limit must be at least 1"
    else:
        assert str(caught.value).startswith("run option recursion_limit: must be an integer ≥ 1")


def fan_out(lg: Imports, peak: list[int]) -> Any:
    """Three parallel nodes that record how many of them run at once."""
    lock, running = threading.Lock(), [0]

    def node(name: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1
            return {"items": [name]}

        return run

    builder = lg.StateGraph(State)
    for name in ("p", "q", "r"):
        builder.add_node(name, node(name))
        builder.add_edge(lg.START, name)
    return builder.compile()


@pytest.mark.parametrize(("limit", "expected"), [(1, 1), (2, 2), (None, 3)])
def test_max_concurrency_bounds_a_steps_parallel_tasks(lg: Imports, limit: int | None, expected: int) -> None:
    """LangGraph: max_concurrency caps how many tasks of a super-step run at once; the result is the same."""
    peak = [0]
    config = {} if limit is None else {"max_concurrency": limit}
    assert fan_out(lg, peak).invoke({"items": []}, config) == {"items": ["p", "q", "r"]}
    assert peak[0] == expected


def test_run_name_run_id_and_empty_callbacks_are_accepted(lg: Imports) -> None:
    """LangGraph: run_name, a UUID run_id and an empty callbacks list are accepted and change nothing."""
    config = {"run_name": "nightly", "run_id": uuid.uuid4(), "callbacks": [], "tags": ["a"]}
    assert chain(lg, 2).invoke({"items": []}, config) == {"items": ["n0", "n1"]}


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_durability_keeps_the_result(lg: Imports, durability: str) -> None:
    """LangGraph: durability="sync"|"async"|"exit" changes when checkpoints are written, not the result;
    the thread goes on from the run's end with each."""
    app = chain(lg, 2, lg.InMemorySaver())
    config = {"configurable": {"thread_id": durability}}
    assert app.invoke({"items": ["x"]}, config, durability=durability) == {"items": ["x", "n0", "n1"]}
    assert app.invoke({"items": ["y"]}, config, durability=durability)["items"][-3:] == ["y", "n0", "n1"]


def test_durability_exit_writes_only_the_last_checkpoint(lg: Imports) -> None:
    """LangGraph: with durability="exit" a new thread holds one checkpoint after the run (its last, with
    no parent); with "sync" one per super-step and the input."""
    counts = {}
    for mode in ("exit", "sync"):
        saver = lg.InMemorySaver()
        config = {"configurable": {"thread_id": "t"}}
        chain(lg, 2, saver).invoke({"items": []}, config, durability=mode)
        if lg.is_langgraph:
            tuples = list(saver.list(config))
            counts[mode] = (len(tuples), tuples[-1].parent_config is None)
        else:
            cps = saver.list("t")
            counts[mode] = (len(cps), cps[-1].parent_id is None)
    assert counts["exit"] == (1, True)
    assert counts["sync"] == (4, True)  # the input checkpoint, the input applied, one per super-step


def test_an_unknown_durability_acts_as_async(lg: Imports) -> None:
    """LangGraph: an unknown durability is not checked: it acts as "async" (a checkpoint per super-step);
    graphq does the same and warns, naming the value."""
    app = chain(lg, 2, lg.InMemorySaver())
    config = {"configurable": {"thread_id": "1"}}
    warned = (
        r"^durability='bogus' is not one of \['sync', 'async', 'exit'\]; the run writes its checkpoints as"
    )
    with lg.graphq_warns(warned):
        assert app.invoke({"items": []}, config, durability="bogus") == {"items": ["n0", "n1"]}
    assert len(list(app.get_state_history(config))) == 4  # the input, the input applied, one per super-step


def test_an_unknown_keyword_argument_is_ignored(lg: Imports) -> None:
    """LangGraph: invoke, stream, ainvoke and astream take other keyword arguments into **kwargs and ignore
    them (``interupt_before=`` misspelt: no breakpoint); graphq does the same and warns, naming them."""
    app = chain(lg, 2, lg.InMemorySaver())

    def warned(call: str) -> str:
        return rf"^{call}\(\) ignores unknown keyword argument\(s\) \['bogus', 'interupt_before'\]$"

    extra = {"interupt_before": ["n1"], "bogus": 1}
    with lg.graphq_warns(warned("invoke")):
        assert app.invoke({"items": []}, {"configurable": {"thread_id": "1"}}, **extra) == {
            "items": ["n0", "n1"]
        }
    with lg.graphq_warns(warned("stream")):
        assert list(app.stream({"items": []}, {"configurable": {"thread_id": "2"}}, **extra)) == [
            {"n0": {"items": ["n0"]}},
            {"n1": {"items": ["n1"]}},
        ]
    with lg.graphq_warns(warned("invoke")):
        assert asyncio.run(app.ainvoke({"items": []}, {"configurable": {"thread_id": "3"}}, **extra)) == {
            "items": ["n0", "n1"]
        }

    async def streamed() -> list[Any]:
        return [
            chunk
            async for chunk in app.astream(
                {"items": []}, {"configurable": {"thread_id": "4"}}, stream_mode="values", **extra
            )
        ]

    with lg.graphq_warns(warned("stream")):
        assert asyncio.run(streamed()) == [{"items": []}, {"items": ["n0"]}, {"items": ["n0", "n1"]}]


def test_invoke_with_another_stream_mode_keeps_the_context_and_warns_once(lg: Imports) -> None:
    """LangGraph: invoke(..., stream_mode="updates") returns the chunks, its nodes reading the call's
    context; an unknown keyword is ignored (graphq warns once, naming invoke)."""
    builder = lg.StateGraph(State)
    builder.add_node("n", lambda s: {"items": [lg.get_runtime().context["user"]]})
    builder.add_edge(lg.START, "n")
    app = builder.compile()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = app.invoke({"items": []}, context={"user": "ann"}, stream_mode="updates", bogus=1)
    assert out == [{"n": {"items": ["ann"]}}]
    expected = [] if lg.is_langgraph else ["invoke() ignores unknown keyword argument(s) ['bogus']"]
    assert [str(w.message) for w in caught] == expected


def test_configurable_checkpoint_id_replays_from_that_checkpoint(lg: Imports) -> None:
    """LangGraph: {"configurable": {"thread_id", "checkpoint_id"}} with input None goes on from that
    checkpoint of the thread (time travel): the nodes after it run again on its state."""
    app = chain(lg, 3, lg.InMemorySaver())
    config = {"configurable": {"thread_id": "1"}}
    app.invoke({"items": ["x"]}, config)
    [before_n1] = [s for s in app.get_state_history(config) if s.next == ("n1",)]
    checkpoint_id = before_n1.config["configurable"]["checkpoint_id"]
    replay = {"configurable": {"thread_id": "1", "checkpoint_id": checkpoint_id}}
    assert app.invoke(None, replay) == {"items": ["x", "n0", "n1", "n2"]}
    assert app.get_state(config).values == {"items": ["x", "n0", "n1", "n2"]}


# --------------------------------------------------------------------------------------------------------
# with_config / copy on the compiled graph


def test_with_config_binds_defaults_to_a_copy(lg: Imports) -> None:
    """LangGraph: with_config(config, **options) returns a copy whose runs get that config merged under
    their own (configurable key by key, tags as a union); the original graph is unchanged."""
    app, seen = reading(
        lg, lambda c: (c["configurable"].get("user"), c["configurable"].get("team"), c.get("tags", []))
    )
    bound = app.with_config({"configurable": {"user": "ann"}}, tags=["bound"])
    assert bound is not app
    assert bound.invoke({"items": []}, {"configurable": {"thread_id": "1", "team": "t"}}) == {"items": ["n"]}
    assert seen["value"] == ("ann", "t", ["bound"])
    bound.invoke({"items": []}, {"configurable": {"thread_id": "2", "user": "bob"}, "tags": ["own"]})
    assert seen["value"] == ("bob", None, ["bound", "own"])
    app.invoke({"items": []}, {"configurable": {"thread_id": "3"}})
    assert seen["value"] == (None, None, [])


def test_with_config_recursion_limit_bounds_the_copys_runs(lg: Imports) -> None:
    """LangGraph: with_config(recursion_limit=3) limits the copy's runs to 2 super-steps; a run's own
    recursion_limit wins over it."""
    app = chain(lg, 3)
    bound = app.with_config(recursion_limit=3)
    with pytest.raises(lg.GraphRecursionError):
        bound.invoke({"items": []})
    assert bound.invoke({"items": []}, {"recursion_limit": 10}) == {"items": ["n0", "n1", "n2"]}
    assert app.invoke({"items": []}) == {"items": ["n0", "n1", "n2"]}


def test_copy_with_an_update_renames_a_copy(lg: Imports) -> None:
    """LangGraph: copy() is a new graph that runs as the original; copy({"name": ...}) renames only it."""
    builder = lg.StateGraph(State)
    builder.add_node("n", lambda s: {"items": ["n"]})
    builder.add_edge(lg.START, "n")
    app = builder.compile(name="first")
    other = app.copy({"name": "second"})
    assert (app.name, other.name, app.copy().name) == ("first", "second", "first")
    assert other.invoke({"items": ["x"]}) == {"items": ["x", "n"]}
    if not lg.is_langgraph:  # LangGraph passes the key to its constructor (a TypeError); graphq names it
        with pytest.raises(ConfigError, match=r"copy\(update\): unknown key 'nodez'; graphq takes 'name'"):
            app.copy({"nodez": {}})
