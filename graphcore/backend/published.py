"""What each worker publishes of the settings that processes without them must still obey.

An operator's shell, a CI job or a ``graphq run`` usually lacks the workers' ``GRAPHQ_*`` variables. The
settings that must hold cluster-wide anyway are published by every worker process as it starts, one entry
per worker (field = worker id, value = JSON) in :func:`graphcore.keys.admission` ``("limits")``:

- ``g``, ``t``: ``GRAPHQ_MAX_CONCURRENT_RUNS`` and ``_PER_TENANT`` ("" = none) and ``weights``
  (``GRAPHQ_TENANT_WEIGHTS``): admission (R8) applies the lowest limit among the caller's and the counted
  entries', and the weights of the first counted entry (by worker id) that has any;
- ``history``: whether that worker keeps checkpoint history (``GRAPHQ_ENABLE_CHECKPOINTING``, R5): a fork
  or a second answer is refused while a counted entry runs without it;
- ``at``: when it was published (ms since the epoch).

The entries counted are those of the live workers (their heartbeat in :func:`graphcore.keys.workers` has not
expired); when no worker is live (scaled to zero), the newest entry alone (the last published; on a tie,
the greatest worker id), the cluster's last word. So a
process that publishes no limits (``graphq run`` in a shell) lowers nothing and erases nothing, workers of a
rollout with mixed limits agree on the strictest, a cluster restarted without limits has none, and runs
enqueued while no worker runs still wait for their slots. ``admission.lua`` applies the same rules.
Entries of workers gone for over :data:`KEEP_S` are removed when a worker publishes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from graphcore import keys
from graphcore.settings import Settings

__all__ = ["KEEP_S", "Published", "entry", "publish", "read"]

KEEP_S = 7 * 86_400
"""How long the entry of a worker that is no longer live is kept, seconds (the newest one always is)."""


@dataclass(frozen=True)
class Published:
    """The counted entries, combined (see the module docstring).

    Attributes:
        max_concurrent_runs, max_concurrent_runs_per_tenant: the lowest published (None = none).
        weights: ``GRAPHQ_TENANT_WEIGHTS`` text of the first counted entry (by worker id) with weights, or "".
        history_off_by: ids of the counted workers that keep no checkpoint history, sorted.
    """

    max_concurrent_runs: int | None = None
    max_concurrent_runs_per_tenant: int | None = None
    weights: str = ""
    history_off_by: list[str] = field(default_factory=list)


def entry(settings: Settings, at_ms: int) -> str:
    """A worker's entry (JSON): its limits and weights as the admission script takes them, its history."""
    g, t = settings.max_concurrent_runs, settings.max_concurrent_runs_per_tenant
    weights = ",".join(f"{name}={w}" for name, w in settings.weights().items())
    text = {"g": "" if g is None else str(g), "t": "" if t is None else str(t), "weights": weights}
    return json.dumps(text | {"history": settings.enable_checkpointing, "at": at_ms}, separators=(",", ":"))


def publish(kv: Any, settings: Settings, worker_id: str) -> None:
    """Publish ``worker_id``'s entry (its heartbeat written first, so that it counts at once) and remove
    the entries of workers gone for over :data:`KEEP_S`."""
    now_ms = int(time.time() * 1000)
    kv.hset(keys.admission("limits"), worker_id, entry(settings, now_ms))
    stale = [wid for wid, e, live in _entries(kv)[0] if not live and e["at"] < now_ms - KEEP_S * 1000]
    if stale:
        kv.hdel(keys.admission("limits"), *stale)


def _entries(kv: Any) -> tuple[list[tuple[str, dict[str, Any], bool]], int]:
    """Every entry as ``(worker id, entry, live)``, sorted by id, and Redis's time (ms); one round trip."""
    pipe = kv.pipeline(transaction=False)
    pipe.hgetall(keys.admission("limits"))
    pipe.zrange(keys.workers(), 0, -1, withscores=True)
    pipe.time()
    rows, index, (seconds, micros) = pipe.execute()
    now_ms = seconds * 1000 + micros // 1000
    alive = {w.decode() for w, expiry in index if expiry > now_ms}
    found = sorted((k.decode(), json.loads(v), k.decode() in alive) for k, v in rows.items())
    return found, now_ms


def read(kv: Any) -> Published:
    """The counted entries now (Redis's clock), combined; one round trip."""
    everything, _ = _entries(kv)
    counted = [(wid, e) for wid, e, live in everything if live]
    if not counted and everything:
        counted = [max(((wid, e) for wid, e, _ in everything), key=lambda pair: (pair[1]["at"], pair[0]))]

    def lowest(name: str) -> int | None:
        values = [int(e[name]) for _, e in counted if e.get(name)]
        return min(values) if values else None

    return Published(
        lowest("g"),
        lowest("t"),
        next((e["weights"] for _, e in counted if e.get("weights")), ""),
        [wid for wid, e in counted if e.get("history") is False],
    )
