"""One conformance class for every checkpoint store: the in-memory store and the Redis store (I4, I5)."""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
import redis

from graphcore import keys
from graphcore.channels import add_messages
from graphcore.checkpoint import Checkpoint, new_checkpoint_id
from graphcore.errors import SerializationError
from graphcore.schema import StateSchema
from graphcore.store.kv import KVCheckpointStore
from graphcore.store.memory import MemoryKV
from graphcore.types import PendingTask, TaskWrites


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    messages: Annotated[list[dict[str, Any]], add_messages]
    title: str


SCHEMA = StateSchema.of(State)


@pytest.fixture(params=["memory", "redis"])
def kv(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "memory":
        yield MemoryKV()
    else:
        yield request.getfixturevalue("redis_client")


def make_store(kv: Any) -> KVCheckpointStore:
    return KVCheckpointStore(kv, SCHEMA)


def child(parent: Checkpoint | None, values: dict[str, Any], changed: list[str]) -> Checkpoint:
    versions = dict(parent.channel_versions) if parent else {}
    for key in changed:
        versions[key] = versions.get(key, 0) + 1
    step = parent.step + 1 if parent else -1
    return Checkpoint(
        new_checkpoint_id(),
        parent.id if parent else None,
        step,
        values,
        versions,
        metadata={"source": "loop" if parent else "input", "step": step},
    )


def grow(store: KVCheckpointStore, n: int, thread: str = "t") -> list[Checkpoint]:
    cps = [child(None, {"log": [], "title": "hello"}, ["log", "title"])]
    store.put(thread, cps[0])
    for i in range(n):
        cp = child(
            cps[-1], {**cps[-1].channel_values, "log": [*cps[-1].channel_values["log"], f"item{i}"]}, ["log"]
        )
        store.put(thread, cp)
        cps.append(cp)
    return cps


class TestConformance:
    def test_empty_thread(self, kv: Any) -> None:
        store = make_store(kv)
        assert store.get("nobody") is None
        assert store.list("nobody") == []
        assert store.get_writes("nobody", "cp") == {}

    def test_latest_by_id_and_history_newest_first(self, kv: Any) -> None:
        store = make_store(kv)
        cps = grow(store, 4)
        latest = store.get("t")
        assert latest is not None
        assert latest.id == cps[-1].id
        assert latest.channel_values == {"log": ["item0", "item1", "item2", "item3"], "title": "hello"}
        middle = store.get("t", cps[2].id)
        assert middle is not None
        assert middle.channel_values["log"] == ["item0", "item1"]
        assert [c.step for c in store.list("t")] == [3, 2, 1, 0, -1]
        assert [c.id for c in store.list("t", limit=2)] == [cps[-1].id, cps[-2].id]
        assert store.get("t", "no-such-id") is None

    def test_history_reads_back_whole_from_a_fresh_store(self, kv: Any) -> None:
        cps = grow(make_store(kv), 6)
        fresh = make_store(kv)
        for cp in reversed(cps):
            got = fresh.get("t", cp.id)
            assert got is not None
            assert got.channel_values == cp.channel_values
            assert got.channel_versions == cp.channel_versions
            assert got.parent_id == cp.parent_id
            assert got.metadata == cp.metadata

    def test_appends_write_only_new_items(self, kv: Any) -> None:
        grow(make_store(kv), 10)
        logs = [k for k in _keys(kv) if ":log::log:" in k]
        assert len(logs) == 1, logs
        assert kv.lrange(logs[0], 0, -1) and len(kv.lrange(logs[0], 0, -1)) == 10

    def test_unchanged_last_value_is_written_once(self, kv: Any) -> None:
        grow(make_store(kv), 5)
        assert list(kv.hgetall(keys.channel_values("t", "", "title"))) == [b"1"]

    def test_replace_by_id_starts_new_generation_and_history_survives(self, kv: Any) -> None:
        store = make_store(kv)
        m1, m2 = {"id": "1", "text": "a"}, {"id": "2", "text": "b"}
        c0 = child(None, {"messages": [m1, m2]}, ["messages"])
        store.put("t", c0)
        c1 = child(c0, {"messages": add_messages([m1, m2], {"id": "1", "text": "A"})}, ["messages"])
        store.put("t", c1)
        assert make_store(kv).get("t", c0.id).channel_values["messages"] == [m1, m2]  # type: ignore[union-attr]
        assert make_store(kv).get("t").channel_values["messages"] == [  # type: ignore[union-attr]
            {"id": "1", "text": "A"},
            m2,
        ]

    def test_pending_writes_round_trip(self, kv: Any) -> None:
        store = make_store(kv)
        tw = TaskWrites("task1", "node", [("log", ["x"]), ("title", "t")], [PendingTask("n", True, {"a": 1})])
        store.put_writes("t", "cp1", tw)
        store.put_writes("t", "cp1", TaskWrites("task2", "other", [], []))
        got = store.get_writes("t", "cp1")
        assert set(got) == {"task1", "task2"}
        assert got["task1"] == tw
        assert store.get_writes("t", "cp2") == {}

    def test_unsupported_value_fails_naming_path_and_writes_nothing(self, kv: Any) -> None:
        store = make_store(kv)
        cps = grow(store, 1)
        bad = child(cps[-1], {**cps[-1].channel_values, "title": {"nested": [object()]}}, ["title"])
        with pytest.raises(SerializationError) as info:
            store.put("t", bad)
        assert info.value.path == "state.title.nested[0]"
        assert [c.id for c in store.list("t")] == [cps[1].id, cps[0].id]

    def test_unsupported_pending_write_names_path(self, kv: Any) -> None:
        with pytest.raises(SerializationError) as info:
            make_store(kv).put_writes("t", "cp", TaskWrites("x", "n", [("log", [1, {2}, object()])], []))
        assert info.value.path == "state.log[2]"


def _keys(kv: Any) -> list[str]:
    if isinstance(kv, redis.Redis):
        return [k.decode() for k in kv.scan_iter(match="*")]
    return [k.decode() for k in [*kv._hashes, *kv._lists]]
