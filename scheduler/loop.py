"""The scheduler (K1): one pass per tick over every schedule, on a clock given as a parameter.

Each tick reads the schedules, writes this instance's heartbeat (``keys.scheduler(id)``, with a
time-to-live, indexed in ``keys.schedulers()``: the workflows it can load, the schedules whose workflow it
cannot) and, while it holds the pass lock (an owner-token lock, :class:`graphcore.backend.locks.OwnerLock`,
renewed between batches), makes a pass: read the states of the schedules, plan each
(:func:`graphq.scheduler.plan.plan`), claim the fires in batches (:func:`graphq.scheduler.claim.commit`). The
lock only saves work: two replicas whose passes overlap (a pass longer than the lock's TTL, skewed clocks)
still claim each fire once, because each claim is checked against the state the pass read.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import RedisError

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.locks import OwnerLock
from graphcore.backend.runs import TERMINAL, RunStatus
from graphcore.backend.switch import refuse_if_off
from graphcore.errors import ConfigError, DisabledError, PermanentError, TransientError
from graphcore.settings import Settings
from graphq.scheduler.claim import Batch, Claimed, batches, commit, run_request
from graphq.scheduler.plan import Decision, iso, plan
from graphq.scheduler.schedules import Schedule, ScheduleState, ScheduleStore, problem_text
from graphq.worker.metrics import schedule_fired

__all__ = [
    "BATCH",
    "LOAD_HINT",
    "TICK_MARGIN_S",
    "PassResult",
    "Scheduler",
    "cannot_load",
    "check_settings",
    "instance_id",
    "live_schedulers",
    "not_loaded",
    "to_next_tick",
]

log = logging.getLogger("graphq.scheduler")

BATCH = 200
"""Fires claimed per transaction."""

DELAY_HOOK = "GRAPHQ_SCHEDULER_TEST_PASS_DELAY"
"""Test-only: ``N:S`` makes the Nth pass of this process that has fires to claim (1 = the first) stall S
seconds between renewing the lock and its first claims (a pass longer than the lock's TTL, K1)."""


TICK_MARGIN_S = 0.002
"""How long after each whole interval a tick comes (so that a wait that ends a little early still finds the
fires due at the boundary)."""


def to_next_tick(interval_s: float, now: float) -> float:
    """Seconds from ``now`` (epoch seconds) to the next tick: just past the next whole multiple of
    ``interval_s``. Fires are mostly at whole seconds: a pass starting as they fall due finds them at once,
    where a tick at any phase of the interval finds them up to an interval late (fire lag, P7)."""
    return interval_s - now % interval_s + TICK_MARGIN_S


def check_settings(settings: Settings) -> None:
    """Refuse scheduler settings that contradict each other.

    Raises:
        ConfigError: ``GRAPHQ_SCHEDULER_GRACE_S`` below ``GRAPHQ_SCHEDULER_INTERVAL_S`` (a fire found by the
            next pass, on time, would count missed).
    """
    grace, interval = settings.scheduler_grace_s, settings.scheduler_interval_s
    if grace < interval:
        raise ConfigError(
            f"GRAPHQ_SCHEDULER_GRACE_S ({grace:g}) is below GRAPHQ_SCHEDULER_INTERVAL_S ({interval:g}): "
            "fires found on time by the next pass would count missed; make the grace at least the interval"
        )


LOAD_HINT = "--workflows MODULE or GRAPHQ_WORKFLOWS"
"""How a scheduler loads a workflow's code that is not an entry point of an installed package."""

Read = tuple[list[Schedule], dict[str, str]]
"""The schedules a tick read, and the names of those this process cannot read, with why."""


def cannot_load(unloadable: Mapping[str, str]) -> str:
    """What a scheduler says of the schedules whose workflow it cannot load (``unloadable``: schedule name →
    workflow): ``cannot load workflow 'etl' (schedules a, b): start it with --workflows MODULE or
    GRAPHQ_WORKFLOWS; their fires are recorded missed``; "" for none."""
    if not unloadable:
        return ""
    names: dict[str, list[str]] = {}
    for name, workflow in sorted(unloadable.items()):
        names.setdefault(workflow, []).append(name)
    listed = ", ".join(
        f"workflow {w!r} (schedule{'s' if len(n) > 1 else ''} {', '.join(n)})"
        for w, n in sorted(names.items())
    )
    return f"cannot load {listed}: start it with {LOAD_HINT}; their fires are recorded missed"


def live_schedulers(kv: Any) -> list[dict[str, Any]]:
    """The heartbeat records (:meth:`Scheduler.heartbeat`) of the scheduler instances alive now (whose
    heartbeat has not expired), by id; two reads."""
    ids = sorted(i.decode() for i in kv.zrange(keys.schedulers(), 0, -1))
    beats = kv.mget([keys.scheduler(i) for i in ids]) if ids else []
    return [json.loads(raw) for raw in beats if raw is not None]


def not_loaded(schedule: Schedule, live: Sequence[Mapping[str, Any]]) -> str | None:
    """Why ``schedule``'s fires are not started: the live schedulers (``live``: :func:`live_schedulers`)
    whose heartbeat lists the workflows they load without its workflow. None when every one loads it, when
    none runs, and for a paused schedule (it does not fire)."""
    lacking = [s["id"] for s in live if schedule.workflow not in s.get("workflows", [schedule.workflow])]
    if not lacking or schedule.paused:
        return None
    if len(lacking) == 1:
        who, start = f"scheduler {lacking[0]}", "start it"
    else:
        who, start = f"schedulers {', '.join(lacking)}", "start them"
    return (
        f"{who} cannot load workflow {schedule.workflow!r}: {start} with {LOAD_HINT}; its fires are recorded "
        "missed"
    )


def instance_id() -> str:
    """This process's scheduler id: ``<host>-<pid>-<4 hex>`` (the host is the pod's name on Kubernetes)."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:4]}"


@dataclass
class PassResult:
    """What one pass did: the fires claimed (with their lags), batches refused because another replica
    claimed first, and whether the pass stopped early (the lock was lost)."""

    claimed: list[Claimed] = field(default_factory=list)
    refused: int = 0
    stopped: bool = False


def _delay_for(pass_number: int) -> float:
    """The test hook's delay for this pass, seconds (0 without the hook)."""
    raw = os.environ.get(DELAY_HOOK, "")
    number, _, seconds = raw.partition(":")
    return float(seconds) if number.strip().isdigit() and int(number) == pass_number else 0.0


class Scheduler:
    """Makes passes over the schedules.

    Args:
        client: a client with a step queue (runs are created through it).
        settings: the scheduler settings (``GRAPHQ_SCHEDULER_*``).
        clock: now, epoch seconds (``time.time`` in production; tests pass a simulated clock).
        name: this instance's id (default :func:`instance_id`).
    """

    def __init__(
        self,
        client: Client,
        settings: Settings,
        clock: Callable[[], float] = time.time,
        name: str | None = None,
    ) -> None:
        check_settings(settings)
        self.client = client
        self.kv = client.kv
        self.settings = settings
        self.clock = clock
        self.id = name or instance_id()
        self.store = ScheduleStore(self.kv)
        self.lock = OwnerLock(self.kv, keys.scheduler_lock(), settings.scheduler_lock_ttl_s)
        self.passes = 0
        self.claiming = 0
        """Passes that had fires to claim."""
        self.disabled = False
        """Whether the last pass found graphq disabled (the kill switch), logged once until it is on again."""
        self.problems: dict[str, str] = {}
        """The schedules this instance could not read or plan, with why (each logged once)."""
        self.unloadable: dict[str, str] = {}
        """The schedules (not paused) whose workflow this instance's registry lacks, with that workflow (each
        logged once): their fires are recorded missed (``not started: unknown workflow ...``)."""
        self.started = iso(int(clock() * 1000))
        self.ticked_at = time.time()
        """When the last tick began (real time, epoch seconds; for the health probe)."""

    def heartbeat(self, holding: bool) -> None:
        """Write this instance's heartbeat (JSON: id, host, pid, started, last tick on its clock, whether it
        holds the pass lock, its lock token, ``workflows``: the names it can load, ``problem``:
        :func:`cannot_load` of :attr:`unloadable`, or null), expiring after ``max(10, 3 ×
        GRAPHQ_SCHEDULER_INTERVAL_S)``, and its entry in the index of heartbeats (one round trip)."""
        ttl_ms = int(max(10.0, 3 * self.settings.scheduler_interval_s) * 1000)
        record = {
            "id": self.id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": self.started,
            "tick": iso(int(self.clock() * 1000)),
            "holds_lock": holding,
            "token": self.lock.token,
            "workflows": self.client.registry.names(),
            "problem": cannot_load(self.unloadable) or None,
        }
        now_ms = int(time.time() * 1000)
        with self.kv.pipeline(transaction=True) as pipe:
            pipe.set(keys.scheduler(self.id), json.dumps(record), px=ttl_ms)
            pipe.zadd(keys.schedulers(), {self.id: now_ms + ttl_ms})
            pipe.zremrangebyscore(keys.schedulers(), "-inf", now_ms - ttl_ms)  # expired a TTL ago
            pipe.execute()

    def tick(self) -> PassResult | None:
        """Read the schedules, heartbeat, then a pass if this instance holds (or takes) the pass lock; None
        when another does."""
        self.ticked_at = time.time()
        holding = self.lock.hold()
        found = self._read()
        self.heartbeat(holding)
        return self.run_pass(found) if holding else None

    def look(self) -> str:
        """Read the schedules now for :attr:`unloadable` (not logged: the start line says it); returns
        :func:`cannot_load` of it, "" when Redis does not answer (the ticks look again)."""
        with contextlib.suppress(RedisError, TransientError):
            self._read(quiet=True)
        return cannot_load(self.unloadable)

    def _read(self, quiet: bool = False) -> Read:
        """The schedules and those this process cannot read; :attr:`unloadable` set from them (each one new
        there logged, unless ``quiet``)."""
        bad: dict[str, str] = {}
        schedules = self.store.all(lambda n, e: bad.update({n: problem_text(e)}))
        graphs = self.client.registry.graphs
        found = {s.name: s.workflow for s in schedules if s.workflow not in graphs and not s.paused}
        for name, workflow in found.items():
            if not quiet and self.unloadable.get(name) != workflow:
                log.error(
                    "schedule %s: this scheduler cannot load workflow %r: start it with %s; its fires are "
                    "recorded missed",
                    name,
                    workflow,
                    LOAD_HINT,
                )
        self.unloadable = found
        return schedules, bad

    def run_pass(self, found: Read | None = None) -> PassResult:
        """One pass over every schedule (see the module's docstring); ``found``: the schedules as the tick
        read them (None: read them now)."""
        self.passes += 1
        started = time.perf_counter()
        now_ms = int(self.clock() * 1000)
        result = PassResult()
        planned = self._plan(now_ms, found)
        cap = self.settings.schedule_history_length
        work = batches(planned, BATCH)
        self.claiming += 1 if work else 0
        delay = _delay_for(self.claiming) if work else 0.0
        for batch in work:
            if not self.lock.hold():
                result.stopped = True  # another replica took over (this pass outlived the lock)
                break
            if delay:  # the test hook: a stall between the lock's renewal and the claims
                time.sleep(delay)
                delay = 0.0
            claimed = self._commit(batch, now_ms, started, cap)
            result.claimed += claimed
            result.refused += 0 if claimed else 1
        self._record(result)
        return result

    def _plan(
        self, now_ms: int, found: Read | None = None
    ) -> list[tuple[Schedule, bytes | None, list[Decision]]]:
        """Each schedule (of ``found``, else read now) with the raw state read and the decisions planned from
        it. A schedule that cannot be read or planned here (:meth:`_problems`) is left out."""
        read, unread = found or self._read()
        bad = dict(unread)
        schedules = [s for s in read if not s.paused]
        raws = self.store.states(schedules)
        grace_ms = int(self.settings.scheduler_grace_s * 1000)
        loaded = []
        for schedule, raw in zip(schedules, raws, strict=True):
            try:
                loaded.append((schedule, raw, ScheduleState.load(raw, schedule)))
            except (ValueError, PermanentError) as exc:
                bad[schedule.name] = problem_text(exc)
        active = self._active([s for s, _, _ in loaded], [st for _, _, st in loaded])
        planned = []
        for (schedule, raw, state), busy in zip(loaded, active, strict=True):
            try:
                planned.append((schedule, raw, plan(schedule, state, now_ms, grace_ms, busy)))
            except (ValueError, PermanentError) as exc:  # croniter's errors are ValueErrors
                bad[schedule.name] = problem_text(exc)
        self._problems(bad, now_ms)
        return planned

    def _problems(self, bad: dict[str, str], now_ms: int) -> None:
        """Log each schedule of ``bad`` (name: why it cannot be read or planned here) once, and record it in
        its history once (missed, with the reason); the pass goes on without them. One that is fine again
        is forgotten (logged again if it breaks again)."""
        for name, why in bad.items():
            if self.problems.get(name) == why:
                continue
            self.problems[name] = why
            log.error("schedule %s: cannot be read or planned here, not fired: %s", name, why)
            note = f"not planned: {why}"
            self.store.note_problem(name, note, iso(now_ms), self.settings.schedule_history_length)
        for name in [n for n in self.problems if n not in bad]:
            del self.problems[name]

    def _commit(self, batch: Batch, now_ms: int, started: float, cap: int) -> list[Claimed]:
        """Commit ``batch`` (one transaction). When the client refuses a run of it (an unknown workflow here,
        an input the workflow no longer takes: nothing was written), again with the refused fires recorded
        missed with the reason (they would be refused at every fire: the schedule needs fixing)."""
        try:
            return commit(self.client, batch, now_ms, started, self.clock, cap)
        except DisabledError:
            raise  # every run refused alike: the loop logs it, the fires wait
        except PermanentError:
            return commit(self.client, self._refused(batch), now_ms, started, self.clock, cap)

    def _refused(self, batch: Batch) -> Batch:
        """``batch`` with the runs the client refuses recorded missed, with the reason."""
        for schedule, _, decisions in batch.items:
            for decision in (d for d in decisions if d.run):
                try:
                    self.client.check(run_request(schedule, decision.fire_ms, decision.run_id or ""))
                except PermanentError as exc:
                    fire = iso(decision.fire_ms)
                    log.error("schedule %s: fire %s not started: %s", schedule.name, fire, exc)
                    decision.run, decision.outcome, decision.note = False, "missed", f"not started: {exc}"
        return batch

    def _active(self, schedules: list[Schedule], states: list[ScheduleState]) -> list[bool]:
        """Whether each state's latest run has not ended (its chain followed), read in one round trip; not
        read (False) for a schedule whose overlap policy is ``allow``, which does not look."""
        read = [
            s.overlap != "allow" and bool(st.last_run and st.last_thread)
            for s, st in zip(schedules, states, strict=True)
        ]
        pipe = self.kv.pipeline(transaction=False)
        for state in (st for st, r in zip(states, read, strict=True) if r):
            run_key = keys.run(state.last_thread or "", state.last_run or "")
            pipe.hmget(run_key, ["status", "continued_by_run_id"])
        replies = iter(pipe.execute())
        found = []
        for r in read:
            if not r:
                found.append(False)
                continue
            status, continued = next(replies)
            found.append(self._running(status, continued))
        return found

    def _running(self, status: bytes | None, continued: bytes | None) -> bool:
        if status is None:
            return False  # gone (retention)
        if RunStatus(status.decode()) not in TERMINAL:
            return True
        if continued is None:
            return False
        last = self.client.chain(continued.decode())[-1]
        return not last.terminal

    def _record(self, result: PassResult) -> None:
        """Count the fires by outcome, with lags (:func:`graphq.worker.metrics.schedule_fired`); log the
        pass."""
        for claimed in result.claimed:
            schedule_fired(claimed.decision.outcome, claimed.lag_s)
        if result.refused:
            log.warning(
                "pass %d: %d batch(es) of fires were claimed by another replica meanwhile (this pass "
                "outlived its lock or raced another's); nothing written for them",
                self.passes,
                result.refused,
            )
        elif result.claimed:
            log.info("pass %d: %d fires claimed", self.passes, len(result.claimed))

    def guarded_tick(self) -> None:
        """:meth:`tick`, logging what stops it instead of raising: Redis away (each time: the next tick tries
        again), or graphq disabled (the kill switch: logged once when a pass finds it off, and once when a
        pass finds it on again; while off, one GET a pass checks it)."""
        try:
            self.tick()
        except DisabledError as exc:
            if not self.disabled:
                log.warning("scheduler: %s; fires wait (caught up by their policy once on)", exc)
            self.disabled = True
            return
        except (RedisError, TransientError) as exc:  # Redis away: the next tick tries again
            log.warning("scheduler: pass failed, tried again next tick: %s", exc)
            return
        if self.disabled:  # a pass without fires to claim does not meet the switch: look at it
            try:
                refuse_if_off(self.kv.get(keys.switch()), self.settings.enabled)
            except (DisabledError, RedisError, TransientError):
                return
            self.disabled = False
            log.info("scheduler: graphq is enabled again; fires start (missed ones by their catch-up policy)")

    def run(self, stop: threading.Event) -> None:
        """Tick at every whole ``GRAPHQ_SCHEDULER_INTERVAL_S`` of real time (:func:`to_next_tick`) until
        ``stop`` is set; then release the lock (only if this instance holds it) and delete the heartbeat."""
        interval = self.settings.scheduler_interval_s
        try:
            while not stop.is_set():
                self.guarded_tick()
                stop.wait(to_next_tick(interval, time.time()))
        finally:
            with contextlib.suppress(RedisError, TransientError):  # Redis gone: the lock and beat expire
                self.lock.release()
                self.kv.delete(keys.scheduler(self.id))
                self.kv.zrem(keys.schedulers(), self.id)
