"""``add_node(..., retry_policy=[p1, p2])``: LangGraph's list of retry policies, where an error is retried
under the first policy whose ``retry_on`` accepts it and the tries are counted across the policies."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

from tests.compat.conftest import Imports


class Log(TypedDict):
    log: Annotated[list[Any], operator.add]


def _graph(lg: Imports, errors: list[type[Exception]]) -> tuple[Any, list[str]]:
    """A node raising ``errors`` in turn, then writing how many tries it took; ValueError is retried up to
    2 tries in all, ConnectionError up to 4."""
    tries: list[str] = []

    def flaky(state: Log) -> dict[str, list[Any]]:
        if len(tries) < len(errors):
            error = errors[len(tries)]
            tries.append(error.__name__)
            raise error("down")
        tries.append("ok")
        return {"log": [len(tries)]}

    policies = [
        lg.RetryPolicy(initial_interval=0.001, max_attempts=2, jitter=False, retry_on=ValueError),
        lg.RetryPolicy(initial_interval=0.001, max_attempts=4, jitter=False, retry_on=ConnectionError),
    ]
    builder = lg.StateGraph(Log)
    builder.add_node("flaky", flaky, retry_policy=policies)
    builder.add_edge(lg.START, "flaky")
    return builder.compile(), tries


def test_each_error_is_retried_under_the_first_policy_accepting_it(lg: Imports) -> None:
    """LangGraph: a ValueError, then ConnectionErrors: each retried under its own policy (4 tries in all,
    within the ConnectionError policy's 4)."""
    graph, tries = _graph(lg, [ValueError, ConnectionError, ConnectionError])
    assert graph.invoke({"log": []}) == {"log": [4]}
    assert tries == ["ValueError", "ConnectionError", "ConnectionError", "ok"]


def test_the_tries_are_counted_across_the_policies(lg: Imports) -> None:
    """LangGraph: two ConnectionErrors, then a ValueError on the third try: the ValueError policy's 2 tries
    are used up already, so the run fails with the ValueError."""
    graph, tries = _graph(lg, [ConnectionError, ConnectionError, ValueError])
    with pytest.raises(ValueError, match="down"):
        graph.invoke({"log": []})
    assert tries == ["ConnectionError", "ConnectionError", "ValueError"]


def test_an_error_no_policy_accepts_is_not_retried(lg: Imports) -> None:
    """LangGraph: a KeyError matches neither policy: one try."""
    graph, tries = _graph(lg, [KeyError])
    with pytest.raises(KeyError):
        graph.invoke({"log": []})
    assert tries == ["KeyError"]


def test_the_policy_runs_out(lg: Imports) -> None:
    """LangGraph: ConnectionErrors past the policy's 4 tries fail the run."""
    graph, tries = _graph(lg, [ConnectionError] * 5)
    with pytest.raises(ConnectionError):
        graph.invoke({"log": []})
    assert tries == ["ConnectionError"] * 4


def test_an_async_node_under_a_list_of_policies(lg: Imports) -> None:
    """LangGraph: the same rules for an async node under ainvoke."""
    tries: list[str] = []

    async def flaky(state: Log) -> dict[str, list[Any]]:
        if len(tries) < 2:
            tries.append("ConnectionError")
            raise ConnectionError("down")
        tries.append("ok")
        return {"log": [len(tries)]}

    policies = [
        lg.RetryPolicy(initial_interval=0.001, max_attempts=1, jitter=False, retry_on=ValueError),
        lg.RetryPolicy(initial_interval=0.001, max_attempts=3, jitter=False, retry_on=ConnectionError),
    ]
    builder = lg.StateGraph(Log)
    builder.add_node("flaky", flaky, retry_policy=policies)
    builder.add_edge(lg.START, "flaky")
    assert asyncio.run(builder.compile().ainvoke({"log": []})) == {"log": [3]}
    assert tries == ["ConnectionError", "ConnectionError", "ok"]
