"""The types of the CLI's numeric options, each bounded on both sides: a negative, zero (where it means
nothing), huge or NaN value exits 2 with one line naming the option and its range, e.g. ``graphq runs list:
Invalid value for '--limit' / '-n': 0 is not in the range 1<=x<=100000`` (click's message, one line by
:mod:`graphq.cli.errors`)."""

from __future__ import annotations

import math
from typing import Any

import click

from graphcore.backend.client import MAX_LIMIT
from graphcore.settings import MAX_PROCESSES

__all__ = ["LIMIT", "MAX_WAIT_S", "PORT", "PROCESSES", "WAIT_S", "FiniteFloatRange"]

LIMIT = click.IntRange(1, MAX_LIMIT)
"""``--limit N`` of a listing: 1 to :data:`~graphcore.backend.client.MAX_LIMIT` rows, as the client takes
(Redis refused a count beyond 64 bits with a traceback)."""

PROCESSES = click.IntRange(1, MAX_PROCESSES)
"""How many worker processes a command runs (``--concurrency``, ``--processes``)."""

PORT = click.IntRange(0, 65535)
"""A TCP port to serve on; 0: none."""

MAX_WAIT_S = 10 * 365 * 86_400
"""Longest wait a ``--timeout`` gives, seconds (ten years: GRAPHQ_THREAD_TTL_S's ceiling)."""


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange that refuses NaN too (NaN compares false with both bounds, so click takes it)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{number} is not in the range {self._describe_range()}.", param, ctx)
        return number


WAIT_S = FiniteFloatRange(0, MAX_WAIT_S, min_open=True)
"""``--timeout S`` of a wait: above 0 (0 would give up before looking), at most :data:`MAX_WAIT_S`."""
