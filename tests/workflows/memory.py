"""Workflows of the long-term store queue tests (tests/test_store_queue.py); module-level, so workers import
them.

``remember`` puts the input's ``text`` under ``("memories", user)`` through its ``store`` parameter;
``recall`` searches ``("memories",)`` with ``get_store()`` (by filter, and semantically with the fake
embedder of its compile-time store's ``index``) and returns what it found; ``lookup``, compiled without a
store, gets one item with ``get_store()``.
"""

from __future__ import annotations

from typing import Any, TypedDict

from graphcore import START, BaseStore, InMemoryStore, StateGraph, get_store

WORDS = ("cat", "dog", "fish")


def embed(texts: list[str]) -> list[list[float]]:
    """A fake embedder: how often each of WORDS occurs, and a constant 1 (4 dims)."""
    return [[float(text.count(w)) for w in WORDS] + [1.0] for text in texts]


class Memo(TypedDict, total=False):
    user: str
    text: str
    query: str
    found: list[str]
    scores: list[float | None]


def _remember(state: Memo, store: BaseStore) -> dict[str, Any]:
    store.put(("memories", state["user"]), "note", {"text": state["text"]})
    return {}


def _recall(state: Memo) -> dict[str, Any]:
    items = get_store().search(("memories",), query=state.get("query"), filter={"text": {"$ne": "skip"}})
    return {
        "found": [f"{'/'.join(i.namespace)}:{i.value['text']}" for i in items],
        "scores": [i.score for i in items],
    }


def _lookup(state: Memo) -> dict[str, Any]:
    item = get_store().get(("memories", state["user"]), "note")
    return {"found": [] if item is None else [item.value["text"]]}


_store = InMemoryStore(index={"embed": embed, "dims": 4, "fields": ["text"]})
"""In process, the graphs' store; on the queue the workers' Redis store replaces it, with its index."""

_r = StateGraph(Memo)
_r.add_node("remember", _remember)
_r.add_edge(START, "remember")
remember = _r.compile(name="remember", store=_store)

_s = StateGraph(Memo)
_s.add_node("recall", _recall)
_s.add_edge(START, "recall")
recall = _s.compile(name="recall", store=_store)

_l = StateGraph(Memo)
_l.add_node("lookup", _lookup)
_l.add_edge(START, "lookup")
lookup = _l.compile(name="lookup")  # no store in process: on the queue it gets the workers' one
