"""Cancel tokens (C7, X1, G10): how a running node learns that it should stop early.

A run has one token; each task gets a child token, so a node timeout can cancel one task while a run
cancel reaches every task (and every subgraph) at once. Cancellation is cooperative: a node checks
``get_cancel_token().cancelled`` (or calls :meth:`CancelToken.raise_if_cancelled`) between units of work;
code blocked in an external call does not stop.
"""

from __future__ import annotations

import threading
import time

from graphcore.errors import Cancelled

__all__ = ["CancelToken"]

_POLL_S = 0.05
"""How often a chained token looks at its parents while waiting, seconds."""


class CancelToken:
    """A one-way flag with a reason, optionally chained to a parent token.

    Args:
        parent: a token whose cancellation also cancels this one (a task's token has the run's).
    """

    def __init__(self, parent: CancelToken | None = None) -> None:
        self._event = threading.Event()
        self._reason = ""
        self.parent = parent

    def cancel(self, reason: str = "canceled") -> None:
        """Set the flag (idempotent: the first reason is kept)."""
        if not self._event.is_set():
            self._reason = reason
            self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether this token or one of its parents was cancelled."""
        return self._event.is_set() or (self.parent is not None and self.parent.cancelled)

    @property
    def reason(self) -> str:
        """Why it was cancelled ("" when it was not)."""
        if self._event.is_set():
            return self._reason
        return self.parent.reason if self.parent is not None else ""

    def wait(self, timeout_s: float) -> bool:
        """Sleep up to ``timeout_s`` seconds, waking early on cancellation; returns :attr:`cancelled`."""
        deadline = time.monotonic() + timeout_s
        while not self.cancelled:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._event.wait(min(_POLL_S, left) if self.parent is not None else left)
        return self.cancelled

    def raise_if_cancelled(self) -> None:
        """Raise :class:`~graphcore.errors.Cancelled` when cancelled (a BaseException: ``except
        Exception`` in a node cannot swallow it)."""
        if self.cancelled:
            raise Cancelled(self.reason)
