"""What is kept of a thread's checkpoints once they are not needed (R5, R7).

A completed run's result is the values of its head checkpoint, read from there (not stored twice, I4), so
before that checkpoint goes — replaced by a later run's working state when no history is kept
(``GRAPHQ_ENABLE_CHECKPOINTING=false``), or removed after completion
(``GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION=false``) — the result is copied into the run record
(:func:`keep_result`).

With ``GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION=false`` a run's completion removes every checkpoint of its
thread, in every namespace (:func:`remove_after_completion`), unless another run of the thread still needs
them: one active on the thread (queued, running, awaiting input, a continuation) or waiting in its line.
That run's own completion removes them later. The removal runs after the completing commit, never in it:
a crash in between leaves the checkpoints, which is safe (they are what the default keeps).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from graphcore import keys
from graphcore.backend.connection import redis_retrying
from graphcore.backend.lua import script
from graphcore.checkpoints import serde
from graphcore.checkpoints.kv import KVCheckpointStore
from graphcore.checkpoints.layout import decode_record
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.algo import task_id
from graphcore.engine.checkpointer import stateful_ns, task_ns

__all__ = [
    "checkpoint_keys",
    "checkpoint_keys_of",
    "keep_result",
    "namespaces",
    "remove_after_completion",
    "step_namespaces",
    "subgraph_keys",
]

log = logging.getLogger("graphq.retention")

_LOOKS = 3
"""How often :func:`remove_after_completion` looks again when checkpoints were written meanwhile."""


def keep_result(kv: Any, thread_id: str, run_id: str, head_id: str, values: Mapping[str, Any]) -> bool:
    """Store ``values`` (the channel values of checkpoint ``head_id``) as the result of ``run_id``, if the
    run is Completed with that head and has no stored result yet (``keep_result.lua``; idempotent).

    Returns:
        True when the result was stored now.

    Raises:
        SerializationError: a value is outside the serde allow-list (it was stored once, so only a changed
            allow-list can cause this).
    """
    blob = serde.dumps(dict(values), path="result")
    return bool(script(kv, "keep_result")(keys=[keys.run(thread_id, run_id)], args=[head_id, blob]))


Where = tuple[str, str]
"""A namespace of a thread: ``(thread id, namespace)``."""


def _namespace_keys(
    kv: Any, level: Sequence[Where], stateful: bool
) -> Iterator[tuple[Where, list[str], list[str]]]:
    """For each namespace of ``level`` (of any threads): its checkpoint keys, and the namespaces of the
    subgraphs its tasks ran (candidates: a subgraph task checkpoints under ``ns|node:task_id``, G7; with
    ``stateful``, a ``checkpointer=True`` subgraph's namespace without task ids too). Two round trips
    however many namespaces."""
    pipe = kv.pipeline(transaction=False)
    for thread_id, ns in level:
        pipe.lrange(keys.history(thread_id, ns), 0, -1)
    histories = [list(dict.fromkeys(i.decode() for i in h)) for h in pipe.execute()]
    pipe = kv.pipeline(transaction=False)
    for (thread_id, ns), ids in zip(level, histories, strict=True):
        if ids:
            pipe.hmget(keys.checkpoints(thread_id, ns), ids)
    records = iter(pipe.execute())
    for (thread_id, ns), ids in zip(level, histories, strict=True):
        found = [keys.checkpoints(thread_id, ns), keys.history(thread_id, ns)]
        children: list[str] = []
        for cp_id, raw in zip(ids, next(records) if ids else [], strict=True):
            found += [keys.pending_writes(thread_id, ns, cp_id), keys.answers(thread_id, ns, cp_id)]
            if raw is not None:
                _record_keys((thread_id, ns), cp_id, raw, stateful, found, children)
        yield (thread_id, ns), found, list(dict.fromkeys(children))


def _record_keys(
    where: Where, cp_id: str, raw: bytes, stateful: bool, found: list[str], children: list[str]
) -> None:
    """Add to ``found`` the channel keys checkpoint ``cp_id`` (its record ``raw``) refers to, and to
    ``children`` the namespaces of the subgraphs its tasks ran (see :func:`_namespace_keys`)."""
    thread_id, ns = where
    record = decode_record(raw)
    for channel, ref in record.refs.items():
        if ref[0] == "v":
            found.append(keys.channel_values(thread_id, ns, channel))
        else:
            found.append(keys.channel_log(thread_id, ns, channel, ref[1]))
    for index, (node, *_) in enumerate(record.fields["next_tasks"]):
        children.append(task_ns(ns, node, task_id(cp_id, index, node)))
        if stateful:
            children.append(stateful_ns(children[-1]))


def _next_call(ns: str) -> str:
    """The namespace of the next graph call of the task whose call ``ns`` is (``node:task_id`` → ``...|1``,
    ``...|1`` → ``...|2``; :func:`graphcore.engine.nested.call_namespace`)."""
    base, _, last = ns.rpartition("|")
    return f"{base}|{int(last) + 1}" if base and last.isdigit() else f"{ns}|1"


def _existing(kv: Any, namespaces: Sequence[Where]) -> list[Where]:
    """The namespaces of ``namespaces`` that have a history (one round trip; none for an empty list)."""
    if not namespaces:
        return []
    pipe = kv.pipeline(transaction=False)
    for thread_id, ns in namespaces:
        pipe.exists(keys.history(thread_id, ns))
    return [where for where, there in zip(namespaces, pipe.execute(), strict=True) if there]


def _levels(kv: Any, level: Sequence[Where], stateful: bool) -> Iterator[tuple[Where, list[str]]]:
    """(namespace, its checkpoint keys) of the namespaces ``level`` (of any threads) and of the subgraph
    namespaces below them, level by level (with ``stateful``, those of stateful subgraphs too, which
    outlive the steps that ran them): three round trips a level."""
    while level:
        children: list[Where] = []
        for where, keys_of, candidates in _namespace_keys(kv, level, stateful):
            yield where, keys_of
            thread_id, ns = where
            children += [(thread_id, c) for c in candidates] + ([(thread_id, _next_call(ns))] if ns else [])
        level = _existing(kv, list(dict.fromkeys(children)))


def _walk(kv: Any, level: Sequence[Where], stateful: bool = False) -> list[str]:
    """The checkpoint keys of the namespaces ``level`` and of the subgraph namespaces below them."""
    return list(dict.fromkeys(k for _, keys_of in _levels(kv, level, stateful) for k in keys_of))


def namespaces(kv: Any, thread_id: str) -> list[str]:
    """The namespaces of ``thread_id`` with checkpoints: the root's (``""``, when it has any) first, then
    the subgraphs' level by level, found as :func:`checkpoint_keys` finds them (never a SCAN)."""
    found = [ns for (_, ns), _ in _levels(kv, [(thread_id, "")], stateful=True)]
    return found if kv.exists(keys.history(thread_id)) else found[1:]


def checkpoint_keys(kv: Any, thread_id: str) -> list[str]:
    """Every checkpoint key of ``thread_id``, in every namespace: records, histories, channel values, logs,
    pending writes and answers (keys that may not exist included). Found from the records, not by a SCAN:
    the root namespace's, then those of the subgraphs each checkpoint's tasks ran, level by level.
    Run records, request records and event streams are not checkpoint keys."""
    return checkpoint_keys_of(kv, [thread_id])[thread_id]


def checkpoint_keys_of(kv: Any, threads: Sequence[str]) -> dict[str, list[str]]:
    """:func:`checkpoint_keys` of each thread of ``threads``, found together: three round trips a level of
    subgraphs however many threads."""
    found: dict[str, list[str]] = {t: [] for t in threads}
    for (thread_id, _), keys_of in _levels(kv, [(t, "") for t in threads], stateful=True):
        found[thread_id] += keys_of
    return {t: list(dict.fromkeys(names)) for t, names in found.items()}


def subgraph_keys(kv: Any, thread_id: str, cp: Checkpoint, ns: str = "") -> list[str]:
    """The checkpoint keys of the subgraphs that the tasks of the step after ``cp`` (in namespace ``ns``)
    ran, nested ones included: once that step is committed without history (R5), nothing reads them again.
    One round trip when no task ran a subgraph."""
    return _walk(kv, _existing(kv, [(thread_id, n) for n in _task_namespaces(cp, ns)]))


def step_namespaces(kv: Any, thread_id: str, cp: Checkpoint, ns: str = "") -> list[str]:
    """The namespaces of the subgraphs that the tasks of the step after ``cp`` (in namespace ``ns``) ran
    and that still have checkpoints, nested ones included, level by level (``node:task_id``, then
    ``node:task_id|inner:task_id``, ...); not ``checkpointer=True`` subgraphs' (they span steps)."""
    level = _existing(kv, [(thread_id, n) for n in _task_namespaces(cp, ns)])
    return [found for (_, found), _ in _levels(kv, level, stateful=False)]


def _task_namespaces(cp: Checkpoint, ns: str) -> list[str]:
    """The namespace each task of the step after ``cp`` runs a subgraph in, if it runs one."""
    return [task_ns(ns, t.node, task_id(cp.id, i, t.node)) for i, t in enumerate(cp.next_tasks)]


def _remove_once(kv: Any, thread_id: str, run_id: str) -> str:
    head = kv.lindex(keys.history(thread_id), -1)
    found = checkpoint_keys(kv, thread_id)
    script_keys = [
        keys.run(thread_id, run_id),
        keys.thread_active(thread_id),
        keys.thread_waiting(thread_id),
        keys.history(thread_id),
        *found,
    ]
    args = [run_id, "" if head is None else head.decode()]
    reply = script(kv, "drop_checkpoints")(keys=script_keys, args=args)
    return str(reply.decode() if isinstance(reply, bytes) else reply)


def remove_after_completion(kv: Any, thread_id: str, run_id: str, head: Checkpoint | None) -> str:
    """After ``run_id`` completed with checkpoint ``head`` (None: read it): keep its result in its record,
    then remove every checkpoint of the thread unless another run of the thread needs them
    (``drop_checkpoints.lua``; see the module's docstring). Transient Redis errors are retried
    (``GRAPHQ_REDIS_RETRY_ATTEMPTS``); idempotent, so calling it again is safe.

    Returns:
        ``removed``, ``kept`` (another run of the thread needs them), ``left`` (the run is not Completed:
        a cancel won) or ``changed`` (checkpoints kept being written meanwhile; left for the next run's
        completion).
    """
    retrying = redis_retrying()
    if head is None:
        record = kv.hget(keys.run(thread_id, run_id), "head")
        reader = KVCheckpointStore(kv)  # a read: the shared store code, no writer needed
        head = None if record is None else reader.get(thread_id, record.decode())
    if head is not None:
        retrying(keep_result, kv, thread_id, run_id, head.id, head.channel_values)
    verdict = "changed"
    for _ in range(_LOOKS):
        verdict = str(retrying(_remove_once, kv, thread_id, run_id))
        if verdict != "changed":
            break
    log.debug("run %s completed: checkpoints of thread %s %s", run_id, thread_id, verdict)
    return verdict
