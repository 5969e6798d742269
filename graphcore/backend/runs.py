"""Run records (R1, I7): who runs what on which thread, and how it ended.

A run record is a Redis hash under the thread's hash tag. Plain fields are strings; ``input`` and
``result`` are msgpack (serde allow-list), ``config`` and ``error`` are JSON.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel
from redis.exceptions import NoScriptError

from graphcore import keys
from graphcore.backend.events import encode_event
from graphcore.backend.lua import script
from graphcore.checkpoints import serde
from graphcore.engine.config import RunConfig
from graphcore.errors import ArgumentTypeError, ConfigError, LeaseLostError, RunExistsError, RunNotFoundError
from graphcore.settings import get_settings

__all__ = [
    "CANCEL_ERROR",
    "COUNT_WINDOW",
    "TERMINAL",
    "RunError",
    "RunFilter",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "StatusCounts",
    "now_iso",
    "run_timeout_error",
    "run_timeout_s",
]


class RunStatus(StrEnum):
    """Run statuses (R1). Completed, Failed and Canceled are terminal (I7)."""

    QUEUED = "queued"
    RUNNING = "running"
    AWAITING_INPUT = "awaiting_input"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"


TERMINAL = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELED})


def now_iso() -> str:
    """The current UTC time, ISO-8601."""
    return datetime.now(UTC).isoformat()


class RunError(BaseModel):
    """Why a run failed (or was canceled): exception type, message and formatted traceback; for a failure
    in a step, the thread step and the node.

    Attributes:
        node: the node the error came from (``"__start__"`` for a router of START; the message names the
            router), when one node is to blame; None otherwise (writes of several nodes that conflict, a
            lost worker, a cancel).
        step: the thread's super-step it failed in, numbered like ``graphq state --history`` (-1: the input
            of a new thread); None when no step is to blame (a cancel request).
    """

    type: str
    message: str
    traceback: str = ""
    node: str | None = None
    step: int | None = None


CANCEL_ERROR = RunError(type="Canceled", message="canceled by request")
"""The error record of a run ended by ``cancel``."""


class RunRecord(BaseModel):
    """One run of a workflow on a thread.

    Attributes:
        step: super-steps committed so far; the next step job has this number.
        head: id of the newest checkpoint this run committed (None before the input is applied).
    """

    id: str
    workflow: str
    thread_id: str
    tenant: str = "default"
    status: RunStatus = RunStatus.QUEUED
    step: int = 0
    head: str | None = None
    created_at: str
    started_at: str | None = None
    ended_at: str | None = None
    input: Any = None
    result: Any = None
    error: RunError | None = None
    config: dict[str, Any] = {}
    continued_from_run_id: str | None = None
    continued_by_run_id: str | None = None
    """The run that continues this one (the reaper's continuation of an interrupted run, or a resume)."""
    attempt: int = 1
    """Place in a chain of automatic continuations (R10): 1 for a run started by a client."""
    worker: str | None = None
    """The worker that last claimed one of the run's steps."""
    interrupted: RunError | None = None
    """Why the run was last started again from its beginning (its worker died, resume off, R14)."""
    schedule: str | None = None
    """The schedule whose fire started the run (K1; written by the claim, ``claim_fire.lua``), and that fire's
    time (ISO-8601 UTC) in :attr:`fire_time`."""
    fire_time: str | None = None
    breakpoint: dict[str, Any] | None = None
    """Where the run last stopped at a static breakpoint (``interrupt_before``/``interrupt_after``), written
    by the worker: ``when`` (before | after), ``nodes``, ``checkpoint_id``, and ``continued`` (true once
    :meth:`~graphcore.backend.client.Client.resume` let it go on: its step then passes that breakpoint).
    None: it never stopped at one."""
    preset_answers: dict[str, Any] = {}
    """``"<task index>:<call index>"`` → answer, for a branch started by answering a request again (R16)."""
    run_timeout_s: float | None = None
    """The run timeout fixed when the run was created, seconds (R15): its option, else its workflow's,
    else ``GRAPHQ_RUN_TIMEOUT_S`` of the process that enqueued it (a batch job's setting holds on every
    worker); continuations keep it. None in records written before it was stored (:func:`run_timeout_s`)."""
    budget_from: int = 0
    """Where the super-steps of the run's current call count from, in the run's steps: its step ``n`` has
    taken ``n + budget_from`` of its ``max_super_steps`` (:func:`graphcore.engine.config.budget_from`). 0
    for a run that applies its input; -2 (-1 when it applies an input checkpoint's input) for one that goes
    on from its thread's checkpoint without input, and -2 minus the step it goes on at after an answer or
    a resume past a breakpoint (that step then counts as a first one), as LangGraph counts a call without
    input from ``recursion_limit + 1``."""
    thread_ttl_s: float | None = None
    """The thread TTL fixed when the run was created, seconds (K3): its workflow's or its own option, else
    ``GRAPHQ_THREAD_TTL_S`` of the process that enqueued it (the lower of the two); None = keep the thread.
    The run's writes and its steps refresh the thread's keys with it (:mod:`graphcore.backend.ttl`)."""
    version: str | None = None
    """The version of the workflow the run started with (the catalog's version hash, 64 hex digits,
    :func:`graphcore.engine.describe.version_of`): that of the worker that claimed its first step (written
    by the claim); a continuation, an answer's run and a resume keep their run's. None until then."""
    migrated_from: str | None = None
    """The version it was pinned to before ``graphq runs migrate`` moved it to :attr:`version` (at
    :attr:`migrated_at`, ISO-8601); None: never moved."""
    migrated_at: str | None = None
    pinned: bool = False
    """Whether the run's steps after its first run only on workers serving :attr:`version` (version policy
    ``pin``, fixed when the run is created); False: on any worker serving the workflow (``latest``, as
    LangGraph)."""
    webhook: str | None = None
    """The URL its summary is POSTed to when it ends or pauses for input (the run option ``webhook``,
    :mod:`graphcore.backend.webhooks`); continuations, resumes and second answers keep their run's. None: no
    webhook."""

    @property
    def pinned_version(self) -> str | None:
        """The version its steps are pinned to (:attr:`version` when :attr:`pinned`), else None."""
        return self.version if self.pinned else None

    @property
    def terminal(self) -> bool:
        """True once the run Completed, Failed or was Canceled."""
        return self.status in TERMINAL

    def to_hash(self) -> dict[str, bytes | str]:
        """The Redis hash fields of this record."""
        fields: dict[str, bytes | str] = {
            "id": self.id,
            "workflow": self.workflow,
            "thread_id": self.thread_id,
            "tenant": self.tenant,
            "status": self.status.value,
            "step": str(self.step),
            "created_at": self.created_at,
            "input": serde.dumps(self.input, path="input"),
            "config": json.dumps(self.config),
        }
        if self.continued_from_run_id:
            fields["continued_from_run_id"] = self.continued_from_run_id
        if self.preset_answers:
            fields["preset_answers"] = serde.dumps(self.preset_answers, path="answer")
        if self.run_timeout_s is not None:
            fields["run_timeout_s"] = repr(self.run_timeout_s)
        if self.thread_ttl_s is not None:
            fields["thread_ttl_s"] = repr(self.thread_ttl_s)
        if self.version is not None:
            fields["version"] = self.version
        if self.pinned:
            fields["pinned"] = "1"
        if self.webhook is not None:
            fields["webhook"] = self.webhook
        return fields

    @classmethod
    def from_hash(cls, raw: dict[bytes, bytes]) -> RunRecord:
        """Parse a run hash as read from Redis."""
        f = {k.decode(): v for k, v in raw.items()}
        text = {k: v.decode() for k, v in f.items() if k not in ("input", "result", "preset_answers")}
        return cls(
            id=text["id"],
            workflow=text["workflow"],
            thread_id=text["thread_id"],
            tenant=text["tenant"],
            status=RunStatus(text["status"]),
            step=int(text["step"]),
            head=text.get("head") or None,
            created_at=text["created_at"],
            started_at=text.get("started_at"),
            ended_at=text.get("ended_at"),
            input=serde.loads(f["input"]) if "input" in f else None,
            result=serde.loads(f["result"]) if "result" in f else None,
            error=RunError.model_validate_json(text["error"]) if text.get("error") else None,
            config=json.loads(text.get("config", "{}")),
            continued_from_run_id=text.get("continued_from_run_id"),
            continued_by_run_id=text.get("continued_by_run_id"),
            attempt=int(text.get("attempt") or 1),
            worker=text.get("worker") or None,
            schedule=text.get("schedule") or None,
            fire_time=text.get("fire_time") or None,
            breakpoint=json.loads(text["breakpoint"]) if text.get("breakpoint") else None,
            interrupted=RunError.model_validate_json(text["interrupted"])
            if text.get("interrupted")
            else None,
            preset_answers=serde.loads(f["preset_answers"]) if "preset_answers" in f else {},
            run_timeout_s=float(text["run_timeout_s"]) if text.get("run_timeout_s") else None,
            thread_ttl_s=float(text["thread_ttl_s"]) if text.get("thread_ttl_s") else None,
            budget_from=int(text.get("budget_from") or 0),
            version=text.get("version") or None,
            pinned=text.get("pinned") == "1",
            migrated_from=text.get("migrated_from") or None,
            migrated_at=text.get("migrated_at") or None,
            webhook=text.get("webhook") or None,
        )


def run_timeout_error(limit_s: float, when: str) -> RunError:
    """The error of a run past its run timeout of ``limit_s`` seconds (R15, :func:`run_timeout_s`);
    ``when`` says at what point it was found (``after 12.3 s``, ``while its step was running``, ...)."""
    setting = "GRAPHQ_RUN_TIMEOUT_S or the run option run_timeout_s"
    return RunError(type="RunTimeout", message=f"run exceeded run_timeout_s={limit_s:g} s ({setting}) {when}")


def run_timeout_s(run: RunRecord, cfg: RunConfig | None = None) -> float:
    """``run``'s run timeout, seconds (R15): the one fixed at its creation (:attr:`RunRecord.run_timeout_s`);
    for an older record, ``cfg``'s (the run's options merged with its workflow's), else its own options', else
    ``GRAPHQ_RUN_TIMEOUT_S``. A value above a ceiling lowered since it was enqueued counts as the ceiling (a
    hand-over or a step must not fail on it)."""
    ceiling = get_settings().max_run_timeout_s
    if run.run_timeout_s is not None:
        return min(run.run_timeout_s, ceiling)
    try:
        return (cfg or RunConfig.model_validate(run.config)).run_timeout()
    except ConfigError:
        return ceiling


@dataclass(frozen=True)
class RunFilter:
    """Which runs a listing keeps: each field given must match (None matches anything); ``created_from``
    (aware): only runs created then or later (``runs list --schedule``: the runs of the schedule of that name
    that exists now, not of one removed before it was added); ``version``: a prefix of the run's version
    (hex digits, as ``runs list`` shows the first 12; a run without a version yet never matches)."""

    tenant: str | None = None
    status: RunStatus | None = None
    workflow: str | None = None
    schedule: str | None = None
    created_from: datetime | None = None
    version: str | None = None

    FIELDS = ("tenant", "status", "workflow", "schedule", "created_at", "version")
    """The run hash fields it looks at."""

    def matches(
        self,
        tenant: str | None,
        status: str | None,
        workflow: str | None,
        schedule: str | None = None,
        created_at: str | None = None,
        version: str | None = None,
    ) -> bool:
        """Whether a run of ``tenant``, ``status`` (its value), ``workflow``, ``schedule``, ``created_at``
        (ISO-8601) and ``version`` is kept."""
        return (
            (self.tenant is None or tenant == self.tenant)
            and (self.status is None or status == self.status.value)
            and (self.workflow is None or workflow == self.workflow)
            and (self.schedule is None or schedule == self.schedule)
            and (
                self.created_from is None
                or (created_at is not None and datetime.fromisoformat(created_at) >= self.created_from)
            )
            and (self.version is None or (version is not None and version.startswith(self.version)))
        )

    def record_matches(self, record: RunRecord) -> bool:
        """Whether ``record`` is kept."""
        return self.matches(
            record.tenant,
            record.status.value,
            record.workflow,
            record.schedule,
            record.created_at,
            record.version,
        )


_PAGE = 500
"""Run ids read at a time when a listing filters."""

_FilterRows = list[tuple[tuple[str, str], list[str | None]]]
"""``((run id, thread), values of RunFilter.FIELDS)`` per run."""

COUNT_WINDOW = 1000
"""The newest runs :meth:`RunStore.count_statuses` looks at, at most."""


@dataclass(frozen=True)
class StatusCounts:
    """Runs per status among the newest runs (:meth:`RunStore.count_statuses`).

    Attributes:
        counts: status → runs with it, for every status (0 included).
        scanned: how many of the newest runs were looked at.
        total: how many runs there are.
    """

    counts: dict[RunStatus, int]
    scanned: int
    total: int

    @property
    def more(self) -> bool:
        """Older runs exist that were not looked at: each count is a lower bound."""
        return self.total > self.scanned


class RunStore:
    """Reads and writes run records in Redis (``kv`` is a redis-py client returning bytes)."""

    def __init__(self, kv: Any) -> None:
        self.kv = kv
        self._set_status = script(kv, "set_status")

    def thread_of(self, run_id: str) -> str:
        """The thread id of ``run_id``.

        Raises:
            RunNotFoundError: no such run.
        """
        thread = self.kv.hget(keys.run_threads(), run_id)
        if thread is None:
            raise RunNotFoundError(f"no run with id {run_id!r}")
        return str(thread.decode())

    def refuse_taken(self, run_ids: Sequence[str], reader: Any = None) -> None:
        """Refuse ids that name runs already (one HMGET of the run index, on ``reader``: a pipeline in
        WATCH mode, by default this store's client).

        Raises:
            RunExistsError: the first id of ``run_ids`` that names a run, with that run's thread.
        """
        if not run_ids:
            return
        threads = (reader or self.kv).hmget(keys.run_threads(), list(run_ids))
        for run_id, thread in zip(run_ids, threads, strict=True):
            if thread is not None:
                raise RunExistsError(run_id, thread.decode())

    def stage_create(self, pipe: Any, record: RunRecord) -> None:
        """Queue the writes that create ``record`` (hash and indexes) on a MULTI pipeline."""
        score = time.time()
        pipe.hset(keys.run(record.thread_id, record.id), mapping=record.to_hash())
        pipe.zadd(keys.runs_index(), {record.id: score})
        pipe.hset(keys.run_threads(), record.id, record.thread_id)
        pipe.zadd(keys.thread_runs(record.thread_id), {record.id: score})

    def get(self, run_id: str, thread_id: str | None = None) -> RunRecord:
        """Load a run record.

        Raises:
            ArgumentTypeError: ``run_id`` is not a str.
            RunNotFoundError: no such run.
        """
        if not isinstance(run_id, str):
            raise ArgumentTypeError("run id", "a str", run_id)
        thread = thread_id or self.thread_of(run_id)
        raw = self.kv.hgetall(keys.run(thread, run_id))
        if not raw:
            raise RunNotFoundError(f"no run with id {run_id!r}")
        return RunRecord.from_hash(raw)

    def _records(self, ids: Sequence[str]) -> list[RunRecord]:
        threads = self.kv.hmget(keys.run_threads(), ids) if ids else []
        return self.fetch([(r, t.decode()) for r, t in zip(ids, threads, strict=True) if t])

    def fetch(self, runs: Sequence[tuple[str, str]]) -> list[RunRecord]:
        """The records of ``(run id, thread)`` pairs, in order (runs gone meanwhile are left out)."""
        pipe = self.kv.pipeline(transaction=False)
        for run_id, thread in runs:
            pipe.hgetall(keys.run(thread, run_id))
        return [RunRecord.from_hash(raw) for raw in pipe.execute() if raw]

    def stuck(
        self, now_ms: int, limit: int = 50, where: RunFilter | None = None
    ) -> list[tuple[RunRecord, int]]:
        """Runs that have not ended and whose lease lapsed (its worker stopped renewing it; the reaper has
        not acted on it yet), with the lease's deadline (ms since the epoch), longest lapsed first.

        Args:
            now_ms: now by Redis's clock (the lease index's).
        """
        rows = self.kv.zrangebyscore(keys.lease_index(), "-inf", now_ms, withscores=True)
        lapsed = {keys.parse_member(m.decode()): int(score) for m, score in rows}
        found = []
        for record in self.fetch([(r, t) for t, r in lapsed]):
            kept = where is None or where.record_matches(record)
            if not record.terminal and kept:
                found.append((record, lapsed[(record.thread_id, record.id)]))
        return found[:limit]

    def matching(
        self, where: RunFilter, batch: int = _PAGE, start: int = 0, end: int | None = None
    ) -> Iterator[list[tuple[str, str]]]:
        """The ``(run id, thread)`` of the runs that match ``where``, newest first, in pages: each page from
        ``batch`` ids of the run index (from its ``start``-th newest, before its ``end``-th when given), in
        three round trips (the ids, their threads, the fields ``where`` looks at); a page may be empty, none
        follows the last ids."""
        while end is None or start < end:
            last = start + batch - 1 if end is None else min(start + batch, end) - 1
            ids = [i.decode() for i in self.kv.zrevrange(keys.runs_index(), start, last)]
            if not ids:
                return
            start += batch
            yield [pair for pair, fields in self._filter_fields(ids) if where.matches(*fields)]

    def list(
        self, limit: int = 50, offset: int = 0, where: RunFilter | None = None, within: int | None = None
    ) -> list[RunRecord]:
        """The newest runs first; with ``where``, the newest ``limit`` runs that match (read a page of ids
        at a time, newest first, until enough matched, none is left, or ``within`` ids were read:
        :meth:`matching`)."""
        if where is None:
            ids = [i.decode() for i in self.kv.zrevrange(keys.runs_index(), offset, offset + limit - 1)]
            return self._records(ids)
        found: list[tuple[str, str]] = []
        for page in self.matching(where, _PAGE, offset, None if within is None else offset + within):
            found += page
            if len(found) >= limit:
                break
        return self.fetch(found[:limit])

    def _filter_fields(self, ids: Sequence[str]) -> _FilterRows:
        """``((run id, thread), values of RunFilter.FIELDS)`` of ``ids`` (runs gone left out); two round
        trips."""
        threads = self.kv.hmget(keys.run_threads(), list(ids)) if ids else []
        pairs = [(r, t.decode()) for r, t in zip(ids, threads, strict=True) if t]
        pipe = self.kv.pipeline(transaction=False)
        for run_id, thread in pairs:
            pipe.hmget(keys.run(thread, run_id), list(RunFilter.FIELDS))
        rows = pipe.execute() if pairs else []
        return [
            (pair, [None if v is None else v.decode() for v in values])
            for pair, values in zip(pairs, rows, strict=True)
        ]

    def count_statuses(self, where: RunFilter | None = None, window: int = COUNT_WINDOW) -> StatusCounts:
        """How many of the newest ``window`` runs that match ``where`` (its ``status`` ignored) have each
        status: the ``window`` newest ids, then their fields in two round trips (never a scan of every
        run).

        Raises:
            ConfigError: ``window`` is not an int from 1 to :data:`COUNT_WINDOW`.
        """
        if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= COUNT_WINDOW:
            raise ConfigError(f"window: expected an int from 1 to {COUNT_WINDOW}, got {window!r}")
        kept = replace(where or RunFilter(), status=None)
        total = int(self.kv.zcard(keys.runs_index()))
        ids = [i.decode() for i in self.kv.zrevrange(keys.runs_index(), 0, window - 1)]
        counts = dict.fromkeys(RunStatus, 0)
        for _, fields in self._filter_fields(ids):
            if fields[1] is not None and kept.matches(*fields):
                counts[RunStatus(fields[1])] += 1
        return StatusCounts(counts, len(ids), total)

    def set_status(
        self,
        record: RunRecord,
        status: RunStatus,
        *,
        allowed: tuple[RunStatus, ...] = (),
        fields: Mapping[str, str | bytes] | None = None,
        events: Sequence[tuple[str, int, Any]] = (),
        fence: tuple[str, str] | None = None,
        release: tuple[str, str] | None = None,
        deadline_ms: int | None = None,
        expect: tuple[str, str] | None = None,
    ) -> bool:
        """Compare-and-set the run's status (I7); terminal states are never overwritten. The run's entry in
        the request-deadline index (R13, :func:`graphcore.keys.request_deadlines`) is kept in the same
        script: added with ``deadline_ms``, removed once the run is in any other status than AwaitingInput.

        Args:
            allowed: statuses the run must currently have (any non-terminal when empty).
            fields: extra hash fields written with the status.
            events: ``(mode, step, data)`` appended to the run's stream in the same script, only when the
                status is set (a reader never sees the status without its event, nor the reverse).
            fence: ``(lease key, token)``: set the status only while that lease holds that token (a step job's
                status changes, I1); a refusal is counted in the run hash (``refused:status``).
            release: ``(lease index, member)`` with ``fence``: give the lease back with the change (a step
                that pauses for input), taking it out of the lease index.
            deadline_ms: with AwaitingInput, the earliest deadline of its open requests (ms since the
                epoch): the run is added to the request-deadline index with the change.
            expect: ``(field, value)``: set the status only while the run hash holds that value in that field
                (the expiry scan: still waiting for the same request).

        Returns:
            True when the status was set; False when the status rules or ``expect`` refused it (I7).

        Raises:
            LeaseLostError: ``fence`` was given and the lease is no longer the caller's; nothing changed.
        """
        call = self.status_call(
            record,
            status,
            allowed=allowed,
            fields=fields,
            events=events,
            fence=fence,
            release=release,
            deadline_ms=deadline_ms,
            expect=expect,
        )
        script_keys, args = call
        return _status_set(self._set_status(keys=script_keys, args=args), record, status)

    def status_call(
        self,
        record: RunRecord,
        status: RunStatus,
        *,
        allowed: tuple[RunStatus, ...] = (),
        fields: Mapping[str, str | bytes] | None = None,
        events: Sequence[tuple[str, int, Any]] = (),
        fence: tuple[str, str] | None = None,
        release: tuple[str, str] | None = None,
        deadline_ms: int | None = None,
        expect: tuple[str, str] | None = None,
    ) -> tuple[Sequence[str], Sequence[str | bytes]]:
        """The KEYS and ARGV of ``set_status.lua`` for :meth:`set_status` with these arguments."""
        pairs = [x for item in (fields or {}).items() for x in item]
        encoded = [x for mode, step, data in events for x in encode_event(mode, step, data).values()]
        args: list[str | bytes] = [status.value, ",".join(s.value for s in allowed)]
        index_score = "" if deadline_ms is None else str(deadline_ms)
        args += [keys.lease_member(record.thread_id, record.id), index_score]
        args += [*(expect or ("", "")), str(len(pairs) // 2), *pairs, str(len(events)), *encoded]
        script_keys = [
            keys.run(record.thread_id, record.id),
            keys.run_events(record.thread_id, record.id),
            keys.request_deadlines(),
            keys.webhooks(),
            keys.webhooks_due(),
        ]
        if fence is not None:
            script_keys.append(fence[0])
            args.append(fence[1])
            if release is not None:
                script_keys.append(release[0])
                args.append(release[1])
        return script_keys, args

    def set_statuses(
        self, changes: Sequence[tuple[RunRecord, RunStatus, tuple[Sequence[str], Sequence[str | bytes]]]]
    ) -> Sequence[bool]:
        """Several :meth:`set_status` changes in one round trip (a pipeline, not a transaction: each change
        is its own compare-and-set); each change is ``(record, status, its status_call)``.

        Returns:
            For each change, whether the status was set.

        Raises:
            LeaseLostError: a fenced change whose lease is no longer the caller's (the changes before it in
                the pipeline were made).
        """

        def send() -> Any:
            pipe = self.kv.pipeline(transaction=False)
            for _, _, call in changes:
                self._set_status.queue(pipe, *call)
            replies = pipe.execute(raise_on_error=False)
            unloaded = next((r for r in replies if isinstance(r, NoScriptError)), None)
            return unloaded or replies

        replies = self._set_status.again_if_unloaded(send) if changes else []
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return [_status_set(reply, r, s) for (r, s, _), reply in zip(changes, replies, strict=True)]


def _status_set(reply: Any, record: RunRecord, status: RunStatus) -> bool:
    """What a reply of ``set_status.lua`` says: whether the status was set.

    Raises:
        LeaseLostError: the change was fenced and the lease is no longer the caller's.
    """
    ok, current = reply
    if int(ok) < 0:
        raise LeaseLostError(
            f"status {status.value} of run {record.id} refused: the lease is no longer held (the run is "
            f"{current.decode() if isinstance(current, bytes) else current})"
        )
    return bool(int(ok))
