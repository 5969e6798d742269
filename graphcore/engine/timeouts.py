"""LangGraph's node timeout forms: ``add_node(..., timeout=...)`` and ``set_node_defaults(timeout=...)`` take
seconds (a number), a ``timedelta`` or a :class:`TimeoutPolicy`; graphq keeps a cap of seconds per try
(``NodeSpec.timeout_s``) and an :class:`IdleTimeout` (``NodeSpec.idle``), both enforced by
:mod:`graphcore.engine.step` and :mod:`graphcore.engine.async_step`.

An idle timeout ends a try that goes that long without progress (:class:`Progress`), as LangGraph's
``idle_timeout``. Progress is each chunk the node writes to its stream (``get_stream_writer()``, a
``writer`` parameter, ``runtime.stream_writer``), each event of the LangChain calls the node makes (a
model's start, tokens and end, a tool's, a runnable's: a callback handler in the try's config, with
langchain-core installed), and each ``runtime.heartbeat()``; with ``refresh_on="heartbeat"``, heartbeats
only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from graphcore.errors import ConfigError
from graphcore.types import TimeoutPolicy

__all__ = [
    "IdleTimeout",
    "Progress",
    "Timeout",
    "TimeoutPolicy",
    "node_timeouts",
    "timeout_seconds",
]


Timeout = float | timedelta | TimeoutPolicy | None
"""What a node's ``timeout`` may be given as."""


@dataclass(frozen=True)
class IdleTimeout:
    """A node's idle timeout: ``seconds`` without progress end a try; ``refresh_on`` as
    :class:`TimeoutPolicy`'s."""

    seconds: float
    refresh_on: Literal["auto", "heartbeat"] = "auto"


class Progress:
    """When one try last made progress, against its :class:`IdleTimeout`."""

    def __init__(self, idle: IdleTimeout) -> None:
        self.idle = idle
        self.last = time.monotonic()

    def heartbeat(self) -> None:
        """``runtime.heartbeat()``: progress now."""
        self.last = time.monotonic()

    def wrote(self) -> None:
        """The try wrote to its stream: progress unless only heartbeats count."""
        if self.idle.refresh_on == "auto":
            self.last = time.monotonic()

    def left_s(self) -> float:
        """Seconds until the try is idle for too long (0 or less: it is)."""
        return self.last + self.idle.seconds - time.monotonic()


def node_timeouts(where: str, value: Timeout) -> tuple[float | None, IdleTimeout | None]:
    """``value`` as a cap in seconds per try and an idle timeout, each None when not set.

    Args:
        where: who gave it, for messages (``"node 'a'"``).
        value: seconds, a ``timedelta``, a :class:`TimeoutPolicy` or None.

    Raises:
        ConfigError: a value that is not one of those; seconds not above 0 (or NaN); ``refresh_on`` not
            ``"auto"`` or ``"heartbeat"``.
    """
    if not isinstance(value, TimeoutPolicy):
        return timeout_seconds(where, value), None
    if value.refresh_on not in ("auto", "heartbeat"):
        raise ConfigError(
            f"{where}: TimeoutPolicy refresh_on must be 'auto' or 'heartbeat' (got {value.refresh_on!r})"
        )
    idle_s = timeout_seconds(f"{where} (idle_timeout)", value.idle_timeout)
    idle = None if idle_s is None else IdleTimeout(idle_s, value.refresh_on)
    return timeout_seconds(where, value.run_timeout), idle


def timeout_seconds(where: str, value: float | timedelta | None) -> float | None:
    """``value`` as seconds, or None for no timeout.

    Args:
        where: who gave it, for messages (``"node 'a'"``).
        value: seconds, a ``timedelta`` or None.

    Raises:
        ConfigError: a value that is not one of those; seconds not above 0 (or NaN).
    """
    if value is None:
        return None
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(
            f"{where}: timeout must be seconds, a timedelta or a TimeoutPolicy (got {type(value).__name__})"
        )
    if not value > 0:  # also rejects NaN
        raise ConfigError(f"{where}: timeout must be above 0 s (got {value})")
    return float(value)
