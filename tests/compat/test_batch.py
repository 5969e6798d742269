"""A compiled graph's Runnable batch API: ``batch``, ``abatch``, ``batch_as_completed`` and
``abatch_as_completed`` run one ``invoke`` per input, as LangGraph's (LangChain's ``Runnable``): one config
for all inputs or one per input, ``return_exceptions``, ``invoke``'s keyword arguments, ``max_concurrency``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig

from tests.compat.conftest import Imports


class State(TypedDict):
    n: int
    who: str


def _double(lg: Imports, checkpointer: Any = None) -> Any:
    """START → double (n * 2, who = the config's ``configurable.who``); n == 13 raises ValueError."""

    def double(state: State, config: RunnableConfig) -> dict[str, Any]:
        if state["n"] == 13:
            raise ValueError("unlucky", 13)
        return {"n": state["n"] * 2, "who": config["configurable"].get("who", "-")}

    builder = lg.StateGraph(State)
    builder.add_node("double", double)
    builder.add_edge(lg.START, "double")
    return builder.compile(checkpointer=checkpointer)


def test_batch_runs_each_input_with_one_config(lg: Imports) -> None:
    graph = _double(lg)
    assert graph.batch([{"n": 1}, {"n": 2}, {"n": 3}], {"configurable": {"who": "all"}}) == [
        {"n": 2, "who": "all"},
        {"n": 4, "who": "all"},
        {"n": 6, "who": "all"},
    ]
    assert graph.batch([]) == []
    assert graph.batch([{"n": 5}]) == [{"n": 10, "who": "-"}]


def test_batch_with_a_config_per_input_and_a_checkpointer(lg: Imports) -> None:
    """LangGraph: input i runs with config i: here each on its own thread."""
    graph = _double(lg, lg.InMemorySaver())
    configs = [{"configurable": {"thread_id": f"t{i}", "who": f"w{i}"}} for i in range(3)]
    assert graph.batch([{"n": 10}, {"n": 20}, {"n": 30}], configs) == [
        {"n": 20, "who": "w0"},
        {"n": 40, "who": "w1"},
        {"n": 60, "who": "w2"},
    ]
    assert [graph.get_state(c).values["n"] for c in configs] == [20, 40, 60]


def test_a_config_list_of_another_length_is_refused(lg: Imports) -> None:
    graph = _double(lg)
    with pytest.raises(ValueError) as refused:
        graph.batch([{"n": 1}, {"n": 2}], [{}])
    assert (
        str(refused.value)
        == "config must be a list of the same length as inputs, but got 1 configs for 2 inputs"
    )
    with pytest.raises(ValueError) as arefused:
        asyncio.run(graph.abatch([{"n": 1}], [{}, {}]))
    assert str(arefused.value) == (
        "config must be a list of the same length as inputs, but got 2 configs for 1 inputs"
    )


def test_return_exceptions_gives_the_error_as_that_inputs_result(lg: Imports) -> None:
    """LangGraph: the node's exception in the failed input's place (graphq's NodeError is also a ValueError
    with the original's args: docs, LangGraph differences); without it, batch raises it."""
    graph = _double(lg)
    for results in (
        graph.batch([{"n": 1}, {"n": 13}, {"n": 3}], return_exceptions=True),
        asyncio.run(graph.abatch([{"n": 1}, {"n": 13}, {"n": 3}], return_exceptions=True)),
    ):
        first, failed, last = results
        assert (first, last) == ({"n": 2, "who": "-"}, {"n": 6, "who": "-"})
        assert isinstance(failed, ValueError) and failed.args == ("unlucky", 13)
    with pytest.raises(ValueError) as raised:
        graph.batch([{"n": 1}, {"n": 13}])
    assert raised.value.args == ("unlucky", 13)
    with pytest.raises(ValueError) as araised:
        asyncio.run(graph.abatch([{"n": 13}, {"n": 1}]))
    assert araised.value.args == ("unlucky", 13)


def test_invoke_keywords_apply_to_every_input(lg: Imports) -> None:
    graph = _double(lg)
    assert graph.batch([{"n": 1}, {"n": 2}], stream_mode="updates") == [
        [{"double": {"n": 2, "who": "-"}}],
        [{"double": {"n": 4, "who": "-"}}],
    ]
    assert asyncio.run(graph.abatch([{"n": 3}], stream_mode="updates")) == [
        [{"double": {"n": 6, "who": "-"}}]
    ]


def test_abatch(lg: Imports) -> None:
    graph = _double(lg)
    configs = [{"configurable": {"who": "a"}}, {"configurable": {"who": "b"}}]
    assert asyncio.run(graph.abatch([{"n": 1}, {"n": 2}], configs)) == [
        {"n": 2, "who": "a"},
        {"n": 4, "who": "b"},
    ]
    assert asyncio.run(graph.abatch([])) == []


def test_batch_as_completed_yields_each_index_with_its_result(lg: Imports) -> None:
    graph = _double(lg)
    inputs = [{"n": 1}, {"n": 13}, {"n": 3}]
    done = sorted(graph.batch_as_completed(inputs, return_exceptions=True), key=lambda pair: pair[0])
    assert [(i, out) for i, out in done if i != 1] == [(0, {"n": 2, "who": "-"}), (2, {"n": 6, "who": "-"})]
    assert done[1][0] == 1 and isinstance(done[1][1], ValueError)

    async def collect() -> list[tuple[int, Any]]:
        return [pair async for pair in graph.abatch_as_completed([{"n": 4}, {"n": 5}])]

    assert sorted(asyncio.run(collect()), key=lambda pair: pair[0]) == [
        (0, {"n": 8, "who": "-"}),
        (1, {"n": 10, "who": "-"}),
    ]
    assert list(graph.batch_as_completed([])) == []


def test_the_inputs_run_at_once_up_to_max_concurrency(lg: Imports) -> None:
    """LangGraph: without a limit the runs overlap (a barrier all three reach); with ``max_concurrency=1``
    in the first config they run one at a time (never two inside the node)."""
    barrier = threading.Barrier(3, timeout=60)
    inside, most = [0], [0]
    lock = threading.Lock()

    def meet(state: State) -> dict[str, Any]:
        barrier.wait()
        return {"n": state["n"]}

    def alone(state: State) -> dict[str, Any]:
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        with lock:
            inside[0] -= 1
        return {"n": state["n"]}

    graphs = []
    for node in (meet, alone):
        builder = lg.StateGraph(State)
        builder.add_node("node", node)
        builder.add_edge(lg.START, "node")
        graphs.append(builder.compile())
    assert graphs[0].batch([{"n": 1}, {"n": 2}, {"n": 3}]) == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert graphs[1].batch([{"n": i} for i in range(6)], {"max_concurrency": 1}) == [
        {"n": i} for i in range(6)
    ]
    assert most == [1]


def test_one_config_with_a_run_id_gives_it_to_the_first_input_only(lg: Imports) -> None:
    """LangGraph (LangChain's get_config_list): a RuntimeWarning; the other inputs run without it."""
    graph = _double(lg)
    with pytest.warns(
        RuntimeWarning, match="^Provided run_id be used only for the first element of the batch.$"
    ):
        out = graph.batch([{"n": 1}, {"n": 2}], {"run_id": "2f1f6d1c-1111-4c1c-9c1c-1c1c1c1c1c1c"})
    assert out == [{"n": 2, "who": "-"}, {"n": 4, "who": "-"}]
