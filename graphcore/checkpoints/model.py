"""The checkpoint model: the state of a thread after one super-step (I4, I5)."""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from graphcore.types import PendingTask

__all__ = [
    "FORMAT_VERSION",
    "OWN_METADATA",
    "Checkpoint",
    "CheckpointSource",
    "new_checkpoint_id",
    "shown_metadata",
    "task_id",
]

FORMAT_VERSION = 2
"""Version of the stored checkpoint format (2: values addressed by checkpoint id, guarded log appends; see
:mod:`graphcore.checkpoints.layout` for what changed and which versions still read)."""

CheckpointSource = Literal["input", "loop", "fork", "update"]


def new_checkpoint_id() -> str:
    """A new checkpoint id: 32 hex digits, time-ordered (UUIDv7-like: ms timestamp then random)."""
    return f"{time.time_ns() // 1_000_000:012x}{os.urandom(10).hex()}"


def task_id(checkpoint_id: str, index: int, node: str) -> str:
    """The deterministic id of the ``index``-th task of the step after ``checkpoint_id``: 16 hex digits."""
    return hashlib.sha1(f"{checkpoint_id}|{index}|{node}".encode()).hexdigest()[:16]


@dataclass
class Checkpoint:
    """State of a thread after a super-step.

    Attributes:
        id: checkpoint id (see :func:`new_checkpoint_id`).
        parent_id: the checkpoint this one was derived from; None for a thread's first.
        step: -1 for the input checkpoint, then 0, 1, ... for each super-step.
        channel_values: channel → value; channels without a value are absent.
        channel_versions: channel → int, bumped each time the channel changes.
        versions_seen: node → (channel → version) as of that node's last run.
        next_tasks: tasks of the next super-step, in execution order; empty when the run is done.
        barriers: join key → sources that finished since the join last fired.
        metadata: ``source`` (input | loop | fork | update), ``step``, the run config's ``metadata`` and
            ``configurable`` keys LangGraph copies in, and graphq's own (:data:`OWN_METADATA`): ``run_id``,
            ``writes`` (the nodes whose writes made it), ``forked_from`` (a fork's source).
        created_at: ISO-8601 UTC time.
        v: stored format version.
    """

    id: str
    parent_id: str | None
    step: int
    channel_values: dict[str, Any]
    channel_versions: dict[str, int] = field(default_factory=dict)
    versions_seen: dict[str, dict[str, int]] = field(default_factory=dict)
    next_tasks: list[PendingTask] = field(default_factory=list)
    barriers: dict[str, list[str]] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    v: int = FORMAT_VERSION

    @staticmethod
    def now() -> str:
        """The current UTC time as stored in ``created_at``."""
        return datetime.now(UTC).isoformat()

    @property
    def source(self) -> CheckpointSource:
        """How this checkpoint came about (``metadata["source"]``)."""
        src: CheckpointSource = self.metadata.get("source", "loop")
        return src


OWN_METADATA = frozenset({"run_id", "writes", "forked_from"})
"""Metadata keys graphq stores with a checkpoint for itself (the CLI shows them); a snapshot's and a stream
event's ``metadata`` leave them out, as LangGraph has none of them."""


def shown_metadata(
    metadata: dict[str, Any], parents: dict[str, str], *, copied: bool = True
) -> dict[str, Any]:
    """A checkpoint's metadata as LangGraph shows it: ``source``, ``step``, ``parents`` (namespace →
    checkpoint id of the graphs it runs in) and, when ``copied`` (a snapshot; not a stream event, as in
    LangGraph), the run config's keys copied in; never graphq's :data:`OWN_METADATA`."""
    shown = {"source": metadata.get("source"), "step": metadata.get("step"), "parents": dict(parents)}
    if copied:
        shown |= {k: v for k, v in metadata.items() if k not in OWN_METADATA and k not in shown}
    return shown
