"""Owner-token locks: one active instance per cluster of a loop (the reaper, the request-expiry scan, the
retention sweep, a scheduler pass).

A lock is a Redis string holding its owner's random token, with a time-to-live. :meth:`OwnerLock.hold`
takes a free lock or extends the caller's own (compare-and-expire, ``owner_lock.lua``);
:meth:`OwnerLock.release` deletes it only when the caller owns it (compare-and-delete,
``owner_unlock.lua``). A lock owned by another token is never renewed, shortened or deleted, so an instance
whose pass outlived the TTL (another took over meanwhile) cannot take the lock back from the new owner.
"""

from __future__ import annotations

import uuid
from typing import Any

from graphcore.backend.lua import script

__all__ = ["OwnerLock"]


class OwnerLock:
    """An owner-token lock on ``key`` (built in :mod:`graphcore.keys`) with a time-to-live of ``ttl_s``
    seconds (at least 1 ms).

    Attributes:
        key: the lock's Redis key.
        token: this instance's owner token (32 hex digits, random).
        ttl_ms: the time-to-live set by each :meth:`hold`, milliseconds.
    """

    def __init__(self, kv: Any, key: str, ttl_s: float) -> None:
        self.kv = kv
        self.key = key
        self.token = uuid.uuid4().hex
        self.ttl_ms = max(1, int(ttl_s * 1000))

    def hold(self) -> bool:
        """Take the lock when free, or extend it to ``ttl_ms`` when this instance holds it; True while this
        instance holds it, False when another owner does (its lock is left as it is)."""
        return bool(script(self.kv, "owner_lock")(keys=[self.key], args=[self.token, self.ttl_ms]))

    def release(self) -> bool:
        """Delete the lock if this instance holds it; True when it did, False when it was free or another
        owner's (left as it is)."""
        return bool(script(self.kv, "owner_unlock")(keys=[self.key], args=[self.token]))
