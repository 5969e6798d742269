"""Thread retention (K3): every key of a thread expires a TTL after the thread was last used, the sweep
clears its entries in shared indexes, and ``graphq threads delete`` removes a thread now.

The TTL of a run is fixed when the run is created (:attr:`~graphcore.backend.runs.RunRecord.thread_ttl_s`:
its workflow's or its own ``thread_ttl_s``, capped by ``GRAPHQ_THREAD_TTL_S``). While a thread has one, its
key set (:func:`graphcore.keys.thread_keys`) names its keys and carries its expiry, and the retention index
(:func:`graphcore.keys.retention`) holds the thread and each of its runs, scored by that expiry:

- the scripts that write a thread's keys register the keys they create and give them the set's expiry
  (``_retain.lua``, in the same script: no round trip); a new event stream takes its run record's;
- a use of the thread — a run created (:func:`stage_use` in the creating MULTI), an answer, a fork, a
  step's commit (inside ``commit_step.lua``, at most once per half TTL) — moves the whole thread's expiry,
  every key named in the set, to TTL from now;
- :func:`sweep` (a housekeeping loop) reads the expired entries of the index (ZRANGEBYSCORE, never a SCAN)
  and removes the thread's entries from the run index, the run → thread hash, the lease, busy-thread,
  recovery and request-deadline (R13) indexes and admission (R8).

Unset (no TTL on the run), none of this happens: no key set, no EXPIRE. A lease key keeps its own
time-to-live (``GRAPHQ_LEASE_TTL_S``) and goes with its step.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redis.exceptions import WatchError

from graphcore import keys
from graphcore.backend.admission import AdmissionQueue, stage_release
from graphcore.backend.lua import script, stage
from graphcore.backend.reaper import server_ms
from graphcore.backend.retention import checkpoint_keys_of
from graphcore.backend.runs import TERMINAL, RunStatus
from graphcore.errors import PermanentError
from graphcore.settings import Settings

__all__ = [
    "SWEEP_LIMIT",
    "Deleted",
    "ThreadActiveError",
    "delete_refusals",
    "delete_thread",
    "delete_threads",
    "run_keys",
    "stage_add",
    "stage_use",
    "sweep",
    "sweep_tick",
    "thread_keys_of",
    "ttl_arg",
]

log = logging.getLogger("graphq.retention")


class ThreadActiveError(PermanentError):
    """A thread cannot be deleted: a run is active on it (queued, running, or awaiting input).

    Attributes:
        reason: the kind of refusal, in short (a bulk delete counts its skipped threads by it): ``a run is
            active on it``, ``its run awaits input`` (deleted with ``force``) or ``runs wait for it``.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def ttl_arg(thread_ttl_s: float | None) -> str:
    """A thread TTL as the scripts take it: milliseconds, ``""`` = none."""
    return "" if thread_ttl_s is None else str(int(thread_ttl_s * 1000))


def run_keys(thread: str, run_id: str) -> list[str]:
    """The keys of one run of ``thread``, registered when the run is created (its event stream and request
    records are written later): run record, request records, event stream."""
    return [keys.run(thread, run_id), keys.requests(thread, run_id), keys.run_events(thread, run_id)]


def _fixed(thread: str) -> list[str]:
    return [keys.thread_keys(thread), keys.retention(), keys.thread_runs(thread)]


def stage_use(pipe: Any, thread: str, thread_ttl_s: float | None, *names: str) -> None:
    """Queue on ``pipe`` (a MULTI, after its writes) a use of ``thread`` with TTL ``thread_ttl_s``: register
    ``names`` (keys of the thread written by the pipeline, or to be written later) and expire every key of
    the thread ``thread_ttl_s`` from now. No round trip of its own; nothing with None (a run without a TTL
    on a thread that has one drops the thread's TTL at its first commit, ``commit_step.lua``)."""
    if thread_ttl_s is not None:
        stage(pipe, "retain", [*_fixed(thread), *names], [thread, "use", ttl_arg(thread_ttl_s)])


def stage_add(pipe: Any, thread: str, *names: str) -> None:
    """Queue on ``pipe`` the registration of keys of ``thread`` the pipeline created, with the thread's
    current expiry (nothing when the thread has no TTL)."""
    stage(pipe, "retain", [*_fixed(thread), *names], [thread, "add", ""])


def sweep(
    kv: Any, settings: Settings, now_ms: int, limit: int = 1000, queue: AdmissionQueue | None = None
) -> int:
    """Clear the shared-index entries of threads whose keys expired by ``now_ms`` (Redis's clock, ms; never
    later than Redis's own now), at most ``limit`` retention entries (a thread or one of its runs) a call:
    with ``queue``, each due run's admission slot or waiting entry is given back first (R8; a release is
    idempotent, so a sweep that dies before the next part leaves it all to the next sweep); then
    ``sweep_threads.lua`` removes each entry from the run index, the run → thread hash, the lease,
    busy-thread, recovery and request-deadline (R13) indexes and the retention index, atomically (a thread
    used again meanwhile has a later score and is left alone); a run whose release failed (an error reply,
    logged) keeps its entries for the next sweep, and the others go on.
    ``settings`` is unused (the TTLs were fixed per run). Returns the retention entries removed."""
    del settings
    due = [m.decode() for m in kv.zrangebyscore(keys.retention(), "-inf", now_ms, start=0, num=limit)]
    if not due:
        return 0
    if queue is not None:
        runs = [m for m in due if ":" in m]  # a run's entry (a thread's has no colon)
        with kv.pipeline(transaction=False) as pipe:
            for member in runs:
                stage_release(pipe, kv, queue, *keys.parse_member(member))
            replies = pipe.execute(raise_on_error=False)
        failed = {m: r for m, r in zip(runs, replies, strict=True) if isinstance(r, Exception)}
        for member, error in failed.items():  # left for the next sweep, not holding the others back
            log.warning("retention sweep: %s's admission slot not given back: %s", member, error)
        due = [m for m in due if m not in failed]
    index_keys = [
        keys.retention(),
        keys.runs_index(),
        keys.run_threads(),
        keys.lease_index(),
        keys.busy_threads(),
        keys.recovery(),
        keys.request_deadlines(),
    ]
    return int(script(kv, "sweep_threads")(keys=index_keys, args=[now_ms, *due]))


SWEEP_LIMIT = 1000
"""Retention entries one housekeeping tick removes at most (a backlog goes over several ticks)."""


def sweep_tick(kv: Any, settings: Settings, queue: AdmissionQueue | None = None) -> int:
    """One pass of the retention housekeeping loop (every ``GRAPHQ_RETENTION_SWEEP_INTERVAL_S``):
    :func:`sweep` of up to :data:`SWEEP_LIMIT` entries at Redis's now. Returns the entries removed."""
    return sweep(kv, settings, server_ms(kv), SWEEP_LIMIT, queue)


@dataclass(frozen=True)
class Deleted:
    """What :func:`delete_thread` removed: keys of the thread and runs (their index entries with them)."""

    keys: int
    runs: int


def thread_keys_of(kv: Any, thread: str) -> list[str]:
    """Every key ``thread`` may have (some may not exist): its checkpoint keys in every namespace
    (:func:`graphcore.backend.retention.checkpoint_keys`), each run's keys and lease, the thread's run set,
    active run, waiting line and key set, and the key set's members. Found from the thread's own index keys,
    never a SCAN."""
    return _keys_of_threads(kv, [thread])[0][thread]


def _keys_of_threads(kv: Any, threads: Sequence[str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """:func:`thread_keys_of` and the run ids of each thread of ``threads``, found together (a round trip,
    then those of :func:`~graphcore.backend.retention.checkpoint_keys_of`)."""
    pipe = kv.pipeline(transaction=False)
    for thread in threads:
        pipe.zrange(keys.thread_runs(thread), 0, -1)
        pipe.smembers(keys.thread_keys(thread))
    replies = pipe.execute()
    runs = {t: [r.decode() for r in ids] for t, ids in zip(threads, replies[::2], strict=True)}
    checkpoints = checkpoint_keys_of(kv, threads)
    found: dict[str, list[str]] = {}
    for thread, members in zip(threads, replies[1::2], strict=True):
        names = list(checkpoints[thread])
        for run_id in runs[thread]:
            names += [*run_keys(thread, run_id), keys.lease(thread, run_id)]
        names += [keys.thread_runs(thread), keys.thread_active(thread), keys.thread_waiting(thread)]
        names += [keys.thread_keys(thread), *(k.decode() for k in members)]
        found[thread] = list(dict.fromkeys(names))
    return found, runs


def _how_to_end(run_id: str, state: str, cancel_requested: bool) -> str:
    """What ends the active run ``run_id`` (in ``state``) so that its thread can be deleted."""
    if state == RunStatus.AWAITING_INPUT.value:
        return "answer or cancel it, or pass --force"
    if cancel_requested:
        return "its cancel is requested already (it stops before its next super-step): wait for it to end"
    return f"cancel it (graphq runs cancel {run_id}) or wait for it to end"


def delete_refusals(kv: Any, threads: Sequence[str], force: bool) -> dict[str, ThreadActiveError]:
    """Why each thread of ``threads`` that cannot be deleted now cannot: a run is active on it (awaiting
    input counts unless ``force``), or runs wait for it. Two round trips however many threads."""
    pipe = kv.pipeline(transaction=False)
    for thread in threads:
        pipe.get(keys.thread_active(thread))
        pipe.llen(keys.thread_waiting(thread))
    replies = pipe.execute()
    active = dict(zip(threads, replies[::2], strict=True))
    pipe = kv.pipeline(transaction=False)
    for thread, run_id in active.items():
        if run_id is not None:
            pipe.hmget(keys.run(thread, run_id.decode()), ["status", "cancel"])
    states = iter(pipe.execute())
    refused = {}
    for (thread, run_id), waiting in zip(active.items(), replies[1::2], strict=True):
        status, cancel = next(states) if run_id is not None else (None, None)
        why = _refusal(thread, run_id, status, cancel is not None, force) if status else None
        if why is None and waiting:
            why = ThreadActiveError(
                f"thread {thread!r} has runs waiting for it: cancel them first", "runs wait for it"
            )
        if why is not None:
            refused[thread] = why
    return refused


def _refusal(
    thread: str, run_id: bytes, status: bytes, cancel: bool, force: bool
) -> ThreadActiveError | None:
    """Why ``thread`` cannot be deleted while ``run_id`` is its active run, in ``status`` (None: it can)."""
    state = status.decode()
    if state in TERMINAL or (state == RunStatus.AWAITING_INPUT.value and force):
        return None
    awaits = state == RunStatus.AWAITING_INPUT.value
    return ThreadActiveError(
        f"thread {thread!r} has an active run {run_id.decode()} ({state}): "
        f"{_how_to_end(run_id.decode(), state, cancel)}",
        "its run awaits input" if awaits else "a run is active on it",
    )


def delete_thread(kv: Any, thread: str, force: bool = False, queue: AdmissionQueue | None = None) -> Deleted:
    """Remove every key of ``thread`` and its entries in shared indexes now, in one WATCH transaction (the
    thread's run set, active run, waiting line, root history and key set watched: a run or a checkpoint
    created meanwhile makes it look again): :func:`delete_threads` of one.

    Args:
        force: delete a thread whose active run awaits input too (it is gone with the thread).
        queue: give the runs' admission slots or waiting entries back (R8).

    Returns:
        How many keys existed and were removed, and how many runs the thread had.

    Raises:
        ThreadActiveError: a run is active on the thread (queued or running; awaiting input unless
            ``force``) or waits for it; nothing was removed.
    """
    done = delete_threads(kv, [thread], force, queue)[0]
    if isinstance(done, ThreadActiveError):
        raise done
    return done


def delete_threads(
    kv: Any, threads: Sequence[str], force: bool = False, queue: AdmissionQueue | None = None
) -> list[Deleted | ThreadActiveError]:
    """:func:`delete_thread` of each thread of ``threads`` (distinct ids), all in one WATCH transaction, in a
    fixed number of round trips however many they are (three more a level of subgraphs). For each thread,
    what was removed, or why nothing of it was (the others are removed all the same)."""
    watched = [
        k
        for t in threads
        for k in (keys.thread_runs(t), keys.thread_active(t), keys.thread_waiting(t), keys.history(t))
    ]
    watched += [keys.thread_keys(t) for t in threads]  # a checkpoint or key written meanwhile
    while True:
        with kv.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(*watched)
                refused = delete_refusals(kv, threads, force)
                gone = [t for t in threads if t not in refused]
                names, runs = _keys_of_threads(kv, gone)
                pipe.multi()
                at = {}
                for thread in gone:
                    at[thread] = len(pipe.command_stack)
                    pipe.delete(*names[thread])
                    _stage_unindex(pipe, thread, runs[thread], kv, queue)
                replies = pipe.execute() if gone else []
                removed = {t: Deleted(int(replies[at[t]]), len(runs[t])) for t in gone}
                return [refused.get(t) or removed[t] for t in threads]
            except WatchError:
                continue


def _stage_unindex(pipe: Any, thread: str, run_ids: list[str], kv: Any, queue: AdmissionQueue | None) -> None:
    """Queue the removal of ``thread``'s and its runs' entries from the shared indexes (with ``queue``, the
    runs' admission slots or waiting entries given back, R8)."""
    members = [keys.lease_member(thread, r) for r in run_ids]
    if run_ids:
        pipe.zrem(keys.runs_index(), *run_ids)
        pipe.hdel(keys.run_threads(), *run_ids)
        pipe.zrem(keys.lease_index(), *members)
        pipe.zrem(keys.request_deadlines(), *members)
        kinds = ("enqueue", "handover")
        pipe.zrem(keys.recovery(), *(keys.recovery_member(k, thread, r) for k in kinds for r in run_ids))
    pipe.zrem(keys.retention(), thread, *members)
    pipe.zrem(keys.busy_threads(), thread)
    if queue is not None:
        for run_id in run_ids:
            stage_release(pipe, kv, queue, thread, run_id)
