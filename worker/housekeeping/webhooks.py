"""The ``webhooks`` housekeeping loop: POST the webhook deliveries that are due
(:mod:`graphcore.backend.webhooks`).

Every ``GRAPHQ_WEBHOOK_INTERVAL_S`` the active instance claims due deliveries one at a time (each held for
three times ``GRAPHQ_WEBHOOK_TIMEOUT_S``: a deliverer that dies mid-POST leaves it due again after that)
and POSTs each one's summary (:meth:`Webhooks.summary`) to its URL. A 2xx answer delivers it; anything else
is retried after a back-off, then given up as a dead letter. A webhook never changes its run; the URL's
secret parts (a password, the query) are never logged, nor ``GRAPHQ_WEBHOOK_SECRET``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, replace
from typing import Any

import httpx

from graphcore.backend.client import Client, at_breakpoint
from graphcore.backend.connection import retry_transient
from graphcore.backend.reaper import server_ms
from graphcore.backend.runs import TERMINAL, RunRecord, RunStatus
from graphcore.backend.webhooks import Delivery, Outbox, backoff_s, body_of, headers
from graphcore.engine.registry import Registry
from graphcore.errors import RunNotFoundError
from graphcore.settings import Settings
from graphq.worker import metrics
from graphq.worker.logs import about, redact_urls

__all__ = ["MAX_PER_PASS", "Webhooks"]

log = logging.getLogger("graphq.webhooks")

MAX_PER_PASS = 100
"""Most deliveries one pass tries; the rest wait for the next pass."""


class Webhooks:
    """The deliverer of one process (``kv``: a redis-py client returning bytes)."""

    def __init__(self, kv: Any, settings: Settings) -> None:
        self.kv = kv
        self.settings = settings
        self.outbox = Outbox(kv)
        self.client = Client(kv, Registry({}))  # reads runs and requests; no workflow needed
        self.hold_s = 3 * settings.webhook_timeout_s
        secret = settings.webhook_secret
        self.secret = None if secret is None else secret.get_secret_value()

    def deliver_due(self) -> int:
        """One pass: claim and deliver the due deliveries, up to :data:`MAX_PER_PASS`. Returns how many were
        tried.

        Raises:
            redis.exceptions.RedisError: Redis failed (the loop tries again at its next interval; a claimed
                delivery is due again after its hold).
        """
        tried = 0
        with httpx.Client(timeout=self.settings.webhook_timeout_s, follow_redirects=False) as http:
            while tried < MAX_PER_PASS:
                delivery = retry_transient(self.outbox.claim, self.hold_s)
                if delivery is None:
                    break
                self.deliver(http, delivery)
                tried += 1
        return tried

    def deliver(self, http: httpx.Client, delivery: Delivery) -> bool:
        """POST ``delivery`` once and record the outcome: delivered (2xx), else tried again later or given
        up. Returns True when delivered."""
        timestamp = int(time.time())
        body = body_of(self.summary(delivery))
        error = _post(http, delivery.url, body, headers(delivery.id, timestamp, body, self.secret))
        where = about(run=delivery.run_id, thread=delivery.thread_id)
        if error is None:
            retry_transient(self.outbox.delivered, delivery)
            metrics.webhook_delivery("delivered")
            log.info("webhook %s delivered to %s", delivery.id, redact_urls(delivery.url), extra=where)
            return True
        tried = delivery.attempts + 1
        failed = replace(delivery, attempts=tried, last_error=error)
        now_ms = retry_transient(server_ms, self.kv)
        too_old = now_ms - delivery.created_ms >= self.settings.webhook_max_age_s * 1000
        if tried >= self.settings.webhook_max_attempts or too_old:
            retry_transient(self.outbox.give_up, failed)
            metrics.webhook_delivery("dead")
            log.warning(
                "webhook %s to %s given up after %d tries: %s",
                delivery.id,
                redact_urls(delivery.url),
                tried,
                error,
                extra=where,
            )
            return False
        due_ms = now_ms + int(backoff_s(tried, self.settings) * 1000)
        retry_transient(self.outbox.retry, failed, due_ms)
        metrics.webhook_delivery("retried")
        shown = redact_urls(delivery.url)
        log.info("webhook %s to %s failed (%s); tried again later", delivery.id, shown, error, extra=where)
        return False

    def summary(self, delivery: Delivery) -> dict[str, Any]:
        """What is POSTed for ``delivery``: ``id``, ``run_id``, ``thread_id``, ``workflow``, ``tenant``,
        ``status`` (the status the run took, even if it has moved on since), ``created_at`` (the run's),
        ``steps`` (super-steps it committed); for an end, ``ended_at`` and ``error`` (``{type, message,
        node, step}``, or null); for a pause, ``requests`` (the run's open requests now: id, value, node,
        task_id, index, created_at, deadline_ms, response_schema; [] once answered) and ``breakpoint``
        (``{when, nodes}`` when it stopped at a static breakpoint, else null). A run gone since (its thread
        expired or deleted) gives the first six only, and ``created_at`` null."""
        found: dict[str, Any] = {
            "id": delivery.id,
            "run_id": delivery.run_id,
            "thread_id": delivery.thread_id,
            "workflow": delivery.workflow,
            "tenant": delivery.tenant,
            "status": delivery.status,
            "created_at": None,
        }
        try:
            run = retry_transient(self.client.runs.get, delivery.run_id, delivery.thread_id)
        except RunNotFoundError:
            return found
        found |= {"created_at": run.created_at, "steps": run.step}
        if RunStatus(delivery.status) in TERMINAL:
            error = None if run.error is None else run.error.model_dump(exclude={"traceback"})
            return found | {"ended_at": run.ended_at, "error": error}
        return found | {"requests": self._requests(run), "breakpoint": _breakpoint(run)}

    def _requests(self, run: RunRecord) -> list[dict[str, Any]]:
        return [asdict(i) for i in retry_transient(self.client.requests, run.id)]


def _breakpoint(run: RunRecord) -> dict[str, Any] | None:
    """Where ``run`` stopped at a static breakpoint (``when``, ``nodes``), None when it did not."""
    if not at_breakpoint(run) or run.breakpoint is None:
        return None
    return {"when": run.breakpoint["when"], "nodes": run.breakpoint["nodes"]}


def _post(http: httpx.Client, url: str, body: bytes, sent: dict[str, str]) -> str | None:
    """POST ``body`` to ``url``: None when answered 2xx, else why not (``HTTP 500``, ``ConnectError: ...``,
    the URL left out)."""
    try:
        answer = http.post(url, content=body, headers=sent)
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {redact_urls(str(exc))}"
    if 200 <= answer.status_code < 300:
        return None
    return f"HTTP {answer.status_code}"
