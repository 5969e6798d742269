"""One conformance suite for the long-term stores (LangGraph's ``BaseStore`` API): every test runs against
:class:`InMemoryStore` and :class:`RedisStore` (a real Redis), with a deterministic fake embedder."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

import pytest
import redis

from graphcore import keys
from graphcore.backend.redis_store import RedisStore
from graphcore.store import (
    BaseStore,
    GetOp,
    InMemoryStore,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from tests.workers import wait_for

WORDS = ("cat", "dog", "fish")


def embed(texts: list[str]) -> list[list[float]]:
    """A fake embedder: how often each of WORDS occurs, and a constant 1 (4 dims)."""
    return [[float(text.count(w)) for w in WORDS] + [1.0] for text in texts]


class FakeEmbeddings:
    """A LangChain-style ``Embeddings`` object (embed_documents / embed_query) over :func:`embed`."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return embed(texts)

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return embed([text])[0]


Make = Callable[..., BaseStore]


@pytest.fixture(params=["memory", "redis"])
def make(request: pytest.FixtureRequest) -> Make:
    """``make(**settings)``: a fresh store of the parametrized kind (the Redis one on the test database)."""
    if request.param == "memory":
        return lambda **settings: InMemoryStore(**settings)
    kv: redis.Redis = request.getfixturevalue("redis_client")
    return lambda **settings: RedisStore(kv, **settings)


@pytest.fixture
def store(make: Make) -> BaseStore:
    return make()


def test_put_get_delete(store: BaseStore) -> None:
    store.put(("users", "alice"), "prefs", {"food": "pizza", "n": 1})
    item = store.get(("users", "alice"), "prefs")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (("users", "alice"), "prefs", {"food": "pizza", "n": 1})
    assert item.created_at == item.updated_at
    store.put(("users", "alice"), "prefs", {"food": "sushi"})
    again = store.get(("users", "alice"), "prefs")
    assert again is not None and again.value == {"food": "sushi"}
    assert again.created_at == item.created_at and again.updated_at > item.updated_at
    store.delete(("users", "alice"), "prefs")
    assert store.get(("users", "alice"), "prefs") is None
    assert store.get(("users", "bob"), "prefs") is None
    store.delete(("users", "bob"), "nothing")  # deleting what is not there is no error


def test_item_dict(store: BaseStore) -> None:
    store.put(("a",), "k", {"x": [1, {"y": None}]})
    item = store.get(("a",), "k")
    assert item is not None
    shape = item.dict()
    assert shape["namespace"] == ["a"] and shape["key"] == "k" and shape["value"] == {"x": [1, {"y": None}]}
    assert shape["created_at"] == item.created_at.isoformat()


def test_search_by_prefix_filter_limit_offset(store: BaseStore) -> None:
    store.put(("docs", "a"), "1", {"kind": "note", "score": 3, "tags": ["x"], "meta": {"lang": "en"}})
    store.put(("docs", "a"), "2", {"kind": "todo", "score": 5, "tags": ["x", "y"], "meta": {"lang": "fr"}})
    store.put(("docs", "b"), "3", {"kind": "note", "score": 7, "meta": {"lang": "en", "v": 2}})
    store.put(("docsx",), "4", {"kind": "note", "score": 9})  # not under ("docs",): labels, not text
    store.put(("other",), "5", {"kind": "note", "score": 1})

    def keys_of(*args: Any, **kwargs: Any) -> list[str]:
        return [item.key for item in store.search(*args, **kwargs)]

    assert keys_of(("docs",)) == ["3", "2", "1"]  # newest first
    assert keys_of(()) == ["5", "4", "3", "2", "1"]
    assert keys_of(("docs", "a")) == ["2", "1"]
    assert keys_of(("docs",), filter={"kind": "note"}) == ["3", "1"]
    assert keys_of(("docs",), filter={"meta": {"lang": "en"}}) == ["3", "1"]  # nested: a subset match
    assert keys_of(("docs",), filter={"tags": ["x"]}) == ["1"]  # lists: equal as a whole
    assert keys_of(("docs",), filter={"score": {"$gt": 3}}) == ["3", "2"]
    assert keys_of(("docs",), filter={"score": {"$gte": 3, "$lt": 7}}) == ["2", "1"]
    assert keys_of(("docs",), filter={"score": {"$lte": 5}, "kind": {"$ne": "todo"}}) == ["1"]
    assert keys_of(("docs",), filter={"kind": {"$eq": "todo"}}) == ["2"]
    assert keys_of(("docs",), filter={"missing": {"$gt": 1}}) == []
    assert keys_of((), limit=2) == ["5", "4"]
    assert keys_of((), limit=2, offset=3) == ["2", "1"]
    assert keys_of((), limit=0) == []
    assert [item.score for item in store.search(("docs",))] == [None, None, None]


def test_list_namespaces(store: BaseStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("x", "b", "c"), ("ab",)]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("ab",), ("x", "b", "c")]
    assert store.list_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "b", "d"), ("a", "e")]
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("x", "b", "c")]
    assert store.list_namespaces(prefix=("*", "b")) == [("a", "b", "c"), ("a", "b", "d"), ("x", "b", "c")]
    assert store.list_namespaces(prefix=("a",), max_depth=2) == [("a", "b"), ("a", "e")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("ab",), ("x",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "e")]
    store.delete(("a", "e"), "k")
    assert store.list_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "b", "d")]


def test_batch_reads_see_the_store_before_its_puts(store: BaseStore) -> None:
    store.put(("n",), "old", {"v": 0})
    results = store.batch(
        [
            PutOp(("n",), "k", {"v": 1}),
            GetOp(("n",), "k"),
            PutOp(("n",), "k", {"v": 2}),
            SearchOp(("n",)),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("n",)),)),
            PutOp(("n",), "old", None),
        ]
    )
    assert results[0] is None and results[1] is None and results[2] is None and results[5] is None
    assert [item.key for item in results[3]] == ["old"]  # type: ignore[union-attr]
    assert results[4] == [("n",)]
    item = store.get(("n",), "k")
    assert item is not None and item.value == {"v": 2}  # the last put wins
    assert store.get(("n",), "old") is None


def test_async_methods(store: BaseStore) -> None:
    async def scenario() -> list[Any]:
        await store.aput(("u",), "k", {"v": 1})
        got = await store.aget(("u",), "k")
        found = await store.asearch(("u",), filter={"v": 1})
        spaces = await store.alist_namespaces(prefix=("u",))
        await store.adelete(("u",), "k")
        return [got.value if got else None, [i.key for i in found], spaces, await store.aget(("u",), "k")]

    assert asyncio.run(scenario()) == [{"v": 1}, ["k"], [("u",)], None]


def test_semantic_search_with_a_callable(make: Make) -> None:
    store = make(index={"embed": embed, "dims": 4, "fields": ["text"]})
    store.put(("m",), "c", {"text": "a cat"})
    store.put(("m",), "d", {"text": "a dog"})
    store.put(("m",), "cd", {"text": "cat and dog"})
    store.put(("m",), "plain", {"other": "no text field"})  # nothing to embed: unscored
    store.put(("m",), "skip", {"text": "cat"}, index=False)  # not embedded either
    found = store.search(("m",), query="cat")
    # query [1,0,0,1]: "a cat" [1,0,0,1] → 1; "cat and dog" [1,1,0,1] → 2/(√2·√3); "a dog" [0,1,0,1] → 1/2
    assert [(i.key, i.score) for i in found[:3]] == [
        ("c", 1.0),
        ("cd", pytest.approx(2 / math.sqrt(6))),
        ("d", 0.5),
    ]
    assert [(i.key, i.score) for i in found[3:]] == [
        ("skip", None),
        ("plain", None),
    ]  # unscored, newest first
    assert [i.key for i in store.search(("m",), query="cat", limit=2, offset=1)] == ["cd", "d"]
    assert [i.key for i in store.search(("m",), query="cat", filter={"text": "a dog"})] == ["d"]


def test_semantic_search_with_an_embeddings_object_and_paths(make: Make) -> None:
    embeddings = FakeEmbeddings()
    store = make(index={"embed": embeddings, "dims": 4, "fields": ["notes[*].body"]})
    store.put(("p",), "k1", {"notes": [{"body": "fish"}, {"body": "cat"}]})
    store.put(("p",), "k2", {"notes": [{"body": "dog dog"}]})
    store.put(("p",), "k3", {"title": "fish"}, index=["title"])  # index= overrides the fields
    found = store.search(("p",), query="fish")
    # query [0,0,1,1]: k1's best field "fish" → 1; k3's title "fish" → 1; k2 "dog dog" [0,2,0,1] → 1/(√2·√5)
    assert sorted((i.key, i.score) for i in found) == [
        ("k1", 1.0),
        ("k2", pytest.approx(1 / math.sqrt(10))),
        ("k3", 1.0),
    ]
    assert embeddings.queries == ["fish"]


def test_async_embedder(make: Make) -> None:
    async def aembed(texts: list[str]) -> list[list[float]]:
        return embed(texts)

    store = make(index={"embed": aembed, "dims": 4})

    async def scenario() -> list[tuple[str, float | None]]:
        await store.aput(("q",), "k", {"a": "cat"})  # "$": the whole value as JSON
        return [(i.key, i.score) for i in await store.asearch(("q",), query="cat")]

    assert asyncio.run(scenario()) == [("k", 1.0)]
    with pytest.raises(TypeError, match=r"index\['embed'\] is an async function"):
        store.put(("q",), "k2", {"a": "dog"})


def test_embedder_of_the_wrong_size_is_refused(make: Make) -> None:
    store = make(index={"embed": embed, "dims": 3})
    with pytest.raises(ValueError, match=r"lengths \[4\] for 1 texts; dims is 3"):
        store.put(("q",), "k", {"a": "cat"})
    assert store.get(("q",), "k") is None


def test_query_without_an_index_is_a_plain_search(store: BaseStore) -> None:
    store.put(("q",), "k", {"a": "cat"})
    assert [(i.key, i.score) for i in store.search(("q",), query="cat")] == [("k", None)]


def test_ttl_expires_items_and_their_namespaces(make: Make) -> None:
    store = make()
    store.put(("t", "short"), "k", {"v": 1}, ttl=0.002)  # 0.12 s
    store.put(("t", "long"), "k", {"v": 2}, ttl=60)
    store.put(("t", "long"), "forever", {"v": 3})
    # refresh_ttl=False: a read would start the TTL again (kept alive by the polling itself)
    wait_for(lambda: store.get(("t", "short"), "k", refresh_ttl=False) is None, what="the item to expire")
    assert [i.key for i in store.search(("t",))] == ["forever", "k"]
    assert store.list_namespaces(prefix=("t",)) == [("t", "long")]


def test_default_ttl_and_refresh(make: Make) -> None:
    store = make(ttl={"default_ttl": 0.002, "refresh_on_read": False})
    store.put(("t",), "default", {"v": 1})
    store.put(("t",), "kept", {"v": 2}, ttl=None)  # None: never expires, whatever the default
    wait_for(lambda: store.get(("t",), "default") is None, what="the item to expire")  # reads do not refresh
    assert [i.key for i in store.search(("t",))] == ["kept"]


def test_redis_index_cleanup(redis_client: redis.Redis) -> None:
    store = RedisStore(redis_client)
    store.put(("gone",), "k", {"v": 1}, ttl=0.002)
    store.put(("kept",), "k", {"v": 1})
    assert redis_client.zrange(keys.store_namespaces(), 0, -1) == [b"gone", b"kept"]
    wait_for(
        lambda: not redis_client.exists(keys.store_item(("gone",), "k")), what="Redis to expire the item"
    )
    assert store.list_namespaces() == [("kept",)]
    assert redis_client.zrange(keys.store_namespaces(), 0, -1) == [b"kept"]
    assert not redis_client.exists(keys.store_keys("gone"))
    pttl = redis_client.pttl(keys.store_item(("kept",), "k"))
    assert pttl == -1  # no TTL: no expiry


def test_redis_ttl_is_redis_expiry_and_reads_refresh_it(redis_client: redis.Redis) -> None:
    store = RedisStore(redis_client)
    store.put(("t",), "k", {"v": 1}, ttl=10)
    item_key = keys.store_item(("t",), "k")
    redis_client.pexpire(item_key, 1000)  # as if most of the 10 minutes had passed
    store.get(("t",), "k", refresh_ttl=False)
    assert 0 < redis_client.pttl(item_key) <= 1000
    store.get(("t",), "k")
    assert redis_client.pttl(item_key) > 9 * 60 * 1000


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda s: s.put((), "k", {}), InvalidNamespaceError, "namespace: cannot be empty"),
        (lambda s: s.put(("a.b",), "k", {}), InvalidNamespaceError, "label 'a.b'"),
        (lambda s: s.put(("a", ""), "k", {}), InvalidNamespaceError, "label ''"),
        (lambda s: s.put(("langgraph",), "k", {}), InvalidNamespaceError, "root label"),
        (lambda s: s.put("users", "k", {}), InvalidNamespaceError, "namespace: a tuple of strings"),
        (lambda s: s.put(("a",), 1, {}), TypeError, "key: a string"),
        (lambda s: s.put(("a",), "k", ["x"]), TypeError, "value: a dict"),
        (lambda s: s.put(("a",), "k", {"x": object()}), TypeError, "value: must be JSON"),
        (lambda s: s.put(("a",), "k", {}, ttl=0), ValueError, "ttl: minutes"),
        (lambda s: s.put(("a",), "k", {}, ttl=1e12), ValueError, "ttl: minutes, a number > 0 and <= 5256000"),
        (lambda s: s.search(("a",), limit=-1), ValueError, "limit: an integer >= 0"),
        (lambda s: s.search(("a",), filter={"x": {"$in": [1]}}), ValueError, "unknown operator '\\$in'"),
        (lambda s: s.list_namespaces(max_depth=0), ValueError, "max_depth: an integer >= 1"),
        (lambda s: s.batch(["get"]), TypeError, "ops: GetOp"),
    ],
)
def test_bad_arguments(store: BaseStore, call: Callable[[BaseStore], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call(store)
    assert store.list_namespaces() == []


def test_bad_settings() -> None:
    with pytest.raises(ValueError, match="index: a dict with 'embed' and 'dims'"):
        InMemoryStore(index={"dims": 3})  # type: ignore[typeddict-item]
    with pytest.raises(
        ValueError, match="index\\['embed'\\]: 'openai:text-embedding-3-small' names a provider"
    ):
        InMemoryStore(index={"embed": "openai:text-embedding-3-small", "dims": 3})
    with pytest.raises(ValueError, match="ttl: unknown settings \\['default'\\]"):
        InMemoryStore(ttl={"default": 1})  # type: ignore[typeddict-unknown-key]
