"""One conformance class for every checkpoint store: the in-memory store and the Redis store (I4, I5)."""

from __future__ import annotations

import copy
import operator
import random
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any, TypedDict
from zoneinfo import ZoneInfo

import pytest
import redis

from graphcore import keys
from graphcore.backend.store import RedisCheckpointStore
from graphcore.checkpoints.kv import KVCheckpointStore
from graphcore.checkpoints.memory import InMemoryCheckpointStore, MemoryKV
from graphcore.checkpoints.model import Checkpoint, new_checkpoint_id
from graphcore.engine.schema import StateSchema
from graphcore.errors import SerializationError
from graphcore.messages import AnyMessage, HumanMessage, RemoveMessage, add_messages
from graphcore.types import Overwrite, PendingTask, TaskWrites


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    messages: Annotated[list[AnyMessage], add_messages]
    title: str


SCHEMA = StateSchema.of(State)


@pytest.fixture(params=["memory", "redis"])
def kv(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "memory":
        yield MemoryKV()
    else:
        yield request.getfixturevalue("redis_client")


def make_store(kv: Any, schema: StateSchema = SCHEMA) -> KVCheckpointStore:
    return (
        InMemoryCheckpointStore(schema, kv) if isinstance(kv, MemoryKV) else RedisCheckpointStore(kv, schema)
    )


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

    def test_a_stored_checkpoint_put_again_writes_nothing(self, kv: Any) -> None:
        """A write retried after its reply was lost (the first one applied), by the same store or by
        another: no second history entry, no copy of a log in a new generation."""
        store = make_store(kv)
        cps = grow(store, 3)
        before = sorted(_keys(kv))
        for again in (store, make_store(kv)):
            again.put("t", cps[-1])
        assert sorted(_keys(kv)) == before
        assert kv.lrange(keys.history("t"), 0, -1) == [cp.id.encode() for cp in cps]
        assert [len(kv.lrange(k, 0, -1)) for k in _keys(kv) if ":log::log:" in k] == [3]

    def test_unchanged_last_value_is_written_once(self, kv: Any) -> None:
        cps = grow(make_store(kv), 5)
        assert list(kv.hgetall(keys.channel_values("t", "", "title"))) == [cps[0].id.encode()]

    def test_replace_by_id_starts_new_generation_and_history_survives(self, kv: Any) -> None:
        store = make_store(kv)
        m1, m2 = HumanMessage("a", id="1"), HumanMessage("b", id="2")
        c0 = child(None, {"messages": [m1, m2]}, ["messages"])
        store.put("t", c0)
        c1 = child(c0, {"messages": add_messages([m1, m2], HumanMessage("A", id="1"))}, ["messages"])
        store.put("t", c1)
        assert make_store(kv).get("t", c0.id).channel_values["messages"] == [m1, m2]  # type: ignore[union-attr]
        assert make_store(kv).get("t").channel_values["messages"] == [  # type: ignore[union-attr]
            HumanMessage("A", id="1"),
            m2,
        ]

    def test_a_list_replaced_by_equal_items_of_other_types_reads_back_its_own(self, kv: Any) -> None:
        """``[True, False, {"a": 1.0}]`` equals ``[1, 0, {"a": 1}]``; the new value is stored, not the old."""
        store = make_store(kv)
        when = datetime(2026, 1, 1, 12, tzinfo=UTC)
        c0 = child(None, {"log": [1, 0, {"a": 1}, when]}, ["log"])
        store.put("t", c0)
        new = [True, False, {"a": 1.0}, when.astimezone(ZoneInfo("Europe/Paris")), "new"]
        c1 = child(c0, {"log": new}, ["log"])
        store.put("t", c1)
        for reader in (store, make_store(kv)):
            got = reader.get("t", c1.id).channel_values["log"]  # type: ignore[union-attr]
            assert [type(v) for v in got] == [bool, bool, dict, datetime, str]
            assert (got[2]["a"], type(got[2]["a"]), str(got[3])) == (1.0, float, "2026-01-01 13:00:00+01:00")
            old = reader.get("t", c0.id).channel_values["log"]  # type: ignore[union-attr]
            assert [type(v) for v in old] == [int, int, dict, datetime] and str(
                old[3]
            ) == "2026-01-01 12:00:00+00:00"

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


# -- branches never rewrite history ----------------------------------------------------------------
# Random trees of forks and second answers (a branch off an older checkpoint whose channels then take other
# values than the first branch's, with the same version numbers) over every channel kind — last-value,
# reducer logs, messages with replace/remove, Overwrite, a non-list reducer — in the root namespace and a
# subgraph's, written through several store instances (workers whose caches differ). After every write,
# every checkpoint ever written must read back exactly the values it had when it was written.


class BranchState(TypedDict, total=False):
    title: str
    log: Annotated[list[str], operator.add]
    messages: Annotated[list[AnyMessage], add_messages]
    items: Annotated[list[int], operator.add]
    count: Annotated[int, operator.add]


BRANCH_SCHEMA = StateSchema.of(BranchState)
NAMESPACES = ("", "child:0123abcd")


def _store(kv: Any) -> KVCheckpointStore:
    return make_store(kv, BRANCH_SCHEMA)


def _update(rng: random.Random, key: str, old: Any, tag: str) -> Any:
    """A new value for ``key`` as the channel's reducer would make it from a random write."""
    if key == "title":
        return f"title-{tag}"
    if key == "log":
        return [*(old or []), *(f"{tag}.{i}" for i in range(rng.randint(1, 3)))]
    if key == "items":  # an Overwrite now and then, else an append
        write = Overwrite([rng.randint(0, 9)]) if rng.random() < 0.3 else [rng.randint(0, 9)]
        return write.value if isinstance(write, Overwrite) else [*(old or []), *write]
    if key == "count":
        return (old or 0) + rng.randint(1, 5)
    messages = list(old or [])
    roll = rng.random()
    if messages and roll < 0.25:
        return add_messages(messages, RemoveMessage(rng.choice(messages).id))
    if messages and roll < 0.5:
        return add_messages(messages, HumanMessage(f"edited-{tag}", id=rng.choice(messages).id))
    return add_messages(messages, HumanMessage(f"hello-{tag}", id=f"m-{tag}"))


def _child(rng: random.Random, parent: Checkpoint | None, source: str) -> Checkpoint:
    """A checkpoint derived from ``parent`` as the engine derives one: each changed channel's version is
    its parent's plus one, so sibling branches carry the same version numbers for different values."""
    values = dict(parent.channel_values) if parent else {}
    versions = dict(parent.channel_versions) if parent else {}
    tag = new_checkpoint_id()[-6:]
    changed = [] if source == "fork" else rng.sample(list(BranchState.__annotations__), rng.randint(1, 3))
    for key in changed:
        values[key] = _update(rng, key, values.get(key), tag)
        versions[key] = versions.get(key, 0) + 1
    step = parent.step + 1 if parent else -1
    return Checkpoint(
        new_checkpoint_id(),
        parent.id if parent else None,
        step,
        values,
        versions,
        metadata={"source": source, "step": step},
    )


def _pick_parent(rng: random.Random, written: list[Checkpoint], head: Checkpoint) -> tuple[Checkpoint, str]:
    roll = rng.random()
    if roll < 0.55:
        return head, "loop"
    if roll < 0.7:
        return head, "update"
    return rng.choice(written), "fork"  # a fork or a second answer: a branch off any earlier checkpoint


def _check_all(stores: list[KVCheckpointStore], kv: Any, snapshots: dict[tuple[str, str], Any]) -> None:
    readers = [*stores, _store(kv)]  # the writers' caches and a fresh store with none
    for (ns, cid), expected in snapshots.items():
        for reader in readers:
            got = reader.get("t", cid, ns=ns)
            assert got is not None, (ns, cid)
            assert got.channel_values == expected, (ns, cid)


class TestBranchesConformance:
    """Part of the conformance suite: runs on both stores through the ``kv`` fixture."""

    @pytest.mark.parametrize("seed", range(12))
    def test_every_checkpoint_reads_back_its_values_after_every_write(self, kv: Any, seed: int) -> None:
        rng = random.Random(seed)
        stores = [_store(kv) for _ in range(3)]
        snapshots: dict[tuple[str, str], Any] = {}
        for ns in NAMESPACES:
            root = _child(rng, None, "input")
            written, head = [root], root
            rng.choice(stores).put("t", root, ns=ns)
            snapshots[(ns, root.id)] = copy.deepcopy(root.channel_values)
            for _ in range(18):
                parent, source = _pick_parent(rng, written, head)
                cp = _child(rng, parent, source)
                if (
                    source == "fork"
                ):  # as the worker does: the fork checkpoint, then a step that changes values
                    rng.choice(stores).put("t", cp, ns=ns)
                    snapshots[(ns, cp.id)] = copy.deepcopy(cp.channel_values)
                    written.append(cp)
                    cp = _child(rng, cp, "loop")
                store = rng.choice(stores)
                if rng.random() < 0.5:  # a worker that has the parent in its cache
                    store.get("t", cp.parent_id, ns=ns)
                store.put("t", cp, ns=ns)
                snapshots[(ns, cp.id)] = copy.deepcopy(cp.channel_values)
                written.append(cp)
                head = cp
                _check_all(stores, kv, snapshots)
        assert len(snapshots) >= 2 * 19

    def test_a_second_branch_with_the_same_versions_keeps_the_first(self, kv: Any) -> None:
        """The walkthrough's bug in miniature: two children of one checkpoint, same versions, other values."""
        store = _store(kv)
        root = Checkpoint(
            new_checkpoint_id(), None, -1, {"title": "ask", "log": ["asked"]}, {"title": 1, "log": 1}
        )
        store.put("t", root)
        first = Checkpoint(
            new_checkpoint_id(),
            root.id,
            0,
            {"title": "approved", "log": ["asked", "paid"]},
            {"title": 2, "log": 2},
        )
        store.put("t", first)
        second = Checkpoint(
            new_checkpoint_id(),
            root.id,
            0,
            {"title": "rejected", "log": ["asked", "refused"]},
            {"title": 2, "log": 2},
        )
        store.put("t", second)
        for reader in (store, _store(kv)):
            assert reader.get("t", first.id).channel_values == {"title": "approved", "log": ["asked", "paid"]}  # type: ignore[union-attr]
            assert reader.get("t", second.id).channel_values == {
                "title": "rejected",
                "log": ["asked", "refused"],
            }  # type: ignore[union-attr]
            assert reader.get("t", root.id).channel_values == {"title": "ask", "log": ["asked"]}  # type: ignore[union-attr]
