"""The request-expiry scan (R13, K2): a housekeeping loop (:mod:`graphq.worker.housekeeping.loops`) that
closes the runs whose human request passed its deadline.

Every ``GRAPHQ_REQUEST_EXPIRATION_SCAN_INTERVAL_S`` the active instance reads at most
``GRAPHQ_MAX_REQUEST_EXPIRATIONS_PER_SCAN`` due runs from the deadline index (a backlog drains over several
scans; an empty index costs one ZRANGEBYSCORE) and closes each Canceled with ``RequestExpired`` naming the
request and its deadline (:func:`graphcore.backend.expiry.expire`), then hands its thread to the next
waiting run and gives its admission slot back like every other end
(:func:`graphcore.backend.threads.hand_over`; a crash in between is finished by the reaper, which hands
over threads whose active run ended).
"""

from __future__ import annotations

import logging
from typing import Any

from graphcore import keys
from graphcore.backend.expiry import Due, due, expire
from graphcore.backend.reaper import server_ms
from graphcore.backend.runs import RunStore
from graphcore.backend.threads import hand_over
from graphcore.settings import Settings
from graphq.worker import logs
from graphq.worker.metrics import requests_expired
from graphq.worker.queue import RQStepQueue

__all__ = ["RequestExpiry"]

log = logging.getLogger("graphq.expiry")


class RequestExpiry:
    """The scan of one process (see the module docstring); ``queue`` hands threads on."""

    def __init__(self, kv: Any, settings: Settings, queue: RQStepQueue | None = None) -> None:
        self.kv = kv
        self.limit = settings.max_request_expirations_per_scan
        self.queue = queue or RQStepQueue(kv, settings)
        self.runs = RunStore(kv)

    def scan(self) -> list[str]:
        """One scan: the ids of the runs it closed (Canceled, their request expired), earliest deadline
        first. Safe with several scanners at once: each run is closed once."""
        now = server_ms(self.kv)
        closed = []
        for entry in due(self.kv, now, self.limit):
            error = expire(self.kv, self.runs, entry, now)
            if error is None:
                continue
            closed.append(entry.run_id)
            log.warning("run %s: canceled, %s", entry.run_id, error.message, extra=self._about(entry))
            hand_over(self.kv, self.runs, self.queue, entry.thread_id, entry.run_id)
        if closed:
            requests_expired(len(closed))
        return closed

    def _about(self, entry: Due) -> dict[str, Any]:
        """The log context of a closed run (one HMGET: its workflow and tenant; a scan closes few)."""
        workflow, tenant = self.kv.hmget(keys.run(entry.thread_id, entry.run_id), "workflow", "tenant")
        known = {"workflow": workflow, "tenant": tenant}
        text = {k: v.decode() if isinstance(v, bytes) else v for k, v in known.items()}
        return logs.about(run=entry.run_id, thread=entry.thread_id, **text)
