"""Stored formats of earlier versions must still load (checked-in golden files, I5)."""

from __future__ import annotations

from pathlib import Path

from graphcore import serde
from graphcore.store.layout import decode_record, to_checkpoint
from graphcore.types import PendingTask
from tests.golden.values import VALUES

GOLDEN = Path(__file__).parent / "golden"


def test_checkpoint_record_v1_loads() -> None:
    record = decode_record((GOLDEN / "checkpoint_record_v1.bin").read_bytes())
    cp = to_checkpoint(record, {"log": ["a", "b"], "value": None})
    assert record.refs == {"log": ["log", record.refs["log"][1], 2], "value": ["v", 2]}
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


def test_channel_value_v1_loads_every_allow_listed_type() -> None:
    value = serde.loads((GOLDEN / "channel_value_v1.bin").read_bytes())
    assert value == VALUES
    assert {k: type(v) for k, v in value.items()} == {k: type(v) for k, v in VALUES.items()}
    assert value["when"].tzinfo.key == "Europe/Paris"
    assert str(value["money"]) == "1.10"
