"""How a checkpoint is laid out in a key-value store so that writes are O(change) (I4).

A checkpoint is stored as a small *record* (ids, step, versions, next tasks, metadata) plus one *ref* per
channel saying where its value lives:

* ``["v", version]`` — field ``version`` of the channel's value hash. Written only when the channel's
  version changes; an unchanged channel reuses its parent's ref.
* ``["log", generation, length]`` — the first ``length`` items of an append-only list. A reducer channel
  whose new value extends its parent's value pushes only the new items; any other change (replace, remove,
  a fork off an older checkpoint) starts a new generation. Any historical checkpoint still reads back whole.

The functions here are pure: :func:`encode` plans the writes, :func:`decode` rebuilds from fetched data.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from graphcore import keys, serde
from graphcore.channels import ReducerChannel
from graphcore.checkpoint import FORMAT_VERSION, Checkpoint
from graphcore.errors import SerializationError
from graphcore.schema import StateSchema
from graphcore.types import PendingTask, TaskWrites

__all__ = [
    "Plan",
    "Record",
    "decode_record",
    "decode_writes",
    "decode_writes_map",
    "encode",
    "encode_writes",
]

Ref = list[Any]


@dataclass
class Record:
    """A decoded checkpoint record: the checkpoint without its channel values, plus value refs."""

    fields: dict[str, Any]
    refs: dict[str, Ref]


@dataclass
class Plan:
    """Writes that store one checkpoint: hash fields to set and list items to push."""

    record: bytes
    refs: dict[str, Ref]
    hset: list[tuple[str, str, bytes]] = field(default_factory=list)
    rpush: list[tuple[str, list[bytes]]] = field(default_factory=list)


def _is_log(schema: StateSchema | None, key: str, value: Any) -> bool:
    if not isinstance(value, list):
        return False
    return schema is None or isinstance(schema.channels.get(key), ReducerChannel)


def _log_ref(
    thread: str,
    ns: str,
    key: str,
    value: list[Any],
    parent: Checkpoint | None,
    parent_ref: Ref | None,
    plan: Plan,
) -> Ref:
    old = parent.channel_values.get(key) if parent is not None else None
    if parent_ref is not None and parent_ref[0] == "log" and isinstance(old, list):
        _, gen, length = parent_ref
        if len(old) == length and len(value) >= length and value[:length] == old:
            start = length
        else:
            gen, start = uuid.uuid4().hex[:12], 0
    else:
        gen, start = uuid.uuid4().hex[:12], 0
    items = [serde.dumps(item, path=f"state.{key}[{i}]") for i, item in enumerate(value[start:], start)]
    if items:
        plan.rpush.append((keys.channel_log(thread, ns, key, gen), items))
    return ["log", gen, len(value)]


def encode(
    thread: str,
    ns: str,
    cp: Checkpoint,
    parent: Checkpoint | None,
    parent_refs: Mapping[str, Ref] | None,
    schema: StateSchema | None = None,
) -> Plan:
    """Plan the writes that store ``cp``.

    Args:
        thread: thread id; ns: namespace.
        cp: the checkpoint to store.
        parent: the checkpoint ``cp`` was derived from, if the caller has it in memory (values compared to
            find appends); None → every changed channel is written whole.
        parent_refs: the parent's stored refs, or None when ``cp`` does not extend the thread's head
            (a fork must not append to the head's logs).
        schema: the state schema; list values of its reducer channels are stored as logs.

    Raises:
        SerializationError: a value is not on the allow-list (the message names its state path).
    """
    plan = Plan(b"", {})
    prefs = parent_refs or {}
    pversions = parent.channel_versions if parent is not None else {}
    for key, value in cp.channel_values.items():
        ref = prefs.get(key)
        version = cp.channel_versions.get(key, 0)
        if ref is not None and parent is not None and pversions.get(key) == version:
            plan.refs[key] = ref
        elif _is_log(schema, key, value):
            plan.refs[key] = _log_ref(thread, ns, key, value, parent, ref if parent else None, plan)
        else:
            plan.hset.append(
                (keys.channel_values(thread, ns, key), str(version), serde.dumps(value, path=f"state.{key}"))
            )
            plan.refs[key] = ["v", version]
    plan.record = _record_bytes(cp, plan.refs)
    return plan


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
        "next_tasks": [[t.node, t.send, t.arg] for t in cp.next_tasks],
        "refs": refs,
    }
    return serde.dumps(fields, path="checkpoint")


def decode_record(data: bytes) -> Record:
    """Parse a stored record.

    Raises:
        SerializationError: the record's format version is newer than this code knows.
    """
    fields = serde.loads(data)
    if fields.get("v", 0) > FORMAT_VERSION:
        raise SerializationError("checkpoint", f"format version {fields['v']} is newer than {FORMAT_VERSION}")
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
        next_tasks=[PendingTask(n, s, a) for n, s, a in f["next_tasks"]],
        barriers=f["barriers"],
        metadata=f["metadata"],
        created_at=f["created_at"],
        v=f["v"],
    )


def encode_writes(tw: TaskWrites) -> bytes:
    """Serialise a task's pending writes; errors name the state path of the bad value."""
    writes = [[key, serde.dumps(value, path=f"state.{key}")] for key, value in tw.writes]
    goto = [[t.node, t.send, serde.dumps(t.arg, path=f"send.{t.node}")] for t in tw.goto]
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
        [PendingTask(n, s, serde.loads(a)) for n, s, a in goto],
        [serde.loads(i) for i in interrupts],
        serde.loads(resume),
    )


def decode_writes_map(raw: Mapping[bytes, bytes]) -> dict[str, TaskWrites]:
    """Task id → writes, from the pending-writes hash as read from the store."""
    writes = [decode_writes(blob) for blob in raw.values()]
    return {w.task_id: w for w in writes}
