"""Test-only hooks of ``graphq scheduler``, read from the environment (never set in production).

``GRAPHQ_SCHEDULER_TEST_CLOCK=SIM,REAL,SPEED[,SKEW]``: the scheduler's clock runs from epoch ``SIM`` at
real epoch ``REAL``, ``SPEED`` times as fast, ``SKEW`` seconds off (two processes given the same anchor
share a simulated clock; a skew makes one run ahead). ``GRAPHQ_SCHEDULER_TEST_PASS_DELAY=N:S``: see
:data:`graphq.scheduler.loop.DELAY_HOOK`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

__all__ = ["CLOCK_HOOK", "clock_from_env"]

CLOCK_HOOK = "GRAPHQ_SCHEDULER_TEST_CLOCK"


def clock_from_env() -> Callable[[], float] | None:
    """The simulated clock of :data:`CLOCK_HOOK` (epoch seconds), or None when it is not set."""
    raw = os.environ.get(CLOCK_HOOK, "").strip()
    if not raw:
        return None
    sim, real, speed, *rest = (float(x) for x in raw.split(","))
    skew = rest[0] if rest else 0.0
    return lambda: sim + (time.time() - real) * speed + skew
