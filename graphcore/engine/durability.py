"""LangGraph's ``durability`` option of ``invoke`` / ``stream``: when a run's checkpoints are written.

* ``"sync"`` (graphq's way, and the default): each super-step's checkpoint is written before the next step
  starts.
* ``"async"``: LangGraph writes it while the next step runs; graphq writes it as ``sync`` does (the write is
  in-memory or one Redis round trip), so the two behave alike.
* ``"exit"``: in process, only the run's last checkpoint is written, when the run returns, pauses (an
  ``interrupt()``, a breakpoint) or fails, with the pending writes of a paused or failed step; its parent is
  the checkpoint the run started after (None on a new thread), as LangGraph's is. A run stopped in the
  middle (its process dies) leaves nothing of its own behind.

Any other value of the argument acts as ``"async"``, as LangGraph's, with a UserWarning naming it.

On the queue every super-step is committed whatever the option says: a step job hands the run over to the
next one through its checkpoint (R2, R3). The option is accepted there and kept in the run's config; an
unknown value is refused at enqueue (ConfigError).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from graphcore.checkpoints.model import Checkpoint
from graphcore.checkpoints.protocol import CheckpointStore
from graphcore.engine.config import Scope
from graphcore.errors import warn_caller
from graphcore.types import TaskWrites

__all__ = ["DURABILITY", "ExitStore", "check_durability", "durable"]

DURABILITY = ("sync", "async", "exit")
"""The values LangGraph's ``durability`` takes."""


def check_durability(value: Any) -> str | None:
    """``value`` when it is one of :data:`DURABILITY` (or None); any other value acts as ``"async"``, as
    LangGraph's does (it does not check it), with a UserWarning naming it: a typo must not pass unseen."""
    if value is None or value in DURABILITY:
        return value  # type: ignore[no-any-return]
    warn_caller(
        f"durability={value!r} is not one of {list(DURABILITY)}; the run writes its checkpoints as with "
        "'async'"
    )
    return "async"


class ExitStore:
    """A :class:`CheckpointStore` that holds back checkpoints until :meth:`flush` (``durability="exit"``).

    Reads see the held checkpoints; pending writes are written at once, after the checkpoint they belong to
    (a paused or failed step keeps them, I2).
    """

    def __init__(self, store: CheckpointStore) -> None:
        self.store = store
        self.held: dict[tuple[str, str], tuple[Checkpoint, str | None]] = {}
        """(thread, ns) → (the newest checkpoint, the parent of the first one held there)."""

    def put(
        self, thread_id: str, checkpoint: Checkpoint, *, ns: str = "", writes: Sequence[TaskWrites] = ()
    ) -> None:
        """Hold ``checkpoint`` (``writes``, of the step that made it, are not kept: its parent is not)."""
        first = self.held.get((thread_id, ns))
        self.held[(thread_id, ns)] = (checkpoint, checkpoint.parent_id if first is None else first[1])

    def get(self, thread_id: str, checkpoint_id: str | None = None, *, ns: str = "") -> Checkpoint | None:
        held = self.held.get((thread_id, ns))
        if held is not None and checkpoint_id in (None, held[0].id):
            return held[0]
        return self.store.get(thread_id, checkpoint_id, ns=ns)

    def list(self, thread_id: str, *, ns: str = "", limit: int | None = None) -> list[Checkpoint]:
        self.flush()
        return self.store.list(thread_id, ns=ns, limit=limit)

    def put_writes(self, thread_id: str, checkpoint_id: str, writes: TaskWrites, *, ns: str = "") -> None:
        self._flush_one(thread_id, ns)
        self.store.put_writes(thread_id, checkpoint_id, writes, ns=ns)

    def get_writes(self, thread_id: str, checkpoint_id: str, *, ns: str = "") -> Mapping[str, TaskWrites]:
        return self.store.get_writes(thread_id, checkpoint_id, ns=ns)

    def get_writes_and_errors(
        self, thread_id: str, checkpoint_id: str, *, ns: str = ""
    ) -> tuple[Mapping[str, TaskWrites], Mapping[str, str]]:
        return self.store.get_writes_and_errors(thread_id, checkpoint_id, ns=ns)

    def as_saved(self, thread_id: str, checkpoint: Checkpoint, *, ns: str = "") -> Checkpoint:
        """``checkpoint`` as it will be saved, for the stream's checkpoint events: its parent the checkpoint
        the run started after (or the one written last), never one held back and then dropped."""
        held = self.held.get((thread_id, ns))
        if held is None or held[1] == checkpoint.parent_id:
            return checkpoint
        return dataclasses.replace(checkpoint, parent_id=held[1])

    def flush(self) -> None:
        """Write each namespace's newest held checkpoint, parented to where the run started."""
        for thread_id, ns in list(self.held):
            self._flush_one(thread_id, ns)

    def _flush_one(self, thread_id: str, ns: str) -> None:
        held = self.held.pop((thread_id, ns), None)
        if held is not None:
            cp, parent = held
            self.store.put(thread_id, dataclasses.replace(cp, parent_id=parent), ns=ns)


@contextmanager
def durable(scope: Scope, mode: str | None) -> Iterator[Scope]:
    """``scope`` for a run with durability ``mode``: under ``"exit"`` its store holds checkpoints back until
    the block ends (however it ends); otherwise ``scope`` itself."""
    if mode != "exit" or scope.store is None or isinstance(scope.store, ExitStore):
        yield scope
        return
    store = ExitStore(scope.store)
    try:
        yield dataclasses.replace(scope, store=store)
    finally:
        store.flush()
