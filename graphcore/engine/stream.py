"""Payloads of the stream modes ``tasks`` and ``checkpoints`` (C6), the same in-process and on the queue."""

from __future__ import annotations

from typing import Any

from graphcore.checkpoints.model import Checkpoint
from graphcore.types import TaskWrites

__all__ = ["checkpoint_payload", "task_payload"]


def task_payload(tw: TaskWrites) -> dict[str, Any]:
    """A finished task as the ``tasks`` stream mode shows it."""
    return {
        "id": tw.task_id,
        "node": tw.node,
        "writes": dict(tw.writes),
        "interrupts": [{"id": i.id, "value": i.value} for i in tw.interrupts],
    }


def checkpoint_payload(cp: Checkpoint) -> dict[str, Any]:
    """A committed checkpoint as the ``checkpoints`` stream mode shows it."""
    return {
        "checkpoint_id": cp.id,
        "parent_id": cp.parent_id,
        "step": cp.step,
        "source": cp.source,
        "next": [t.node for t in cp.next_tasks],
    }
