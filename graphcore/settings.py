"""graphq settings: one validated pydantic model read from ``GRAPHQ_*`` environment variables.

Unknown keys are rejected (``extra="forbid"``) and ranges are checked when the settings are built, so a bad
value fails at startup with an error that names the setting and its allowed range.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from graphcore.errors import ConfigError

__all__ = ["Settings", "class_entries", "get_settings"]


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
        default=None, description="Redis URL; unset means `graphq run` starts an embedded redis-server."
    )
    data_dir: str = Field(default=".graphq", description="Directory for the embedded Redis's data files.")
    queue: str = Field(default="graphq", description="Name of the RQ queue that carries step jobs.")
    workflows: str = Field(default="", description="Comma-separated modules to import for workflows.")
    max_super_steps: int = Field(
        default=50, ge=1, le=1_000_000, description="Super-step budget per run (C1)."
    )
    max_input_bytes: int = Field(
        default=1_048_576,
        ge=1,
        description="Largest run input or human answer, in bytes serialized; larger ones are refused.",
    )
    run_timeout_s: float = Field(
        default=86_400.0, gt=0, description="Run timeout, seconds from creation, queue wait included (R15)."
    )
    max_run_timeout_s: float = Field(
        default=7 * 86_400.0, gt=0, description="Ceiling on any workflow's or run's run_timeout_s (R11)."
    )
    lease_ttl_s: float = Field(
        default=20.0,
        gt=0,
        le=3600,
        description="Lease time-to-live, seconds (R18); also how long a silent worker stays listed.",
    )
    heartbeat_interval_s: float = Field(
        default=5.0,
        gt=0,
        le=600,
        description="Lease renewal and worker heartbeat interval, seconds; must be below lease_ttl_s.",
    )
    reaper_interval_s: float = Field(
        default=5.0,
        gt=0,
        le=600,
        description="How often the reaper looks for lapsed leases, seconds: a dead worker's step is acted on "
        "within lease_ttl_s + reaper_interval_s (R18).",
    )
    resume_interrupted_runs: bool = Field(
        default=True,
        description="A run whose worker died: on → closed Failed (WorkerLost) and continued by a new run "
        "from its latest checkpoint; off → started again from its beginning (R14).",
    )
    max_resume_attempts: int = Field(
        default=1,
        ge=0,
        le=100,
        description="Automatic continuations (or restarts) per chain of interrupted runs; 0 = detect and "
        "fail (R10).",
    )
    step_timeout_s: int = Field(
        default=3600, ge=1, le=86_400, description="RQ job timeout of one super-step, seconds."
    )
    redis_retry_attempts: int = Field(
        default=5, ge=1, le=100, description="Tries for a transient Redis error before giving up."
    )
    redis_retry_max_wait_s: float = Field(
        default=2.0, gt=0, le=60, description="Longest backoff between Redis retries, seconds."
    )
    max_workers_per_step: int = Field(
        default=8, ge=1, le=256, description="Threads that run one super-step's tasks concurrently."
    )
    result_ttl_s: int = Field(
        default=3600, ge=0, description="How long RQ keeps a finished step job, seconds."
    )
    drain_timeout_s: float = Field(
        default=20.0,
        ge=0,
        le=3600,
        description="On SIGTERM a worker finishes its step within this many seconds, else gives it up: the "
        "run ends Canceled, checkpoints kept, and is continued (R17).",
    )
    kill_grace_s: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="A node still running this many seconds after its run's deadline (or its node timeout) "
        "has its worker process killed and replaced; the run ends at the deadline plus this.",
    )
    serde_allowed_classes: str = Field(
        default="",
        description=(
            "Comma-separated module:QualName classes that may be stored and loaded besides those the "
            "workflows' state schemas name (e.g. an interrupt payload model); imported when read."
        ),
    )

    @field_validator("serde_allowed_classes")
    @classmethod
    def _check_class_entries(cls, value: str) -> str:
        class_entries(value)
        return value

    def check(self) -> Settings:
        """Cross-field checks; returns self.

        Raises:
            ConfigError: heartbeat_interval_s is not below lease_ttl_s, or run_timeout_s exceeds
                max_run_timeout_s.
        """
        if self.run_timeout_s > self.max_run_timeout_s:
            raise ConfigError(
                f"GRAPHQ_RUN_TIMEOUT_S={self.run_timeout_s} must not exceed "
                f"GRAPHQ_MAX_RUN_TIMEOUT_S={self.max_run_timeout_s}"
            )
        if self.heartbeat_interval_s >= self.lease_ttl_s:
            raise ConfigError(
                f"GRAPHQ_HEARTBEAT_INTERVAL_S={self.heartbeat_interval_s} must be below "
                f"GRAPHQ_LEASE_TTL_S={self.lease_ttl_s}"
            )
        return self


def load_settings() -> Settings:
    """Build settings from the environment.

    Raises:
        ConfigError: a value is malformed or out of range; the message names the variable and the rule.
    """
    try:
        return Settings().check()
    except ValidationError as exc:
        err = exc.errors()[0]
        name = "GRAPHQ_" + "_".join(str(p) for p in err["loc"]).upper()
        raise ConfigError(f"{name}: {err['msg']} (got {err.get('input')!r})") from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, loaded once (see :func:`load_settings`)."""
    return load_settings()
