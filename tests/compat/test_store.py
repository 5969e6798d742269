"""Long-term memory (LangGraph's store): ``compile(store=InMemoryStore())``, a node parameter named
``store``, ``get_store()`` and ``runtime.store`` in a node; what one thread's run puts, another thread's run
finds (by filter, and by semantic search over a given embedder)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypedDict

import pytest

from tests.compat.conftest import Imports

if TYPE_CHECKING:
    from graphcore import BaseStore, Runtime


class State(TypedDict, total=False):
    user: str
    text: str
    found: list[str]
    scores: list[float]


WORDS = ("cat", "dog", "fish")


def embed(texts: list[str]) -> list[list[float]]:
    """A fake embedder: how often each of WORDS occurs, and a constant 1 (4 dims)."""
    return [[float(text.count(w)) for w in WORDS] + [1.0] for text in texts]


def memory_graph(lg: Imports, store: Any) -> Any:
    """remember (``store`` parameter) → recall (``get_store()``) → rank (``runtime.store``)."""

    def remember(state: State, store: BaseStore) -> dict[str, Any]:
        if state.get("text"):
            store.put(("memories", state["user"]), f"m{len(state['text'])}", {"text": state["text"]})
        return {}

    def recall(state: State) -> dict[str, Any]:
        items = lg.get_store().search(("memories",), filter={"text": {"$ne": "dog food"}})
        return {"found": sorted(f"{'/'.join(i.namespace)}:{i.key}:{i.value['text']}" for i in items)}

    def rank(state: State, runtime: Runtime[Any]) -> dict[str, Any]:
        items = runtime.store.search(("memories",), query="cat", limit=2)
        return {"scores": [i.score for i in items], "found": [*state["found"], *(i.key for i in items)]}

    builder = lg.StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_node("rank", rank)
    builder.add_edge(lg.START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", "rank")
    return builder.compile(checkpointer=lg.InMemorySaver(), store=store)


def test_what_one_thread_puts_another_finds(lg: Imports) -> None:
    store = lg.InMemoryStore(index={"embed": embed, "dims": 4, "fields": ["text"]})
    graph = memory_graph(lg, store)
    graph.invoke({"user": "ann", "text": "my cat"}, {"configurable": {"thread_id": "t1"}})
    graph.invoke({"user": "bob", "text": "dog food"}, {"configurable": {"thread_id": "t2"}})
    out = graph.invoke({"user": "cy"}, {"configurable": {"thread_id": "t3"}})
    assert out["found"] == ["memories/ann:m6:my cat", "m6", "m8"]
    # query "cat" [1,0,0,1]: "my cat" [1,0,0,1] → 1.0; "dog food" [0,1,0,1] → 0.5
    assert out["scores"] == [pytest.approx(1.0), pytest.approx(0.5)]
    item = store.get(("memories", "bob"), "m8")
    assert (item.namespace, item.key, item.value) == (("memories", "bob"), "m8", {"text": "dog food"})
    assert store.list_namespaces(prefix=("memories",)) == [("memories", "ann"), ("memories", "bob")]


def test_a_graph_without_a_store(lg: Imports) -> None:
    seen: dict[str, Any] = {}

    def node(state: State, store: BaseStore, runtime: Runtime[Any]) -> dict[str, Any]:
        seen.update(param=store, runtime=runtime.store, get=lg.get_store())
        return {}

    builder = lg.StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(lg.START, "node")
    builder.compile().invoke({"user": "ann"})
    assert seen == {"param": None, "runtime": None, "get": None}


def test_a_graph_invoked_in_a_node_uses_its_parents_store(lg: Imports) -> None:
    def inner_node(state: State) -> dict[str, Any]:
        lg.get_store().put(("inner",), "k", {"from": "inner"})
        return {}

    inner = lg.StateGraph(State)
    inner.add_node("inner_node", inner_node)
    inner.add_edge(lg.START, "inner_node")
    child = inner.compile()

    def outer_node(state: State) -> dict[str, Any]:
        child.invoke({"user": "ann"})
        return {}

    outer = lg.StateGraph(State)
    outer.add_node("outer_node", outer_node)
    outer.add_edge(lg.START, "outer_node")
    store = lg.InMemoryStore()
    outer.compile(store=store).invoke({"user": "ann"})
    item = store.get(("inner",), "k")
    assert item is not None and item.value == {"from": "inner"}


def test_an_async_node_uses_the_async_methods(lg: Imports) -> None:
    async def node(state: State, store: BaseStore) -> dict[str, Any]:
        await store.aput(("notes",), "k", {"text": "hi"})
        found = await lg.get_store().asearch(("notes",))
        return {"found": [f"{i.key}:{i.value['text']}:{get_same(store)}" for i in found]}

    def get_same(store: Any) -> bool:
        return lg.get_store() is store

    builder = lg.StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(lg.START, "node")
    assert asyncio.run(builder.compile(store=lg.InMemoryStore()).ainvoke({"user": "ann"})) == {
        "user": "ann",
        "found": ["k:hi:True"],
    }
