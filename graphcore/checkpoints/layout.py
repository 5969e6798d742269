"""How a checkpoint is laid out in a key-value store so that writes are O(change) (I4).

A checkpoint is stored as a small *record* (ids, step, versions, next tasks, metadata) plus one *ref* per
channel saying where its value lives. No two checkpoints that hold different values for a channel ever
share a storage slot, on any branch of a thread and in any namespace:

* ``["v", checkpoint_id]`` — field ``checkpoint_id`` of the channel's value hash: the id of the checkpoint
  that wrote the value (ids are unique). Written only when the channel's version changes; a checkpoint
  whose channel kept its parent's version reuses the parent's ref.
* ``["log", generation, length]`` — the first ``length`` items of an append-only list. Every position of a
  log is written once: a reducer channel whose new value extends its parent's value appends only the new
  items, and only while the log still ends where the parent's value ends (the *append guard*, checked
  atomically by the write; see :class:`Append`). Any other change — replace, remove, Overwrite, a second
  branch off the same checkpoint — starts a new generation, named after the checkpoint that starts it.

Format history: version 1 addressed values by the channel's version number, which two branches of one
thread share, so a branch could overwrite the other's values, and it appended to a generation without the
guard. Version 2 (now) addresses values by checkpoint id and guards appends. Version 1 records still read
back: their refs (``["v", version]``, ``["log", uuid, length]``) are read the same way; what a version-1
branch already overwrote cannot be recovered.

Without history (``GRAPHQ_ENABLE_CHECKPOINTING=false``, R5) a thread namespace keeps one checkpoint, its
working state: the write that stores a checkpoint also drops the one before it and every value of that one
that the new one does not reference (:class:`Prune`, :func:`prune`), so storage stays O(state), not O(steps).

The functions here are pure: :func:`encode` plans the writes, :func:`prune` what a write without history
drops, :func:`to_checkpoint` rebuilds from fetched data.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from graphcore import keys
from graphcore.checkpoints import serde
from graphcore.checkpoints.model import FORMAT_VERSION, Checkpoint
from graphcore.errors import SerializationError
from graphcore.types import PendingTask, TaskWrites

__all__ = [
    "FAILED_PREFIX",
    "READABLE_VERSIONS",
    "Append",
    "ChannelKinds",
    "HandledFailure",
    "Plan",
    "Prune",
    "Record",
    "decode_record",
    "decode_writes",
    "decode_writes_and_errors",
    "decode_writes_map",
    "encode",
    "encode_writes",
    "failure_entry",
    "prune",
]

Ref = list[Any]


class ChannelKinds(Protocol):
    """What the layout needs to know of a state schema (the engine's ``StateSchema`` is one)."""

    def is_reducer(self, key: str) -> bool:
        """Whether channel ``key`` folds writes with a reducer (its list values are stored as logs)."""
        ...


READABLE_VERSIONS = (1, FORMAT_VERSION)
"""Stored checkpoint formats this code reads (see the module docstring for what changed)."""


@dataclass
class Record:
    """A decoded checkpoint record: the checkpoint without its channel values, plus value refs."""

    fields: dict[str, Any]
    refs: dict[str, Ref]


@dataclass(frozen=True)
class Append:
    """Items to push onto a log, valid only while the log holds exactly ``start`` items.

    The write that applies a plan checks every append's ``start`` against the log's length first and
    writes nothing when one differs (another branch appended there first); the caller then plans again
    with ``may_append=False``.
    """

    key: str
    start: int
    items: list[bytes]


@dataclass
class Prune:
    """What storing a checkpoint without history drops (R5), once the checkpoint is the namespace's head:
    every other checkpoint record of the namespace (the history becomes that one checkpoint), and the
    previous head's values the new checkpoint does not reference.

    Attributes:
        fields: ``(value hash key, field)`` to delete: a value only the previous head referenced.
        keys: keys to delete: a log generation only the previous head referenced, the pending writes and
            answers of the step after the previous head (that step is committed now).
        previous: the id of the previous head (None: the namespace had none).
        owner: the run that wrote the previous head (its metadata ``run_id``), if known: when another run's
            head goes, that run's result is read from nowhere else (the caller keeps it first).
    """

    fields: list[tuple[str, str]] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    previous: str | None = None
    owner: str | None = None


@dataclass
class Plan:
    """Writes that store one checkpoint: value-hash fields to set and guarded log appends; ``prune`` is set
    when the store keeps no history (see :class:`Prune`)."""

    record: bytes
    refs: dict[str, Ref]
    values: list[tuple[str, str, bytes]] = field(default_factory=list)
    appends: list[Append] = field(default_factory=list)
    prune: Prune | None = None


def _is_log(schema: ChannelKinds | None, key: str, value: Any) -> bool:
    if not isinstance(value, list):
        return False
    return schema is None or schema.is_reducer(key)


def _log_ref(
    thread: str,
    ns: str,
    key: str,
    cp: Checkpoint,
    old: Any,
    parent_ref: Ref | None,
    plan: Plan,
) -> Ref:
    """Plan a log channel's write: append to the parent's generation when the value extends it, else
    start the generation ``cp.id``. ``parent_ref`` is None when appending is not allowed.

    "Extends" means the value starts with the very objects of the parent's value (``is``, as a reducer
    that appends leaves them): ``==`` would take ``True`` for ``1`` or an equal datetime in another zone for
    the stored one, and the value would read back with the parent's items instead of its own.
    """
    value = cp.channel_values[key]
    gen, start = cp.id, 0
    if parent_ref is not None and parent_ref[0] == "log" and isinstance(old, list):
        length = parent_ref[2]
        if len(old) == length and len(value) >= length and all(map(operator.is_, value, old)):
            gen, start = parent_ref[1], length
    items = [serde.dumps(item, path=f"state.{key}[{i}]") for i, item in enumerate(value[start:], start)]
    if items:
        plan.appends.append(Append(keys.channel_log(thread, ns, key, gen), start, items))
    return ["log", gen, len(value)]


def encode(
    thread: str,
    ns: str,
    cp: Checkpoint,
    parent: Checkpoint | None,
    parent_refs: Mapping[str, Ref] | None,
    schema: ChannelKinds | None = None,
    *,
    may_append: bool = True,
) -> Plan:
    """Plan the writes that store ``cp``.

    Args:
        thread: thread id; ns: namespace.
        cp: the checkpoint to store.
        parent: the checkpoint ``cp`` was derived from, if the caller has it in memory (its versions tell
            which channels are unchanged, its values which lists were only appended to); None → every
            channel is written whole.
        parent_refs: the parent's stored refs (needed to reuse or extend them), or None.
        schema: the state schema; list values of its reducer channels are stored as logs.
        may_append: whether a log may grow in its parent's generation (subject to the append guard);
            False → a changed log starts a new generation.

    Raises:
        SerializationError: a value is not on the allow-list (the message names its state path).
    """
    plan = Plan(b"", {})
    prefs = (parent_refs or {}) if parent is not None else {}
    pversions = parent.channel_versions if parent is not None else {}
    pvalues = parent.channel_values if parent is not None else {}
    for key, value in cp.channel_values.items():
        ref = prefs.get(key)
        if ref is not None and pversions.get(key) == cp.channel_versions.get(key, 0):
            plan.refs[key] = ref
        elif _is_log(schema, key, value):
            extend = ref if may_append else None
            plan.refs[key] = _log_ref(thread, ns, key, cp, pvalues.get(key), extend, plan)
        else:
            blob = serde.dumps(value, path=f"state.{key}")
            plan.values.append((keys.channel_values(thread, ns, key), cp.id, blob))
            plan.refs[key] = ["v", cp.id]
    plan.record = _record_bytes(cp, plan.refs)
    return plan


def prune(
    thread: str, ns: str, previous: str | None, stored: Record | None, refs: Mapping[str, Ref]
) -> Prune:
    """What storing a checkpoint with ``refs`` drops when no history is kept: the values of the previous
    head ``previous`` (``stored``: its record; None when it is gone or there was none) that ``refs`` do not
    reference, and the pending writes and answers of the step after it.

    Values are addressed by the checkpoint that wrote them and a log generation by the one that started it,
    so with one checkpoint kept per namespace, a value the previous head referenced and the new one does not
    is referenced by no checkpoint.
    """
    dropped = Prune(previous=previous)
    if previous is None:
        return dropped
    if stored is not None:
        dropped.owner = (stored.fields.get("metadata") or {}).get("run_id")
    for key, old in (stored.refs if stored is not None else {}).items():
        new = refs.get(key)
        if old[0] == "v" and new != old:
            dropped.fields.append((keys.channel_values(thread, ns, key), str(old[1])))
        elif old[0] == "log" and (new is None or new[0] != "log" or new[1] != old[1]):
            dropped.keys.append(keys.channel_log(thread, ns, key, old[1]))
    dropped.keys += [keys.pending_writes(thread, ns, previous), keys.answers(thread, ns, previous)]
    return dropped


def _task_entry(task: PendingTask, arg: Any) -> list[Any]:
    """A scheduled task as stored: ``[node, send, arg]``, and its Send's timeout when it has one (entries
    written before Sends had timeouts have three items)."""
    entry = [task.node, task.send, arg]
    return entry if task.timeout is None else [*entry, task.timeout]


def _record_bytes(cp: Checkpoint, refs: dict[str, Ref]) -> bytes:
    fields = {
        "v": FORMAT_VERSION,
        "id": cp.id,
        "parent_id": cp.parent_id,
        "step": cp.step,
        "created_at": cp.created_at,
        "metadata": cp.metadata,
        "channel_versions": cp.channel_versions,
        "versions_seen": cp.versions_seen,
        "barriers": cp.barriers,
        "next_tasks": [_task_entry(t, t.arg) for t in cp.next_tasks],
        "refs": refs,
    }
    return serde.dumps(fields, path="checkpoint")


def decode_record(data: bytes) -> Record:
    """Parse a stored record (format version 1 or 2).

    Raises:
        SerializationError: the record's format version is not one of :data:`READABLE_VERSIONS`; the
            message names the version.
    """
    fields = serde.loads(data)
    version = fields.get("v", 0)
    if version not in READABLE_VERSIONS:
        readable = ", ".join(map(str, READABLE_VERSIONS))
        raise SerializationError(
            "checkpoint", f"checkpoint format version {version} cannot be read (this graphq reads {readable})"
        )
    return Record(fields, fields.pop("refs"))


def to_checkpoint(record: Record, values: dict[str, Any]) -> Checkpoint:
    """Assemble a checkpoint from its record and its channel values."""
    f = record.fields
    return Checkpoint(
        id=f["id"],
        parent_id=f["parent_id"],
        step=f["step"],
        channel_values=values,
        channel_versions=f["channel_versions"],
        versions_seen=f["versions_seen"],
        next_tasks=[PendingTask(*entry) for entry in f["next_tasks"]],
        barriers=f["barriers"],
        metadata=f["metadata"],
        created_at=f["created_at"],
        v=f["v"],
    )


def encode_writes(tw: TaskWrites) -> bytes:
    """Serialise a task's pending writes; errors name the state path of the bad value."""
    writes = [[key, serde.dumps(value, path=f"state.{key}")] for key, value in tw.writes]
    goto = [_task_entry(t, serde.dumps(t.arg, path=f"send.{t.node}")) for t in tw.goto]
    interrupts = [serde.dumps(i, path=f"interrupt.{tw.node}") for i in tw.interrupts]
    resume = serde.dumps(tw.resume, path=f"resume.{tw.node}")
    return serde.dumps([tw.task_id, tw.node, writes, goto, interrupts, resume], path="writes")


def decode_writes(data: bytes) -> TaskWrites:
    """Inverse of :func:`encode_writes`."""
    task_id, node, writes, goto, interrupts, resume = serde.loads(data)
    return TaskWrites(
        task_id,
        node,
        [(k, serde.loads(v)) for k, v in writes],
        [PendingTask(n, s, serde.loads(a), *timeout) for n, s, a, *timeout in goto],
        [serde.loads(i) for i in interrupts],
        serde.loads(resume),
    )


FAILED_PREFIX = "!failed:"
"""The task id prefix of a failed task's entry in the pending-writes hash (:func:`failure_entry`): never a
task's id, so the entry marks no task finished."""


HANDLED = "handled"
"""The write marking a :func:`failure_entry` whose failure went to the node's error handler."""


class HandledFailure(str):
    """The error text of a :func:`failure_entry` made with ``handled=True`` (a ``str``, so it reads as any
    failure's text): the node's error handler took that failure, so a continued run runs only the handler
    (:mod:`graphcore.engine.handlers`)."""

    __slots__ = ()


def failure_entry(task_id: str, node: str, error: str, *, handled: bool = False) -> TaskWrites:
    """The pending-writes entry recording that task ``task_id`` (of node ``node``) failed with ``error``
    (its text, e.g. ``"KeyError('x')"``); stored with ``put_writes`` like a task's writes, so it is fenced
    and dropped with them. ``handled``: the failure went to the node's error handler (saved before the
    handler runs, as LangGraph saves its ``__error__`` and ``__error_source_node__`` writes)."""
    marks = [(HANDLED, True)] if handled else []
    return TaskWrites(FAILED_PREFIX + task_id, node, [("error", error), *marks])


def decode_writes_map(raw: Mapping[bytes, bytes]) -> dict[str, TaskWrites]:
    """Task id → writes, from the pending-writes hash as read from the store (failure entries left out)."""
    return decode_writes_and_errors(raw)[0]


def decode_writes_and_errors(raw: Mapping[bytes, bytes]) -> tuple[dict[str, TaskWrites], dict[str, str]]:
    """:func:`decode_writes_map`, and task id → the error text of each task that failed (its
    :func:`failure_entry`; a :class:`HandledFailure` for one its node's error handler took)."""
    writes: dict[str, TaskWrites] = {}
    errors: dict[str, str] = {}
    for blob in raw.values():
        tw = decode_writes(blob)
        if tw.task_id.startswith(FAILED_PREFIX):
            text = str(tw.writes[0][1])
            handled = dict(tw.writes).get(HANDLED) is True
            errors[tw.task_id[len(FAILED_PREFIX) :]] = HandledFailure(text) if handled else text
        else:
            writes[tw.task_id] = tw
    return writes, errors
