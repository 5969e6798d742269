"""Webhooks: a run's summary POSTed to its ``webhook`` URL when it ends or pauses for input.

A run names its URL with the run option ``webhook`` (:func:`check_webhook` checks it when the run is
enqueued; continuations, resumes and second answers keep it). The Lua script that ends the run or pauses it
(``set_status``, ``commit_step``, ``abandon_step``, ``claim_step``, ``reap_run``, ``admission``) adds a
delivery to the outbox in the same call (``_webhook.lua``): a crash after the status change cannot lose
it. A run closed because a continuation takes it over (the reaper's, a drain's) adds none: the
continuation delivers when the chain ends or pauses.

The outbox (:class:`Outbox`) is a hash of delivery records (:func:`graphcore.keys.webhooks`) and a set of
due times (:func:`graphcore.keys.webhooks_due`). A deliverer (the ``webhooks`` housekeeping loop,
:mod:`graphq.worker.housekeeping.webhooks`) claims the delivery due first, which pushes its due time ahead
by a hold: a deliverer that dies while it delivers leaves it due again after that. So a delivery is made at
least once; its id (``RUN:STATUS:N``, the same at every try) lets a receiver drop a second copy.

A 2xx answer delivers it (the record goes). Any other answer, or no answer within
``GRAPHQ_WEBHOOK_TIMEOUT_S``, is a failure: tried again after a back-off (:func:`backoff_s`), and given up
(a dead letter, :func:`graphcore.keys.webhooks_dead`) after ``GRAPHQ_WEBHOOK_MAX_ATTEMPTS`` tries or
``GRAPHQ_WEBHOOK_MAX_AGE_S`` seconds. A webhook never changes its run.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
from dataclasses import asdict, dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from pydantic_core import to_jsonable_python

from graphcore import keys
from graphcore.backend.lua import script
from graphcore.errors import ArgumentTypeError, ConfigError
from graphcore.settings import Settings

__all__ = [
    "MAX_URL_LENGTH",
    "Delivery",
    "Outbox",
    "backoff_s",
    "body_of",
    "check_webhook",
    "headers",
    "signature",
]

MAX_URL_LENGTH = 2048
"""Longest webhook URL, characters."""


def check_webhook(url: Any) -> str | None:
    """``url`` as a run's webhook: None, or an http or https URL with a host, without spaces, at most
    :data:`MAX_URL_LENGTH` characters.

    Raises:
        ArgumentTypeError: not a str.
        ConfigError: not such a URL (the message names ``webhook`` and says why).
    """
    if url is None:
        return None
    if not isinstance(url, str):
        raise ArgumentTypeError("webhook", "an http or https URL (str)", url)
    shown = url if len(url) <= 80 else url[:80] + "…"
    if len(url) > MAX_URL_LENGTH:
        raise ConfigError(f"webhook {shown!r}: longer than {MAX_URL_LENGTH} characters")
    if any(c.isspace() or not c.isprintable() for c in url):
        raise ConfigError(f"webhook {shown!r}: a URL holds no spaces or control characters")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 (a bad port raises)
    except ValueError as exc:
        raise ConfigError(f"webhook {shown!r}: not a URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f"webhook {shown!r}: must be an http:// or https:// URL")
    if not host:
        raise ConfigError(f"webhook {shown!r}: names no host")
    return url


@dataclass(frozen=True)
class Delivery:
    """One webhook delivery, as the outbox keeps it.

    Attributes:
        id: ``RUN:STATUS:N``, N counting the run's deliveries from 1.
        run_id, thread_id, workflow, tenant: the run's.
        status: the status the run had just taken (``completed``, ``failed``, ``canceled``,
            ``awaiting_input``).
        url: where it goes (the run's ``webhook``).
        created_ms: when the status changed, ms since the epoch (Redis's clock).
        attempts: tries made so far.
        last_error: why the last try failed (``HTTP 500``, ``ConnectError: ...``), "" before any.
    """

    id: str
    run_id: str
    thread_id: str
    workflow: str
    tenant: str
    status: str
    url: str
    created_ms: int
    attempts: int = 0
    last_error: str = ""

    @classmethod
    def parse(cls, delivery_id: str, raw: bytes | str) -> Delivery:
        """The delivery ``delivery_id`` from its outbox record (JSON)."""
        f = json.loads(raw)
        return cls(
            delivery_id,
            f["run_id"],
            f["thread_id"],
            f["workflow"],
            f["tenant"],
            f["status"],
            f["url"],
            int(f["created_ms"]),
            int(f.get("attempts") or 0),
            str(f.get("last_error") or ""),
        )

    def record(self) -> str:
        """The outbox record (JSON) of this delivery."""
        fields = asdict(self)
        del fields["id"]
        return json.dumps(fields, sort_keys=True)


def backoff_s(attempts: int, settings: Settings, rand: random.Random | None = None) -> float:
    """The wait before the next try of a delivery that failed ``attempts`` times (at least 1), seconds:
    ``GRAPHQ_WEBHOOK_BACKOFF_S`` doubled after each failure, at most ``GRAPHQ_WEBHOOK_BACKOFF_MAX_S``, and
    a random part of that (half to all: deliveries failing together spread out)."""
    doubled = settings.webhook_backoff_s * 2.0 ** min(attempts - 1, 60)
    return float(min(settings.webhook_backoff_max_s, doubled) * (rand or random).uniform(0.5, 1.0))


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``X-Graphq-Signature`` header of ``body`` sent at ``timestamp`` (unix seconds):
    ``sha256=`` and the hex HMAC-SHA256, keyed with ``secret``, of ``<timestamp>.<body>``."""
    signed = str(timestamp).encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def headers(delivery_id: str, timestamp: int, body: bytes, secret: str | None) -> dict[str, str]:
    """The headers of a delivery's POST: ``Content-Type``, ``User-Agent``, ``X-Graphq-Delivery`` (its id),
    ``X-Graphq-Timestamp`` (unix seconds) and, with a ``secret``, ``X-Graphq-Signature``
    (:func:`signature`)."""
    sent = {
        "Content-Type": "application/json",
        "User-Agent": "graphq-webhooks",
        "X-Graphq-Delivery": delivery_id,
        "X-Graphq-Timestamp": str(timestamp),
    }
    if secret:
        sent["X-Graphq-Signature"] = signature(secret, timestamp, body)
    return sent


def body_of(summary: dict[str, Any]) -> bytes:
    """The POST body of a delivery's summary: compact JSON (UTF-8, keys sorted); a value JSON has no form for
    (an allow-listed object in a request) is written as its ``repr``."""
    plain = to_jsonable_python(summary, fallback=repr)
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class Outbox:
    """The webhook deliveries waiting in Redis (``kv``: a redis-py client returning bytes)."""

    def __init__(self, kv: Any) -> None:
        self.kv = kv

    def claim(self, hold_s: float) -> Delivery | None:
        """The delivery due first, held for ``hold_s`` seconds (due again after that unless settled), or
        None when none is due."""
        found = script(self.kv, "claim_webhook")(
            keys=[keys.webhooks(), keys.webhooks_due()], args=[int(hold_s * 1000)]
        )
        if not found:
            return None
        delivery_id, raw = found
        return Delivery.parse(delivery_id.decode(), raw)

    def _settle(self, delivery: Delivery, outcome: str, due_ms: int = 0, claimed: int | None = None) -> bool:
        settle = script(self.kv, "settle_webhook")
        outbox = [keys.webhooks(), keys.webhooks_due(), keys.webhooks_dead()]
        tries = "" if claimed is None else str(claimed)
        return bool(settle(keys=outbox, args=[delivery.id, outcome, delivery.record(), due_ms, tries]))

    def delivered(self, delivery: Delivery) -> bool:
        """Drop a delivery that was delivered. Returns False when it was gone already (delivered twice)."""
        return self._settle(delivery, "delivered")

    def retry(self, delivery: Delivery, due_ms: int) -> bool:
        """Keep ``delivery`` (its tries, one more than when it was claimed, and last error) due at ``due_ms``.
        False: it was gone (delivered by another deliverer meanwhile) or tried again since this claim (its
        hold ran out and another deliverer took it), nothing written."""
        return self._settle(delivery, "retry", due_ms, claimed=delivery.attempts - 1)

    def give_up(self, delivery: Delivery) -> bool:
        """Make ``delivery`` a dead letter (kept with its tries, one more than when it was claimed, and last
        error; no longer tried). False: it was gone or tried again since this claim, nothing written."""
        return self._settle(delivery, "dead", claimed=delivery.attempts - 1)

    def revive(self, delivery_id: str) -> bool:
        """Make the dead letter ``delivery_id`` due again now, its tries counted from 0. False: no such dead
        letter."""
        raw = self.kv.hget(keys.webhooks(), delivery_id)
        if raw is None:
            return False
        fresh = replace(Delivery.parse(delivery_id, raw), attempts=0)
        return self._settle(fresh, "again")

    def listed(self, dead: bool = False) -> list[tuple[Delivery, int]]:
        """The deliveries waiting (or, ``dead``, given up) with when each is due (or was given up), ms since
        the epoch, earliest first."""
        index = keys.webhooks_dead() if dead else keys.webhooks_due()
        rows = [(m.decode(), int(score)) for m, score in self.kv.zrange(index, 0, -1, withscores=True)]
        raws = self.kv.hmget(keys.webhooks(), [m for m, _ in rows]) if rows else []
        return [(Delivery.parse(m, raw), at) for (m, at), raw in zip(rows, raws, strict=True) if raw]
