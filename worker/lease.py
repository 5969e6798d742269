"""Leases on running steps (R18, I1): a token in Redis, renewed by a heartbeat thread while nodes run."""

from __future__ import annotations

import logging
import threading
import uuid
from types import TracebackType
from typing import Any

from graphcore import keys
from graphcore.lua import script

__all__ = ["Lease"]

log = logging.getLogger("graphq.lease")


class Lease:
    """A worker's time-bounded claim on a run's current step.

    Args:
        kv: redis-py client.
        thread_id, run_id: the run.
        ttl_s: lease time-to-live in seconds; a dead worker's lease lapses after this.
        heartbeat_s: renewal interval in seconds (below ``ttl_s``).
    """

    def __init__(self, kv: Any, thread_id: str, run_id: str, ttl_s: float, heartbeat_s: float) -> None:
        self.kv = kv
        self.key = keys.lease(thread_id, run_id)
        self.token = uuid.uuid4().hex
        self.ttl_ms = int(ttl_s * 1000)
        self.heartbeat_s = heartbeat_s
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._dropped = False
        self._renew = script(kv, "renew_lease")
        self._release = script(kv, "release_lease")

    def acquire(self) -> bool:
        """Take the lease if nobody holds it; True on success."""
        return bool(self.kv.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                if not self._renew(keys=[self.key], args=[self.token, self.ttl_ms]):
                    if self._stop.is_set():  # dropped by a commit meanwhile, not lost
                        return
                    log.warning("lease %s lost", self.key)
                    self.lost.set()
                    return
            except Exception as exc:  # a transient Redis error: try again at the next beat
                log.warning("lease %s renewal failed: %s", self.key, exc)

    def __enter__(self) -> Lease:
        self._thread = threading.Thread(target=self._beat, name="graphq-lease", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def dropped(self) -> None:
        """Record that a commit deleted the lease key in its transaction: stop renewing, skip the release."""
        self._dropped = True
        self._stop.set()

    def release(self) -> None:
        """Give the lease back if still ours (a no-op after a commit deleted it)."""
        if self._dropped:
            return
        self._release(keys=[self.key], args=[self.token])
