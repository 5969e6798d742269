"""``POST /api/runs``: enqueue one run or a batch, checked as the client checks, with an idempotency key.

Idempotency: the first request with header ``Idempotency-Key: K`` stores the run ids it is about to
create, with its body's digest, under :func:`graphcore.keys.api_idempotency` (``SET NX``, 24 h). The runs
are then enqueued under those ids (``run_id``), which the client creates at most once (a taken id is
:class:`~graphcore.errors.RunExistsError`, nothing written). A repeat with the same body finds the ids:
when its runs exist it answers them (200) without enqueueing; when they do not (the first request failed,
or is still in flight) it enqueues them under the same ids, so at most one of the two creates them. A
repeat with another body is refused (422).

Only a request that enqueued, or may have (a transient error), holds its key: one refused (an invalid run,
an unknown workflow, a taken run id, a busy thread) gives it back, if it is still the one it stored
(compare-and-delete, ``owner_unlock.lua``), so that a corrected retry may use the same key.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import Any

from graphcore import keys
from graphcore.backend.catalog import loaded_workflow
from graphcore.backend.client import RunRequest, ValidRun, check_request
from graphcore.backend.lua import script
from graphcore.backend.threads import Multitask
from graphcore.errors import ConfigError, PermanentError, RunExistsError
from graphq.console.api.models import BatchIn, OneIn, RunIn
from graphq.console.state import Console

__all__ = ["IDEMPOTENCY_TTL_S", "FieldError", "Outcome", "enqueue"]

IDEMPOTENCY_TTL_S = 24 * 3600
"""How long an ``Idempotency-Key`` is kept, seconds."""
MAX_KEY = 255
"""Longest ``Idempotency-Key``, characters."""


@dataclass(frozen=True)
class Outcome:
    """The runs of a ``POST /api/runs``; ``created`` False for a repeat answered from its key."""

    run_ids: list[str]
    created: bool


def enqueue(console: Console, body: OneIn | BatchIn, key: str | None) -> Outcome:
    """Check every run of ``body`` (nothing enqueued when one is invalid), then enqueue them all or none.

    Raises:
        UnknownWorkflowError: a workflow is not loaded in this server (the catalog's hint when workers
            serve it).
        FieldError: a run is invalid (the message names the field: ``runs.3.input: ...``).
        PermanentError: an ``Idempotency-Key`` reused with another body (ConfigError); a run id taken
            (RunExistsError); a busy thread with ``multitask: reject`` (ThreadBusyError).
    """
    runs: list[RunIn] = list(body.runs) if isinstance(body, BatchIn) else [body]
    multitask = body.multitask
    held = None if key is None else _keyed(console, key, runs, multitask)
    if held is not None:
        runs = held.runs
        if held.exist:
            return Outcome([str(r.run_id) for r in runs], created=False)
    try:
        valid = [_checked(console, run, i, isinstance(body, BatchIn)) for i, run in enumerate(runs)]
        try:
            return Outcome(console.client.enqueue_many(valid, multitask), created=True)
        except RunExistsError:
            if held is None or not _all_exist(console, [v.record.id for v in valid]):
                raise
            return Outcome([v.record.id for v in valid], created=False)  # a repeat created them meanwhile
    except (FieldError, PermanentError):
        if held is not None and held.stored is not None:
            script(console.kv, "owner_unlock")(keys=[held.name], args=[held.stored])
        raise


class FieldError(Exception):
    """A run's invalid field: ``error`` (the client's) at ``where`` (``runs.3.input``; "" for the workflow
    of a single run, whose message names it)."""

    def __init__(self, error: PermanentError, where: str) -> None:
        super().__init__(f"{where}: {error}" if where else str(error))
        self.error = error


def _checked(console: Console, run: RunIn, index: int, batch: bool) -> ValidRun:
    """``run`` checked by the client (:func:`check_request`).

    Raises:
        FieldError: it is invalid.
    """
    webhook = {} if run.webhook is None else {"webhook": run.webhook}
    request = RunRequest(
        run.workflow, run.input, run.thread_id, run.tenant, run.config | webhook, run_id=run.run_id
    )
    try:
        loaded_workflow(console.client.registry, lambda: console.kv, run.workflow)
        return check_request(console.client.registry, request)
    except PermanentError as exc:
        where = [f"runs.{index}"] if batch else []
        if exc.param not in (None, "workflow", "request"):
            where.append(exc.param)
        raise FieldError(exc, ".".join(where)) from exc


def _digest(runs: list[RunIn], multitask: Multitask) -> str:
    body = {"runs": [r.model_dump(mode="json") for r in runs], "multitask": multitask}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class _Held:
    """An ``Idempotency-Key``'s runs (named by the ids stored under it), whether they exist already, its
    Redis key, and the value this request stored there (None: a repeat, the key is another request's)."""

    runs: list[RunIn]
    exist: bool
    name: str
    stored: str | None


def _keyed(console: Console, key: str, runs: list[RunIn], multitask: Multitask) -> _Held:
    """``runs`` under the ids stored for ``key`` (stored now, new ones, on its first use), and whether those
    runs exist already (a repeat: nothing to enqueue).

    Raises:
        ConfigError: the key is empty or too long, or was used with another body.
    """
    if not key.strip() or len(key) > MAX_KEY:
        raise ConfigError(f"Idempotency-Key: must be 1 to {MAX_KEY} characters, not only spaces")
    digest = _digest(runs, multitask)
    ids = [r.run_id or uuid.uuid4().hex for r in runs]
    name = keys.api_idempotency(key)
    value = json.dumps({"digest": digest, "run_ids": ids, "holder": uuid.uuid4().hex})
    repeat = not console.kv.set(name, value, nx=True, ex=IDEMPOTENCY_TTL_S)
    if repeat:
        raw = console.kv.get(name)
        earlier: dict[str, Any] = json.loads(raw) if raw is not None else {"digest": digest, "run_ids": ids}
        if earlier["digest"] != digest:
            raise ConfigError(
                f"Idempotency-Key {key!r} was used with another body in the last 24 h; use a new key for "
                "another request"
            )
        ids = earlier["run_ids"]
    named = [r.model_copy(update={"run_id": run_id}) for r, run_id in zip(runs, ids, strict=True)]
    return _Held(named, repeat and _all_exist(console, ids), name, None if repeat else value)


def _all_exist(console: Console, run_ids: list[str]) -> bool:
    return all(t is not None for t in console.kv.hmget(keys.run_threads(), run_ids))
