"""Node result caching: ``add_node(..., cache_policy=CachePolicy(...))`` with
``compile(cache=InMemoryCache())``, as LangGraph 1.x's: a cached task's writes (its update and where it goes)
are reused without running the node, the ``updates`` stream marks them ``{"__metadata__": {"cached": True}}``;
``key_func`` and ``ttl``; ``clear_cache``; failures are not cached. Queued runs refuse a graph with a cache.
"""

from __future__ import annotations

import asyncio
import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest

from graphcore.backend.client import Client, RunRequest
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError
from tests.compat.conftest import Imports

REGISTRY = Registry.load(["tests.workflows.cached"])


class State(TypedDict, total=False):
    query: str
    answer: str


def _graph(lg: Imports, calls: Counter[str], *, cache: bool = True, **policy: Any) -> Any:
    """START → rewrite (cached, counts its calls) → answer (not cached, counts too)."""

    def rewrite(state: State) -> dict[str, Any]:
        calls["rewrite"] += 1
        if state["query"] == "boom":
            raise ValueError("boom")
        return {"query": f"q: {state['query']}"}

    def answer(state: State) -> dict[str, Any]:
        calls["answer"] += 1
        return {"answer": state["query"].upper()}

    builder = lg.StateGraph(State)
    builder.add_node("rewrite", rewrite, cache_policy=lg.CachePolicy(**policy))
    builder.add_node("answer", answer)
    builder.add_edge(lg.START, "rewrite")
    builder.add_edge("rewrite", "answer")
    return builder.compile(cache=lg.InMemoryCache() if cache else None)


def test_a_cached_nodes_result_is_reused_and_marked_in_the_updates_stream(lg: Imports) -> None:
    calls: Counter[str] = Counter()
    graph = _graph(lg, calls)
    assert graph.invoke({"query": "sf"}) == {"query": "q: sf", "answer": "Q: SF"}
    assert list(graph.stream({"query": "sf"})) == [
        {"rewrite": {"query": "q: sf"}, "__metadata__": {"cached": True}},
        {"answer": {"answer": "Q: SF"}},
    ]
    assert list(graph.stream({"query": "la"})) == [
        {"rewrite": {"query": "q: la"}},
        {"answer": {"answer": "Q: LA"}},
    ]
    assert calls == {"rewrite": 2, "answer": 3}


def test_clear_cache(lg: Imports) -> None:
    """LangGraph: clear_cache() drops every node's entries, clear_cache([node]) that node's."""
    calls: Counter[str] = Counter()
    graph = _graph(lg, calls)
    graph.invoke({"query": "sf"})
    graph.clear_cache(["answer"])
    graph.invoke({"query": "sf"})
    assert calls["rewrite"] == 1
    graph.clear_cache()
    graph.invoke({"query": "sf"})
    assert calls["rewrite"] == 2
    asyncio.run(graph.aclear_cache())
    graph.invoke({"query": "sf"})
    assert calls["rewrite"] == 3


def test_clear_cache_without_a_cache_is_a_value_error(lg: Imports) -> None:
    with pytest.raises(ValueError):
        _graph(lg, Counter(), cache=False).clear_cache()


def test_key_func_decides_which_inputs_share_a_result(lg: Imports) -> None:
    """LangGraph: equal keys share the first input's result."""
    calls: Counter[str] = Counter()
    graph = _graph(lg, calls, key_func=lambda state: state["query"].lower())
    assert graph.invoke({"query": "SF"})["query"] == "q: SF"
    assert graph.invoke({"query": "sf"}) == {"query": "q: SF", "answer": "Q: SF"}
    assert calls["rewrite"] == 1


@pytest.mark.parametrize(("ttl", "runs"), [(0, 3), (3600, 1), (None, 1)])
def test_ttl(lg: Imports, ttl: int | None, runs: int) -> None:
    """LangGraph: an entry lives ``ttl`` seconds (0: it has expired when next read; None: no expiry)."""
    calls: Counter[str] = Counter()
    graph = _graph(lg, calls, ttl=ttl)
    for _ in range(3):
        assert graph.invoke({"query": "sf"}) == {"query": "q: sf", "answer": "Q: SF"}
    assert calls["rewrite"] == runs


def test_without_a_cache_the_policy_is_unused(lg: Imports) -> None:
    calls: Counter[str] = Counter()
    graph = _graph(lg, calls, cache=False)
    graph.invoke({"query": "sf"})
    assert list(graph.stream({"query": "sf"})) == [
        {"rewrite": {"query": "q: sf"}},
        {"answer": {"answer": "Q: SF"}},
    ]
    assert calls["rewrite"] == 2


def test_a_failure_is_not_cached(lg: Imports) -> None:
    calls: Counter[str] = Counter()
    graph = _graph(lg, calls)
    for _ in range(2):
        with pytest.raises(ValueError):
            graph.invoke({"query": "boom"})
    assert calls["rewrite"] == 2


def test_cached_writes_keep_where_the_node_went(lg: Imports) -> None:
    """LangGraph: a cached task's writes include its Command's goto and its Sends: the same tasks follow."""
    calls: Counter[str] = Counter()

    class Fan(TypedDict, total=False):
        n: int
        seen: list[int]

    def split(state: Fan) -> Any:
        calls["split"] += 1
        return lg.Command(goto=[lg.Send("leaf", i) for i in range(state["n"])], update={"seen": []})

    def leaf(i: int) -> dict[str, Any]:
        calls[f"leaf{i}"] += 1
        return {}

    builder = lg.StateGraph(Fan)
    builder.add_node("split", split, cache_policy=lg.CachePolicy())
    builder.add_node("leaf", leaf, cache_policy=lg.CachePolicy())
    builder.add_edge(lg.START, "split")
    graph = builder.compile(cache=lg.InMemoryCache())
    graph.invoke({"n": 2})
    assert list(graph.stream({"n": 3})) == [
        {"split": {"seen": []}},
        {"leaf": None, "__metadata__": {"cached": True}},
        {"leaf": None, "__metadata__": {"cached": True}},
        {"leaf": None},
    ]
    cached = {"__metadata__": {"cached": True}}
    assert list(graph.stream({"n": 3}, stream_mode="updates")) == [
        {"split": {"seen": []}, **cached},
        {"leaf": None, **cached},
        {"leaf": None, **cached},
        {"leaf": None, **cached},
    ]
    assert calls == {"split": 2, "leaf0": 1, "leaf1": 1, "leaf2": 1}


def test_set_node_defaults_gives_nodes_a_cache_policy(lg: Imports) -> None:
    calls: Counter[str] = Counter()

    def once(state: State) -> dict[str, Any]:
        calls["once"] += 1
        return {"answer": state["query"]}

    builder = lg.StateGraph(State)
    builder.set_node_defaults(cache_policy=lg.CachePolicy())
    builder.add_node("once", once)
    builder.add_edge(lg.START, "once")
    graph = builder.compile(cache=lg.InMemoryCache())
    assert [graph.invoke({"query": "x"}) for _ in range(2)] == [{"query": "x", "answer": "x"}] * 2
    assert calls["once"] == 1


def test_ainvoke_and_async_nodes_use_the_cache(lg: Imports) -> None:
    calls: Counter[str] = Counter()

    async def slow(state: State) -> dict[str, Any]:
        calls["slow"] += 1
        return {"answer": state["query"] * 2}

    builder = lg.StateGraph(State)
    builder.add_node("slow", slow, cache_policy=lg.CachePolicy())
    builder.add_edge(lg.START, "slow")
    graph = builder.compile(cache=lg.InMemoryCache())

    async def twice() -> list[Any]:
        return [await graph.ainvoke({"query": "ab"}), [c async for c in graph.astream({"query": "ab"})]]

    assert asyncio.run(twice()) == [
        {"query": "ab", "answer": "abab"},
        [{"slow": {"answer": "abab"}, "__metadata__": {"cached": True}}],
    ]
    assert calls["slow"] == 1


def test_a_queued_run_of_a_graph_with_a_cache_is_refused(client: Client) -> None:
    """graphq only: the queue does not cache node results (each step may run on another worker)."""
    with pytest.raises(ConfigError) as refused:
        client.enqueue("cached", {"query": "sf"})
    assert str(refused.value) == (
        "workflow 'cached' was compiled with cache=...: queued runs do not cache node results (each step may "
        "run on another worker); compile the queue's graph without cache="
    )
    with pytest.raises(ConfigError):
        client.check(RunRequest("cached", {"query": "sf"}))
    with pytest.raises(ConfigError) as inside:
        client.enqueue("cached-inside", {"query": "sf"})
    assert str(inside.value).startswith(
        "subgraph 'inner' of workflow 'cached-inside' was compiled with cache=...: queued runs do not cache"
    )


def test_graphq_enqueue_of_a_graph_with_a_cache_is_a_one_line_error(redis_url: str) -> None:
    from tests.cli_helpers import error_line, invoke

    result = invoke("tests.workflows.cached", redis_url, "enqueue", "cached", "--input", '{"query": "sf"}')
    assert result.exit_code == 2
    assert error_line(result) == (
        "error: workflow 'cached' was compiled with cache=...: queued runs do not cache node results (each "
        "step may run on another worker); compile the queue's graph without cache="
    )


def test_a_cached_task_has_a_start_event_and_no_result_event(lg: Imports) -> None:
    """LangGraph: ``tasks`` and ``debug`` streams show a cached task's start, not its result."""
    graph = _graph(lg, Counter())
    graph.invoke({"query": "sf"})
    seen = []
    for mode, chunk in graph.stream({"query": "sf"}, stream_mode=["tasks", "updates", "debug"]):
        if mode == "tasks":
            seen.append((mode, chunk["name"], "result" in chunk))
        elif mode == "debug":
            seen.append((mode, chunk["payload"]["name"], chunk["type"]))
        else:
            seen.append((mode, sorted(chunk)))
    assert seen == [
        ("tasks", "rewrite", False),
        ("debug", "rewrite", "task"),
        ("updates", ["__metadata__", "rewrite"]),
        ("tasks", "answer", False),
        ("debug", "answer", "task"),
        ("updates", ["answer"]),
        ("tasks", "answer", True),
        ("debug", "answer", "task_result"),
    ]


class Opaque:
    """A class graphq's serde does not store (not named by the state schema)."""


def test_an_input_the_default_key_cannot_serialise_names_the_node() -> None:
    """graphq only (LangGraph pickles the input): a SerializationError naming the node and the way out."""
    from graphcore import START, CachePolicy, InMemoryCache, StateGraph
    from graphcore.errors import SerializationError

    class Loose(TypedDict):
        x: Any

    builder = StateGraph(Loose)
    builder.add_node("a", lambda s: {}, cache_policy=CachePolicy())
    builder.add_edge(START, "a")
    with pytest.raises(SerializationError) as refused:
        builder.compile(cache=InMemoryCache()).invoke({"x": Opaque()})
    assert str(refused.value) == (
        f"node 'a': cache key[0][0][0][1]: type '{Opaque.__module__}.Opaque' is not serializable; allowed "
        "types: None, bool, int, float, str, bytes, list, dict, tuple, set, frozenset, datetime, date, time, "
        "timedelta, Decimal, UUID, Enum members, pydantic BaseModel and dataclass instances of module-level "
        "classes; give its CachePolicy a key_func of your own"
    )
    keyed = StateGraph(Loose)
    keyed.add_node("a", lambda s: {}, cache_policy=CachePolicy(key_func=lambda s: "one key"))
    keyed.add_edge(START, "a")
    assert keyed.compile(cache=InMemoryCache()).invoke({"x": 1}) == {"x": 1}


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("x", "node 'a': cache_policy must be a CachePolicy (got 'x')"),
        ("ttl", "node 'a': CachePolicy.ttl must be None or seconds ≥ 0 (got -1)"),
    ],
)
def test_a_bad_cache_policy_or_cache_is_refused_naming_it(policy: str, message: str) -> None:
    """graphq only: ConfigError naming the node and the option; a cache without get/set/clear a TypeError."""
    from graphcore import START, CachePolicy, StateGraph

    builder = StateGraph(State)
    with pytest.raises(ConfigError) as refused:
        builder.add_node("a", lambda s: {}, cache_policy=CachePolicy(ttl=-1) if policy == "ttl" else policy)  # type: ignore[arg-type]
    assert str(refused.value) == message
    builder.add_node("b", lambda s: {})
    builder.add_edge(START, "b")
    with pytest.raises(TypeError) as bad_cache:
        builder.compile(cache=object())
    assert str(bad_cache.value) == (
        "compile(cache=...) takes a cache such as graphcore.InMemoryCache() (get, set, clear); got object"
    )


def test_a_failure_an_error_handler_took_is_not_cached(lg: Imports) -> None:
    """LangGraph: the node failed, its handler's writes are not the node's result: the next run with the
    same input runs the node again (which then succeeds and is cached)."""
    calls: Counter[str] = Counter()

    def flaky(state: State) -> dict[str, Any]:
        calls["flaky"] += 1
        if calls["flaky"] == 1:
            raise ValueError("first try")
        return {"answer": "ok"}

    def handler(state: State) -> dict[str, Any]:
        calls["handler"] += 1
        return {"answer": "handled"}

    builder = lg.StateGraph(State)
    builder.add_node("flaky", flaky, cache_policy=lg.CachePolicy(), error_handler=handler)
    builder.add_edge(lg.START, "flaky")
    graph = builder.compile(cache=lg.InMemoryCache())
    assert [graph.invoke({"query": "q"})["answer"] for _ in range(3)] == ["handled", "ok", "ok"]
    assert calls == {"flaky": 2, "handler": 1}
    assert list(graph.stream({"query": "q"})) == [
        {"flaky": {"answer": "ok"}, "__metadata__": {"cached": True}}
    ]


def test_a_subgraph_node_stopped_at_a_breakpoint_is_not_cached(lg: Imports) -> None:
    """LangGraph: a cached subgraph node that stopped at its graph's breakpoint has no result yet; resumed, it
    finishes, and that result is what a later run with the same input reuses."""

    class Log(TypedDict):
        log: Annotated[list[str], operator.add]

    inner = lg.StateGraph(Log)
    inner.add_node("a", lambda s: {"log": ["a"]})
    inner.add_node("b", lambda s: {"log": ["b"]})
    inner.add_edge(lg.START, "a")
    inner.add_edge("a", "b")
    outer = lg.StateGraph(Log)
    outer.add_node("sub", inner.compile(interrupt_before=["b"]), cache_policy=lg.CachePolicy())
    outer.add_edge(lg.START, "sub")
    graph = outer.compile(checkpointer=lg.InMemorySaver(), cache=lg.InMemoryCache())
    first = {"configurable": {"thread_id": "1"}}
    assert graph.invoke({"log": []}, first) == {"log": []}
    assert graph.invoke(None, first) == {"log": ["a", "b"]}
    assert list(graph.stream({"log": []}, {"configurable": {"thread_id": "2"}})) == [
        {"sub": {"log": ["a", "b"]}, "__metadata__": {"cached": True}}
    ]


def test_the_key_is_made_from_the_input_before_the_node_runs(lg: Imports) -> None:
    """A node that changes its input in place: the entry is stored under the key of the input it was given
    (graphq made the key again after the run, so the same input never hit)."""
    calls: Counter[str] = Counter()

    def rewrite(state: State) -> dict[str, Any]:
        calls["rewrite"] += 1
        state["query"] = "changed"  # the node's input is its own copy
        return {"answer": "done"}

    builder = lg.StateGraph(State)
    builder.add_node("rewrite", rewrite, cache_policy=lg.CachePolicy())
    builder.add_edge(lg.START, "rewrite")
    graph = builder.compile(cache=lg.InMemoryCache())
    assert [graph.invoke({"query": "sf"}) for _ in range(2)] == [{"query": "sf", "answer": "done"}] * 2
    assert calls == Counter({"rewrite": 1})
