"""A graph's ``checkpointer`` option (G7): a checkpoint store, or for a subgraph True/False/None.

As LangGraph's ``compile(checkpointer=...)``:

* a store (:class:`~graphcore.checkpoints.protocol.CheckpointStore`, e.g. ``InMemorySaver()``): the graph
  checkpoints there, in its own thread; run inside a task without a thread of its own (a subgraph node), it
  checkpoints in its parent's store as a ``None`` one does (LangGraph lends a subgraph its parent's saver);
* ``None`` (the default): a subgraph's state lives in its parent's store, per parent task (namespace
  ``parent_ns|node:task_id``): each turn of the parent starts it afresh;
* ``True``: a stateful subgraph: it keeps its state across the parent's turns on one thread, in the
  namespace of its node without task ids (``parent_ns|node``); a root graph cannot use it;
* ``False``: no checkpoints at all; an ``interrupt()`` inside it is refused (graphq matches answers to the
  checkpoint a request was asked at, and there is none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphcore.checkpoints.model import Checkpoint
from graphcore.checkpoints.protocol import CheckpointStore
from graphcore.checkpoints.store_base import BaseStore
from graphcore.engine.config import Replay
from graphcore.errors import CheckpointerError, InvalidGraphError, NoCheckpointerError
from graphcore.types import TaskWrites

__all__ = [
    "NO_CHECKPOINTS",
    "check_checkpointer",
    "check_store",
    "replay_of",
    "replayed_head",
    "resumes",
    "stateful_ns",
    "store_of",
    "task_ns",
]

_STORE_METHODS = ("put", "get", "list", "put_writes", "get_writes", "get_writes_and_errors")
"""The methods of :class:`~graphcore.checkpoints.protocol.CheckpointStore` (``get_state`` reads the last)."""


def _from_langgraph(cls: type[Any]) -> bool:
    """Whether ``cls`` is a LangGraph class (a checkpointer's, or one deriving from it)."""
    return any(c.__module__.split(".")[0] == "langgraph" for c in cls.__mro__)


def check_checkpointer(value: Any) -> CheckpointStore | bool | None:
    """``value`` when ``compile(checkpointer=value)`` may take it: a graphq checkpoint store (anything with
    the :class:`~graphcore.checkpoints.protocol.CheckpointStore` methods), True, False or None.

    Raises:
        CheckpointerError: anything else, naming what was given and what is accepted; a LangGraph
            checkpointer (its ``InMemorySaver``, ``SqliteSaver``, ...) is refused, naming graphq's; so is a
            class (``InMemorySaver`` without parentheses; LangGraph refuses it with a TypeError too).
    """
    if value is None or isinstance(value, bool):
        return value
    cls = value if isinstance(value, type) else type(value)
    kind = f"{cls.__module__}.{cls.__qualname__}"
    if _from_langgraph(cls):
        raise CheckpointerError(
            f"compile(checkpointer=...): {kind} is a LangGraph checkpointer; graphq keeps its checkpoints in "
            "its own stores: use graphcore.InMemorySaver() in process (graphq's workers keep theirs in Redis)"
        )
    if isinstance(value, type):
        raise CheckpointerError(
            f"compile(checkpointer=...): got the class {kind}, not a checkpoint store: pass an instance, "
            "e.g. InMemorySaver() (with the parentheses)"
        )
    missing = [m for m in _STORE_METHODS if not callable(getattr(value, m, None))]
    if missing:
        raise CheckpointerError(
            "Invalid checkpointer provided. Expected a graphq checkpoint store (such as "
            f"graphcore.InMemorySaver()), True, False, or None. Received {kind}, which is not a checkpoint "
            f"store (no {', '.join(missing)})"
        )
    store: CheckpointStore = value
    return store


def store_of(checkpointer: Any, inside_task: bool) -> CheckpointStore | None:
    """Where a graph compiled with ``checkpointer`` checkpoints when it is not placed in a parent's store:
    its own store; None for None (outside a run) and False (at the root); :data:`NO_CHECKPOINTS` for False
    inside a running task.

    Raises:
        NoCheckpointerError: ``checkpointer=True`` on a graph run at the root (True is for subgraphs).
    """
    if checkpointer is True:
        raise NoCheckpointerError(
            "checkpointer=True is for subgraphs (it keeps a subgraph's state in its parent's checkpointer); "
            "a root graph needs a checkpoint store: compile(checkpointer=InMemorySaver())"
        )
    if checkpointer is False:
        return NO_CHECKPOINTS if inside_task else None
    store: CheckpointStore | None = checkpointer
    return store


def task_ns(parent_ns: str, node: str, task_id: str) -> str:
    """The checkpoint namespace of the (first) graph that task ``task_id`` of ``node`` runs, below its
    graph's namespace ``parent_ns``: ``parent_ns|node:task_id``, or ``node:task_id`` at the root (LangGraph's
    form)."""
    child = f"{node}:{task_id}"
    return f"{parent_ns}|{child}" if parent_ns else child


def stateful_ns(ns: str) -> str:
    """The namespace of a stateful subgraph (``checkpointer=True``): ``ns`` without its task ids, so every
    turn of the parent finds it (``outer:ab12|inner:cd34`` → ``outer|inner``), as LangGraph's."""
    return "|".join(part.split(":")[0] for part in ns.split("|"))


def resumes(
    checkpointer: Any, head: Checkpoint, finished: Mapping[str, TaskWrites], answers: Mapping[str, Any]
) -> bool:
    """Whether a subgraph found at ``head`` in its namespace goes on from there rather than taking its
    input as a new turn. A subgraph of ``checkpointer=None`` always goes on (its namespace is its parent
    task's: finding it means that task runs again). A stateful one goes on when its last turn did not end
    and either is answered now (``answers`` holds an answer to one of its requests) or asked nothing (it
    failed part-way); otherwise its input starts a new turn on its state."""
    if checkpointer is not True:
        return True
    if not head.next_tasks:
        return False
    asked = [i.id for tw in finished.values() for i in tw.interrupts]
    return not asked or any(i in answers for i in asked)


def replay_of(
    store: CheckpointStore,
    thread_id: str,
    checkpoint_id: str | None,
    since: str,
    at: Mapping[str, str] | None = None,
) -> Replay | None:
    """The :class:`Replay` of a run of ``thread_id`` started at ``since`` (ISO-8601 UTC) from its checkpoint
    ``checkpoint_id``: back to that checkpoint, or to its parent when an ``update_state`` or a fork made it
    (LangGraph's rule: their subgraph checkpoints are those of the checkpoint they branch from); ``at``: the
    subgraph checkpoints named by id (:attr:`Replay.at`). None when no checkpoint id is given or there is
    no such checkpoint."""
    if checkpoint_id is None:
        return None
    chosen = store.get(thread_id, checkpoint_id)
    if chosen is not None and chosen.source in ("update", "fork") and chosen.parent_id is not None:
        chosen = store.get(thread_id, chosen.parent_id) or chosen
    named = {k: v for k, v in (at or {}).items() if k}
    return None if chosen is None else Replay(chosen.created_at, since, named)


def replayed_head(
    store: CheckpointStore, thread_id: str, ns: str, replay: Replay
) -> tuple[Checkpoint | None, bool]:
    """Where a ``checkpointer=True`` subgraph in namespace ``ns`` goes on in a time-travelling run, and
    whether it forks there: its latest checkpoint made by the run itself (since ``replay.since``); else the
    checkpoint the run names for it (:attr:`Replay.at`: forked, so its tasks run again); else its latest of
    the past the run went back to (before ``replay.before``); None when it has none (it starts afresh).
    Checkpoints in between belong to the future the run branched away from."""
    history = store.list(thread_id, ns=ns)  # newest first
    own = next((cp for cp in history if cp.created_at >= replay.since), None)
    if own is None and ns in replay.at:
        return store.get(thread_id, replay.at[ns], ns=ns), True
    return own or next((cp for cp in history if cp.created_at < replay.before), None), False


class _NoCheckpoints:
    """The store of a subgraph compiled with ``checkpointer=False`` inside a running task: it keeps
    nothing, and refuses the pending writes of a paused step (nothing could resume it)."""

    def put(
        self, thread_id: str, checkpoint: Checkpoint, *, ns: str = "", writes: Sequence[TaskWrites] = ()
    ) -> None:
        return None

    def get(self, thread_id: str, checkpoint_id: str | None = None, *, ns: str = "") -> Checkpoint | None:
        return None

    def list(self, thread_id: str, *, ns: str = "", limit: int | None = None) -> list[Checkpoint]:
        return []

    def put_writes(self, thread_id: str, checkpoint_id: str, writes: TaskWrites, *, ns: str = "") -> None:
        if writes.interrupts:
            raise InvalidGraphError(
                f"interrupt() in node {writes.node!r} of a subgraph compiled with checkpointer=False: it "
                "keeps no checkpoints to resume from; compile it with checkpointer=None (its state lives in "
                "its parent's task) or checkpointer=True (it keeps its state across the parent's turns)"
            )

    def get_writes(self, thread_id: str, checkpoint_id: str, *, ns: str = "") -> Mapping[str, TaskWrites]:
        return {}

    def get_writes_and_errors(
        self, thread_id: str, checkpoint_id: str, *, ns: str = ""
    ) -> tuple[Mapping[str, TaskWrites], Mapping[str, str]]:
        return {}, {}


NO_CHECKPOINTS: CheckpointStore = _NoCheckpoints()
"""The store a ``checkpointer=False`` subgraph runs with inside a task (see :func:`store_of`)."""


def check_store(value: Any) -> BaseStore | None:
    """``value`` when ``compile(store=value)`` may take it: a graphq long-term store (a
    :class:`~graphcore.checkpoints.store_base.BaseStore`: ``InMemoryStore()``, ``RedisStore(...)``) or None.

    Raises:
        CheckpointerError: (a ``TypeError``) anything else, naming what was given; a LangGraph store
            (``langgraph.store.memory.InMemoryStore``) is refused, naming graphq's.
    """
    if value is None or isinstance(value, BaseStore):
        return value
    cls = value if isinstance(value, type) else type(value)
    kind = f"{cls.__module__}.{cls.__qualname__}"
    if _from_langgraph(cls):
        raise CheckpointerError(
            f"compile(store=...): {kind} is a LangGraph store; use graphq's: graphcore.InMemoryStore() in "
            "process (graphq's workers give every graph their Redis store)"
        )
    raise CheckpointerError(
        f"compile(store=...): got {kind}, which is not a graphq store; accepted: graphcore.InMemoryStore(), "
        "graphcore.backend.redis_store.RedisStore(redis_client) or None"
    )
