"""Ctrl-C while a command works a run in this process (``graphq run``, ``runs answer``, ``runs resume``).

The first Ctrl-C (SIGINT, or SIGTERM) says at once on stderr what happens, cancels the run with
``interrupt`` (:meth:`graphcore.backend.client.Client.cancel`: the running nodes' cancel tokens are set, the
step in flight ends and is committed, the run ends Canceled with its checkpoints kept) and lets the
in-process worker take no further job; the command then ends with exit 130, naming ``graphq runs resume``.
A second one ends the process at once (exit 130), saying how the run is left (read from Redis as it stops):
when its step was in flight here, that step is cut and the run, left Running, is crash recovery's (its lease
lapses and a reaper acts on it), as with a killed worker; when the run had already ended (or no step of it
was in flight here), the line says so, as the last line of a first Ctrl-C does.

With a pool of worker processes beside the in-process worker (``--processes N``, :attr:`CtrlC.pool`), the
first Ctrl-C drains the pool too (its steps in flight finish), and a second one SIGKILLs its processes
before the command ends (a step of the run they held is cut, as the in-process one is).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

import redis
from rich.console import Console
from rq import SimpleWorker

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.runs import RunRecord, RunStatus
from graphq.cli.errors import EXIT_INTERRUPTED
from graphq.worker.process.supervisor import Supervisor

__all__ = ["CtrlC", "how_left"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_CANCEL_WAIT_S = 10.0
"""How long the command waits for its cancel request (Redis calls, retried) before it reads the run."""
_SECOND_WAIT_S = 1.0
"""How long a second Ctrl-C waits for the first one's cancel request before it stops the process."""
_READ_TIMEOUT_S = 2.0
"""How long a second Ctrl-C waits for Redis to read how the run is left (one try, no retry)."""


class CtrlC:
    """This command's handling of Ctrl-C while it works ``run`` (see the module's doc).

    Args:
        client: the command's client (the cancel request goes through it, from a thread of its own).
        run: the run the command works.
        console: where the first Ctrl-C's line goes (stderr).
        url: the Redis URL of ``client``: a second Ctrl-C reads the run on a connection of its own (the
            interrupted frame may hold the lock of the client's connection pool).
    """

    def __init__(self, client: Client, run: RunRecord, console: Console, url: str) -> None:
        self.client, self.run, self.console = client, run, console
        self._reader: Any = redis.Redis.from_url(
            url, socket_timeout=_READ_TIMEOUT_S, socket_connect_timeout=_READ_TIMEOUT_S
        )  # connects at its first command
        self.in_flight: str | None = None
        """The run whose step the in-process worker executes now (None between jobs)."""
        self.stop = threading.Event()
        """Set at the first Ctrl-C: the in-process worker takes no further job."""
        self.asked = False
        """Whether the cancel request was recorded (the run ended Canceled, or will after its step)."""
        self._canceling: threading.Thread | None = None
        self.pool: Supervisor | None = None
        """The command's pool of worker processes, once started (None: the in-process worker only)."""

    @contextlib.contextmanager
    def installed(self) -> Iterator[CtrlC]:
        """Handle SIGINT and SIGTERM here while the block runs (the previous handlers are put back)."""
        saved = {s: signal.getsignal(s) for s in _SIGNALS}
        for s in _SIGNALS:
            signal.signal(s, self._on_signal)
        try:
            yield self
        finally:
            for s, handler in saved.items():
                signal.signal(s, handler)

    def worker_class(self) -> type[SimpleWorker]:
        """The in-process worker's class: RQ's ``SimpleWorker`` that leaves this command's signal handlers
        in place and takes no job once :attr:`stop` is set."""
        stop, ctrl_c = self.stop, self

        class ForegroundWorker(SimpleWorker):
            def _install_signal_handlers(self) -> None:
                """None: Ctrl-C is this command's (:class:`CtrlC`), not RQ's warm and cold shutdown."""

            def execute_job(self, job: Any, queue: Any) -> None:
                ctrl_c.in_flight = job.args[0] if job.args else None  # step_job(run_id, thread_id, step)
                try:
                    super().execute_job(job, queue)
                finally:
                    ctrl_c.in_flight = None

            def dequeue_job_and_maintain_ttl(
                self, timeout: int | None, max_idle_time: int | None = None
            ) -> Any:
                if stop.is_set():
                    return None
                return super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)

        return ForegroundWorker

    def wait(self) -> None:
        """Wait until the cancel request of the first Ctrl-C is done (at most 10 s); a no-op before it."""
        if self._canceling is not None:
            self._canceling.join(_CANCEL_WAIT_S)

    def settle(self) -> None:
        """Once the in-process worker has stopped: end the run Canceled now if its cancel request is still
        pending. A cancel ends a running run at its next claim; when the step in flight committed and queued
        the next one, which this worker no longer takes, nothing else would claim it on the local data. A
        step that another worker holds (a configured Redis) keeps the request: that worker ends the run."""
        if self.asked:
            self._request_cancel()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.stop.is_set():
            self._exit_now()
        self.stop.set()
        if self.pool is not None:
            self.pool.drain()
        # Not here: a handler must not take the locks (Redis pool, console) the interrupted frame may hold.
        self._canceling = threading.Thread(target=self._cancel, name="graphq-cancel", daemon=True)
        self._canceling.start()

    def _cancel(self) -> None:
        self.asked = self._request_cancel()  # first: a second Ctrl-C waits for it (:meth:`_exit_now`)
        self.console.print(
            f"stopping: canceling run {self.run.id} after its step in flight (its nodes are asked to stop); "
            "Ctrl-C again to stop now",
            markup=False,
        )

    def _request_cancel(self) -> bool:
        """Ask for the run's cancel (``interrupt``); whether that changed anything. A failure is printed."""
        try:
            return self.client.try_cancel(self.run.id, interrupt=True).changed
        except Exception as exc:
            why = f"could not cancel run {self.run.id}: {type(exc).__name__}: {exc}"
            self.console.print(why, markup=False)
            return False

    def _exit_now(self) -> None:
        """End the process now, saying how the run is left (one read on this handler's own connection; no
        lock of the interrupted frame: only a write to stderr). The first Ctrl-C's cancel request is waited
        for, at most :data:`_SECOND_WAIT_S`: a second Ctrl-C right after the first would otherwise leave a
        run that crash recovery continues instead of ending it canceled."""
        if self._canceling is not None:
            self._canceling.join(_SECOND_WAIT_S)
        held: set[str] = set()
        if self.pool is not None:
            held = self.pool.holding()
            self.pool.kill()
        try:
            record = RunRecord.from_hash(self._reader.hgetall(keys.run(self.run.thread_id, self.run.id)))
        except Exception as exc:
            left = (
                f"run {self.run.id} could not be read ({type(exc).__name__}: {exc}); see `graphq runs show`"
            )
        else:
            cut = (self.in_flight == self.run.id or self.run.id in held) and not record.terminal
            left = self._cut() if cut else how_left(record, self.asked)
            if self.in_flight not in (None, self.run.id):  # another run's step, run by this process
                left += (
                    f"; run {self.in_flight}'s step in flight here was cut: crash recovery continues it once "
                    "its lease lapses"
                )
        with contextlib.suppress(OSError):
            os.write(2, f"error: interrupted again: stopped at once; {left}\n".encode())
        os._exit(EXIT_INTERRUPTED)  # not sys.exit: the interpreter would wait for the node threads

    def _cut(self) -> str:
        """How the run is left when its step in flight here is cut."""
        then = "ends it canceled (checkpoints kept; `graphq runs resume` continues it)"
        if not self.asked:
            then = "continues it"
        return (
            f"run {self.run.id} is left running, its step in flight cut: once its lease lapses "
            f"(GRAPHQ_LEASE_TTL_S), crash recovery {then}: the reaper of any worker on this Redis (on the "
            f"local data: the next `graphq run {self.run.workflow}`)"
        )


def how_left(record: RunRecord, asked: bool) -> str:
    """How ``record``'s run is left when a command working it stops at Ctrl-C with no step of it in flight
    in this process, and how it goes on; ``asked``: whether its cancel request was recorded."""
    where = f"run {record.id} is {record.status.value} after {record.step} step(s)"
    if record.status == RunStatus.CANCELED:
        return f"{where}, checkpoints kept; `graphq runs resume {record.id}` continues it"
    if record.terminal:
        return f"{where} (it ended in the step in flight)"
    if asked:  # another worker holds its step (a configured Redis), or its next step waits in the queue
        return (
            f"{where}; cancel requested: the worker holding or taking its step ends it canceled after "
            "that step"
        )
    return (
        f"{where}; its checkpoints and next step job are kept, and any worker on this Redis "
        f"continues it (on the local data: the next `graphq run {record.workflow}`)"
    )
