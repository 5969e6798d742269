"""Run configuration (C1, C4) and the per-task context that ``get_config()`` reads (C5).

Shape follows LangGraph's ``RunnableConfig`` (tags, metadata, configurable) plus graphq's run options.
Keys that graphq itself puts into ``configurable`` start with ``__graphq_``; users may not set them.
"""

from __future__ import annotations

import contextvars
import threading
import uuid
from collections.abc import Callable, Hashable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from graphcore.engine.cancel import CancelToken
from graphcore.engine.timeouts import Progress
from graphcore.errors import ArgumentTypeError, ConfigError, ConfigValueError, OutsideRunError
from graphcore.settings import explain, get_settings

__all__ = [
    "ACCEPTED",
    "ANSWERS_KEY",
    "GOES_ON",
    "NODE_ERROR_KEY",
    "NODE_SETTINGS_KEY",
    "REMAINING_STEPS_KEY",
    "RESERVED_PREFIX",
    "RESUME_KEY",
    "TASK_METADATA_KEY",
    "Replay",
    "RunConfig",
    "Scope",
    "TaskContext",
    "TryInfo",
    "budget_from",
    "checkpoint_metadata",
    "current_scope",
    "current_task",
    "current_task_or_none",
    "get_cancel_token",
    "get_config",
    "get_node_settings",
    "get_stream_writer",
    "merge_config",
    "named_checkpoints",
    "on_worker",
    "outside_any_task",
    "passed_on",
    "progress_callbacks",
    "remaining_steps",
    "replays_snapshot",
    "run_scope",
    "steps_left",
    "task_context",
    "with_handler",
    "with_remaining_steps",
    "worker_step",
]

RESERVED_PREFIX = "__graphq_"

RESUME_KEY = f"{RESERVED_PREFIX}resume"
"""``configurable`` key carrying task id → answers of its ``interrupt()`` calls into a step (internal)."""

ANSWERS_KEY = f"{RESERVED_PREFIX}answers"
"""``configurable`` key carrying every answer given for a step (interrupt id → value), for subgraphs."""

NODE_ERROR_KEY = f"{RESERVED_PREFIX}node_error"
"""``configurable`` key carrying, into an error handler's task, the failure it handles (a
:class:`~graphcore.errors.NodeError`; :mod:`graphcore.engine.handlers`), as LangGraph's
``__pregel_node_error``."""

TASK_METADATA_KEY = f"{RESERVED_PREFIX}task_metadata"
"""``configurable`` key carrying a task's LangGraph metadata (:mod:`graphcore.engine.task_metadata`), shown in
its ``config["metadata"]``."""

REMAINING_STEPS_KEY = f"{RESERVED_PREFIX}remaining_steps"
"""``configurable`` key carrying the super-steps the run may still take, the running one included (the
managed values of :mod:`graphcore.managed`); set for each super-step by whatever runs it."""

NODE_SETTINGS_KEY = f"{RESERVED_PREFIX}node_settings"
"""``configurable`` key carrying the running node's settings (``add_node(..., settings=...)``, R9), ``{}``
when it has none.

Under the reserved prefix so that it cannot collide with a user's ``configurable`` key (``node_settings``
may well be one) nor with LangGraph's (``thread_id``, ``checkpoint_ns``, ``checkpoint_id`` and its
internal ``__pregel_*`` keys); not in ``metadata``, which carries the run's own metadata (LangGraph puts a
node's ``metadata`` there, for tracing). A subgraph's nodes see their own settings, not their parent
node's (reserved keys are not inherited).
"""


class RunConfig(BaseModel):
    """Options of one run.

    Attributes:
        thread_id: the line of checkpoints this run belongs to; a new one per run when None.
        run_id: set by the runtime.
        tags: free-form labels, merged as an ordered union with defaults.
        metadata: free-form JSON values, merged key by key (later wins).
        configurable: values nodes read through ``get_config()``, merged key by key.
        max_super_steps: super-step budget of this run (C1), at least 0; None → ``GRAPHQ_MAX_SUPER_STEPS``
            (default 10006, LangGraph 1.x's default ``recursion_limit`` 10007). 0 (LangGraph's
            ``recursion_limit`` 1) lets no super-step run: a run with a task to run fails at its first
            super-step (:class:`~graphcore.errors.StepLimitError`, LangGraph's ``GraphRecursionError``).
        resume_if_exists: start from the thread's latest checkpoint when it has one (C2): the input goes
            through the reducers and execution starts again at the entry node; False starts from empty.
        checkpoint_id: start from this checkpoint of the thread instead of its latest (C3): a fork, recorded
            as a checkpoint with ``source: fork``; the thread's latest checkpoint id behaves like no id.
        run_timeout_s: seconds from the run's creation (queue wait included) after which it ends Canceled,
            checked between super-steps (R15); None → ``GRAPHQ_RUN_TIMEOUT_S``. At most
            ``GRAPHQ_MAX_RUN_TIMEOUT_S`` (R11).
        request_timeout_s: seconds a human request (``interrupt()`` without its own ``timeout_s``) stays
            open; unanswered by then, the run ends Canceled at the next request-expiry scan (R13). None → no
            deadline. At most ``GRAPHQ_MAX_RUN_TIMEOUT_S``, checked when the workflow is registered.
        max_concurrent_runs: at most this many runs of the workflow hold a slot at once, cluster-wide (R8);
            a workflow option (``compile(config=...)``): it lowers ``GRAPHQ_MAX_CONCURRENT_RUNS`` for its
            own runs, which are also counted against that one. None → no limit of the workflow's own.
        max_concurrent_runs_per_tenant: the same per tenant (besides
            ``GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT``).
        thread_ttl_s: retention of the run's thread, seconds after its last use (K3): it may shorten
            ``GRAPHQ_THREAD_TTL_S``, or set one when that is unset; None → the setting. Fixed when the run is
            created (:attr:`graphcore.backend.runs.RunRecord.thread_ttl_s`).
        checkpoint_ns: the checkpoint namespace (LangGraph's ``configurable["checkpoint_ns"]``): "" is the
            root graph's; a subgraph's is ``node:task_id`` (``get_state`` reads it; ``invoke``/``stream``
            outside a node drop it, and ``checkpoint_id`` with it, as LangGraph: :func:`outside_any_task`).
        run_name: a name for the run (LangGraph's ``run_name``), kept for reading; graphq does not use it.
        max_concurrency: at most this many tasks of one super-step run at once (LangGraph's
            ``max_concurrency``); None → up to ``GRAPHQ_MAX_WORKERS_PER_STEP``.
        shard_min_tasks: on the queue, a super-step with at least this many tasks still to run is split
            into batches that the worker pool runs (:mod:`graphq.worker.step.split`); 0 never splits; None →
            ``GRAPHQ_SHARD_MIN_TASKS``. A workflow option (``compile(config=...)``) or a run's.
        version_policy: ``pin``: the run's steps run only on workers serving the workflow's version it
            started with (:attr:`graphcore.backend.runs.RunRecord.version`); ``latest``: on any worker
            serving the workflow, as LangGraph. None → ``GRAPHQ_VERSION_POLICY``. A workflow option
            (``compile(config=...)``) or a run's, fixed when the run is created.
        durability: LangGraph's ``durability`` (``sync``, ``async``, ``exit``), recorded; in-process
            ``exit`` writes checkpoints only when the run returns, pauses or fails
            (:mod:`graphcore.engine.durability`); on the queue every super-step is committed whatever it says.
        context: the run's context (LangGraph's ``invoke(..., context=...)``, read by nodes through a
            ``runtime`` parameter or ``get_runtime()``; :mod:`graphcore.engine.runtime`), inherited by graphs
            invoked inside a node; a queued run stores it as JSON with its config. None: no context.
        stream_mode: a queued run's events beyond those every run records: ``["messages"]`` (or
            ``"messages"``) records the LLM tokens of the chat models its nodes call and the messages they
            write (:mod:`graphq.worker.step.messages`); ``[]`` none. In process, ``stream(stream_mode=...)``
            decides and this option is not used.
        webhook: an http or https URL that a queued run's summary is POSTed to when it ends or pauses for
            input (:mod:`graphcore.backend.webhooks`), signed with ``GRAPHQ_WEBHOOK_SECRET``; checked when the
            run is enqueued (:func:`graphcore.backend.webhooks.check_webhook`). None: no webhook. In process
            it is not used.

    LangGraph's ``RunnableConfig`` is accepted as it is (:func:`merge_config`): ``configurable`` keys
    ``thread_id``, ``checkpoint_id`` and ``checkpoint_ns`` set the options of those names,
    ``recursion_limit`` R sets ``max_super_steps`` R - 1 (LangGraph's limit R allows R - 1 super-steps), and
    ``callbacks`` (LangChain callback handlers, a list or a callback manager) hear the graph's chain run, its
    nodes' runs (:mod:`graphcore.engine.lc_runs`) and the LangChain calls made inside nodes
    (:func:`task_context`); they are never stored (a queued run refuses them). A config also
    reads like LangGraph's dict (``config["configurable"]
    ["thread_id"]``, ``config.get("metadata", {})``, ``config["tags"]``; see :meth:`__getitem__`).
    """

    model_config = ConfigDict(extra="forbid")

    thread_id: str | None = None
    run_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    configurable: dict[str, Any] = Field(default_factory=dict)
    max_super_steps: int | None = Field(default=None, ge=0)
    resume_if_exists: bool = True
    checkpoint_id: str | None = None
    run_timeout_s: float | None = Field(default=None, gt=0)
    request_timeout_s: float | None = Field(default=None, gt=0)
    max_concurrent_runs: int | None = Field(default=None, ge=1, le=1_000_000)
    max_concurrent_runs_per_tenant: int | None = Field(default=None, ge=1, le=1_000_000)
    thread_ttl_s: float | None = Field(default=None, ge=1, le=10 * 365 * 86_400)
    checkpoint_ns: str = ""
    run_name: str | None = None
    max_concurrency: int | None = Field(default=None, ge=1)
    shard_min_tasks: int | None = Field(default=None, ge=0, le=1_000_000, strict=True)
    version_policy: Literal["pin", "latest"] | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    context: Any = None
    stream_mode: list[Literal["messages"]] = Field(default_factory=list)
    webhook: str | None = None
    callbacks: Any = Field(default=None, exclude=True)

    @field_validator("stream_mode", mode="before")
    @classmethod
    def _one_mode(cls, value: Any) -> Any:
        """A single mode as a list of one (``"messages"``, as ``stream(stream_mode=...)`` takes it)."""
        return [value] if isinstance(value, str) else value

    def __getitem__(self, key: str) -> Any:
        """Read the config as LangGraph's dict: ``configurable`` (with ``thread_id``, ``checkpoint_id`` and
        ``checkpoint_ns``: inside a node the task's namespace), ``tags``, ``metadata`` (inside a node also
        the task's ``langgraph_*`` keys, :mod:`graphcore.engine.task_metadata`), ``recursion_limit``
        (``max_super_steps`` + 1, when set), ``run_id``, ``run_name``, ``max_concurrency``, ``callbacks``,
        or any option by name.

        Raises:
            KeyError: none of those.
        """
        return _langgraph_view(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        """``self[key]``, or ``default`` for a key :meth:`__getitem__` does not know (as ``dict.get``)."""
        try:
            return self[key]
        except KeyError:
            return default

    def items(self) -> list[tuple[str, Any]]:
        """The config as LangChain reads a ``RunnableConfig`` (``ensure_config``), so a node may pass it on,
        ``model.invoke(messages, config)``: the pairs of :meth:`keys` but ``run_id`` (graphq's run id, not
        the id of a LangChain call) and graphq's own options."""
        return [(k, self[k]) for k in _VIEW_KEYS if k != "run_id" and k in self]

    def __contains__(self, key: object) -> bool:
        """Whether ``self[key]`` has a value (``recursion_limit`` only when the run sets one)."""
        if key == "recursion_limit":
            return self.max_super_steps is not None
        return key in _VIEW_KEYS or key in type(self).model_fields

    def keys(self) -> list[str]:
        """The keys :meth:`__getitem__` reads (so ``dict(config)`` and ``{**config}`` work): LangGraph's, then
        graphq's other options."""
        return [k for k in dict.fromkeys((*_VIEW_KEYS, *type(self).model_fields)) if k in self]

    def run_timeout(self) -> float:
        """The effective run timeout in seconds (R11, R15).

        Raises:
            ConfigError: it exceeds ``GRAPHQ_MAX_RUN_TIMEOUT_S``.
        """
        settings = get_settings()
        timeout = self.run_timeout_s if self.run_timeout_s is not None else settings.run_timeout_s
        if timeout > settings.max_run_timeout_s:
            ceiling = settings.max_run_timeout_s
            raise ConfigError(f"run_timeout_s={timeout} is above the GRAPHQ_MAX_RUN_TIMEOUT_S={ceiling}")
        return timeout

    def thread_ttl(self) -> float | None:
        """The thread TTL of this run, seconds (K3): the lower of its ``thread_ttl_s`` and
        ``GRAPHQ_THREAD_TTL_S``; None (keep the thread) when neither is set.

        Raises:
            ConfigError: ``thread_ttl_s`` is below ``GRAPHQ_LEASE_TTL_S`` (a thread's keys must outlive the
                lease of its step).
        """
        settings = get_settings()
        if self.thread_ttl_s is not None and self.thread_ttl_s < settings.lease_ttl_s:
            raise ConfigError(
                f"thread_ttl_s={self.thread_ttl_s} is below GRAPHQ_LEASE_TTL_S={settings.lease_ttl_s} (a "
                "thread's keys must outlive the lease of its step)"
            )
        ttls = [t for t in (self.thread_ttl_s, settings.thread_ttl_s) if t is not None]
        return min(ttls) if ttls else None

    def check_request_timeout(self) -> None:
        """Check ``request_timeout_s`` against its ceiling (R11, R13).

        Raises:
            ConfigError: it exceeds ``GRAPHQ_MAX_RUN_TIMEOUT_S``.
        """
        ceiling = get_settings().max_run_timeout_s
        if self.request_timeout_s is not None and self.request_timeout_s > ceiling:
            raise ConfigError(
                f"request_timeout_s={self.request_timeout_s} is above the GRAPHQ_MAX_RUN_TIMEOUT_S={ceiling}"
            )

    def step_limit(self) -> int:
        """The effective ``max_super_steps`` (at least 1: the option's range and the setting's)."""
        return self.max_super_steps if self.max_super_steps is not None else get_settings().max_super_steps


GOES_ON = -2
"""Where the super-steps of a call that goes on from a checkpoint without input count from (an answer,
``invoke(None)``, a resume past a breakpoint, a subgraph that goes on where it stopped): LangGraph counts
such a call from ``recursion_limit + 1`` (its step counter starts after the checkpoint, and no input
checkpoint nor ``__start__`` step is spent), so it may take 2 super-steps more than a call with input."""


def budget_from(given_input: bool, goes_on: bool) -> int:
    """Where a call's super-steps count from (:func:`with_remaining_steps` is given ``taken + this``), as
    LangGraph counts them: 0 for a call that applies its input (its first super-step sees
    ``remaining_steps`` ``max_super_steps``); :data:`GOES_ON` for one that ``goes_on`` from a checkpoint
    without input; -1 for one that applies an input checkpoint's input without giving one (its
    ``__start__`` step is spent, not its input checkpoint's)."""
    if goes_on:
        return GOES_ON
    return 0 if given_input else -1


def with_remaining_steps(cfg: RunConfig, taken: int) -> RunConfig:
    """``cfg`` for the run's next super-step after ``taken`` super-steps (0 before its first): it carries
    the super-steps left, that one included (:func:`steps_left`, :data:`REMAINING_STEPS_KEY`)."""
    left = steps_left(cfg, taken)
    return cfg.model_copy(update={"configurable": {**cfg.configurable, REMAINING_STEPS_KEY: left}})


def steps_left(cfg: RunConfig, taken: int) -> int:
    """The super-steps the run may still take after ``taken`` super-steps, the next one included
    (``max_super_steps - taken``): its ``remaining_steps``."""
    return cfg.step_limit() - taken


def remaining_steps(cfg: RunConfig) -> int:
    """The super-steps the run may still take, the running one included (:func:`with_remaining_steps`);
    the whole ``max_super_steps`` where no super-step set it (routers of ``update_state``)."""
    left = cfg.configurable.get(REMAINING_STEPS_KEY)
    return cfg.step_limit() if left is None else int(left)


_NOT_COPIED = frozenset(
    {"thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map", "langgraph_step", "langgraph_node"}
    | {"langgraph_triggers", "langgraph_path", "langgraph_checkpoint_ns"}
)
"""Config keys LangGraph never copies into a checkpoint's metadata."""


def checkpoint_metadata(
    cfg: RunConfig, run_id: str | None = None, parents: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The metadata every checkpoint of a run carries besides ``source``, ``step`` and ``writes``: graphq's
    ``run_id`` (``run_id``, else ``cfg.run_id``); a subgraph's ``parents`` (namespace → checkpoint id of
    the graphs it runs in, :attr:`Scope.parents`; stored as LangGraph's, left out when empty); then, as
    LangGraph's savers copy them, the run config's ``metadata`` keys and then its ``configurable`` keys
    whose values are a str, int, float or bool (not the keys LangGraph leaves out, nor those starting with
    ``__``; a key already present is kept)."""
    meta: dict[str, Any] = {"run_id": run_id or cfg.run_id}
    if parents:
        meta["parents"] = dict(parents)
    for layer in (cfg.metadata, cfg.configurable):
        for key, value in layer.items():
            if key in meta or key in _NOT_COPIED or key.startswith("__"):
                continue
            if isinstance(value, (str, int, float, bool)):
                meta[key] = value.replace("\u0000", "") if isinstance(value, str) else value
    return meta


def merge_config(
    *layers: Mapping[str, Any] | RunConfig | None, known: Sequence[str] | None = None
) -> RunConfig:
    """Merge config layers, later layers winning (C4): tags as an ordered union; metadata and configurable
    key by key; scalar options replaced when set.

    Args:
        layers: configs, None skipped.
        known: the options an unknown option's message lists; None: :data:`ACCEPTED`, every key a layer may
            have (the queue lists fewer: :data:`graphcore.backend.client.QUEUE_OPTIONS`).

    Raises:
        ArgumentTypeError: a layer is not a mapping, a RunConfig or None (``config="nope"``).
        ConfigError: an unknown option, a value out of its range or of the wrong type (naming the option,
            the allowed range and the value), or a user ``configurable`` key with the reserved ``__graphq_``
            prefix.
    """
    merged: dict[str, Any] = {"tags": [], "metadata": {}, "configurable": {}}
    for layer in layers:
        if layer is None:
            continue
        data = _options_of(layer)
        unknown = set(data) - set(RunConfig.model_fields)
        if unknown:
            raise ConfigError(f"unknown run option(s) {sorted(unknown)}; known: {list(known or ACCEPTED)}")
        for key, value in data.items():
            if key in _MERGED and not isinstance(value, _MERGED[key][0]):
                raise ConfigError(f"run option {key}: must be {_MERGED[key][1]} (got {value!r})")
            if key == "tags":
                merged["tags"] += [t for t in dict.fromkeys(value) if t not in merged["tags"]]
            elif key in ("metadata", "configurable"):
                merged[key] = {**merged[key], **value}
            elif value is not None:
                merged[key] = value
    reserved = [k for k in merged["configurable"] if k.startswith(RESERVED_PREFIX)]
    if reserved:
        raise ConfigError(f"configurable keys {reserved} use the reserved prefix {RESERVED_PREFIX!r}")
    return _validated(merged)


def outside_any_task(cfg: RunConfig) -> RunConfig:
    """The config of a run started outside any task (not nested), by LangGraph's rule: a given
    ``checkpoint_ns`` is dropped, and with it ``checkpoint_id``, so the run checkpoints in the thread's root
    namespace and goes on from its latest checkpoint (LangGraph resets both for a root run; only a graph
    running inside a task has a namespace, given by that task). A subgraph snapshot's config names the
    root's checkpoint in its ``checkpoint_map``: the run goes back there (:func:`replays_snapshot`)."""
    if not cfg.checkpoint_ns:
        return cfg
    root = replays_snapshot(cfg)
    return cfg.model_copy(update={"checkpoint_ns": "", "checkpoint_id": root})


def replays_snapshot(cfg: RunConfig) -> str | None:
    """The root checkpoint id in ``cfg``'s ``checkpoint_map`` (a subgraph snapshot's config, LangGraph's):
    a root run given it replays from there, forking the thread even at its latest checkpoint, unless it
    answers; None without one."""
    root = (named_checkpoints(cfg) or {}).get("")
    return str(root) if root else None


def named_checkpoints(cfg: RunConfig) -> Mapping[str, str] | None:
    """``cfg``'s ``checkpoint_map`` (a subgraph snapshot's or checkpoint event's config, LangGraph's):
    namespace → checkpoint id of the graphs it names (``""`` the root's), None without one."""
    known = cfg.configurable.get("checkpoint_map")
    return known if isinstance(known, Mapping) else None


_DEFAULTS = {k: f.get_default(call_default_factory=True) for k, f in RunConfig.model_fields.items()}
"""Each option's default value (only compared: :func:`passed_on` drops dict keys left at it)."""
_TASK_KEY = f"{RESERVED_PREFIX}task_id"
_TASK_IDS = ("thread_id", "checkpoint_id", "checkpoint_ns", "run_id")


def passed_on(config: Mapping[str, Any] | RunConfig | None) -> Mapping[str, Any] | RunConfig | None:
    """``config`` as a graph that a node invokes in its parent's thread takes it. A node's own config (its
    ``config`` parameter, ``get_config()``, or a dict made of one, ``{**config}``: its ``configurable``
    holds the task's reserved ``__graphq_`` keys), passed on as LangGraph code does
    (``inner.invoke(x, config)``), loses the task's ids (the reserved keys, ``thread_id``, ``checkpoint_id``,
    ``checkpoint_ns``, ``run_id``): the graph runs as the node's child, as without a config, with the rest
    (tags, metadata, ``configurable``, limits, context). Any other config is returned as it is."""
    if isinstance(config, RunConfig):
        data = _dumped(config)
    elif isinstance(config, Mapping):
        data = {k: v for k, v in config.items() if k not in _DEFAULTS or v != _DEFAULTS[k]}
    else:
        return config
    conf = data.get("configurable")
    if not isinstance(conf, Mapping) or _TASK_KEY not in conf:
        return config
    mine = {k: v for k, v in conf.items() if not k.startswith(RESERVED_PREFIX) and k not in _TASK_IDS}
    return {**{k: v for k, v in data.items() if k not in _TASK_IDS}, "configurable": mine}


def _dumped(cfg: RunConfig) -> dict[str, Any]:
    """The options set in ``cfg``, its ``context`` and ``callbacks`` as the objects themselves (``model_dump``
    makes a dataclass a dict and leaves callbacks out)."""
    data = cfg.model_dump(exclude_unset=True)
    if "context" in data:
        data["context"] = cfg.context
    if cfg.callbacks is not None:  # never dumped (not storable): the object itself
        data["callbacks"] = cfg.callbacks
    return data


ACCEPTED: tuple[str, ...] = tuple(sorted({*RunConfig.model_fields, "recursion_limit", "callbacks"}))
"""The keys a config layer may have: graphq's options and LangGraph's ``recursion_limit`` and ``callbacks``
(:func:`_graphq_keys` turns them into options)."""

_LANGGRAPH_CONFIGURABLE = ("thread_id", "checkpoint_id", "checkpoint_ns")
"""``configurable`` keys of LangGraph's config that are graphq run options of the same name."""

_VIEW_KEYS = (
    "configurable",
    "tags",
    "metadata",
    "recursion_limit",
    "run_id",
    "run_name",
    "max_concurrency",
    "callbacks",
)
"""The keys of LangGraph's ``RunnableConfig``, as :meth:`RunConfig.__getitem__` reads them."""


def _options_of(layer: Mapping[str, Any] | RunConfig) -> dict[str, Any]:
    """A config layer's options by graphq's names.

    Raises:
        ArgumentTypeError: ``layer`` is neither a mapping nor a RunConfig (``config="nope"``).
        ConfigError: see :func:`_graphq_keys`.
    """
    if isinstance(layer, RunConfig):
        return _dumped(layer)
    if isinstance(layer, Mapping):
        return _graphq_keys(layer)
    raise ArgumentTypeError("config", "a mapping of run options, a RunConfig or None", layer)


def _graphq_keys(layer: Mapping[str, Any]) -> dict[str, Any]:
    """A config layer given as a mapping, LangGraph's keys turned into graphq's options (see
    :class:`RunConfig`).

    Raises:
        ConfigError: a thread id (or checkpoint id, namespace) given twice with two values; a
            ``recursion_limit`` that is not an integer ≥ 1 (LangGraph's ValueError) or contradicts
            ``max_super_steps``.
    """
    data = dict(layer)
    conf = data.get("configurable")
    _propagate_to_metadata(data, conf)
    if isinstance(conf, Mapping) and not set(_LANGGRAPH_CONFIGURABLE).isdisjoint(conf):
        data["configurable"] = conf = dict(conf)
        for key in _LANGGRAPH_CONFIGURABLE:
            _lift(data, key, conf.pop(key, None))
    if isinstance(data.get("run_id"), uuid.UUID):
        data["run_id"] = str(data["run_id"])
    if "recursion_limit" in data:
        data["max_super_steps"] = _steps_of(data.pop("recursion_limit"), data.get("max_super_steps"))
    return data


PROPAGATED_TO_METADATA = (
    "thread_id",
    "checkpoint_id",
    "checkpoint_ns",
    "task_id",
    "run_id",
    "assistant_id",
    "graph_id",
)
"""The ``configurable`` keys LangGraph copies into the config's ``metadata`` (so into a node's
``config["metadata"]`` and the ``messages`` stream's metadata) when set and not in it already."""


def _propagate_to_metadata(data: dict[str, Any], conf: Any) -> None:
    """Copy the :data:`PROPAGATED_TO_METADATA` keys of ``conf`` (a layer's ``configurable``) that are set into
    the layer's ``metadata``, a key the metadata has kept (LangGraph's ``ensure_config``)."""
    metadata = data.get("metadata")
    if not isinstance(conf, Mapping) or not (metadata is None or isinstance(metadata, Mapping)):
        return  # a bad type is refused by merge_config, naming the option
    copied = {k: conf[k] for k in PROPAGATED_TO_METADATA if conf.get(k)}
    if copied:
        data["metadata"] = {**copied, **(metadata or {})}


def _lift(data: dict[str, Any], key: str, value: Any) -> None:
    """Set option ``key`` from ``configurable[key]`` (ints and UUIDs as text, as LangGraph stores them)."""
    if value is None:
        return
    if isinstance(value, int | uuid.UUID) and not isinstance(value, bool):
        value = str(value)
    given = data.get(key)
    if given is not None and given != value:
        raise ConfigError(f"run option {key}={given!r} and configurable {key}={value!r} differ; give one")
    data[key] = value


def _steps_of(limit: Any, max_super_steps: Any) -> Any:
    """``max_super_steps`` for LangGraph's ``recursion_limit`` (R allows R - 1 super-steps; 1 allows none:
    the run fails at its first super-step, as LangGraph's)."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ConfigValueError(
            "run option recursion_limit: must be an integer ≥ 1 (LangGraph's recursion_limit R allows R - 1 "
            f"super-steps, graphq's max_super_steps) (got {limit!r})"
        )
    if max_super_steps is not None and max_super_steps != limit - 1:
        raise ConfigError(
            f"run options recursion_limit={limit} and max_super_steps={max_super_steps} differ "
            "(recursion_limit R is max_super_steps R - 1); give one"
        )
    return limit - 1


def _langgraph_view(cfg: RunConfig, key: str) -> Any:
    """``cfg[key]``: see :meth:`RunConfig.__getitem__`."""
    if key == "configurable":
        ids = {"thread_id": cfg.thread_id, "checkpoint_id": cfg.checkpoint_id}
        task = cfg.configurable.get(TASK_METADATA_KEY)  # in a task: its own namespace, as LangGraph's
        ns = task["langgraph_checkpoint_ns"] if task is not None else cfg.checkpoint_ns
        return {**cfg.configurable, **ids, "checkpoint_ns": ns}
    if key == "metadata":
        return {**cfg.metadata, **cfg.configurable.get(TASK_METADATA_KEY, {})}
    if key == "recursion_limit":  # as LangGraph's, only when the run sets it
        if cfg.max_super_steps is None:
            raise KeyError(key)
        return cfg.max_super_steps + 1
    if key in type(cfg).model_fields:
        return getattr(cfg, key)
    raise KeyError(key)


_MERGED: dict[str, tuple[type | tuple[type, ...], str]] = {
    "tags": ((list, tuple), "a list of strings"),
    "metadata": (Mapping, "a mapping"),
    "configurable": (Mapping, "a mapping"),
}
"""The options merged item by item rather than replaced, and what they must be."""


def _validated(merged: Mapping[str, Any]) -> RunConfig:
    """``merged`` as a :class:`RunConfig`; a value pydantic refuses becomes a :class:`ConfigError` naming the
    option and the allowed range (as settings errors do), and so does a per-tenant limit above the limit."""
    try:
        cfg = RunConfig.model_validate(merged)
    except ValidationError as exc:
        option, problem = explain(exc, RunConfig)
        raise ConfigError(f"run option {option}: {problem}") from None
    limit, per_tenant = cfg.max_concurrent_runs, cfg.max_concurrent_runs_per_tenant
    if limit is not None and per_tenant is not None and per_tenant > limit:
        raise ConfigError(
            f"run option max_concurrent_runs_per_tenant={per_tenant} must be in "
            f"1..max_concurrent_runs={limit}"
        )
    return cfg


def _no_heartbeat() -> None:
    """The heartbeat of a try without an idle timeout: nothing waits on it."""


@dataclass(frozen=True)
class TryInfo:
    """One try of a task, as its node sees it.

    Attributes:
        number: the try's number (1 for the first; more under a retry policy).
        first_at: when the task's first try started, Unix time in seconds (None when not known).
        progress: the try's progress against its node's idle timeout, or None without one.
    """

    number: int = 1
    first_at: float | None = None
    progress: Progress | None = None

    @property
    def heartbeat(self) -> Callable[[], None]:
        """``runtime.heartbeat``: records progress for the node's idle timeout (a no-op without one)."""
        return _no_heartbeat if self.progress is None else self.progress.heartbeat


def with_handler(cfg: RunConfig, handler: Any) -> RunConfig:
    """``cfg`` with the LangChain callback ``handler`` added to its callbacks (None, a list, or a callback
    manager, which is copied), inherited by the LangChain calls under it."""
    callbacks = cfg.callbacks
    if callbacks is None or isinstance(callbacks, list):
        return cfg.model_copy(update={"callbacks": [*(callbacks or []), handler]})
    manager = callbacks.copy()  # a LangChain callback manager
    manager.add_handler(handler, inherit=True)
    return cfg.model_copy(update={"callbacks": manager})


def progress_callbacks(cfg: RunConfig, progress: Progress) -> RunConfig:
    """``cfg`` (a try's config) whose LangChain calls report progress
    to ``progress`` (``refresh_on="auto"``, with langchain-core installed), else ``cfg``."""
    if progress.idle.refresh_on != "auto":
        return cfg
    try:
        from graphcore.engine.langchain_progress import ProgressHandler
    except ImportError:
        return cfg
    return with_handler(cfg, ProgressHandler(progress))


@dataclass
class TaskContext:
    """What a running node can see: its config (with idempotency key), the stream writer, its cancel token
    and the answers to its ``interrupt()`` calls.

    ``config.configurable`` holds ``__graphq_run_id``, ``__graphq_thread_id``, ``__graphq_step``,
    ``__graphq_task_id``, ``__graphq_node``, ``__graphq_idempotency_key`` = ``"<run>:<step>:<task>"`` (I1),
    ``__graphq_node_settings`` (the node's settings, :data:`NODE_SETTINGS_KEY`) and ``__graphq_task_metadata``
    (its LangGraph metadata, :data:`TASK_METADATA_KEY`).
    """

    config: RunConfig
    stream_writer: Callable[[Any], None]
    cancel_token: CancelToken = field(default_factory=CancelToken)
    task_id: str = ""
    node: str = ""
    resume: list[Any] = field(default_factory=list)
    interrupt_calls: int = 0
    answers: Mapping[str, Any] = field(default_factory=dict)
    graph_calls: int = 0
    """How many graphs the task invoked so far (each call checkpoints in a namespace of its own)."""
    callers: frozenset[Hashable] = frozenset()
    """Who (thread, asyncio task) called ``interrupt()`` or invoked a graph in this task
    (:mod:`graphcore.engine.nested`): a task that pauses must have had one."""
    checkpoint_id: str = ""
    """The id of the checkpoint the task's super-step starts from."""
    try_: TryInfo = field(default_factory=lambda: TryInfo())
    """The running try (``runtime.execution_info``, ``runtime.heartbeat``)."""
    runtime: Any = None
    """The try's :class:`~graphcore.engine.runtime.Runtime`, once built (``runtime_of``)."""
    pushed: list[tuple[str, Any]] = field(default_factory=list)
    """The ``(state key, message)`` writes of the node's ``push_message()`` calls, in order (written before
    what it returns)."""
    from_subgraph: bool = False
    """The node's output is the ``Command(graph=Command.PARENT)`` a graph it ran sent up
    (:mod:`graphcore.engine.parent`)."""

    def next_interrupt(self, caller: Hashable = None) -> int:
        """The index of this ``interrupt()`` call within the task (0, 1, ...), recording ``caller``."""
        with _calls_lock:
            index = self.interrupt_calls
            self.interrupt_calls += 1
            self.callers |= {caller}
        return index

    def next_graph_call(self, caller: Hashable = None) -> int:
        """The index of this task's call of a graph (0, 1, ...), counted across threads, recording
        ``caller``."""
        with _calls_lock:
            index = self.graph_calls
            self.graph_calls += 1
            self.callers |= {caller}
        return index


def _langchain_config_var() -> contextvars.ContextVar[Any] | None:
    try:
        from langchain_core.runnables.config import var_child_runnable_config
    except ImportError:
        return None
    return var_child_runnable_config


_LANGCHAIN_CONFIG = _langchain_config_var()
"""LangChain's current-config context variable, or None without langchain-core."""

_calls_lock = threading.Lock()
"""Guards the call counters of every :class:`TaskContext` (taken only by ``interrupt()`` and graph calls)."""


_current: contextvars.ContextVar[TaskContext] = contextvars.ContextVar("graphq_task")


@dataclass(frozen=True)
class Scope:
    """Where the running graph keeps its checkpoints: the store, thread and namespace (G7); and its
    long-term memory.

    Set around a super-step by the in-process executor and by the worker; a subgraph running inside a
    task checkpoints into the same store and thread under its own namespace ``parent_ns|node:task_id``.

    Attributes:
        memory: the run's long-term store (``compile(store=...)``; on the queue the workers' Redis store),
            which ``get_store()``, ``runtime.store`` and a node's ``store`` parameter give; None without one.
            A graph invoked inside a node uses its parent's (LangGraph's rule).
        replay: set when the run travels back in its thread: where its stateful subgraphs start from; the
            graphs its tasks run in its thread inherit it.
        run_id: the run id its nodes see in ``runtime.execution_info``: the one the graph's caller gave (a
            config's ``run_id``; on the queue, the queued run's), None when the caller gave none (LangGraph's;
            graphq's own id is still in the checkpoints' metadata). A graph a node runs sees only the one its
            own call gives (LangChain's child configs carry none).
        parents: namespace → checkpoint id of the graphs it runs in (``{}`` at the root; a subgraph's holds
            its parent's and the checkpoint its task ran from): LangGraph's ``parents`` metadata and, with
            its own, the ``checkpoint_map`` of its checkpoints' configs.
    """

    store: Any
    thread_id: str
    ns: str = ""
    memory: Any = None
    control: Any = None
    """The run's :class:`~graphcore.engine.runtime.RunControl` (``runtime.control``), or None."""
    replay: Replay | None = None
    run_id: str | None = None
    parents: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Replay:
    """A run that goes on from an earlier checkpoint of its thread (LangGraph's time travel: replay, or a
    fork by ``update_state``): a ``checkpointer=True`` subgraph runs on its state as of that checkpoint, not
    on its latest (:func:`graphcore.engine.checkpointer.replayed_head`).

    Attributes:
        before: ``created_at`` of the checkpoint the run goes back to (ISO-8601 UTC): a subgraph checkpoint
            created before it is of that past.
        since: when the run started (ISO-8601 UTC): a subgraph checkpoint created since is the run's own.
        at: namespace → checkpoint id of the subgraphs the run goes back to by id (a subgraph snapshot's
            config's ``checkpoint_map``): such a subgraph goes on from a fork of that checkpoint.
    """

    before: str
    since: str
    at: Mapping[str, str] = field(default_factory=dict)


_scope: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("graphq_scope", default=None)


class _Current:
    """``with``: ``value`` is the context variable's value for the block (a class, not a generator-based
    context manager: a step enters two of them per task, on its hot path, P1/P3)."""

    __slots__ = ("_token", "value", "var")

    def __init__(self, var: contextvars.ContextVar[Any], value: Any) -> None:
        self.var, self.value = var, value

    def __enter__(self) -> None:
        self._token = self.var.set(self.value)

    def __exit__(self, *exc: object) -> None:
        self.var.reset(self._token)


def run_scope(scope: Scope) -> AbstractContextManager[None]:
    """Make ``scope`` current for the block (and the tasks started inside it)."""
    return _Current(_scope, scope)


_worker: contextvars.ContextVar[bool] = contextvars.ContextVar("graphq_on_worker", default=False)


def worker_step() -> AbstractContextManager[None]:
    """Mark the block (and the tasks and graphs run inside it) as a queue worker's step job: what
    ``debug=True`` and ``print_mode`` show is logged there, not printed (a worker's stdout is not the
    user's; :func:`graphcore.engine.stream.show_events`)."""
    return _Current(_worker, True)


def on_worker() -> bool:
    """Whether the code runs in a queue worker's step job (:func:`worker_step`)."""
    return _worker.get()


def current_scope() -> Scope | None:
    """The scope of the graph running now, or None outside a run."""
    return _scope.get()


class _TaskAndLangChain(_Current):
    """``with``: ``value`` is the current task context, and its config LangChain's current config."""

    __slots__ = ("_lc_token",)

    def __enter__(self) -> None:
        super().__enter__()
        self._lc_token = _LANGCHAIN_CONFIG.set(self.value.config)  # type: ignore[union-attr]

    def __exit__(self, *exc: object) -> None:
        _LANGCHAIN_CONFIG.reset(self._lc_token)  # type: ignore[union-attr]
        super().__exit__(*exc)


def task_context(ctx: TaskContext) -> AbstractContextManager[None]:
    """Make ``ctx`` the current task context for the duration of the block.

    With langchain-core installed, the task's config is also LangChain's current config for the block
    (``langchain_core.runnables.config.var_child_runnable_config``, as LangGraph sets it), so a LangChain
    call in the node (``model.invoke(messages)``, a tool, a runnable) gets its ``callbacks``, ``tags``,
    ``metadata`` and ``configurable`` without being passed the config.
    """
    if _LANGCHAIN_CONFIG is None:
        return _Current(_current, ctx)
    return _TaskAndLangChain(_current, ctx)


def current_task(fn: str) -> TaskContext:
    """The running task's context; ``fn`` names the caller for the error message.

    Raises:
        OutsideRunError: called outside a running node.
    """
    try:
        return _current.get()
    except LookupError:
        raise OutsideRunError(f"{fn}() can only be called inside a node while a graph runs") from None


def current_task_or_none() -> TaskContext | None:
    """The running task's context, or None outside a running node."""
    return _current.get(None)


def get_config() -> RunConfig:
    """The config of the task that is running now (C5).

    Raises:
        OutsideRunError: called outside a running node.
    """
    return current_task("get_config").config


def get_node_settings() -> dict[str, Any]:
    """The running node's settings, as given to ``add_node(..., settings=...)`` (R9); ``{}`` when none.

    The same object for every task of the node: read it, do not change it. Also in the node's config as
    ``config.configurable["__graphq_node_settings"]`` (:data:`NODE_SETTINGS_KEY`).

    Raises:
        OutsideRunError: called outside a running node.
    """
    settings: dict[str, Any] = current_task("get_node_settings").config.configurable[NODE_SETTINGS_KEY]
    return settings


def get_cancel_token() -> CancelToken:
    """The cancel token of the running task (C7): set when the run is cancelled with ``interrupt=True``
    or the node passes its timeout.

    Raises:
        OutsideRunError: called outside a running node.
    """
    return current_task("get_cancel_token").cancel_token


def get_stream_writer() -> Callable[[Any], None]:
    """A function that emits a ``custom`` stream event from the running node (C5, C6).

    Raises:
        OutsideRunError: called outside a running node.
    """
    return current_task("get_stream_writer").stream_writer
