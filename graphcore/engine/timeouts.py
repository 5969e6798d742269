"""LangGraph's node timeout forms: ``add_node(..., timeout=...)`` and ``set_node_defaults(timeout=...)`` take
seconds (a number), a ``timedelta`` or a :class:`TimeoutPolicy`; graphq keeps one number of seconds per try
(``NodeSpec.timeout_s``, enforced by :mod:`graphcore.engine.step`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from graphcore.errors import ConfigError

__all__ = ["Timeout", "TimeoutPolicy", "timeout_seconds"]


@dataclass(frozen=True)
class TimeoutPolicy:
    """LangGraph's ``TimeoutPolicy``: ``run_timeout`` caps each try of a node (seconds or a ``timedelta``).

    graphq has no progress-based timeout: an ``idle_timeout`` is refused (a ConfigError naming it) where the
    policy is given; ``refresh_on`` only matters with one.
    """

    run_timeout: float | timedelta | None = None
    idle_timeout: float | timedelta | None = None
    refresh_on: Literal["auto", "heartbeat"] = "auto"


Timeout = float | timedelta | TimeoutPolicy | None
"""What a node's ``timeout`` may be given as."""


def timeout_seconds(where: str, value: Timeout) -> float | None:
    """``value`` as seconds per try, or None for no timeout.

    Args:
        where: who gave it, for messages (``"node 'a'"``).
        value: seconds, a ``timedelta``, a :class:`TimeoutPolicy` (its ``run_timeout``) or None.

    Raises:
        ConfigError: an ``idle_timeout``; a value that is not one of those; seconds not above 0 (or NaN).
    """
    if isinstance(value, TimeoutPolicy):
        if value.idle_timeout is not None:
            raise ConfigError(
                f"{where}: TimeoutPolicy(idle_timeout=...) is not supported by graphq (no progress signals); "
                "use run_timeout, a cap on each try"
            )
        value = value.run_timeout
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
