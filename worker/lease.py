"""Leases on running steps (R18, I1): a token in Redis, renewed while nodes run, however long they take.

One keeper thread per process renews every lease this process holds, every ``heartbeat_s`` seconds, so a
step does not pay for starting a thread. A lease whose renewal finds another token (or none) is marked
lost; the step's fenced writes and commit then fail, and nothing it did is committed.
"""

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
        self._dropped = False

    def claim(self, run_key: str, step: int) -> tuple[int, dict[bytes, bytes]]:
        """Read the run and take the lease if the run is still at ``step`` (one round trip).

        Returns:
            ``(code, run hash)``; code 0 = no such run, 1 = stale (finished or at another step),
            2 = another worker holds the lease, 3 = claimed.
        """
        code, flat = script(self.kv, "claim_step")(
            keys=[run_key, self.key], args=[self.token, self.ttl_ms, step]
        )
        return int(code), dict(zip(flat[::2], flat[1::2], strict=True))

    def acquire(self) -> bool:
        """Take the lease if nobody holds it; True on success."""
        return bool(self.kv.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def __enter__(self) -> Lease:
        _keeper(self.kv, self.heartbeat_s).add(self)
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        _keeper(self.kv, self.heartbeat_s).discard(self)

    def dropped(self) -> None:
        """Record that a commit deleted the lease key in its transaction: stop renewing, skip the release."""
        self._dropped = True
        _keeper(self.kv, self.heartbeat_s).discard(self)

    def release(self) -> None:
        """Give the lease back if still ours (a no-op after a commit deleted it)."""
        if not self._dropped:
            script(self.kv, "release_lease")(keys=[self.key], args=[self.token])


class _Keeper:
    """The process's lease-renewal thread (daemon), started on first use."""

    def __init__(self, kv: Any, interval_s: float) -> None:
        self.interval_s = interval_s
        self.leases: set[Lease] = set()
        self.lock = threading.Lock()
        self.renew = script(kv, "renew_lease")
        threading.Thread(target=self._loop, name="graphq-lease-keeper", daemon=True).start()

    def add(self, lease: Lease) -> None:
        with self.lock:
            self.leases.add(lease)

    def discard(self, lease: Lease) -> None:
        with self.lock:
            self.leases.discard(lease)

    def _loop(self) -> None:
        while True:
            threading.Event().wait(self.interval_s)
            with self.lock:
                leases = list(self.leases)
            for lease in leases:
                self._renew(lease)

    def _renew(self, lease: Lease) -> None:
        try:
            ok = self.renew(keys=[lease.key], args=[lease.token, lease.ttl_ms])
        except Exception as exc:  # a transient Redis error: try again at the next beat
            log.warning("lease %s renewal failed: %s", lease.key, exc)
            return
        with self.lock:
            if not ok and lease in self.leases:  # still running, yet the token is gone: lost
                log.warning("lease %s lost", lease.key)
                lease.lost.set()
                self.leases.discard(lease)


_keepers: dict[int, _Keeper] = {}
_keepers_lock = threading.Lock()


def _keeper(kv: Any, interval_s: float) -> _Keeper:
    """The keeper for this Redis client (one per client per process)."""
    with _keepers_lock:
        keeper = _keepers.get(id(kv))
        if keeper is None:
            keeper = _keepers[id(kv)] = _Keeper(kv, interval_s)
        return keeper
