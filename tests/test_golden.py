"""Stored formats of earlier versions must still load (checked-in golden files, I5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graphcore import keys
from graphcore.backend.store import RedisCheckpointStore
from graphcore.checkpoints import serde
from graphcore.checkpoints.kv import KVCheckpointStore
from graphcore.checkpoints.layout import decode_record, to_checkpoint
from graphcore.checkpoints.memory import InMemoryCheckpointStore
from graphcore.errors import SerializationError
from graphcore.types import PendingTask
from tests.golden.values import VALUES

GOLDEN = Path(__file__).parent / "golden"


def test_checkpoint_record_v1_loads() -> None:
    record = decode_record((GOLDEN / "checkpoint_record_v1.bin").read_bytes())
    cp = to_checkpoint(record, {"log": ["a", "b"], "value": None})
    assert record.refs == {"log": ["log", "9f91acd382cd", 2], "value": ["v", 2]}  # the log's generation
    assert (cp.id, cp.parent_id, cp.step, cp.v) == (
        "0190000000000000000000000000abcd",
        "01900000000000000000000000000001",
        3,
        1,
    )
    assert cp.channel_versions == {"log": 4, "value": 2}
    assert cp.versions_seen == {"node": {"log": 3}}
    assert cp.next_tasks == [PendingTask("node"), PendingTask("node", True, {"x": 1})]
    assert cp.barriers == {"a+b>c": ["a"]}
    assert cp.metadata == {"source": "loop", "step": 3, "run_id": "r1", "writes": ["node"]}


def test_checkpoint_record_v2_loads_with_values_addressed_by_checkpoint_id() -> None:
    record = decode_record((GOLDEN / "checkpoint_record_v2.bin").read_bytes())
    assert record.fields["v"] == 2
    assert record.refs == {
        "log": ["log", "0190000000000000000000000000abcd", 2],
        "value": ["v", "0190000000000000000000000000abcd"],
    }
    assert record.fields["channel_versions"] == {"log": 4, "value": 2}


def test_channel_value_v1_loads_every_allow_listed_type() -> None:
    value = serde.loads((GOLDEN / "channel_value_v1.bin").read_bytes())
    assert value == VALUES
    assert {k: type(v) for k, v in value.items()} == {k: type(v) for k, v in VALUES.items()}
    assert value["when"].tzinfo.key == "Europe/Paris"
    assert str(value["money"]) == "1.10"


def _stored_v1(kv: Any) -> str:
    """Lay the v1 golden record out in ``kv`` as a version-1 store wrote it: the value in field ``2`` (its
    channel version) of the value hash, the log in its generation list. Returns the log's generation."""
    raw = (GOLDEN / "checkpoint_record_v1.bin").read_bytes()
    record = decode_record(raw)
    gen = record.refs["log"][1]
    kv.hset(keys.checkpoints("t"), record.fields["id"], raw)
    kv.rpush(keys.history("t"), record.fields["id"])
    kv.hset(keys.channel_values("t", "", "value"), "2", (GOLDEN / "channel_value_v1.bin").read_bytes())
    kv.rpush(keys.channel_log("t", "", "log", gen), serde.dumps("a"), serde.dumps("b"))
    return str(gen)


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_a_v1_checkpoint_reads_back_through_both_stores(backend: str, request: pytest.FixtureRequest) -> None:
    """Decision: version-1 checkpoints still read back whole; new ones are written as version 2."""
    if backend == "memory":
        store: KVCheckpointStore = InMemoryCheckpointStore()
    else:
        store = RedisCheckpointStore(request.getfixturevalue("redis_client"))
    _stored_v1(store.kv)
    cp = store.get("t")
    assert cp is not None
    assert (cp.id, cp.v, cp.step) == ("0190000000000000000000000000abcd", 1, 3)
    assert cp.channel_values == {"log": ["a", "b"], "value": VALUES}
    assert [c.id for c in store.list("t")] == [cp.id]


def test_an_unknown_format_version_fails_naming_it() -> None:
    fields = serde.loads((GOLDEN / "checkpoint_record_v1.bin").read_bytes())
    with pytest.raises(
        SerializationError, match=r"checkpoint format version 9 cannot be read \(this graphq reads 1, 2\)"
    ):
        decode_record(serde.dumps({**fields, "v": 9}))
