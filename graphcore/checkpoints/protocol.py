"""The checkpoint store protocol; every backend passes one conformance test class (tests/test_store.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from graphcore.checkpoints.model import Checkpoint
from graphcore.types import TaskWrites

__all__ = ["CheckpointStore"]


class CheckpointStore(Protocol):
    """Where checkpoints and pending writes of threads live.

    ``ns`` is the checkpoint namespace ("" at the root; ``parent_node:task_id`` for subgraphs).
    """

    def put(
        self, thread_id: str, checkpoint: Checkpoint, *, ns: str = "", writes: Sequence[TaskWrites] = ()
    ) -> None:
        """Store ``checkpoint`` as the newest of ``thread_id``. ``writes``: the task writes of the step that
        made it; a store that keeps history keeps them, in the same write, as the pending writes of its
        parent (its snapshot's ``tasks[i].result``, LangGraph's); one that does not may drop them.

        Raises:
            SerializationError: a value is not on the serde allow-list; nothing is written.
        """

    def get(self, thread_id: str, checkpoint_id: str | None = None, *, ns: str = "") -> Checkpoint | None:
        """The checkpoint with ``checkpoint_id``, or the newest when None; None when absent."""

    def list(self, thread_id: str, *, ns: str = "", limit: int | None = None) -> list[Checkpoint]:
        """The thread's checkpoints, newest first, at most ``limit``."""

    def put_writes(self, thread_id: str, checkpoint_id: str, writes: TaskWrites, *, ns: str = "") -> None:
        """Persist one finished task's writes for the step after ``checkpoint_id`` (I2).

        Raises:
            SerializationError: a written value is not on the allow-list, naming its state path.
        """

    def get_writes(self, thread_id: str, checkpoint_id: str, *, ns: str = "") -> Mapping[str, TaskWrites]:
        """Task id → writes persisted for the step after ``checkpoint_id``."""

    def get_writes_and_errors(
        self, thread_id: str, checkpoint_id: str, *, ns: str = ""
    ) -> tuple[Mapping[str, TaskWrites], Mapping[str, str]]:
        """:meth:`get_writes`, and task id → the error text of each task of that step that failed (recorded
        with ``put_writes`` of a :func:`~graphcore.checkpoints.layout.failure_entry`), in one read."""
