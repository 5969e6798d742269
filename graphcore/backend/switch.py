"""The kill switch (R6): off, new runs are refused and workers take no step; on again, everything goes on.

The switch is cluster-wide and dynamic: one key (:func:`graphcore.keys.switch`, absent = on) that
``graphq disable`` sets and ``graphq enable`` deletes, together with RQ's own suspension key in the same
transaction. A client reads it inside the optimistic transaction that creates runs (its ``WATCH``, in the
same round trip as the threads' active runs), so no run is created after ``disable`` returned. A worker
reads it before each job (:mod:`graphq.worker.process.switch`). ``GRAPHQ_ENABLED=false`` turns one process off
on its own: its clients refuse new runs and its workers take no step, whatever the key says.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from graphcore import keys
from graphcore.backend.runs import now_iso
from graphcore.errors import DisabledError

__all__ = ["Switch", "disable", "enable", "parse", "read", "refuse_if_off"]


@dataclass(frozen=True)
class Switch:
    """The state of the kill switch.

    Attributes:
        on: False once ``graphq disable`` turned it off (cluster-wide).
        reason: what the operator gave with ``--reason`` ("" when none).
        since: when it was turned off (ISO-8601 UTC), "" when on.
    """

    on: bool
    reason: str = ""
    since: str = ""

    def describe(self) -> str:
        """``on``, or ``off since <time> (reason: <text>)``."""
        if self.on:
            return "on"
        reason = f" (reason: {self.reason})" if self.reason else ""
        return f"off since {self.since}{reason}"


def parse(raw: bytes | str | None) -> Switch:
    """The switch from the value of :func:`graphcore.keys.switch` (None: the key is absent, on)."""
    if raw is None:
        return Switch(True)
    try:
        data = json.loads(raw)
    except ValueError:  # written by hand: still off
        data = {}
    if not isinstance(data, dict):
        data = {}
    return Switch(False, str(data.get("reason", "")), str(data.get("since", "")))


def read(kv: Any) -> Switch:
    """The cluster's switch (one GET)."""
    return parse(kv.get(keys.switch()))


def refuse_if_off(raw: bytes | str | None, enabled: bool, what: str = "new runs are refused:") -> None:
    """Refuse new runs when the switch is off: ``raw`` is the value of :func:`graphcore.keys.switch` as
    read, ``enabled`` this process's ``GRAPHQ_ENABLED``; ``what`` starts the message.

    Raises:
        DisabledError: either is off; the message names the switch and how to turn it on.
    """
    if not enabled:
        raise DisabledError(
            f"{what} GRAPHQ_ENABLED=false in this process (the kill switch); unset it or set it to true"
        )
    switch = parse(raw)
    if not switch.on:
        raise DisabledError(
            f"{what} graphq is disabled cluster-wide (the kill switch, `graphq disable`) "
            f"{switch.describe().removeprefix('off ')}; `graphq enable` turns it on again"
        )


def disable(kv: Any, reason: str = "") -> Switch:
    """Turn the switch off for the whole cluster: the graphq key and RQ's suspension, in one transaction.
    Turning it off again keeps the first time, and the reason unless a new one is given (a plain second
    ``graphq disable`` dropped it). Returns the new state."""
    current = read(kv)
    since = current.since if not current.on and current.since else now_iso()
    reason = reason or ("" if current.on else current.reason)
    value = json.dumps({"reason": reason, "since": since})
    with kv.pipeline(transaction=True) as pipe:
        pipe.set(keys.switch(), value)
        pipe.set(keys.rq_suspended(), 1)
        pipe.execute()
    return Switch(False, reason, since)


def enable(kv: Any) -> bool:
    """Turn the switch on again (both keys, one transaction); True when it was off."""
    with kv.pipeline(transaction=True) as pipe:
        pipe.delete(keys.switch())
        pipe.delete(keys.rq_suspended())
        was_off, _ = pipe.execute()
    return bool(was_off)
