"""``graphq worker``: a supervising parent process and its worker children (R17, R18).

The parent takes no jobs. Each child is an RQ worker (:class:`SupervisedWorker`) that tells the parent,
through a pipe, which lease it holds (when a step claims it and when the step commits or gives it back)
and when the step must end (its run's deadline, or its nodes' timeouts). The parent

- **renews the leases** of its children while the child process is alive and not stopped (its state in
  ``/proc/<pid>/stat``): a node that holds its process's GIL for longer than the lease TTL (a C extension,
  a long regex) starves that process's keeper thread, never the parent. A stopped or dead child's lease
  is not renewed and lapses (the reaper then takes over).
- **kills a child whose step outlives its deadline** by ``GRAPHQ_KILL_GRACE_S``: the child's own keeper
  sets the step's cancel token at the deadline; a node that ignores it and blocks is ended with its
  process. The parent closes the run (Canceled after a run timeout, Failed after a node timeout, the error
  naming the setting) and starts a new child in its place. No process is forked per step.
- **drains on SIGTERM**: the signal goes to every child, which stops taking jobs at once and finishes its
  step. A step still running after ``GRAPHQ_DRAIN_TIMEOUT_S`` is given up: SIGUSR1 makes the child set its
  nodes' cancel tokens and close the run Canceled (checkpoints kept, a continuation queued); a child that
  has not ended ``_GIVE_UP_GRACE_S`` later is SIGKILLed and the parent closes the run the same way.
- **stops at once on a second SIGTERM or on SIGINT** (cold stop): the same give-up at once (SIGUSR2).
- **replaces a child that dies** (the OOM killer, a crash in C) once it had started taking jobs; the
  lease it held lapses at once (``lapse_lease.lua``), so the reaper continues its run at its next pass
  rather than after the lease's TTL. A child that dies before it takes jobs (a broken start) is not
  replaced; the supervisor then ends with status 1. A child left with a node thread running past its
  node timeout (it ignored its cancel token; Python cannot stop a thread) takes no more jobs and is
  replaced too ("retire").
- **runs the housekeeping loops** (:mod:`graphq.worker.housekeeping.loops`: the reaper, the request-expiry
scan)
  for its
  pod: the children do not, since a child killed while it holds the reaper lock would stall every reaper
  for the lock's time-to-live just when its own run needs one.

``graphq run --processes N`` supervises N-1 children from a thread of its own process
(:meth:`Supervisor.start`): they serve only the run's workflow, the command stops them with
:meth:`Supervisor.drain` (or :meth:`Supervisor.kill`), and they are SIGKILLed with the command.

Exit status: 0 when every step in flight finished; 1 when one had to be given up (drain timeout or cold
stop) or a child failed. The process ends within ``GRAPHQ_DRAIN_TIMEOUT_S`` + ``_GIVE_UP_GRACE_S`` + about
a second after the first SIGTERM, whatever its nodes do; RQ's warm shutdown, which waits without bound, is
not relied on. Closing a run is fenced by the step's lease token
(:func:`graphq.worker.step.handover.abandon`), so when a child and the parent both try, one closes it.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection, wait
from pathlib import Path
from types import FrameType
from typing import Any

from rq import SimpleWorker

from graphcore.backend.connection import FailureStreak, connect
from graphcore.backend.embedded import exit_with_parent
from graphcore.backend.reaper import Lapsed
from graphcore.backend.runs import RunError, RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import Settings, get_settings, quiet_unknown_variables
from graphq.worker import logs, metrics
from graphq.worker.health import publish_status
from graphq.worker.housekeeping.loops import start_housekeeping
from graphq.worker.housekeeping.reaper import Reaper, forget_worker
from graphq.worker.process import liveness
from graphq.worker.process.dequeue import StopAwareQueue
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.step.context import DRAIN
from graphq.worker.step.handover import Stop, abandon, lapse
from graphq.worker.step.lease import Lease, renew
from graphq.worker.step.split import renew_batch

__all__ = ["SupervisedWorker", "Supervisor", "cold_stop", "drain_stop"]

log = logging.getLogger("graphq.supervisor")

_TICK_S = 0.1
"""How often the parent looks at its children, leases and timers, seconds."""

_GIVE_UP_GRACE_S = 2.0
"""After asking a child to give up its step (SIGUSR1/SIGUSR2), how long the parent waits before SIGKILL."""

_SOCKET_TIMEOUT_S = 2.0
"""The parent's Redis reads time out after this, seconds (a partition must not stop its timers)."""

_GAVE_UP = 3
"""A child's exit status after it gave its step up on SIGUSR1/SIGUSR2 (closed the run itself)."""

_LIVE_S = 2.0
"""``/healthz`` fails when the supervisor's loop has not run for this long, seconds (it runs every tick)."""

_STOPPED_STATES = frozenset("TtZXx")
"""``/proc/<pid>/stat`` states of a process that cannot run: stopped, traced, zombie, dead."""


def drain_stop(settings: Settings) -> Stop:
    """How a step still running when the drain timeout ends is closed (continued: not the run's fault)."""
    message = (
        f"the worker was stopped (SIGTERM) and the step did not end within "
        f"GRAPHQ_DRAIN_TIMEOUT_S={settings.drain_timeout_s:g} s"
    )
    return Stop(RunStatus.CANCELED, RunError(type="WorkerShutdown", message=message), resume=True)


def cold_stop() -> Stop:
    """How a step running at a cold stop (a second SIGTERM, or SIGINT) is closed."""
    message = "the worker was stopped at once (a second SIGTERM, or SIGINT) while the step ran"
    return Stop(RunStatus.CANCELED, RunError(type="WorkerShutdown", message=message), resume=True)


# --- the child: an RQ worker that reports its leases --------------------------------------------------


class _Channel:
    """The child's side of the pipe: a :class:`~graphq.worker.step.lease.LeaseListener` (the step job's thread
    calls it; a lock keeps messages whole)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.lock = threading.Lock()
        self.current: Lease | None = None
        """The step's lease this process holds (what a give-up gives up)."""
        self.batches: dict[str, Lease] = {}
        """The leases of the batches of split steps this process runs, by token."""

    def _send(self, message: tuple[Any, ...]) -> None:
        with self.lock, contextlib.suppress(OSError):  # OSError: the parent is gone (we exit with it)
            self.conn.send(message)

    def held(self, lease: Lease) -> None:
        if not lease.of_step:  # a batch of a split step: renewed here too, nothing else
            self.batches[lease.token] = lease
            self._send(("hold-batch", lease.key, lease.run_key, lease.token, lease.ttl_ms))
            return
        self.current = lease
        self._send(("hold", lease.thread_id, lease.run_id, lease.token, lease.ttl_ms))

    def limit(self, lease: Lease, at: float, stop: Stop, step: int) -> None:
        error = stop.error.model_dump_json()
        self._send(("limit", lease.token, at, stop.status.value, error, stop.resume, step))

    def ready(self, worker_id: str) -> None:
        self._send(("ready", worker_id))

    def retire(self) -> None:
        """A node thread outlived its timeout here: take no more jobs; the supervisor starts a new process."""
        if SupervisedWorker.current is not None and not SupervisedWorker.current._stop_requested:
            log.warning("a timed-out node is still running in this process: it is replaced after this job")
            SupervisedWorker.current._stop_requested = True
            self._send(("retire",))

    def freed(self, lease: Lease) -> None:
        if self.batches.pop(lease.token, None) is not None:
            self._send(("free-batch", lease.token))
        elif self.current is lease:
            self.current = None
            self._send(("free", lease.token))


class SupervisedWorker(SimpleWorker):
    """RQ's ``SimpleWorker`` under a supervisor: SIGTERM stops taking jobs (the step in flight goes on; later
    SIGTERMs change nothing: the parent escalates), SIGINT is ignored (Ctrl-C reaches the parent, which
    decides), SIGUSR1 gives the step up after the drain timeout, SIGUSR2 at a cold stop."""

    queue_class = StopAwareQueue
    channel: _Channel | None = None
    current: SupervisedWorker | None = None
    """The worker of this process (one per child)."""
    gave_up = False
    """Set when a step was running as this worker was asked to give it up."""

    def _install_signal_handlers(self) -> None:  # RQ calls it as its work loop starts: it is ready
        SupervisedWorker.current = self
        StopAwareQueue.start(self.connection)
        if self.channel is not None:
            self.channel.ready(self.name)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, self._warm_stop)
        signal.signal(signal.SIGUSR1, self._give_up)
        signal.signal(signal.SIGUSR2, self._give_up)

    _stopping = False
    _in_dequeue = False

    def dequeue_job_and_maintain_ttl(self, timeout: int | None, max_idle_time: int | None = None) -> Any:
        """RQ's dequeue, unless a stop was asked for (None: the work loop ends)."""
        if self._stop_requested:
            return None
        StopAwareQueue.begin()
        self._in_dequeue = True
        try:
            return super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)
        finally:
            self._in_dequeue = False

    def _warm_stop(self, signum: int, frame: FrameType | None) -> None:
        """Take no job from now on. A pop waiting for one ends at once, and a job it took goes back to its
        queue (:class:`graphq.worker.process.dequeue.StopAwareQueue`); between pops, holding no job (RQ's
        heartbeat, its sleep while Redis is away), the dequeue ends at once: SystemExit, which RQ passes on
        (its StopRequested is an Exception, which its maintenance code may swallow). RQ's own warm shutdown
        raises anywhere in the dequeue, which dropped a job popped just before."""
        if not self._stopping:
            self._stopping = self._stop_requested = True
            DRAIN.request_drain()  # the step in flight sees runtime.drain_requested
            StopAwareQueue.stop()
            self.handle_warm_shutdown_request()  # type: ignore[no-untyped-call]
        if self._in_dequeue and StopAwareQueue.may_end_by_raising():
            raise SystemExit(0)

    def _give_up(self, signum: int, frame: FrameType | None) -> None:
        lease = self.channel.current if self.channel is not None else None
        stop = drain_stop(get_settings()) if signum == signal.SIGUSR1 else cold_stop()
        if lease is not None:
            SupervisedWorker.gave_up = True
            # Due now: the keeper thread gives the step up at its next tick (within 0.5 s). Not here: a
            # signal handler must not take the locks of the cancel token the interrupted frame may hold.
            lease.deadline = (0.0, stop)
        for batch in list(self.channel.batches.values()) if self.channel is not None else []:
            batch.deadline = (0.0, stop)  # a helper's batch: left, its unfinished tasks run elsewhere
        self._warm_stop(signum, frame)  # a handler may run before SIGTERM's (they run by signal number)


@dataclass(frozen=True)
class _ChildSpec:
    """What a child is told as it starts (the rest of its settings it reads from the environment)."""

    burst: bool
    log_level: str
    parent_pid: int
    redis_url: str | None
    """The parent's Redis URL (an embedded server's is in no variable)."""
    workflows: tuple[str, ...] | None
    """The workflows it serves (None: every one it loads)."""
    log_levels: tuple[tuple[str, str], ...]
    """Levels of named loggers, over ``log_level``."""
    parent_death: int
    """The signal it gets when the parent (its thread that started it) ends."""
    take_new_runs: bool
    """The parent's ``GRAPHQ_TAKE_NEW_RUNS`` (``graphq run`` sets it off for a pinned run's pool)."""


def _child(conn: Connection, spec: _ChildSpec) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent(spec.parent_pid, spec.parent_death)  # a SIGKILLed parent must not leave workers
    quiet_unknown_variables()  # the supervisor has warned about them
    if spec.redis_url:
        os.environ["GRAPHQ_REDIS_URL"] = spec.redis_url
    os.environ["GRAPHQ_TAKE_NEW_RUNS"] = "true" if spec.take_new_runs else "false"
    get_settings.cache_clear()
    settings = get_settings()
    logs.configure(spec.log_level, settings.log_format, settings.redis_url)
    for name, level in spec.log_levels:
        logging.getLogger(name).setLevel(level)
    if os.environ.get(metrics.MULTIPROC_ENV):  # the parent serves /metrics: record into its directory
        metrics.enable()
    channel = _Channel(conn)
    liveness.REAPER_HERE = False  # the parent runs the reaper
    SupervisedWorker.channel = channel
    registry = Registry.load(settings.workflows.split(","))
    if spec.workflows is not None:
        registry = registry.only(spec.workflows)
    try:
        with contextlib.suppress(SystemExit):
            run_worker(
                burst=spec.burst,
                registry=registry,
                log_level=spec.log_level,
                worker_class=SupervisedWorker,
                listener=channel,
            )
    finally:  # no step from here on: a give-up the parent asks for now must not kill the process. Python
        # puts its handled signals back to the default (terminate) as the interpreter finalizes; ignored
        # ones stay ignored.
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)
    if SupervisedWorker.gave_up:
        sys.exit(_GAVE_UP)


# --- the parent ----------------------------------------------------------------------------------------


@dataclass
class _Held:
    """A lease a child holds, as the child reported it."""

    thread_id: str
    run_id: str
    token: str
    ttl_ms: int
    renew_at: float
    deadline: float | None = None
    stop: Stop | None = None
    step: int | None = None
    renewals: FailureStreak = field(init=False)
    """The renewals' failures (Redis away or full): logged once a streak, not once a tick."""

    def __post_init__(self) -> None:
        self.renewals = FailureStreak(log, f"renewal of run {self.run_id}'s lease", self.about)

    def about(self) -> dict[str, Any]:
        """``extra=`` for a log line about this lease's run (:func:`graphq.worker.logs.about`)."""
        return logs.about(run=self.run_id, thread=self.thread_id)


@dataclass
class _HeldBatch:
    """A batch of a split step a child runs, as the child reported it (its lease is renewed here too)."""

    key: str
    """The split's record (the batch's lease key)."""
    run_key: str
    token: str
    ttl_ms: int
    renew_at: float


@dataclass
class _Slot:
    """One child process and what the parent knows of it."""

    proc: Any
    conn: Connection
    held: _Held | None = None
    batches: dict[str, _HeldBatch] = field(default_factory=dict)
    """The batches of split steps it runs, by token."""
    give_up_at: float | None = None
    """When the parent asked it to give its step up (monotonic), or None."""
    give_up: Stop | None = None
    had_step: bool = False
    """Whether it held a lease when it was asked to give its step up."""
    killed_for: Stop | None = None
    replace: bool = False
    done: bool = False
    ready: bool = False
    """Whether it got as far as taking jobs (a child that dies before is not replaced)."""
    worker_id: str | None = None
    """Its worker id (RQ's worker name), once ready."""
    beat_at: float = 0.0
    """When its worker record is renewed next (monotonic)."""


def process_state(pid: int) -> str:
    """The state letter of process ``pid`` (``/proc/<pid>/stat``: R, S, D, T stopped, Z zombie, ...);
    ``X`` when it is gone. Without ``/proc``: ``R`` while the process exists."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return "X"
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return "X"
        return "R"
    return stat.rsplit(")", 1)[1].split()[0]


class Supervisor:
    """The parent of ``graphq worker``: ``concurrency`` worker children, their leases and their shutdown.

    Args:
        kv: redis-py client of the parent (lease renewals, closing abandoned runs); its socket reads are
            bounded (a renewal or a close must not hang the loop that also kills and drains).
        settings: the settings (the children read theirs from the same environment, but for
            ``settings.redis_url``, which they are given).
        concurrency: how many children, at least 1.
        burst: the children stop when their queues are empty.
        log_level: the children's log level (``WARNING``, ...).
        workflows: the workflows the children serve; None: every one they load.
        log_levels: levels of named loggers in the children, over ``log_level``.
        parent_death: the signal a child gets when this process (or the thread that supervises) ends:
            SIGTERM, a drain; SIGKILL, at once.
        housekeeping: run the housekeeping loops here (False: another worker of this process does).
    """

    def __init__(
        self,
        kv: Any,
        settings: Settings,
        concurrency: int,
        *,
        burst: bool = False,
        log_level: str = "WARNING",
        workflows: Sequence[str] | None = None,
        log_levels: Mapping[str, str] | None = None,
        parent_death: int = signal.SIGTERM,
        housekeeping: bool = True,
    ) -> None:
        self.kv = kv
        kv.connection_pool.connection_kwargs["socket_timeout"] = _SOCKET_TIMEOUT_S
        kv.connection_pool.disconnect()
        self.settings = settings
        self.concurrency = concurrency
        self.burst = burst
        self.log_level = log_level
        self.workflows = None if workflows is None else tuple(workflows)
        self.log_levels = tuple((log_levels or {}).items())
        self.parent_death = parent_death
        self.housekeeping = housekeeping
        self._drain_asked = False
        self.mp = multiprocessing.get_context("spawn")
        self.slots: list[_Slot] = []
        self.signals: list[int] = []
        self.draining_at: float | None = None
        self.cold = False
        self.gave_up = False
        self.failed: list[int] = []

    # signals are only recorded in the handler; the loop acts on them
    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signals.append(signum)

    def run(self) -> int:
        """Supervise in this process's main thread, SIGTERM and SIGINT its stops (see the module's doc),
        until every child has ended; returns the exit status."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        return self.work()

    def start(self) -> threading.Thread:
        """Supervise from a new thread of this process (signals are the process's own: stop the children
        with :meth:`drain` or :meth:`kill`); returns the thread, which ends once every child has ended
        (its failures are logged)."""
        thread = threading.Thread(target=self.work, name="graphq-pool", daemon=True)
        thread.start()
        return thread

    def work(self) -> int:
        """Start the children and supervise them until they have all ended; returns the exit status."""
        self.slots = [self._start() for _ in range(self.concurrency)]
        stop_housekeeping = threading.Event()
        housekeeping = (
            start_housekeeping(self.kv, self.settings, stop_housekeeping) if self.housekeeping else []
        )
        try:
            self._loop()
        finally:
            stop_housekeeping.set()
            for thread in housekeeping:
                thread.join(timeout=5)
        failed = [c for c in self.failed if c not in (0, -signal.SIGTERM)]
        if failed:
            log.error("%d worker process(es) exited with an error: %s", len(failed), failed)
        return 1 if (self.gave_up or failed) else 0

    def drain(self) -> None:
        """Stop as at a SIGTERM: the children take no more jobs and finish their steps in flight (within
        ``GRAPHQ_DRAIN_TIMEOUT_S``); idempotent (a second SIGTERM would stop them at once). Safe in a signal
        handler (it only records the request)."""
        if not self._drain_asked:
            self._drain_asked = True
            self.signals.append(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL every child now, for a process that ends at once: their steps in flight are cut (their
        leases lapse and crash recovery acts). Safe in a signal handler (no lock)."""
        for pid in self.children():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def holding(self) -> set[str]:
        """The runs whose steps the children hold now (as they reported them)."""
        return {s.held.run_id for s in self.slots if not s.done and s.held is not None}

    ticked = 0.0
    """When the loop last ran (monotonic; 0: not yet)."""
    notify: Callable[[], None] | None = None
    """Called when draining starts (the status file for ``graphq health --ready`` is rewritten)."""

    def alive(self) -> bool:
        """Liveness (``/healthz``): the loop ran within the last 2 s (not Redis: an outage restarts no
        pod)."""
        return time.monotonic() - self.ticked < _LIVE_S

    def ready(self) -> bool:
        """Readiness (``/readyz``, with :meth:`alive`): not draining, and Redis answers PING."""
        return self.draining_at is None and bool(self.kv.ping())

    def loop_at(self) -> float:
        """When the loop last ran, seconds since the epoch (now, before it started)."""
        return time.time() - (time.monotonic() - self.ticked) if self.ticked else time.time()

    def children(self) -> list[int]:
        """The pids of the worker processes running now."""
        return [s.proc.pid for s in self.slots if not s.done and s.proc.pid is not None]

    def _loop(self) -> None:
        while not all(s.done for s in self.slots):
            self.ticked = time.monotonic()
            self._handle_signals()
            live = [s for s in self.slots if not s.done]
            ready = wait([s.conn for s in live] + [s.proc.sentinel for s in live], timeout=_TICK_S)
            for slot in self.slots:
                if not slot.done and slot.conn in ready:
                    self._read(slot)
            now = time.monotonic()
            for i, slot in enumerate(self.slots):
                if slot.done:
                    continue
                if not slot.proc.is_alive():
                    self._read(slot)
                    self._ended(i, slot)
                    continue
                self._renew(slot, now)
                self._beat(slot, now)
                self._check_deadline(slot)
                self._check_give_up(slot, now)
            self._check_drain(now)

    def _start(self) -> _Slot:
        recv, send = self.mp.Pipe(duplex=False)
        spec = _ChildSpec(
            self.burst,
            self.log_level,
            os.getpid(),
            self.settings.redis_url,
            self.workflows,
            self.log_levels,
            self.parent_death,
            self.settings.take_new_runs,
        )
        proc = self.mp.Process(target=_child, args=(send, spec), name="graphq-worker")
        # Ctrl-C is the parent's to act on: a child is born with SIGINT blocked (its Python starts up without
        # a KeyboardInterrupt traceback for a Ctrl-C in the first second; it ignores SIGINT once started).
        # multiprocessing's resource tracker first: starting it, start() would unblock SIGINT here.
        resource_tracker.ensure_running()
        unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            proc.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
        send.close()
        return _Slot(proc, recv)

    def _read(self, slot: _Slot) -> None:
        try:
            while slot.conn.poll():
                self._message(slot, slot.conn.recv())
        except (EOFError, OSError):
            pass

    def _message(self, slot: _Slot, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "hold":
            _, thread_id, run_id, token, ttl_ms = message
            interval = self.settings.heartbeat_interval_s
            slot.held = _Held(thread_id, run_id, token, ttl_ms, time.monotonic() + interval)
        elif kind == "limit" and slot.held is not None and slot.held.token == message[1]:
            _, _, at, status, error, resume, step = message
            slot.held.deadline = at
            slot.held.stop = Stop(RunStatus(status), RunError.model_validate_json(error), resume)
            slot.held.step = step
        elif kind == "free" and slot.held is not None and slot.held.token == message[1]:
            slot.held = None
        elif kind == "hold-batch":
            _, key, run_key, token, ttl_ms = message
            interval = self.settings.heartbeat_interval_s
            slot.batches[token] = _HeldBatch(key, run_key, token, ttl_ms, time.monotonic() + interval)
        elif kind == "free-batch":
            slot.batches.pop(message[1], None)
        elif kind == "ready":
            slot.ready, slot.worker_id = True, message[1]
        elif kind == "retire":
            slot.replace = True

    def _renew(self, slot: _Slot, now: float) -> None:
        self._renew_batches(slot, now)
        held = slot.held
        if held is None or now < held.renew_at:
            return
        if process_state(slot.proc.pid) in _STOPPED_STATES:
            return  # a stopped process must lose its lease
        try:
            renew(self.kv, held.thread_id, held.run_id, held.token, held.ttl_ms, True)
        except Exception as exc:  # a transient Redis error: try again at the next tick (logged once)
            held.renewals.failed(exc)
            return
        held.renewals.worked()
        held.renew_at = now + self.settings.heartbeat_interval_s

    def _renew_batches(self, slot: _Slot, now: float) -> None:
        """Renew the leases of the batches a live, running child runs (a stopped one's lapse: the batch is
        claimed again elsewhere); a failure is left to the next tick and the child's own keeper."""
        due = [b for b in slot.batches.values() if now >= b.renew_at]
        if not due or process_state(slot.proc.pid) in _STOPPED_STATES:
            return
        for batch in due:
            try:
                renew_batch(self.kv, batch.key, batch.run_key, batch.token, batch.ttl_ms, True)
            except Exception as exc:
                log.debug("renewal of batch %s: %s", batch.token, exc)
                continue
            batch.renew_at = now + self.settings.heartbeat_interval_s

    def _beat(self, slot: _Slot, now: float) -> None:
        """Renew a live child's worker record (:func:`graphq.worker.process.liveness.renew_worker`), as its
        leases are renewed here: a node holding the GIL stops the child's own heartbeat thread, and the reaper
        then removed a busy, healthy worker from graphq's and RQ's registries. A stopped process (SIGSTOP) is
        not renewed: it drops out, as its lease does."""
        if slot.worker_id is None or now < slot.beat_at:
            return
        if process_state(slot.proc.pid) in _STOPPED_STATES:
            return
        slot.beat_at = now + self.settings.heartbeat_interval_s
        try:
            liveness.renew_worker(self.kv, slot.worker_id, self.settings.lease_ttl_s)
        except Exception as exc:  # Redis away: the child's own heartbeat, or the next renewal, writes it
            log.debug("worker %s: could not renew its record: %s", slot.worker_id, exc)

    def _check_deadline(self, slot: _Slot) -> None:
        held = slot.held
        if held is None or held.deadline is None or held.stop is None or slot.killed_for is not None:
            return
        if time.time() < held.deadline + self.settings.kill_grace_s:
            return
        log.warning(
            "run %s: step past its deadline; killing worker process %s",
            held.run_id,
            slot.proc.pid,
            extra=held.about(),
        )
        slot.killed_for = held.stop.killed(slot.proc.pid, self.settings.kill_grace_s)
        slot.replace = self.draining_at is None
        slot.proc.kill()

    def _check_give_up(self, slot: _Slot, now: float) -> None:
        late = slot.give_up_at is not None and now >= slot.give_up_at + _GIVE_UP_GRACE_S
        if late and slot.killed_for is None:
            slot.killed_for = slot.give_up
            slot.proc.kill()

    def _handle_signals(self) -> None:
        while self.signals:
            signum = self.signals.pop(0)
            if signum == signal.SIGTERM and self.draining_at is None:
                # drain(): the command that owns the pool says what happens itself
                why, level = ("drain", logging.INFO) if self._drain_asked else ("SIGTERM", logging.WARNING)
                log.log(level, "%s: stopping; steps in flight get %gs", why, self.settings.drain_timeout_s)
                self.draining_at = time.monotonic()
                self._signal_all(signal.SIGTERM)
                if self.notify is not None:
                    self.notify()
            elif not self.cold:
                log.warning("stopping at once (%s)", signal.Signals(signum).name)
                self.cold = True
                if self.draining_at is None:
                    self.draining_at = time.monotonic()
                    self._signal_all(signal.SIGTERM)
                self._ask_give_up(signal.SIGUSR2, cold_stop())

    def _check_drain(self, now: float) -> None:
        if self.draining_at is None or self.cold:
            return
        if now >= self.draining_at + self.settings.drain_timeout_s:
            self._ask_give_up(signal.SIGUSR1, drain_stop(self.settings))

    def _ask_give_up(self, signum: int, stop: Stop) -> None:
        """Ask each child that holds a step to give it up (``signum``); every child still there is killed
        ``_GIVE_UP_GRACE_S`` later. An idle child is not signalled: the SIGTERM it had stops it, and a second
        signal right behind the first could reach one of its other threads, leaving its main thread
        asleep in its pop until the kill (an idle pool took 2.2 s to stop at Ctrl-C, 5 times in 8)."""
        now = time.monotonic()
        for slot in self.slots:
            if slot.done or slot.give_up_at is not None:
                continue
            slot.give_up_at, slot.give_up, slot.had_step = now, stop, slot.held is not None
            if slot.had_step and slot.proc.is_alive():
                os.kill(slot.proc.pid, signum)

    def _signal_all(self, signum: int) -> None:
        for slot in self.slots:
            if not slot.done and slot.proc.is_alive():
                os.kill(slot.proc.pid, signum)

    def _abandon(self, held: _Held, stop: Stop) -> None:
        """Close the run of a step whose process was killed (fenced by its lease token: a no-op when the
        process closed it first). Redis unreachable: the lease lapses, and the reaper acts on it."""
        try:
            abandon(self.kv, self.settings, held.thread_id, held.run_id, held.token, stop, held.step)
        except Exception as exc:
            why = "run %s: could not close it (%s); its lease lapses for the reaper"
            log.error(why, held.run_id, exc, extra=held.about())

    def _ended(self, index: int, slot: _Slot) -> None:
        slot.proc.join()
        metrics.process_dead(slot.proc.pid)
        slot.done = True
        slot.conn.close()
        code, held = slot.proc.exitcode, slot.held
        if code != 0:  # a clean exit removed its records itself
            self._forget(slot)
        self._lapse_batches(slot)
        if held is not None and slot.killed_for is not None:
            self._abandon(held, slot.killed_for)
            self.gave_up = self.gave_up or slot.had_step
        elif held is not None:  # it died (OOM killer, a crash in C): the reaper continues its run
            log.warning(
                "worker process %s died (%s) holding run %s",
                slot.proc.pid,
                code,
                held.run_id,
                extra=held.about(),
            )
            self._lapse(held)
        elif code == _GAVE_UP:
            self.gave_up = True
        crashed = slot.killed_for is None and code not in (0, _GAVE_UP, -signal.SIGTERM, None)
        if slot.killed_for is not None and slot.had_step:
            self.gave_up = True
        if crashed and (self.burst or self.draining_at is not None or not slot.ready):
            self.failed.append(code if code is not None else 1)  # a broken start is not retried
        elif crashed:
            slot.replace = True
        if slot.replace and self.draining_at is None:
            self.slots[index] = self._start()

    def _lapse_batches(self, slot: _Slot) -> None:
        """A child ended holding batches of split steps: their leases lapse now (claimed again at once, their
        unfinished tasks run elsewhere), not after their time-to-live."""
        for batch in slot.batches.values():
            try:
                renew_batch(self.kv, batch.key, batch.run_key, batch.token, 0, True)
            except Exception as exc:  # Redis away: the lease lapses after its time-to-live
                log.debug("batch %s left to lapse: %s", batch.token, exc)
        slot.batches.clear()

    def _forget(self, slot: _Slot) -> None:
        """A child that died leaves the worker registries now (`graphq workers` stops listing it), not once
        its heartbeat expires."""
        if slot.worker_id is None:
            return
        try:
            forget_worker(self.kv, slot.worker_id)
        except Exception as exc:  # the reaper removes it once its heartbeat expires
            log.warning("worker %s: could not remove it from the registries: %s", slot.worker_id, exc)

    def _lapse(self, held: _Held) -> None:
        """A dead child's lease lapses now, and its run is reaped at once (continued as the reaper would,
        :meth:`graphq.worker.housekeeping.reaper.Reaper.reap`), not at the reaper's next pass nor after the
        lease's TTL."""
        try:
            deadline_ms = lapse(self.kv, held.thread_id, held.run_id, held.token)
            if deadline_ms:
                reaper = Reaper(self.kv, self.settings)
                reaper.reap(Lapsed(held.thread_id, held.run_id, deadline_ms))
                reaper.recover()
        except Exception as exc:  # the lease lapses after its TTL, and the reaper's pass acts on it
            why = "run %s: could not continue it now (%s); the reaper acts once its lease lapses"
            log.warning(why, held.run_id, exc, extra=held.about())


def supervise(
    concurrency: int,
    *,
    burst: bool = False,
    log_level: str = "WARNING",
    kv: Any = None,
    metrics_port: int | None = None,
    workflows: Sequence[str] = (),
) -> int:
    """Run ``graphq worker``: a supervisor and its ``concurrency`` children; returns the exit status.

    ``metrics_port``: serve ``/metrics`` (every process's metrics, summed, and the queue depth of
    ``workflows``), ``/healthz`` and ``/readyz`` there (:mod:`graphq.worker.metrics`); None: no endpoint.

    Raises:
        ConfigError: ``metrics_port`` cannot be listened on.
    """
    settings = get_settings()
    client = kv if kv is not None else connect(settings.redis_url or "")
    supervisor = Supervisor(client, settings, concurrency, burst=burst, log_level=log_level)
    with _observed(supervisor, metrics_port, workflows):
        code = supervisor.run()
    sys.stdout.flush()
    return code


@contextlib.contextmanager
def _observed(supervisor: Supervisor, port: int | None, workflows: Sequence[str]) -> Iterator[None]:
    """While the supervisor runs: its status file for ``graphq health`` (:mod:`graphq.worker.health`) and,
    with a
    port, the metrics endpoint (multiprocess mode in a private directory, removed after)."""
    settings = supervisor.settings
    directory = metrics.start_multiprocess() if port is not None else None
    server = None
    try:
        if port is not None:
            cluster = metrics.cluster_collector(supervisor.kv, settings, workflows)
            server = metrics.serve(port, supervisor.ready, supervisor.alive, collectors=[cluster])
        draining = lambda: supervisor.draining_at is not None  # noqa: E731
        interval = settings.heartbeat_interval_s
        status = publish_status(
            "worker",
            interval,
            draining,
            supervisor.loop_at,
            supervisor.children,
            redis_url=settings.redis_url,
        )
        with status as now:
            supervisor.notify = now
            yield
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
        if directory is not None:
            metrics.stop_multiprocess(directory)
