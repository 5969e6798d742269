"""Writes the golden stored-format files (run once per format version; the files are checked in)."""

from __future__ import annotations

from pathlib import Path

from graphcore.checkpoints import serde
from graphcore.checkpoints.layout import encode
from graphcore.checkpoints.model import FORMAT_VERSION, Checkpoint
from graphcore.types import PendingTask
from tests.golden.values import VALUES

HERE = Path(__file__).parent


def main() -> None:
    cp = Checkpoint(
        id="0190000000000000000000000000abcd",
        parent_id="01900000000000000000000000000001",
        step=3,
        channel_values={"log": ["a", "b"], "value": VALUES},
        channel_versions={"log": 4, "value": 2},
        versions_seen={"node": {"log": 3}},
        next_tasks=[PendingTask("node"), PendingTask("node", True, {"x": 1})],
        barriers={"a+b>c": ["a"]},
        metadata={"source": "loop", "step": 3, "run_id": "r1", "writes": ["node"]},
        created_at="2026-11-30T00:00:00+00:00",
    )
    plan = encode("t", "", cp, None, None)
    (HERE / f"checkpoint_record_v{FORMAT_VERSION}.bin").write_bytes(plan.record)
    [(_, _, value_blob)] = plan.values
    (HERE / f"channel_value_v{serde.FORMAT_VERSION}.bin").write_bytes(value_blob)


if __name__ == "__main__":
    main()
