"""Housekeeping loops: cluster-wide work done every few seconds by one active instance (R13, R18, K2, K3).

Each loop is a :class:`Loop` (a name, an interval and a ``tick``) run in a daemon thread of every process
that calls :func:`start_housekeeping` (each ``graphq worker`` supervisor, a bare worker process,
``graphq reaper``, ``graphq scheduler``). Every ``interval_s`` a loop takes or keeps its own owner-token lock
(:class:`graphcore.backend.locks.OwnerLock` on :func:`graphcore.keys.housekeeping_lock`) and, while it holds
it, ticks: one active instance per loop in the cluster, whatever the number of processes. Instances may
race anyway (a tick that outlives the lock's time-to-live): every tick acts through scripts that check
again before they act, so a race produces one action. On ``stop`` each loop gives its lock back (only its
own token's).

The loops (:func:`loops`):

- ``reaper`` every ``GRAPHQ_REAPER_INTERVAL_S`` (:mod:`graphq.worker.housekeeping.reaper`; lock TTL at most
the lease TTL);
- ``request-expiry`` every ``GRAPHQ_REQUEST_EXPIRATION_SCAN_INTERVAL_S``
(:mod:`graphq.worker.housekeeping.expiry`, R13);
- ``retention`` every ``GRAPHQ_RETENTION_SWEEP_INTERVAL_S`` (:func:`graphcore.backend.ttl.sweep_tick`, K3);
- ``webhooks`` every ``GRAPHQ_WEBHOOK_INTERVAL_S`` (:mod:`graphq.worker.housekeeping.webhooks`; lock TTL the
time a pass's POST may take, ``GRAPHQ_WEBHOOK_TIMEOUT_S``, more).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphcore import keys
from graphcore.backend.connection import FailureStreak
from graphcore.backend.locks import OwnerLock
from graphcore.backend.ttl import sweep_tick
from graphcore.settings import Settings
from graphq.worker.housekeeping.expiry import RequestExpiry
from graphq.worker.housekeeping.reaper import Reaper, lock_ttl_s
from graphq.worker.housekeeping.webhooks import Webhooks

__all__ = ["Loop", "loops", "reap_now", "run_loop", "start_housekeeping"]

log = logging.getLogger("graphq.housekeeping")


@dataclass(frozen=True)
class Loop:
    """One housekeeping loop.

    Attributes:
        name: its name, also its lock's (:func:`graphcore.keys.housekeeping_lock`).
        interval_s: seconds between ticks (> 0).
        tick: one pass; called only while this instance holds the loop's lock; its result is returned by
            :meth:`once` (an exception is logged and the loop goes on at the next interval).
        lock_ttl_s: the lock's time-to-live, seconds; None: twice the interval and a second (a dead active
            instance is replaced within about two intervals).
    """

    name: str
    interval_s: float
    tick: Callable[[], object]
    lock_ttl_s: float | None = None

    def lock(self, kv: Any) -> OwnerLock:
        """A new owner-token lock for this loop (a new token)."""
        ttl = self.lock_ttl_s if self.lock_ttl_s is not None else 2 * self.interval_s + 1
        return OwnerLock(kv, keys.housekeeping_lock(self.name), ttl)

    def once(self, kv: Any) -> tuple[bool, object]:
        """One tick if no other instance is active: ``(True, tick's result)``, else ``(False, None)``; the
        lock is given back after."""
        lock = self.lock(kv)
        if not lock.hold():
            return False, None
        try:
            return True, self.tick()
        finally:
            lock.release()


def loops(kv: Any, settings: Settings) -> list[Loop]:
    """The housekeeping loops of ``settings``, in the order they start (see the module docstring)."""
    reaper = Reaper(kv, settings)
    expiry = RequestExpiry(kv, settings, reaper.queue)
    return [
        Loop("reaper", settings.reaper_interval_s, reaper.sweep, lock_ttl_s(settings)),
        Loop("request-expiry", settings.request_expiration_scan_interval_s, expiry.scan),
        Loop(
            "retention", settings.retention_sweep_interval_s, lambda: sweep_tick(kv, settings, reaper.queue)
        ),
        Loop(
            "webhooks",
            settings.webhook_interval_s,
            Webhooks(kv, settings).deliver_due,
            2 * settings.webhook_interval_s + settings.webhook_timeout_s + 1,
        ),
    ]


def reap_now(kv: Any, settings: Settings) -> None:
    """One reaper pass now (unless another instance's is active, :meth:`Loop.once`). ``graphq run`` on its
    own embedded Redis makes it as it starts: no worker looked after the local data's leases since the
    last ``graphq run``, and its own reaper loop ticks only after ``GRAPHQ_REAPER_INTERVAL_S``.

    Raises:
        redis.exceptions.RedisError: Redis failed.
    """
    next(loop for loop in loops(kv, settings) if loop.name == "reaper").once(kv)


def run_loop(kv: Any, loop: Loop, stop: threading.Event) -> None:
    """Tick ``loop`` every ``interval_s`` while this instance holds its lock, until ``stop`` is set; then give
    the lock back."""
    lock = loop.lock(kv)
    passes = FailureStreak(log, f"{loop.name} pass")  # Redis away or full: logged once, not once a pass
    try:
        while not stop.wait(loop.interval_s):
            try:
                if lock.hold():
                    loop.tick()
            except Exception as exc:  # Redis away, a bad record: try again at the next tick
                passes.failed(exc)
            else:
                passes.worked()
    finally:
        try:
            lock.release()
        except Exception as exc:
            log.warning("%s: could not release its lock: %s", loop.name, exc)


def start_housekeeping(kv: Any, settings: Settings, stop: threading.Event) -> list[threading.Thread]:
    """Start every loop of :func:`loops` in a daemon thread (``graphq-<name>``) of this process, until
    ``stop`` is set; returns the started threads (join them after setting ``stop``)."""
    threads = []
    for loop in loops(kv, settings):
        thread = threading.Thread(
            target=run_loop, args=(kv, loop, stop), name=f"graphq-{loop.name}", daemon=True
        )
        thread.start()
        threads.append(thread)
    return threads
