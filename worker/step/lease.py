"""Leases on running steps (R18, I1): a token in Redis, renewed while nodes run, however long they take.

One keeper thread per process looks after every lease this process holds: every ``_TICK_S`` seconds it
checks whether the run was cancelled with ``interrupt`` (then it sets the step's cancel token, so running
nodes see it within a second, X1/C7), and every ``heartbeat_s`` seconds it renews the lease. A lease whose
renewal finds another token (or none) is marked lost; the step's fenced writes and commit then fail, and
nothing it did is committed. A commit that gives the lease back deletes the key itself: from
:meth:`Lease.dropping` (or :meth:`Lease.commit_later`) on, the keeper does not take a missing key for a loss
(the commit's own fence reports a real one), since it may look between the commit and :meth:`Lease.dropped`.

A lease's life is one :class:`Phase` at a time (:attr:`Lease.phase`); the moves allowed are in
:data:`MOVES`, and a move not there is a bug (:class:`PhaseError`).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from enum import Enum
from types import TracebackType
from typing import Any, Protocol

from graphcore import keys
from graphcore.backend.connection import FailureStreak
from graphcore.backend.events import encode_event
from graphcore.backend.lua import Script, script
from graphcore.engine.cancel import CancelToken
from graphq.worker import logs, metrics
from graphq.worker.step.handover import Stop
from graphq.worker.step.replies import ClaimResult

__all__ = [
    "MOVES",
    "Lease",
    "LeaseListener",
    "Phase",
    "PhaseError",
    "held",
    "renew",
    "retire_if_stuck",
]

log = logging.getLogger("graphq.lease")

_CANCELED_EVENT = encode_event("status", 0, {"status": "canceled"})["data"]
"""The data of the status event a cancel request writes when it ends a run at its claim (step from Redis)."""

_TICK_S = 0.5
"""How often the keeper looks for cancel requests of running steps, seconds (cancel reaches nodes < 1 s)."""


class Phase(Enum):
    """Where a lease is in its life (:data:`MOVES`: which phase may follow which)."""

    CLAIMED = "claimed"
    """Taken (or being taken) by the claim; not yet renewed."""
    HELD = "held"
    """The step runs under it; the keeper renews it."""
    COMMITTING = "committing"
    """A commit (or pause) that deletes the key is in flight: the keeper takes a missing key for no loss."""
    COMMIT_LATER = "commit_later"
    """The step's commit rides RQ's success pipeline, after the job's function returned (until its reply)."""
    DROPPED = "dropped"
    """The commit deleted the key (given back with it)."""
    RELEASED = "released"
    """Given back by :meth:`Lease.release`."""
    LEFT = "left"
    """Left to lapse: the run stays where the reaper finds it (:meth:`Lease.leave`)."""
    LOST = "lost"
    """The keeper found another token, or none: the step's fenced writes and commit are refused."""


MOVES: dict[Phase, frozenset[Phase]] = {
    Phase.CLAIMED: frozenset({Phase.HELD, Phase.RELEASED, Phase.LEFT}),
    Phase.HELD: frozenset({Phase.COMMITTING, Phase.COMMIT_LATER, Phase.RELEASED, Phase.LEFT, Phase.LOST}),
    Phase.COMMITTING: frozenset({Phase.DROPPED, Phase.COMMIT_LATER, Phase.RELEASED, Phase.LEFT}),
    Phase.COMMIT_LATER: frozenset({Phase.DROPPED, Phase.COMMITTING, Phase.RELEASED, Phase.LEFT}),
    # A step that lost its lease goes on until a fenced write or its commit is refused.
    Phase.LOST: frozenset({Phase.COMMITTING, Phase.COMMIT_LATER, Phase.RELEASED, Phase.LEFT}),
    Phase.DROPPED: frozenset(),
    Phase.RELEASED: frozenset(),
    Phase.LEFT: frozenset(),
}
"""Phase → the phases it may move to. COMMITTING and COMMIT_LATER fall back to RELEASED when the pause's
status write or the later commit did not apply (the lease is given back if still ours), or to LEFT when the
step's ending could not be written. COMMIT_LATER → COMMITTING: the later commit met an append conflict and
is sent again in a round trip of its own; COMMITTING → COMMIT_LATER: a step run again after a transient
Redis error commits the other way."""

_OVER = frozenset({Phase.DROPPED, Phase.RELEASED, Phase.LEFT})
"""Phases after which the lease is not this worker's to give back (the ends of :data:`MOVES` but LOST, whose
key another worker may hold: :meth:`Lease.release` sends the script, which gives back only its own token)."""


class PhaseError(AssertionError):
    """A lease was moved to a phase :data:`MOVES` does not allow from where it is: a bug in the step job."""


class Lease:
    """A worker's time-bounded claim on a run's current step.

    Args:
        kv: redis-py client.
        thread_id, run_id: the run.
        ttl_s: lease time-to-live in seconds; a dead worker's lease lapses after this.
        heartbeat_s: renewal interval in seconds (below ``ttl_s``).
        listener: told when the lease is held, limited and freed (the supervising process's channel,
            :class:`LeaseListener`); None: nobody listens.
    """

    def __init__(
        self,
        kv: Any,
        thread_id: str,
        run_id: str,
        ttl_s: float,
        heartbeat_s: float,
        listener: LeaseListener | None = None,
    ) -> None:
        self.kv = kv
        self.listener = listener
        self.key = keys.lease(thread_id, run_id)
        self.member = keys.lease_member(thread_id, run_id)
        self.thread_id, self.run_id = thread_id, run_id
        self.step: int | None = None
        """The step claimed (set by :meth:`claim`), reported in the worker's heartbeat."""
        self.run_key = keys.run(thread_id, run_id)
        self.events_key = keys.run_events(thread_id, run_id)
        self.cancel = CancelToken()
        """Set when the run is cancelled with ``interrupt=True`` while this step runs."""
        self.renew_at = time.monotonic() + heartbeat_s
        self.token = uuid.uuid4().hex
        self.ttl_ms = int(ttl_s * 1000)
        self.heartbeat_s = heartbeat_s
        self.phase = Phase.CLAIMED
        """Where the lease is in its life; moved by :meth:`move` only."""
        self._phase_lock = threading.Lock()
        self.renewals = FailureStreak(log, f"renewal of lease {self.key}", self.about)
        """The keeper's failures (Redis away or full): logged once a streak, not once a tick."""
        self.stop: Stop | None = None
        """Why this step is being given up (a shutdown, a deadline), once :meth:`abort` was called."""
        self.deadline: tuple[float, Stop] | None = None
        """``(time.time() at which the step is given up, how)`` once :meth:`limit` was called."""
        self.step_number: int | None = None
        """The thread step being run, once known (reported in the worker's heartbeat)."""
        self.followers: set[Lease] = set()
        """Leases given up with this one (the batch of a split step its owner runs,
        :mod:`graphq.worker.step.splitting`)."""

    of_step = True
    """A step's lease (a batch of a split step holds a :class:`graphq.worker.step.split.BatchLease`)."""

    def move(self, to: Phase, *, only_from: Phase | None = None) -> bool:
        """Move the lease to phase ``to``; with ``only_from``, only when it is in that phase (else nothing
        changes). Returns whether it moved.

        Raises:
            PhaseError: :data:`MOVES` does not allow ``to`` from the lease's phase.
        """
        with self._phase_lock:
            if only_from is not None and self.phase is not only_from:
                return False
            if to not in MOVES[self.phase]:
                raise PhaseError(f"lease {self.key}: no move from {self.phase.value} to {to.value}")
            self.phase = to
            return True

    def about(self) -> dict[str, Any]:
        """``extra=`` for a log line about this lease's step (:func:`graphq.worker.logs.about`)."""
        return logs.about(run=self.run_id, thread=self.thread_id, step=self.step)

    def claim(
        self, step: int, now: str, cancel_error: str, worker_id: str = "", version: str = ""
    ) -> tuple[ClaimResult, dict[bytes, bytes]]:
        """Read the run and take the lease if the run is still at ``step`` (one round trip); the lease's
        deadline goes into the lease index and ``worker_id`` into the run's ``worker`` field.

        Args:
            now: the current time (ISO-8601), written as ``ended_at`` when a cancel request ends the run.
            cancel_error: the error record (JSON) of a run that a cancel request ends.
            version: the version of the run's workflow this worker serves: a run pinned to another is not
                claimed, a run without one yet gets it; "" does neither.

        Returns:
            ``(code, run hash)``; the code a :class:`ClaimResult`: 0 = no such run, 1 = stale (finished or at
            another step), 2 = another worker holds the lease, 3 = claimed, 4 = a cancel request ended the
            run now, 5 = the run is pinned to another version.
        """
        script_keys, argv = self.claim_call(step, now, cancel_error, worker_id, version)
        code, flat = script(self.kv, "claim_step")(keys=script_keys, args=argv)
        self.step = step
        return ClaimResult(code), dict(zip(flat[::2], flat[1::2], strict=True))

    def claim_call(
        self, step: int, now: str, cancel_error: str, worker_id: str, version: str = ""
    ) -> tuple[list[str], list[str | bytes | int]]:
        """KEYS and ARGV of :meth:`claim`'s script (also sent ahead, :mod:`graphq.worker.step.claim`); sets
        ``step``."""
        self.step = step
        member = keys.step_member(self.thread_id, self.run_id, step)
        argv: list[str | bytes | int] = [self.token, self.ttl_ms, step, now, cancel_error, _CANCELED_EVENT]
        argv += [self.member, worker_id, member, version]
        script_keys = [self.run_key, self.key, self.events_key, keys.lease_index(), keys.steps_index()]
        return [*script_keys, keys.webhooks(), keys.webhooks_due()], argv

    @property
    def claim_script(self) -> Script:
        """The claim script, to queue on a pipeline (:meth:`graphcore.backend.lua.Script.queue`; it may not
        be loaded yet)."""
        return script(self.kv, "claim_step")

    def acquire(self) -> bool:
        """Take the lease if nobody holds it; True on success."""
        return bool(self.kv.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def __enter__(self) -> Lease:
        self.move(Phase.HELD)
        _keeper(self.kv, self.heartbeat_s).add(self)
        if self.listener is not None:
            self.listener.held(self)
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        _keeper(self.kv, self.heartbeat_s).discard(self)
        if self.listener is not None and self.phase is not Phase.COMMIT_LATER:
            self.listener.freed(self)

    def limit(self, at: float, stop: Stop, step: int) -> None:
        """Give the step up at ``at`` (``time.time()``): the keeper then sets the cancel token (see
        :meth:`abort`); a supervising process kills this one ``GRAPHQ_KILL_GRACE_S`` later if the step is
        still running, and closes the run as ``stop`` says (R17). ``step``: the thread step being run."""
        self.deadline, self.step_number = (at, stop), step
        if self.listener is not None:
            self.listener.limit(self, at, stop, step)

    def abort(self, stop: Stop) -> None:
        """Give the step up: remember why (the first reason wins) and set the cancel token, so that nodes
        that look at it stop (its :attr:`followers` too); the step job then closes the run as ``stop``
        says."""
        if self.stop is None:
            self.stop = stop
        self.cancel.cancel(self.stop.error.message)
        for follower in list(self.followers):
            follower.abort(stop)

    def dropping(self) -> None:
        """Announce a commit that deletes the lease key in its transaction (call it before sending the
        commit): the keeper may then find the key gone before :meth:`dropped` is called, and that is not a
        lost lease. A commit refused because the lease really was lost raises on its own (its fence). A
        no-op when such a commit was announced already (the step ran again after a transient error)."""
        if self.phase is not Phase.COMMITTING:
            self.move(Phase.COMMITTING)

    def dropped(self) -> None:
        """Record that a commit deleted the lease key in its transaction: stop renewing, skip the release."""
        self.move(Phase.DROPPED)
        _keeper(self.kv, self.heartbeat_s).discard(self)
        if self.listener is not None:
            self.listener.freed(self)

    def commit_later(self) -> None:
        """The step's commit goes in the pipeline in which RQ records the job's success, after the step
        job's function returns (:class:`graphq.worker.step.commit_script.CommitAhead`). Until :meth:`settle`:
        the keeper stops renewing the lease once the step's ``with`` block ends (a worker that never sends the
        commit lets it lapse, R18), the supervising process still has it as held (a child that dies meanwhile
        has its lease lapsed at once; a give-up still finds the step), the commit's deletion of the key is no
        loss, and :meth:`release` gives nothing back."""
        self.move(Phase.COMMIT_LATER)

    def settle(self, committed: bool) -> None:
        """The later commit's reply is in: ``committed``, the commit deleted the key (:meth:`dropped`);
        else the lease is given back if still ours (not when it was left to lapse meanwhile), and no longer
        held."""
        if committed:
            # Else a commit of its own dropped it (an append conflict), or the step was left meanwhile (a
            # cold stop after commit_later: its commit is sent all the same, as the job ends).
            if self.phase in (Phase.COMMIT_LATER, Phase.COMMITTING):
                self.dropped()
            return
        if self.phase not in _OVER:
            self._give_back()
        if self.listener is not None:
            self.listener.freed(self)

    def leave(self) -> None:
        """Leave the lease to lapse: the step's run was left unfinished (neither committed, paused nor ended:
        its ending could not be written), so it must stay where the reaper finds it. From now on the lease
        is not renewed (here nor by a supervising process) and :meth:`release` gives nothing back: its key
        expires within the lease TTL, its entry stays in the lease index, and the reaper continues the run
        (R14), as after a crash. A no-op once the lease is over (dropped, released)."""
        if self.phase in _OVER:
            return
        self.move(Phase.LEFT)
        _keeper(self.kv, self.heartbeat_s).discard(self)
        if self.listener is not None:
            self.listener.freed(self)

    def release(self) -> None:
        """Give the lease back if still ours (a no-op after a commit deleted it, before a later commit's
        reply, :meth:`commit_later`, and once left to lapse, :meth:`leave`; once given back, too)."""
        if self.phase not in _OVER and self.phase is not Phase.COMMIT_LATER:
            self._give_back()

    def renew(self, now: bool) -> tuple[bool, bytes]:
        """One keeper tick: :func:`renew` of this lease (extend it when ``now``, else only look)."""
        return renew(self.kv, self.thread_id, self.run_id, self.token, self.ttl_ms, now)

    def _give_back(self) -> None:
        """``release_lease.lua``: delete the key and its lease index entry if the token is still ours."""
        script(self.kv, "release_lease")(keys=[self.key, keys.lease_index()], args=[self.token, self.member])
        self.move(Phase.RELEASED)


def renew(kv: Any, thread_id: str, run_id: str, token: str, ttl_ms: int, now: bool) -> tuple[bool, bytes]:
    """One ``renew_lease.lua`` call (R18, X1): extend the lease of ``token`` by ``ttl_ms`` when ``now`` (its
    deadline in the lease index with it), else only look. Returns ``(held, the run's cancel field)``:
    ``held`` False when the lease is no longer ``token``'s; the field ``b""`` when no cancel was asked,
    ``b"interrupt"`` when running nodes must stop.

    Raises:
        redis.RedisError: the call failed (the caller tries again at its next tick).
    """
    held, cancel = script(kv, "renew_lease")(
        keys=[keys.lease(thread_id, run_id), keys.run(thread_id, run_id), keys.lease_index()],
        args=[token, ttl_ms, int(now), keys.lease_member(thread_id, run_id)],
    )
    return bool(held), cancel


class _Keeper:
    """The process's lease-renewal thread (daemon), started on first use."""

    def __init__(self, kv: Any, interval_s: float) -> None:
        self.kv = kv
        self.interval_s = interval_s
        self.leases: set[Lease] = set()
        self.lock = threading.Lock()
        threading.Thread(target=self._loop, name="graphq-lease-keeper", daemon=True).start()

    def add(self, lease: Lease) -> None:
        with self.lock:
            self.leases.add(lease)

    def discard(self, lease: Lease) -> None:
        with self.lock:
            self.leases.discard(lease)

    def _loop(self) -> None:
        while True:
            threading.Event().wait(min(self.interval_s, _TICK_S))
            with self.lock:
                leases = list(self.leases)
            for lease in leases:
                self._tick(lease)

    def _tick(self, lease: Lease) -> None:
        if lease.deadline is not None and lease.stop is None and time.time() >= lease.deadline[0]:
            lease.abort(lease.deadline[1])
        due = time.monotonic() >= lease.renew_at
        try:
            held, cancel = lease.renew(due)
        except Exception as exc:  # a transient Redis error: try again at the next tick
            lease.renewals.failed(exc)
            return
        lease.renewals.worked()
        if due:
            lease.renew_at = time.monotonic() + self.interval_s
        if cancel == b"interrupt":
            lease.cancel.cancel("run canceled")
        with self.lock:
            # Still running, yet the token is gone: lost, unless a commit deleted it (see Lease.dropping).
            if not held and lease in self.leases and lease.move(Phase.LOST, only_from=Phase.HELD):
                log.warning("lease %s lost", lease.key, extra=lease.about())
                metrics.lease_lost()
                self.leases.discard(lease)


def held() -> list[Lease]:
    """The leases this process holds now (every keeper's), for the worker's heartbeat."""
    with _keepers_lock:
        keepers = list(_keepers.values())
    found: list[Lease] = []
    for keeper in keepers:
        with keeper.lock:
            found += keeper.leases
    return found


_keepers: dict[int, _Keeper] = {}
_keepers_lock = threading.Lock()


def _keeper(kv: Any, interval_s: float) -> _Keeper:
    """The keeper for this Redis client (one per client per process)."""
    with _keepers_lock:
        keeper = _keepers.get(id(kv))
        if keeper is None:
            keeper = _keepers[id(kv)] = _Keeper(kv, interval_s)
        return keeper


class LeaseListener(Protocol):
    """Told when this process takes and gives back a lease, and of its deadline: the supervising parent
    process of ``graphq worker`` renews leases from outside this process
    (:mod:`graphq.worker.process.supervisor`)."""

    def held(self, lease: Lease) -> None: ...

    def limit(self, lease: Lease, at: float, stop: Stop, step: int) -> None: ...

    def freed(self, lease: Lease) -> None: ...

    def retire(self) -> None: ...


def retire_if_stuck(listener: LeaseListener | None) -> None:
    """After a step: when a node thread abandoned at its timeout is still running (it ignored its cancel
    token, Python cannot stop it), ask the supervisor (``listener``) to replace this process once the job
    ends (G10; a no-op without a supervisor, where the thread just goes on)."""
    if listener is None:
        return
    nodes = [t for t in threading.enumerate() if t.name.startswith(_NODE_THREAD)]
    for thread in nodes:
        thread.join(0.05)  # one that just handed its result over is ending, not stuck
    if any(t.is_alive() for t in nodes):
        listener.retire()


_NODE_THREAD = "graphq-node-"
"""The name prefix of the thread a timed node runs in (:func:`graphcore.engine.threads.start_thread`)."""
