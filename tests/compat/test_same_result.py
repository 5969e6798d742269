"""Issue 23 section 4, "same code, another result": programs whose result on graphq was not LangGraph's.
Each case runs with LangGraph's imports and graphq's (LangGraph's result is the expected value) and, where
it applies to queued runs, on the queue too (a burst worker in this process on the test Redis)."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Iterable, Mapping, MutableMapping, MutableSequence, MutableSet, Sequence, Set
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.compat.conftest import Imports
from tests.workers import work


def _merge(a: Any, b: Any) -> Any:
    return {**a, **b}


def _union(a: Any, b: Any) -> Any:
    return a | b


def _chain(a: Any, b: Any) -> Any:
    return [*a, *b]


class Abstract(TypedDict):
    seq: Annotated[Sequence[int], operator.add]
    mseq: Annotated[MutableSequence[int], operator.add]
    map: Annotated[Mapping[str, int], _merge]
    mmap: Annotated[MutableMapping[str, int], _merge]
    set: Annotated[Set[int], _union]
    mset: Annotated[MutableSet[int], _union]
    it: Annotated[Iterable[int], _chain]
    n: int


def _abstract(lg: Imports) -> Any:
    """Two nodes of one step write ``seq`` and ``it`` (a last-value channel would refuse two writes)."""
    builder = lg.StateGraph(Abstract)
    builder.add_node("a", lambda s: {"seq": [1], "it": [1], "n": 1})
    builder.add_node("b", lambda s: {"seq": [2], "it": [2], "map": {"k": 2}, "set": {2}})
    builder.add_edge(lg.START, "a")
    builder.add_edge(lg.START, "b")
    return builder.compile(name="abstract")


ABSTRACT_RESULT = {
    "seq": [1, 2],
    "mseq": [],
    "map": {"k": 2},
    "mmap": {},
    "set": {2},
    "mset": set(),
    "it": [1, 2],
    "n": 1,
}
"""A reducer channel of an abstract collection type starts from its concrete type's empty value
(``Sequence`` → ``[]``, ``Mapping`` → ``{}``, ``Set`` → ``set()``); ``Iterable`` has none."""


def test_a_reducer_on_an_abstract_collection_type_is_a_reducer_channel(lg: Imports) -> None:
    """LangGraph: ``Annotated[Sequence[int], operator.add]`` (Mapping, MutableSequence, Set, Iterable...)
    folds every write with its reducer, starting from ``list()`` / ``dict()`` / ``set()``."""
    assert _abstract(lg).invoke({}) == ABSTRACT_RESULT


class Overall(TypedDict):
    question: str
    answer: str


class RouterIn(TypedDict):
    answer: str
    secret: str


class RouterModel(BaseModel):
    answer: str
    secret: str = "unset"


def _routed(lg: Imports, seen: list[Any]) -> Any:
    """Node ``w`` writes ``secret``, a private channel only the routers' own schemas declare; the routers
    after ``n`` record what they are passed."""

    def by_dict(state: RouterIn) -> str:
        seen.append(state)
        return lg.END

    def by_model(state: RouterModel) -> str:
        seen.append(state)
        return lg.END

    builder = lg.StateGraph(Overall)
    builder.add_node("w", lambda s: {"secret": "s", "answer": "a"})
    builder.add_node("n", lambda s: {"answer": s["answer"] + "b"})
    builder.add_edge(lg.START, "w")
    builder.add_edge("w", "n")
    builder.add_conditional_edges("n", by_dict)
    builder.add_conditional_edges("n", by_model)
    return builder.compile(name="routed")


ROUTED_SEEN = [{"answer": "ab", "secret": "s"}, RouterModel(answer="ab", secret="s")]


@pytest.mark.parametrize("call", ["invoke", "ainvoke"])
def test_a_router_is_passed_its_own_input_schema(lg: Imports, call: str) -> None:
    """LangGraph: a router annotated with a schema gets that schema's keys (private channels included)
    as a dict or a model instance, not the state schema's."""
    seen: list[Any] = []
    graph = _routed(lg, seen)
    run = graph.invoke if call == "invoke" else lambda x: asyncio.run(graph.ainvoke(x))
    assert run({"question": "q"}) == {"question": "q", "answer": "ab"}
    assert seen == ROUTED_SEEN


ROUTED_ON_THE_QUEUE: list[Any] = []

REGISTRY = Registry(
    {g.name: g for g in (_abstract(Imports("graphq")), _routed(Imports("graphq"), ROUTED_ON_THE_QUEUE))}
)


def _queued(client: Client, workflow: str, input: Any, **options: Any) -> Any:
    run_id = client.enqueue(workflow, input, **options)
    work(client)
    run = client.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    return run.result


def test_a_reducer_on_an_abstract_collection_type_on_the_queue(client: Client) -> None:
    assert _queued(client, "abstract", {}) == ABSTRACT_RESULT


def test_a_router_is_passed_its_own_input_schema_on_the_queue(client: Client) -> None:
    ROUTED_ON_THE_QUEUE.clear()
    assert _queued(client, "routed", {"question": "q"}) == {"question": "q", "answer": "ab"}
    assert ROUTED_ON_THE_QUEUE == ROUTED_SEEN
