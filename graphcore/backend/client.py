"""The Python client: the one way into graphq for batch pipelines, the CLI and tests.

Enqueueing needs a :class:`StepQueue` (the worker package provides the RQ one, see
``graphq.worker.queue.connect_client``); reading runs and state needs only Redis.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from redis.exceptions import WatchError

from graphcore import keys
from graphcore.backend import published
from graphcore.backend.admission import stage_admit
from graphcore.backend.bulk import DONE, REQUESTED, BulkResult, in_pages
from graphcore.backend.expiry import DEADLINE_FIELD, deadline_fields, expired_note
from graphcore.backend.reaper import server_ms
from graphcore.backend.resuming import gone_on, newer_run, not_ended, nothing_left
from graphcore.backend.retention import keep_result
from graphcore.backend.runs import CANCEL_ERROR, TERMINAL, RunFilter, RunRecord, RunStatus, RunStore, now_iso
from graphcore.backend.store import RedisCheckpointStore
from graphcore.backend.switch import refuse_if_off
from graphcore.backend.threads import (
    MULTITASK_POLICIES,
    Multitask,
    StepQueue,
    ThreadBusyError,
    hand_over_many,
    mark_busy,
)
from graphcore.backend.ttl import (
    Deleted,
    ThreadActiveError,
    delete_refusals,
    delete_thread,
    delete_threads,
    run_keys,
    stage_add,
    stage_use,
)
from graphcore.backend.webhooks import check_webhook
from graphcore.checkpoints import serde
from graphcore.checkpoints.layout import encode_writes
from graphcore.checkpoints.model import Checkpoint
from graphcore.engine.algo import (
    COMMAND_TASK_ID,
    command_entry,
    is_input,
    stored_writes,
    task_id,
    with_command,
)
from graphcore.engine.cache import refuse_on_queue
from graphcore.engine.config import ACCEPTED, GOES_ON, RunConfig, merge_config, outside_any_task
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.inputs import check_nesting, check_size, check_types
from graphcore.engine.interrupts import (
    NotAwaitingInputError,
    RequestRecord,
    RequestStatus,
    check_response,
    match_answer,
    schema_fields,
)
from graphcore.engine.registry import Registry
from graphcore.engine.schema import COMMAND_WRITER, stored_values
from graphcore.engine.snapshot import StateUpdate, last_writer, update_checkpoint
from graphcore.errors import (
    ArgumentTypeError,
    CheckpointNotFoundError,
    ConfigError,
    InvalidUpdateError,
    PermanentError,
    RunExistsError,
    RunNotFoundError,
)
from graphcore.settings import get_settings
from graphcore.types import START, Command, Interrupt

__all__ = [
    "MAX_LIMIT",
    "QUEUE_OPTIONS",
    "CancelReply",
    "Client",
    "Guard",
    "RunRequest",
    "StepQueue",
    "ValidRun",
    "check_request",
    "queue_config",
]

QUEUE_OPTIONS: tuple[str, ...] = tuple(k for k in ACCEPTED if k not in ("run_id", "checkpoint_ns"))
"""The run options a queued run's config may set, as an unknown option's message lists them: the in-process
ones but ``run_id`` (refused: the queue names each run) and ``checkpoint_ns`` (a queued run is a root run,
whose namespace is ``""``; tolerated, as LangGraph's configs carry it: as in process, a namespace drops
the ``checkpoint_id`` with it, and a subgraph's config forks at the root checkpoint of its
``checkpoint_map``, :func:`~graphcore.engine.config.outside_any_task`)."""


MAX_LIMIT = 100_000
"""Most records one listing returns (``list_runs``, ``stuck_runs``, ``get_history``; the CLI's
``--limit``; a schedule keeps at most this many fires, GRAPHQ_SCHEDULE_HISTORY_LENGTH's ceiling)."""


def _expect(name: str, value: Any, kinds: type | tuple[type, ...], expected: str) -> None:
    """Refuse argument ``name`` unless ``value`` is one of ``kinds`` (a bool is no int unless ``kinds`` says
    bool).

    Raises:
        ArgumentTypeError: naming ``name`` and ``expected``.
    """
    allowed = kinds if isinstance(kinds, tuple) else (kinds,)
    if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
        raise ArgumentTypeError(name, expected, value)


def _limit(name: str, value: Any, optional: bool = False) -> None:
    """Refuse argument ``name`` unless ``value`` is an int from 1 to :data:`MAX_LIMIT` (or None when
    ``optional``).

    Raises:
        ArgumentTypeError: not an int.
        ConfigError: out of range.
    """
    if value is None and optional:
        return
    expected = f"an int from 1 to {MAX_LIMIT}" + (" or None" if optional else "")
    _expect(name, value, int, expected)
    if not 1 <= value <= MAX_LIMIT:
        raise ConfigError(f"{name} must be {expected} (got {value})")


def _seconds(
    name: str, value: Any, *, above_zero: bool, most: float | None = None, optional: bool = False
) -> None:
    """Refuse argument ``name`` unless ``value`` is a number of seconds above 0 (``above_zero``) or at
    least 0, and at most ``most`` (None: no bound); None too when ``optional``. NaN is refused.

    Raises:
        ArgumentTypeError: not a number.
        ConfigError: out of range.
    """
    if value is None and optional:
        return
    rule = ("above 0" if above_zero else "at least 0") + ("" if most is None else f" and at most {most:g}")
    expected = f"a number of seconds {rule}" + (" or None" if optional else "")
    _expect(name, value, (int, float), expected)
    low = value > 0 if above_zero else value >= 0  # False for NaN
    if not low or (most is not None and value > most):
        raise ConfigError(f"{name} must be {expected} (got {value})")


def _bulk_args(
    dry_run: bool, batch: int, stop: Callable[[], bool] | None, progress: Callable[[BulkResult], None] | None
) -> None:
    """Refuse a bulk operation's common arguments of the wrong type or out of range.

    Raises:
        ArgumentTypeError, ConfigError: naming the argument.
    """
    _expect("dry_run", dry_run, bool, "a bool")
    _limit("batch", batch)
    _expect("stop", stop, (Callable, type(None)), "a callable returning a bool, or None")  # type: ignore[arg-type]
    _expect("progress", progress, (Callable, type(None)), "a callable taking a BulkResult, or None")  # type: ignore[arg-type]


def _sequence_of(name: str, value: Any, kind: type | tuple[type, ...], expected: str) -> None:
    """Refuse argument ``name`` unless ``value`` is a list or tuple whose items are ``kind`` (a single one,
    a str among them, is refused: ``wait("abc")`` is not three runs).

    Raises:
        ArgumentTypeError: naming ``name`` (or ``name[i]``, the item at fault).
    """
    if not isinstance(value, list | tuple):
        raise ArgumentTypeError(name, f"a list of {expected}s", value)
    for i, item in enumerate(value):
        _expect(f"{name}[{i}]", item, kind, f"a {expected}")


def _refuse_busy(records: Sequence[RunRecord], busy: set[str]) -> None:
    """Multitask ``reject``: no run may go to a busy thread, nor two runs to one thread."""
    seen: set[str] = set()
    for record in records:
        if record.thread_id in busy or record.thread_id in seen:
            raise ThreadBusyError(
                f"thread {record.thread_id!r} already has an active run; not enqueued (multitask=reject)"
            )
        seen.add(record.thread_id)


def _named(runs: Sequence[ValidRun]) -> list[str]:
    """The ids of ``runs`` that their requests chose (``RunRequest.run_id``), in order: those may name a
    run already (a new uuid4 cannot).

    Raises:
        RunExistsError: two requests choose one id.
    """
    named: list[str] = []
    for run in runs:
        if run.named:
            if run.record.id in named:
                raise RunExistsError(run.record.id, None)
            named.append(run.record.id)
    return named


def _answered(raw: bytes | None, request: Interrupt, answer: Any) -> dict[str, Any]:
    """The request record (as the worker wrote it; a bare one for a request made inside a subgraph, which
    the worker does not record) with its answer."""
    bare = {"node": request.node, "value": request.value, **schema_fields(request)}
    record = serde.loads(raw) if raw is not None else bare
    return {**record, "created_at": request.created_at, "answer": answer, "answered_at": now_iso()}


def _order(record: RequestRecord, task: int | None, call: int | None) -> tuple[int, int, int, str]:
    """Sort key of a request: its step (unknown last), task and call index, then when it was asked."""
    unknown = 1 << 62
    step = unknown if record.step is None else record.step
    return (
        step,
        unknown if task is None else task,
        unknown if call is None else call,
        record.created_at or record.answered_at or "",
    )


@dataclass(frozen=True)
class CancelReply:
    """What :meth:`Client.try_cancel` did: ``message`` in words (what :meth:`Client.cancel` returns and the
    CLI prints), ``changed`` False for a run that had ended already."""

    message: str
    changed: bool = True


@dataclass
class RunRequest:
    """One run to enqueue.

    Attributes:
        workflow: registered workflow name.
        input: the input update (JSON-like or allow-listed values).
        thread_id: the thread; a new one (equal to the run id) when None.
        tenant: who the run is for (fairness, quotas).
        config: run options (tags, metadata, configurable, max_super_steps, resume_if_exists).
        continued_from_run_id: the ended run this one continues (R14), if any.
        run_id: the run's id when the caller derives it (a schedule's fire, K1); a new one when None. An id
            that names a run already is refused (:class:`~graphcore.errors.RunExistsError`), nothing written.
    """

    workflow: str
    input: Any = None
    thread_id: str | None = None
    tenant: str = "default"
    config: Mapping[str, Any] = field(default_factory=dict)
    continued_from_run_id: str | None = None
    preset_answers: Mapping[str, Any] = field(default_factory=dict)
    run_id: str | None = None


@dataclass(frozen=True)
class ValidRun:
    """A run request that passed :func:`check_request`: :meth:`Client.enqueue_many` takes it as it is,
    without checking its options and input again (it still reads Redis for a fork's checkpoint and a
    continued run, once).

    Attributes:
        record: the run record to store (its id and ``created_at`` are made again when it is enqueued,
            unless the request chose the id).
        named: the request chose the run id (``RunRequest.run_id``), which may name a run already.
    """

    record: RunRecord
    named: bool = False


def _admitted(valid: ValidRun) -> ValidRun:
    """``valid`` as it is enqueued now: created now (a run's timeout counts from its creation, R15, not from
    its check), and, unless its request chose the run id, under a new one (and on a new thread when its
    thread was named after that id), as a :class:`RunRequest` enqueued again gets: a ``ValidRun`` enqueued
    twice (a retry after a lost reply) makes a second run, never writes over the first."""
    record = valid.record
    fields: dict[str, Any] = {"created_at": now_iso()}
    if not valid.named:
        fields["id"] = uuid.uuid4().hex
        if record.thread_id == record.id:
            fields["thread_id"] = fields["id"]
    return replace(valid, record=record.model_copy(update=fields))


@contextmanager
def _field(name: str) -> Iterator[None]:
    """Mark a :class:`~graphcore.errors.PermanentError` raised inside as an error of the request's field
    ``name`` (its ``param``), then let it go on."""
    try:
        yield
    except PermanentError as exc:
        exc.param = name
        raise


@dataclass(frozen=True)
class Guard:
    """Conditions and writes that go with one run-creating transaction (:meth:`Client.enqueue_guarded`; the
    scheduler's claim of its fires, K1).

    Attributes:
        watch: keys WATCHed with the threads' (a change to any of them before EXEC retries the transaction).
        check: called with the pipeline in WATCH mode (immediate reads); False → nothing is written.
        stage: called with the MULTI pipeline before the runs' writes are queued on it.
    """

    watch: Sequence[str]
    check: Callable[[Any], bool]
    stage: Callable[[Any], None]


def at_breakpoint(run: RunRecord) -> str:
    """``run R stopped at a breakpoint (before ['b'])`` when ``run`` waits at a static breakpoint it has not
    been let past, else ""."""
    mark = run.breakpoint
    if run.status != RunStatus.AWAITING_INPUT or mark is None or mark.get("continued"):
        return ""
    return f"run {run.id} stopped at a breakpoint ({mark['when']} {mark['nodes']})"


def no_history(what: str, where: str = "") -> ConfigError:
    """The refusal of ``what`` (a fork, a second answer), which needs the checkpoint history that
    ``GRAPHQ_ENABLE_CHECKPOINTING=false`` does not keep (R5); ``where``: which worker has the setting."""
    return ConfigError(
        f"{what} needs checkpoint history, and GRAPHQ_ENABLE_CHECKPOINTING=false{where} keeps only each "
        "thread's working state"
    )


def _a_fork(checkpoint_id: str) -> str:
    """What a fork is, in a refusal of one: ``checkpoint_id 'c': starting from a given checkpoint``."""
    return f"checkpoint_id {checkpoint_id!r}: starting from a given checkpoint (a fork)"


def check_request(registry: Registry, req: RunRequest) -> ValidRun:
    """Validate ``req`` as :meth:`Client.enqueue_many` does, without Redis: the one check of a request's
    options and input. Returns it checked, the run record to store (:meth:`Client.enqueue_many` takes it
    without checking again).

    Checks the run's options (:func:`_check_options`), then the input's shape, keys and types against the
    state schema (:func:`graphcore.engine.inputs.check_types`: the record holds the input as given, or with
    JSON-form values validated into their declared types; a root-channel state's input against its type;
    each reducer channel's write folded by its reducer onto the channel's empty value), that it serializes,
    and the sizes of the input and of any preset answer (``GRAPHQ_MAX_INPUT_BYTES``).

    Raises:
        UnknownWorkflowError, ConfigError, SerializationError, InvalidUpdateError, InputTypeError,
            InputTooLargeError: the request is invalid (the message says what and where; the error's
            ``param`` names the request's field at fault: ``input``, ``preset_answers``, or one of
            :func:`_check_options`).
    """
    graph, cfg, run_id, thread = _check_options(registry, req)
    with _field("input"):
        graph.schema.writes_of(START, req.input)  # unknown keys or a non-mapping input: refused up front
        value = check_types(graph.schema, req.input)
        check_size("input", len(serde.dumps(value, path="input")))
    if req.preset_answers:
        with _field("preset_answers"):
            for answer in req.preset_answers.values():
                check_nesting(answer, "answer")
            check_size("answer", len(serde.dumps(dict(req.preset_answers), path="answer")))
    record = RunRecord(
        id=run_id,
        workflow=req.workflow,
        thread_id=thread,
        tenant=req.tenant,
        created_at=now_iso(),
        input=value,
        config=cfg.model_dump(exclude={"thread_id", "run_id"}, exclude_defaults=True),
        continued_from_run_id=req.continued_from_run_id,
        preset_answers=dict(req.preset_answers),
        run_timeout_s=cfg.run_timeout(),
        thread_ttl_s=cfg.thread_ttl(),
        pinned=(cfg.version_policy or get_settings().version_policy) == "pin",
        webhook=cfg.webhook,
    )
    return ValidRun(record, named=req.run_id is not None)


def _check_options(registry: Registry, req: RunRequest) -> tuple[CompiledGraph, RunConfig, str, str]:
    """Validate everything of ``req`` but its input, without Redis: the workflow name, the run options
    (merged over the workflow's), their timeouts and TTL, a fork's need of checkpoint history, the ids.
    Returns the workflow, the merged config, the run id (a new one unless ``req`` derives it) and the
    thread. Each error's ``param`` names the field at fault: ``request`` (its type), ``workflow``,
    ``config`` (also a thread id given there, and one that differs from ``thread_id``), ``checkpoint_id``,
    ``run_id``, ``thread_id``, ``tenant``, ``continued_from_run_id``, ``preset_answers``, ``webhook`` (the
    run option ``webhook``, :func:`~graphcore.backend.webhooks.check_webhook`).

    Raises:
        ArgumentTypeError: ``req`` is not a RunRequest, or a field has the wrong type (``tenant=123``,
            ``config="nope"``), named.
        UnknownWorkflowError: no such workflow.
        SerializationError: the config nests more than :data:`~graphcore.engine.inputs.MAX_NESTING`
            levels deep.
        ConfigError: a workflow compiled with ``cache=`` (queued runs do not cache node results,
            :mod:`graphcore.engine.cache`); a bad option, id or timeout; ``run_id`` in the config (the
            queue names each run: ``client.enqueue`` returns the id, ``graphq enqueue`` prints it);
            ``checkpoint_id`` while this process keeps no checkpoint history; two thread ids that differ; a
            malformed ``continued_from_run_id``; a ``webhook`` that is no http or https URL.
    """
    _check_fields(req)
    with _field("workflow"):
        graph = registry.get(req.workflow)
        refuse_on_queue(graph)
    with _field("config"):
        check_nesting(req.config, "config")
        given = queue_config(req.config)
        cfg = outside_any_task(graph.config_for(given))  # a subgraph's config: its checkpoint_map's root
        cfg.run_timeout()
        cfg.check_request_timeout()
        cfg.thread_ttl()
        named = _thread_of(req, given)
    with _field("webhook"):
        check_webhook(cfg.webhook)
    if cfg.checkpoint_id is not None and named is None:  # else a new thread's id would name it
        with _field("checkpoint_id"):
            raise ConfigError(f"checkpoint_id {cfg.checkpoint_id!r} needs its thread's thread_id")
    if cfg.checkpoint_id is not None and not get_settings().enable_checkpointing:
        refused = no_history(_a_fork(cfg.checkpoint_id))
        refused.param = "checkpoint_id"
        raise refused
    with _field("run_id"):
        run_id = keys.validate_run_id("run id", req.run_id) if req.run_id is not None else uuid.uuid4().hex
    with _field("config" if req.thread_id is None else "thread_id"):  # where the thread id came from
        thread = keys.validate_id("thread id", run_id if named is None else named)
    with _field("tenant"):
        keys.validate_id("tenant", req.tenant)
    if req.continued_from_run_id is not None:
        with _field("continued_from_run_id"):
            keys.validate_id("continued_from_run_id", req.continued_from_run_id)
    return graph, cfg, run_id, thread


def _check_fields(req: RunRequest) -> None:
    """The types of ``req``'s fields that the checks after it do not name (the ids are checked with their
    values, the config by :func:`queue_config`).

    Raises:
        ArgumentTypeError: naming the field (also its ``param``).
    """
    with _field("request"):
        _expect("request", req, RunRequest, "a RunRequest")
    for name, kinds, expected in (
        ("workflow", str, "a workflow name (str)"),
        ("thread_id", (str, type(None)), "a str or None"),
        ("preset_answers", Mapping, "a mapping"),
    ):
        with _field(name):
            _expect(name, getattr(req, name), kinds, expected)


def queue_config(config: Mapping[str, Any] | RunConfig | None) -> RunConfig:
    """``config`` as a queued run's options (:func:`~graphcore.engine.config.merge_config`, an unknown
    option's message listing :data:`QUEUE_OPTIONS`).

    Raises:
        ConfigError: see merge_config; ``run_id`` given (the queue names each run: ``client.enqueue``
            returns the id, ``graphq enqueue`` prints it); non-empty ``callbacks`` (not storable).
    """
    given = merge_config(config, known=QUEUE_OPTIONS)
    if given.callbacks:
        raise ConfigError(
            "run option callbacks: LangChain callback handlers are objects of this process and cannot be "
            "stored with a queued run; give none (use them with invoke/stream in process, or follow a "
            "queued run with graphq runs watch RUN)"
        )
    if given.run_id is not None:
        raise ConfigError(
            f"run option run_id {given.run_id!r}: the queue names each run itself (client.enqueue returns "
            "the id, graphq enqueue prints it); give none"
        )
    return given


def _thread_of(req: RunRequest, given: RunConfig) -> str | None:
    """The thread ``req`` names: its ``thread_id``, or its config's (``given``, ``req.config`` merged:
    LangGraph's ``{"configurable": {"thread_id": ...}}`` or the option ``thread_id``), None for a new one.
    The one rule for a thread named twice.

    Raises:
        ConfigError: the two name different threads.
    """
    named = given.thread_id
    if req.thread_id is not None and named is not None and named != req.thread_id:
        raise ConfigError(
            f"the config's thread_id {named!r} differs from thread_id {req.thread_id!r}; give one of them"
        )
    return req.thread_id if req.thread_id is not None else named


class Client:
    """Enqueue runs and read runs, state and history.

    Args:
        kv: a redis-py client (bytes responses).
        registry: the known workflows (validates names and configs at enqueue time).
        queue: where step jobs go; None for a read-only client.
    """

    def __init__(self, kv: Any, registry: Registry, queue: StepQueue | None = None) -> None:
        self.kv = kv
        self.registry = registry
        self.queue = queue
        self.runs = RunStore(kv)
        self.checkpoints = RedisCheckpointStore(kv)

    def _admissible(self, request: RunRequest | ValidRun, earlier: RunRecord | None = None) -> ValidRun:
        """``request`` checked (:func:`check_request`, unless it is a :class:`ValidRun` already), then what
        needs Redis: the run it continues (unless given: ``earlier``, read already) and its fork's
        checkpoint, each read once. Errors carry the field at fault (``param``)."""
        valid = _admitted(request) if isinstance(request, ValidRun) else check_request(self.registry, request)
        record = valid.record
        if earlier is None or earlier.id != record.continued_from_run_id:
            with _field("continued_from_run_id"):
                earlier = self._check_continued(record)
        with _field("checkpoint_id"):
            self._check_fork(record.workflow, record.thread_id, record.config.get("checkpoint_id"))
        if earlier is None:
            return valid
        # A run that continues another (a resume, a second answer) keeps its version and its pinning.
        kept = {"version": earlier.version, "pinned": earlier.pinned}
        return replace(valid, record=record.model_copy(update=kept))

    def _check_continued(self, record: RunRecord) -> RunRecord | None:
        """The run ``record`` continues (``continued_from_run_id``, R14) must be a run of its thread; returns
        it (None when ``record`` continues none).

        Raises:
            RunNotFoundError: there is no such run.
            ConfigError: it is a run of another thread.
        """
        earlier = record.continued_from_run_id
        if earlier is None:
            return None
        try:
            found = self.runs.get(earlier)
        except RunNotFoundError:
            raise RunNotFoundError(f"continued_from_run_id: no run with id {earlier!r}") from None
        if found.thread_id != record.thread_id:
            raise ConfigError(
                f"continued_from_run_id: run {earlier} is a run of thread {found.thread_id!r}, not of this "
                f"run's thread {record.thread_id!r}"
            )
        return found

    def _check_fork(self, workflow: str, thread_id: str, checkpoint_id: str | None) -> None:
        """A run of ``workflow`` starting from a given checkpoint (``checkpoint_id``, C3: the option,
        LangGraph's ``configurable`` key, ``graphq enqueue --checkpoint``) needs that checkpoint on its
        thread, history kept by every worker, and the workflow to have the nodes the checkpoint's next tasks
        name; None: no fork, nothing to check.

        Raises:
            CheckpointNotFoundError: ``thread 't' has no checkpoint ID``.
            ConfigError: a counted worker keeps no checkpoint history (R5).
            InvalidUpdateError: the checkpoint's next tasks name nodes the workflow lacks (a checkpoint of
                another workflow's run on the thread: the run failed on them in the worker).
        """
        if checkpoint_id is None:
            return
        self._refuse_without_history(_a_fork(checkpoint_id))
        cp = self.get_state(thread_id, checkpoint_id)
        self.registry.get(workflow).check_tasks(thread_id, checkpoint_id, cp.next_tasks)

    def keeps_history(self) -> bool:
        """Whether forks and second answers can be made (R5): this process and every counted worker keep
        checkpoint history (:mod:`graphcore.backend.published`). One read."""
        return get_settings().enable_checkpointing and not published.read(self.kv).history_off_by

    def _refuse_without_history(self, what: str) -> None:
        """Refuse ``what`` (a fork, a second answer) while a worker keeps no checkpoint history (R5): its
        setting is published (:mod:`graphcore.backend.published`), this process may lack it.

        Raises:
            ConfigError: a counted worker runs with ``GRAPHQ_ENABLE_CHECKPOINTING=false``.
        """
        off = published.read(self.kv).history_off_by
        if off:
            raise no_history(what, f" (on worker {off[0]})")

    def check(self, request: RunRequest) -> None:
        """Validate ``request`` as :meth:`enqueue_many` would, writing nothing.

        Raises:
            UnknownWorkflowError, ConfigError, SerializationError, InvalidUpdateError, InputTypeError,
                InputTooLargeError, CheckpointNotFoundError, RunExistsError: see enqueue_many (one read of
                the run index for a ``run_id`` given).
        """
        valid = self._admissible(request)
        if valid.named:
            self.runs.refuse_taken([valid.record.id])

    def enqueue_many(
        self, requests: Sequence[RunRequest | ValidRun], multitask: Multitask = "enqueue"
    ) -> list[str]:
        """Create the runs and their first step jobs, all or nothing (one MULTI transaction).

        A run on a busy thread (I3) waits behind the thread's active run (``multitask="enqueue"``) and
        starts when that one ends, or is refused (``"reject"``).

        Each request is checked once, before anything is written: a :class:`RunRequest` by
        :func:`check_request`, a :class:`ValidRun` (its result) taken as it is; then a fork's checkpoint
        and a continued run are read (once each). A check's error names the request's field at fault in
        its ``param`` (``input``, ``thread_id``, ``tenant``, ``config``, ``checkpoint_id``, ...).

        Returns:
            The run ids, in request order.

        Raises:
            UnknownWorkflowError, ConfigError, SerializationError, InvalidUpdateError: a request is invalid
                (unknown workflow, bad option or id, an input the state schema does not accept: unknown keys,
                or a value of the wrong type, :class:`~graphcore.engine.inputs.InputTypeError`); nothing is
                written.
            InputTooLargeError: an input is larger than ``GRAPHQ_MAX_INPUT_BYTES`` serialized.
            CheckpointNotFoundError: a request's ``checkpoint_id`` (a fork) is no checkpoint of its thread.
            ThreadBusyError: ``multitask="reject"`` and a thread has an active run (or two requests share a
                thread); nothing is written.
            RunExistsError: a request's ``run_id`` names a run already, on any thread (checked in the
                transaction that creates the runs: of two requests racing with one id, one is created), or
                two requests give one id; nothing is written.
            DisabledError: the kill switch is off (R6: ``graphq disable``, or ``GRAPHQ_ENABLED=false`` here);
                nothing is written.
        """
        return self.enqueue_guarded(requests, None, multitask) or []

    def enqueue_guarded(
        self, requests: Sequence[RunRequest | ValidRun], guard: Guard | None, multitask: Multitask = "enqueue"
    ) -> list[str] | None:
        """:meth:`enqueue_many` in one transaction with ``guard``'s writes, only while ``guard.check``
        holds (its keys WATCHed): the runs and the guard's writes apply together or not at all. With no
        requests, only the guard's writes.

        Returns:
            The run ids in request order; None when the guard's check refused (nothing written).

        Raises:
            The errors of :meth:`enqueue_many`.
        """
        _sequence_of("requests", requests, (RunRequest, ValidRun), "RunRequest")  # a ValidRun: one checked
        _expect("guard", guard, (Guard, type(None)), "a Guard or None")
        self._ready_to_enqueue()
        if multitask not in MULTITASK_POLICIES:
            raise ConfigError(f"multitask must be one of {list(MULTITASK_POLICIES)} (got {multitask!r})")
        return self._enqueue_valid([self._admissible(r) for r in requests], guard, multitask)

    def _ready_to_enqueue(self) -> None:
        """Raises DisabledError: the kill switch is off here (R6); ConfigError: this client has no step
        queue."""
        refuse_if_off(None, get_settings().enabled)
        if self.queue is None:
            raise ConfigError("this client has no step queue; build it with graphq.connect_client()")

    def _enqueue_valid(
        self, runs: Sequence[ValidRun], guard: Guard | None, multitask: Multitask = "enqueue"
    ) -> list[str] | None:
        """:meth:`enqueue_guarded` of runs checked already (:meth:`_admissible`)."""
        records, named = [r.record for r in runs], _named(runs)
        while records or guard is not None:
            try:
                return self._admit(records, multitask, guard, named)
            except WatchError:
                continue
        return []

    def _admit(
        self,
        records: Sequence[RunRecord],
        multitask: Multitask,
        guard: Guard | None = None,
        named: Sequence[str] = (),
    ) -> list[str] | None:
        """One optimistic try: create the runs; the first on an idle thread becomes active (its step-0 job
        is enqueued), the others wait in the thread's line. The kill switch is read in the same round trip as
        the threads' active runs, and watched: no run is created once ``graphq disable`` has returned.
        ``guard``: see :meth:`enqueue_guarded` (None when its check refuses). ``named``: ids the callers
        chose, refused when they name a run (one more read); each one's :func:`graphcore.keys.run_create`
        is WATCHed and touched, so that a create racing with one of them fails its EXEC and looks again."""
        assert self.queue is not None
        threads = list(dict.fromkeys(r.thread_id for r in records))
        creates = [keys.run_create(run_id) for run_id in named]
        with self.kv.pipeline(transaction=True) as pipe:
            extra = guard.watch if guard is not None else ()
            pipe.watch(keys.switch(), *[keys.thread_active(t) for t in threads], *extra, *creates)
            *active, switch = pipe.mget([*[keys.thread_active(t) for t in threads], keys.switch()])
            refuse_if_off(switch, True)
            if guard is not None and not guard.check(pipe):
                pipe.reset()
                return None
            self.runs.refuse_taken(named, pipe)
            busy = {t for t, run_id in zip(threads, active, strict=True) if run_id is not None}
            if multitask == "reject":
                _refuse_busy(records, busy)
            pipe.multi()  # explicit: RQ's enqueue expects a pipeline already in MULTI mode
            for create in creates:  # a change to it fails the EXEC of a create racing with this one
                pipe.set(create, "")
                pipe.delete(create)
            if guard is not None:
                guard.stage(pipe)
            for record in records:
                self.runs.stage_create(pipe, record)
                if record.thread_id in busy:
                    pipe.rpush(keys.thread_waiting(record.thread_id), record.id)
                else:
                    busy.add(record.thread_id)
                    pipe.set(keys.thread_active(record.thread_id), record.id)
                    mark_busy(pipe, record.thread_id)
                    stage_admit(pipe, self.kv, self.queue, record)  # its slot (R8), then its job
                thread = record.thread_id
                indexes = (keys.thread_runs(thread), keys.thread_active(thread), keys.thread_waiting(thread))
                stage_use(pipe, thread, record.thread_ttl_s, *run_keys(thread, record.id), *indexes)
            pipe.execute()
        return [r.id for r in records]

    def enqueue(
        self, workflow: str, input: Any = None, multitask: Multitask = "enqueue", **options: Any
    ) -> str:
        """Enqueue one run; ``options`` are :class:`RunRequest` fields. Returns the run id.

        An input ``Command(update=..., goto=...)`` is LangGraph's ``invoke(Command(...), config)`` on a
        thread whose runs have ended: the command is saved as the pending write of the thread's head
        checkpoint (as in process), in the transaction that enqueues a run going on from there (input None).

        Raises:
            The errors of :meth:`enqueue_many`; for a ``Command`` input, :class:`InvalidUpdateError` when it
                has ``resume`` (an answer goes to the run that asked: :meth:`answer`), when a run of the
                thread is queued or running, or awaits an answer or stopped at a breakpoint (:meth:`answer`
                or :meth:`resume` take the update there), when the thread has no checkpoint, or a fork is
                asked (``checkpoint_id``), and the errors of :meth:`answer`'s ``update``/``goto``; nothing
                is written.
        """
        request = RunRequest(workflow, None if isinstance(input, Command) else input, **options)
        if isinstance(input, Command):
            return self._enqueue_command(request, input, multitask)
        return self.enqueue_many([request], multitask)[0]

    def _enqueue_command(self, request: RunRequest, command: Command[Any], multitask: Multitask) -> str:
        """:meth:`enqueue` of a run going on from its thread's head with ``command``'s update and goto
        saved there (its entry written only while the thread has no active run and that head is its head).
        """
        if command.resume is not None:
            raise InvalidUpdateError(
                "input Command(resume=...): on the queue an answer goes to the run that asked: "
                "client.answer(run_id, value, update=..., goto=...) (graphq runs answer RUN --value JSON)"
            )
        valid = check_request(self.registry, request)
        thread, fork = valid.record.thread_id, valid.record.config.get("checkpoint_id")
        self._idle_thread_of(request.workflow, thread, "input Command(update=..., goto=...): ")
        head = self.checkpoints.get(thread)
        if head is None or fork is not None:
            raise InvalidUpdateError(
                f"input Command(update=..., goto=...): on the queue it goes on from the head of a thread "
                f"with a checkpoint, and thread {thread!r} has none (or a checkpoint_id is given); give the "
                "thread_id of such a thread, and no checkpoint_id"
            )
        if is_input(head):  # the worker applies that input first, without the entry: it would be lost
            raise InvalidUpdateError(
                f"input Command(update=..., goto=...): thread {thread!r} ends at a run's input not applied "
                f"yet (update_state(..., as_node='__input__')); run it first: "
                f"client.enqueue({request.workflow!r}, None, thread_id=...)"
            )
        pending_key, history = keys.pending_writes(thread, "", head.id), keys.history(thread, "")
        earlier = self.kv.hget(pending_key, COMMAND_TASK_ID)  # the commands given there before, merged in
        commanded = self._command_write(request.workflow, thread, head.id, command)

        def save(pipe: Any) -> None:
            if commanded:
                pipe.hset(pending_key, mapping=commanded)
                stage_add(pipe, thread, pending_key)  # its thread's TTL (K3)

        def unchanged(pipe: Any) -> bool:  # the head, no run ahead, and no command given meanwhile
            active, last = pipe.get(keys.thread_active(thread)), pipe.lindex(history, -1)
            given = pipe.hget(pending_key, COMMAND_TASK_ID)
            return active is None and last == head.id.encode() and given == earlier

        same = Guard([keys.thread_active(thread), history, pending_key], unchanged, save)
        ids = self.enqueue_guarded([valid], same, multitask)
        if ids is None:
            raise InvalidUpdateError(
                f"input Command(update=..., goto=...): thread {thread!r} got a run, a checkpoint or another "
                "command while the command was being saved; nothing written, give it again"
            )
        return ids[0]

    def get_run(self, run_id: str) -> RunRecord:
        """The run record; a Completed run's ``result`` is the state values of its last checkpoint, as
        ``invoke`` returns them (narrowed to the workflow's output schema, the value of a root-channel
        state; :meth:`~graphcore.engine.schema.StateSchema.result`).

        Raises:
            RunNotFoundError: no such run.
        """
        return self._with_result(self.runs.get(run_id))

    def _with_result(self, record: RunRecord) -> RunRecord:
        if record.status == RunStatus.COMPLETED and record.head is not None:
            values = record.result  # kept when its checkpoint went (R5): the head's channel values
            if values is None:
                cp = self.checkpoints.get(record.thread_id, record.head)
                values = dict(cp.channel_values) if cp is not None else None
            graph = self.registry.graphs.get(record.workflow)
            if values is not None and graph is not None:
                values = graph.schema.result(values)
            record.result = values
        return record

    def list_runs(
        self, limit: int = 50, where: RunFilter | None = None, within: int | None = None
    ) -> list[RunRecord]:
        """The newest runs first, at most ``limit`` (1 to :data:`MAX_LIMIT`); with ``where``, the newest that
        match it (tenant, status, workflow, schedule, version), looking at the newest ``within`` runs only
        (1 to :data:`MAX_LIMIT`; None: at all of them, until ``limit`` matched).

        Raises:
            ArgumentTypeError, ConfigError: ``limit`` or ``within`` is not an int in range, ``where`` not a
                RunFilter.
        """
        _limit("limit", limit)
        _limit("within", within, optional=True)
        _expect("where", where, (RunFilter, type(None)), "a RunFilter or None")
        return self.runs.list(limit, where=where, within=within)

    def stuck_runs(self, limit: int = 50, where: RunFilter | None = None) -> list[tuple[RunRecord, int]]:
        """Runs that have not ended and whose lease lapsed (their worker died, or stopped renewing it, and
        the reaper has not acted yet), longest lapsed first, each with its lease's deadline (ms since the
        epoch, Redis's clock); at most ``limit`` (1 to :data:`MAX_LIMIT`).

        Raises:
            ArgumentTypeError, ConfigError: ``limit`` is not an int in range, ``where`` not a RunFilter.
        """
        _limit("limit", limit)
        _expect("where", where, (RunFilter, type(None)), "a RunFilter or None")
        return self.runs.stuck(server_ms(self.kv), limit, where)

    def wait(
        self,
        run_ids: Sequence[str],
        *,
        timeout_s: float | None = None,
        poll_s: float = 0.05,
        on_change: Callable[[RunRecord], None] | None = None,
    ) -> list[RunRecord]:
        """Block until every run has stopped: ended (Completed, Failed, Canceled) or waiting for input.

        A run that was continued (its worker died and the reaper continued it, R14; or it was resumed) is
        followed to the last run of its chain (:meth:`chain`): the record returned for it is that run's.

        A run that is AwaitingInput stops the wait too (it goes on only once someone answers: see
        :meth:`requests` and :meth:`answer`); its record is returned with that status. Every run must have
        stopped at the same poll: one answered meanwhile (Queued or Running again) is waited for.

        Args:
            run_ids: a list of run ids (a single id is ``[run_id]``).
            timeout_s: give up after this many seconds, at least 0 (None waits forever).
            poll_s: seconds between polls, above 0 and at most 60.
            on_change: called when a run's status or step changes.

        Returns:
            The final records, in ``run_ids`` order.

        Raises:
            ArgumentTypeError, ConfigError: an argument of the wrong type or out of range (named).
            RunNotFoundError: no run has one of the ids.
            TimeoutError: some runs were still queued or running after ``timeout_s``.
        """
        _sequence_of("run_ids", run_ids, str, "run id")
        _seconds("timeout_s", timeout_s, above_zero=False, optional=True)
        _seconds("poll_s", poll_s, above_zero=True, most=60)
        if on_change is not None and not callable(on_change):
            raise ArgumentTypeError("on_change", "a callable or None", on_change)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        last: dict[str, tuple[str, int]] = {}

        def stopped(record: RunRecord) -> bool:
            return record.terminal or record.status == RunStatus.AWAITING_INPUT

        current = list(run_ids)
        while True:
            records = [self._last_of_chain(self.runs.get(r)) for r in current]
            current = [r.id for r in records]
            for rec in records:
                if on_change and last.get(rec.id) != (rec.status, rec.step):
                    on_change(rec)
                last[rec.id] = (rec.status, rec.step)
            if all(stopped(r) for r in records):
                return [self._with_result(r) for r in records]
            if deadline is not None and time.monotonic() > deadline:
                pending = [r.id for r in records if not stopped(r)]
                raise TimeoutError(f"runs still not finished after {timeout_s} s: {pending}")
            time.sleep(poll_s)

    def _last_of_chain(self, record: RunRecord) -> RunRecord:
        """``record``, or the last run of the chain that continues it."""
        seen = {record.id}
        while record.terminal and record.continued_by_run_id and record.continued_by_run_id not in seen:
            record = self.runs.get(record.continued_by_run_id, record.thread_id)
            seen.add(record.id)
        return record

    def chain(self, run_id: str) -> list[RunRecord]:
        """The chain of runs ``run_id`` belongs to, first run first: back along ``continued_from_run_id``
        and forward along ``continued_by_run_id`` (the reaper's continuations of interrupted runs, R14,
        and resumes). A run that continues none and was not continued is a chain of one.

        Raises:
            RunNotFoundError: no such run.
        """
        record = self.runs.get(run_id)
        back = [record]
        seen = {record.id}
        while back[0].continued_from_run_id and back[0].continued_from_run_id not in seen:
            try:
                earlier = self.runs.get(back[0].continued_from_run_id, record.thread_id)
            except RunNotFoundError:
                break
            back.insert(0, earlier)
            seen.add(earlier.id)
        while back[-1].continued_by_run_id and back[-1].continued_by_run_id not in seen:
            later = self.runs.get(back[-1].continued_by_run_id, record.thread_id)
            back.append(later)
            seen.add(later.id)
        return [self._with_result(r) for r in back]

    def requests(self, run_id: str) -> list[Interrupt]:
        """The open human requests of a run that is AwaitingInput (G6, R16), in task order; [] otherwise."""
        run = self.runs.get(run_id)
        if run.status != RunStatus.AWAITING_INPUT or run.head is None:
            return []
        finished = self.checkpoints.get_writes(run.thread_id, run.head)
        answered = {a.decode() for a in self.kv.hkeys(keys.answers(run.thread_id, "", run.head))}
        head = self.get_state(run.thread_id, run.head)
        order = {task_id(head.id, i, t.node): i for i, t in enumerate(head.next_tasks)}
        ranked = sorted(finished.values(), key=lambda tw: order.get(tw.task_id, len(order)))
        return [i for tw in ranked for i in tw.interrupts if i.id not in answered]

    def open_requests(self, limit: int = 100) -> list[tuple[RunRecord, Interrupt]]:
        """The open requests of every run waiting for input, oldest first (by ``created_at``), at most
        ``limit`` (1 to :data:`MAX_LIMIT`), each with its run: the human inbox. Reads every run waiting
        for input (the run index, then each one's requests).

        Raises:
            ArgumentTypeError, ConfigError: ``limit`` is not an int in range.
        """
        _limit("limit", limit)
        waiting = self.runs.list(MAX_LIMIT, where=RunFilter(status=RunStatus.AWAITING_INPUT))
        found: list[tuple[RunRecord, Interrupt]] = []
        for run in waiting:
            with suppress(RunNotFoundError):  # removed meanwhile (its thread's TTL)
                found.extend((run, request) for request in self.requests(run.id))
        return sorted(found, key=lambda pair: (pair[1].created_at, pair[0].id, pair[1].index))[:limit]

    def run_requests(self, run_id: str) -> list[RequestRecord]:
        """Every human request the run made, open, answered or left unanswered, with the answers given, in
        the order they were asked (step, then task order, then call order). A branch run started by a
        second answer lists the request it answers (``again_of`` names the run that first made it).

        Raises:
            RunNotFoundError: no such run.
        """
        run = self.runs.get(run_id)
        raw = self.kv.hgetall(keys.requests(run.thread_id, run.id))
        stored = {k.decode(): serde.loads(v) for k, v in raw.items()}
        pending = {i.id: i for i in self.requests(run_id)}
        steps: dict[str, int | None] = {}

        def step_after(checkpoint_id: str | None) -> int | None:
            if checkpoint_id is None:
                return None
            if checkpoint_id not in steps:
                cp = self.checkpoints.get(run.thread_id, checkpoint_id)
                steps[checkpoint_id] = None if cp is None else cp.step + 1
            return steps[checkpoint_id]

        found: list[tuple[tuple[int, int, int, str], RequestRecord]] = []
        for rid, rec in stored.items():
            status: RequestStatus = (
                "answered" if "answered_at" in rec else "open" if rid in pending else "unanswered"
            )
            asked = pending.get(rid)
            record = RequestRecord(
                rid,
                rec["node"],
                rec["value"],
                status,
                answer=rec.get("answer"),
                step=step_after(rec.get("checkpoint_id")),
                checkpoint_id=rec.get("checkpoint_id"),
                created_at=rec.get("created_at") or (asked.created_at if asked else None),
                answered_at=rec.get("answered_at"),
                again_of=rec.get("again_of"),
                deadline=rec.get("deadline"),
                deadline_ms=rec.get("deadline_ms"),
                response_schema=rec.get("response_schema"),
            )
            found.append((_order(record, rec.get("task"), rec.get("call")), record))
        head_step = step_after(run.head)
        for rid, asked in pending.items():  # open requests of a subgraph: not in the run's records
            if rid not in stored:
                record = RequestRecord(
                    rid,
                    asked.node,
                    asked.value,
                    "open",
                    None,
                    head_step,
                    run.head,
                    asked.created_at,
                    **deadline_fields(asked.deadline_ms),
                    response_schema=asked.response_schema,
                )
                found.append((_order(record, None, asked.index), record))
        return [record for _, record in sorted(found, key=lambda pair: pair[0])]

    def thread_step(self, record: RunRecord) -> int | None:
        """The thread's super-step a run is at, numbered like the thread's checkpoints (``graphq state
        --history``): the step it runs next, is running, waits for input in, or failed or was canceled in
        (its head checkpoint's step + 1; a failed run's error records it, -1 for the input of a new thread);
        for a completed run, the step of its last checkpoint. None before the run has a checkpoint (queued,
        not started).

        Raises:
            ArgumentTypeError: ``record`` is not a RunRecord.
        """
        _expect("record", record, RunRecord, "a RunRecord (get_run's)")
        if record.status == RunStatus.FAILED and record.error is not None and record.error.step is not None:
            return record.error.step
        if record.head is None:
            return None
        cp = self.checkpoints.get(record.thread_id, record.head)
        if cp is None:
            return None
        return cp.step if record.status == RunStatus.COMPLETED else cp.step + 1

    def answer(
        self,
        run_id: str,
        value: Any,
        request_id: str | None = None,
        *,
        update: dict[str, Any] | None = None,
        goto: Any = (),
    ) -> list[str]:
        """Answer a run's open request(s) and continue it (G6, R16); with ``update``/``goto``, LangGraph's
        ``invoke(Command(resume=value, update=update, goto=goto), config)``.

        Args:
            value: the answer; with several open requests, a mapping of request id → answer.
            request_id: answer only this request.
            update: state updates applied before the answered step runs again (through the reducers, as
                an input ``Command``'s): saved with the answer as the head checkpoint's pending write.
            goto: node name(s) or ``Send`` packets the answered step runs too.

        Returns:
            The ids of the requests answered. Requests left unanswered stay open; the run pauses again.

        Raises:
            RunNotFoundError: no such run.
            NotAwaitingInputError: the run is not awaiting input, also when another answer (or a cancel)
                got there first while this one was being stored (the error lists the requests it made that
                were answered: :meth:`answer_again` answers one again). Nothing is written.
            InvalidUpdateError: unknown request id; several requests open and the answer is not keyed by
                their ids (the message lists them); ``update`` has unknown keys or a value a reducer
                refuses, ``goto`` names a node the workflow lacks (the in-process errors). Nothing is
                written.
            SerializationError: the answer holds a value outside the allow-list, or nests more than
                :data:`~graphcore.engine.inputs.MAX_NESTING` levels deep.
            InputTooLargeError: the answer is larger than ``GRAPHQ_MAX_INPUT_BYTES`` serialized.
        """
        _expect("request_id", request_id, (str, type(None)), "a str or None")
        check_nesting(value, "answer")
        if self.queue is None:
            raise ConfigError("this client has no step queue; build it with graphq.connect_client()")
        run = self.runs.get(run_id)
        if run.status != RunStatus.AWAITING_INPUT or run.head is None:
            raise self._not_awaiting(run_id)
        if at_breakpoint(run):
            raise InvalidUpdateError(
                f"{at_breakpoint(run)} and has no request to answer; let it go on with resume "
                f"(graphq runs resume {run_id})"
            )
        pending = self.requests(run_id)
        answers = match_answer(pending, value, request_id)
        blobs = {iid: serde.dumps(v, path=f"answer.{iid}") for iid, v in answers.items()}
        check_size("answer", sum(len(b) for b in blobs.values()))
        asked = {i.id: i for i in pending}
        for iid, v in answers.items():
            check_response(asked[iid].response_schema, v, iid)
        given = {iid: (asked[iid], v) for iid, v in answers.items()}
        self._continue(run, blobs, given, command=Command(update=update, goto=goto))
        return list(answers)

    def answer_again(self, run_id: str, request_id: str, value: Any) -> str:
        """Answer a request that was already answered: a new branch of the thread starts at the checkpoint
        where the request was made, with this answer (R16). The first branch stays readable in the history.
        The asking node's earlier requests in that step (``interrupt()`` calls before this one) get the
        answers they had; later ones are asked again.

        Returns:
            The id of the new run, which forks the thread (``checkpoint_id`` of the request).

        Raises:
            RunNotFoundError: no such run.
            InvalidUpdateError: the run never made that request (or made it inside a subgraph), or the
                request is still open (its run awaits its first answer: :meth:`answer` it; a branch then
                would run beside the answered run).
            ConfigError: ``GRAPHQ_ENABLE_CHECKPOINTING=false``: no history to start a branch from (R5).
            ArgumentTypeError: ``request_id`` is not a str.
            SerializationError, InputTooLargeError: as :meth:`answer`.
        """
        _expect("request_id", request_id, str, "a str")
        what = (
            f"request {request_id} of run {run_id}: a second answer (a branch at the checkpoint that asked)"
        )
        if not get_settings().enable_checkpointing:
            raise no_history(what)
        self._refuse_without_history(what)
        run = self.runs.get(run_id)
        raw = self.kv.hget(keys.requests(run.thread_id, run.id), request_id)
        if raw is None:
            raise InvalidUpdateError(f"run {run_id} has no recorded request {request_id!r}")
        where = serde.loads(raw)
        if "answered_at" not in where and any(i.id == request_id for i in self.requests(run_id)):
            raise InvalidUpdateError(
                f"request {request_id} of run {run_id} is open: answer it first; a second answer (a branch) "
                "is for a request already answered"
            )
        if "checkpoint_id" not in where:
            raise InvalidUpdateError(
                f"request {request_id} of run {run_id} was made inside a subgraph; it cannot be answered "
                "again"
            )
        check_response(where.get("response_schema"), value, request_id)
        request = RunRequest(
            run.workflow,
            None,
            thread_id=run.thread_id,
            tenant=run.tenant,
            config={**run.config, "checkpoint_id": where["checkpoint_id"]},
            continued_from_run_id=run.id,
            preset_answers=self._earlier_answers(run, where) | {f"{where['task']}:{where['call']}": value},
        )
        new_id = self.enqueue_many([request])[0]
        # The branch run answers the request before it is asked: record it there, answered, so that the
        # branch's requests show it (and a third answer can start from the branch run too).
        first = where.get("again_of", run.id)
        again = {**where, "answer": value, "answered_at": now_iso(), "again_of": first}
        with self.kv.pipeline(transaction=True) as pipe:
            pipe.hset(keys.requests(run.thread_id, new_id), request_id, serde.dumps(again, path="request"))
            stage_add(pipe, run.thread_id, keys.requests(run.thread_id, new_id))  # its thread's TTL (K3)
            pipe.execute()
        return new_id

    def _earlier_answers(self, run: RunRecord, where: Mapping[str, Any]) -> dict[str, Any]:
        """``"<task>:<call>"`` → answer of the requests the same task made before the one at ``where`` (its
        earlier ``interrupt()`` calls), as they were answered: the branch replays them, then asks anew. A
        branch run's own preset answers count too (they answered its first step's calls)."""

        def earlier(where_key: str) -> bool:
            task, call = where_key.split(":")
            return task == str(where["task"]) and int(call) < where["call"]

        answers: dict[str, Any] = {}
        started_at = run.config.get("checkpoint_id")
        if run.preset_answers and started_at is not None:
            cp = self.checkpoints.get(run.thread_id, where["checkpoint_id"])
            forked = cp is not None and cp.metadata.get("forked_from") == started_at
            if where["checkpoint_id"] == started_at or forked:
                answers = {k: v for k, v in run.preset_answers.items() if earlier(k)}
        for rec in map(serde.loads, self.kv.hgetall(keys.requests(run.thread_id, run.id)).values()):
            if rec.get("checkpoint_id") == where["checkpoint_id"] and "answered_at" in rec and "task" in rec:
                key = f"{rec['task']}:{rec['call']}"
                if earlier(key):
                    answers[key] = rec["answer"]
        return answers

    def _continue(
        self,
        run: RunRecord,
        blobs: Mapping[str, bytes],
        given: Mapping[str, tuple[Interrupt, Any]],
        fields: Mapping[str, str] | None = None,
        command: Command[Any] | None = None,
    ) -> None:
        """Store the answers and re-enqueue the paused step, if the run is still awaiting input (CAS); note
        each answer in the run's request records (``given``: request id → (request, answer)); ``fields``:
        run hash fields written with it (a breakpoint passed); ``command``: its update/goto saved with
        them as the head's pending write (:meth:`_command_write`)."""
        while True:
            try:
                return self._continue_once(run, blobs, given, fields or {}, command)
            except WatchError:  # the run changed meanwhile (another answer, a cancel): look again
                continue

    def _continue_once(
        self,
        run: RunRecord,
        blobs: Mapping[str, bytes],
        given: Mapping[str, tuple[Interrupt, Any]],
        fields: Mapping[str, str],
        command: Command[Any] | None,
    ) -> None:
        """One optimistic try of :meth:`_continue` (raises ``WatchError`` when the run changed, or the
        head's pending writes, which a command's entry goes after)."""
        run_key = keys.run(run.thread_id, run.id)
        requests_key = keys.requests(run.thread_id, run.id)
        pending_key = keys.pending_writes(run.thread_id, "", run.head or "")
        with self.kv.pipeline(transaction=True) as pipe:
            pipe.watch(run_key, pending_key)
            status, deadline, mark = pipe.hmget(run_key, ["status", DEADLINE_FIELD, "breakpoint"])
            passing = "breakpoint" in fields  # a resume: only from the very stop it read (not a later one)
            waiting = status == RunStatus.AWAITING_INPUT.value.encode()
            if passing and (not waiting or json.loads(mark or "null") != run.breakpoint):
                pipe.reset()
                raise self._passed_already(run)
            if not waiting:
                # Answered (or canceled: a cancel, its request expired) by someone else since this answer
                # read the run: theirs won.
                pipe.reset()
                raise self._not_awaiting(run.id)
            recorded = dict(zip(given, pipe.hmget(requests_key, list(given)), strict=True)) if given else {}
            notes = {
                iid: serde.dumps(_answered(recorded[iid], request, answer), path="request")
                for iid, (request, answer) in given.items()
            }
            commanded = self._command_write(run.workflow, run.thread_id, run.head, command)
            pipe.multi()
            if commanded:
                pipe.hset(pending_key, mapping=commanded)
            if blobs:
                pipe.hset(keys.answers(run.thread_id, "", run.head or ""), mapping=dict(blobs))
            if notes:
                pipe.hset(requests_key, mapping=notes)
            goes_on = str(GOES_ON - run.step)  # its step run.step counts as a call without input starts
            queued = {"status": RunStatus.QUEUED.value, "budget_from": goes_on}  # Running once taken
            if commanded:  # the step job reads its pending writes (the command's), as after a crash
                queued["partial"] = "1"
            pipe.hset(run_key, mapping={**fields, **queued})
            if deadline is not None:  # answered in time: out of the request-deadline index (R13)
                pipe.hdel(run_key, DEADLINE_FIELD)
                pipe.zrem(keys.request_deadlines(), keys.lease_member(run.thread_id, run.id))
            assert self.queue is not None
            stage_admit(pipe, self.kv, self.queue, run)  # its slot went with the pause: wait for one (R8)
            answers_key = keys.answers(run.thread_id, "", run.head or "")
            stage_use(pipe, run.thread_id, run.thread_ttl_s, answers_key, requests_key, pending_key)  # K3
            pipe.execute()

    def _command_write(
        self, workflow: str, thread_id: str, head_id: str | None, command: Command[Any] | None
    ) -> dict[str, bytes]:
        """The pending write (task id :data:`COMMAND_TASK_ID` → encoded writes) that saves ``command``'s
        update and goto at checkpoint ``head_id`` of ``workflow``'s thread ``thread_id``, after the entry
        of commands given there before, as the in-process loop saves an input ``Command``
        (:func:`command_entry`); checked as there (a reducer's refusal too), unknown keys refused as
        :meth:`update_state` refuses them. Empty when ``command`` has neither.

        Raises:
            InvalidUpdateError: unknown keys, a value a reducer refuses, a goto to an unknown node.
            InputTypeError: a value of the wrong type for its key, as :meth:`enqueue` refuses an input
                (:func:`~graphcore.engine.inputs.check_types`, paths ``update.<key>``).
            SerializationError: a value outside the allow-list, or nested too deeply.
            InputTooLargeError: the update is larger than ``GRAPHQ_MAX_INPUT_BYTES`` serialized.
        """
        if command is None or (command.update is None and not command.goto):
            return {}
        graph = self.registry.get(workflow)
        if command.update is not None:
            update = check_types(graph.schema, command.update, "update", COMMAND_WRITER)
            command = dataclasses.replace(command, update=update)
        head = self.get_state(thread_id, head_id)
        pending = self.checkpoints.get_writes(thread_id, head.id)
        entry = command_entry(graph, command, pending.get(COMMAND_TASK_ID), strict=True)
        with_command(graph, head, {**pending, COMMAND_TASK_ID: entry})  # a reducer's refusal: unsaved
        encoded = encode_writes(stored_writes(graph, entry))
        check_size("update", len(encoded))
        return {COMMAND_TASK_ID: encoded}

    def _passed_already(self, run: RunRecord) -> InvalidUpdateError:
        """The refusal of a resume of ``run``'s breakpoint that another resume (or a cancel) got to first."""
        return gone_on(run, self.runs.get(run.id, run.thread_id))

    def _not_awaiting(self, run_id: str) -> NotAwaitingInputError:
        """The refusal of an answer to a run that does not wait for one (as it is now): its status, why it
        ended when its request expired (R13), and the requests it made that can be answered again."""
        run = self.runs.get(run_id)
        answered = [r.id for r in self.run_requests(run_id) if r.status == "answered"]
        return NotAwaitingInputError(run_id, run.status.value, answered, expired_note(run))

    def cancel(self, run_id: str, interrupt: bool = False) -> str:
        """Cancel a run (X1, X2, I6).

        A queued or waiting run ends Canceled at once, and so does a running one whose step no worker holds
        (e.g. its worker died and the lease lapsed). A running run stops before its next super-step (the
        step in flight finishes and is committed); with ``interrupt`` the running nodes' cancel tokens are
        also set, within about a second (best effort: a node must look at its token). Checkpoints are kept,
        and the thread can be continued (:meth:`resume`, X4).

        Returns:
            What happened, in words: ``"canceled"``, ``"cancel requested: ..."`` or, for a run that had ended
            already, why nothing changed (:meth:`try_cancel` tells that case apart without reading the words).

        Raises:
            RunNotFoundError: no such run.
            ConfigError: this client has no step queue.
        """
        return self.try_cancel(run_id, interrupt).message

    def try_cancel(self, run_id: str, interrupt: bool = False) -> CancelReply:
        """:meth:`cancel`, with whether it changed anything (False: the run had ended already).

        Raises:
            RunNotFoundError: no such run.
            ConfigError: this client has no step queue.
            ArgumentTypeError: ``interrupt`` is not a bool.
        """
        _expect("interrupt", interrupt, bool, "a bool")
        self._need_queue("cancel")
        kind, status = self._cancel_page([self.runs.get(run_id)], interrupt)[0]
        if kind == DONE:
            return CancelReply("canceled")
        if kind not in (REQUESTED, REQUESTED_ALREADY):
            return _ended_already(run_id, status)
        if interrupt:
            return CancelReply(
                "cancel requested: running nodes are signalled and the run stops before its next super-step"
            )
        return CancelReply("cancel requested: the run stops before its next super-step")

    def _need_queue(self, what: str) -> None:
        """Raises ConfigError: this client has no step queue (``what`` hands threads to their next runs)."""
        if self.queue is None:
            raise ConfigError(
                f"{what} needs a client with a step queue (it hands the thread to the next run)"
            )

    def _cancel_change(
        self, run: RunRecord, leased: bool
    ) -> tuple[RunRecord, RunStatus, tuple[Sequence[str], Sequence[str | bytes]]]:
        """The status change that ends ``run`` Canceled (:meth:`RunStore.set_statuses`), while it is queued
        or awaiting input, or running with its step unleased (``leased`` False)."""
        fields: dict[str, str | bytes] = {"error": CANCEL_ERROR.model_dump_json(), "ended_at": now_iso()}
        step = self.thread_step(run)
        canceled = [("status", run.step if step is None else step, {"status": "canceled"})]
        allowed = _cancelable(leased)
        call = self.runs.status_call(run, RunStatus.CANCELED, allowed=allowed, fields=fields, events=canceled)
        return run, RunStatus.CANCELED, call

    def _cancel_reads(self, live: Sequence[RunRecord]) -> tuple[list[bool], list[bytes | None]]:
        """For each run of ``live`` (not ended): whether a worker holds its step (its lease exists), and the
        cancel asked of it already (``b"cooperative"``, ``b"interrupt"``, None). One round trip."""
        pipe = self.kv.pipeline(transaction=False)
        for run in live:
            pipe.exists(keys.lease(run.thread_id, run.id))
            pipe.hget(keys.run(run.thread_id, run.id), "cancel")
        replies = pipe.execute()
        return [bool(lease) for lease in replies[::2]], replies[1::2]

    def _cancel_preview(self, runs: Sequence[RunRecord], interrupt: bool) -> list[str]:
        """What :meth:`_cancel_page` would do to each of ``runs`` now, by its rules, changing nothing:
        :data:`~graphcore.backend.bulk.DONE`, ``REQUESTED``, or the reason it would be left alone."""
        live = [r for r in runs if not r.terminal]
        held, asked = self._cancel_reads(live)
        found = {r.id: (leased, a) for r, leased, a in zip(live, held, asked, strict=True)}
        outcomes = []
        for run in runs:
            if run.terminal:
                outcomes.append(ENDED)
                continue
            leased, already = found[run.id]
            if run.status in _cancelable(leased):
                outcomes.append(DONE)
            else:
                outcomes.append(REQUESTED_ALREADY if already == _cancel_mode(interrupt) else REQUESTED)
        return outcomes

    def _cancel_page(self, runs: Sequence[RunRecord], interrupt: bool) -> list[tuple[str, str]]:
        """Cancel ``runs`` (X1, X2, I6), in a fixed number of round trips however many they are (but a read
        of the head checkpoint of each run that has one: the super-step its event names); for each,
        its outcome and its status then: :data:`~graphcore.backend.bulk.DONE` (ended Canceled now: it was
        queued, awaiting input, or running with no worker holding its step), ``REQUESTED`` (a worker holds
        its step: it stops before its next one), or a reason it was left alone (:data:`ENDED`,
        :data:`REQUESTED_ALREADY`)."""
        assert self.queue is not None
        live = [r for r in runs if not r.terminal]
        held, asked = self._cancel_reads(live)
        changes = [self._cancel_change(run, leased) for run, leased in zip(live, held, strict=True)]
        done = dict(zip((r.id for r in live), self.runs.set_statuses(changes), strict=True))
        ended = [r for r in live if done[r.id]]
        pipe = self.kv.pipeline(transaction=False)
        for run in ended:
            pipe.lrem(keys.thread_waiting(run.thread_id), 0, run.id)
        pipe.execute()
        hand_over_many(self.kv, self.runs, self.queue, [(r.thread_id, r.id) for r in ended])
        mode = _cancel_mode(interrupt)
        again = {r.id for r, a in zip(live, asked, strict=True) if a == mode}
        pipe = self.kv.pipeline(transaction=False)
        refused = [r for r in live if not done[r.id]]
        for run in refused:
            if run.id not in again:
                pipe.hset(keys.run(run.thread_id, run.id), "cancel", mode)
        for run in refused:  # as they are once asked: one may have ended meanwhile
            pipe.hget(keys.run(run.thread_id, run.id), "status")
        now = pipe.execute()[-len(refused) :] if refused else []
        status = {r.id: (s or b"").decode() for r, s in zip(refused, now, strict=True)}
        outcomes: list[tuple[str, str]] = []
        for run in runs:
            if run.terminal or status.get(run.id) in TERMINAL:
                outcomes.append((ENDED, status.get(run.id) or run.status.value))
            elif done.get(run.id):
                outcomes.append((DONE, RunStatus.CANCELED.value))
            else:
                outcomes.append((REQUESTED_ALREADY if run.id in again else REQUESTED, status[run.id]))
        return outcomes

    def cancel_runs(
        self,
        where: RunFilter,
        *,
        interrupt: bool = False,
        dry_run: bool = False,
        batch: int = 500,
        stop: Callable[[], bool] | None = None,
        progress: Callable[[BulkResult], None] | None = None,
    ) -> BulkResult:
        """Cancel every run ``where`` matches, as :meth:`cancel` cancels one: a queued run, or one awaiting
        input, ends Canceled at once; a running one stops before its next super-step (with ``interrupt``,
        its running nodes' cancel tokens are set too). Runs that have ended, and running runs whose cancel
        was requested already, are skipped (``"already ended"``, ``"cancel requested already"``): a repeated
        call does nothing more.

        The matching runs are read first (pages of the run index), then canceled ``batch`` at a time, each
        page in a fixed number of round trips (:mod:`graphcore.backend.bulk`).

        Args:
            where: which runs; at least one of its fields must be set.
            dry_run: change nothing: count the matching runs (``matched``), name the first (``sample``), and
                count what the cancel would do to them now, by its rules (``done``, ``requested``,
                ``skipped``).
            batch: runs per page (1 to :data:`MAX_LIMIT`).
            stop: asked before each page; True ends the work there (``stopped``, the counts so far).
            progress: called with the result so far after each page.

        Returns:
            The counts: matched, done (canceled now), requested, skipped by reason.

        Raises:
            ArgumentTypeError, ConfigError: ``where`` is not a RunFilter or sets no field, ``batch`` not an
                int in range, ``interrupt`` or ``dry_run`` not a bool; this client has no step queue.
        """
        _expect("interrupt", interrupt, bool, "a bool")
        pairs = self._bulk_matching(where, dry_run, batch, stop, progress)
        self._need_queue("cancel_runs")

        def act(page: Sequence[tuple[str, str]]) -> list[str]:
            if dry_run:
                return self._cancel_preview(self._records_of(page), interrupt)
            return [kind for kind, _ in self._cancel_page(self._records_of(page), interrupt)]

        ids = [r for r, _ in pairs]
        return in_pages(pairs, ids, act, batch=batch, dry_run=dry_run, stop=stop, progress=progress)

    def resume_runs(
        self,
        where: RunFilter,
        *,
        dry_run: bool = False,
        batch: int = 500,
        stop: Callable[[], bool] | None = None,
        progress: Callable[[BulkResult], None] | None = None,
    ) -> BulkResult:
        """Continue every ended run ``where`` matches in a new run, as :meth:`resume` continues one (R14):
        same workflow, thread, tenant and options, from its thread's latest checkpoint. The runs
        :meth:`resume` refuses are skipped, counted by reason: ``"not ended"``, ``"continued already"``,
        ``"its thread has a newer run"`` (the thread went on from there), ``"nothing left to run"`` (a
        completed run whose thread has no next tasks), or the name of the error a new run's checks raised
        (``"UnknownWorkflowError"``). A run resumed once is continued already: a repeated call resumes
        nothing more. Runs stopped at a breakpoint are not ended: :meth:`resume` lets one go on.

        The matching runs are read first, then resumed ``batch`` at a time, each page's new runs in one
        transaction (:mod:`graphcore.backend.bulk`).

        Args:
            where: which runs (``RunFilter(status=RunStatus.FAILED, ...)``); at least one field set.
            dry_run, batch, stop, progress: as :meth:`cancel_runs`.

        Returns:
            The counts: matched, done (resumed), skipped by reason.

        Raises:
            ArgumentTypeError, ConfigError: as :meth:`cancel_runs`.
            DisabledError: the kill switch is off (nothing is written).
        """
        pairs = self._bulk_matching(where, dry_run, batch, stop, progress)
        if not dry_run:
            self._ready_to_enqueue()

        def act(page: Sequence[tuple[str, str]]) -> list[str]:
            if dry_run:
                return self._resume_preview(self._records_of(page))
            return [kind for kind, _ in self._resume_page(self._records_of(page))]

        ids = [r for r, _ in pairs]
        return in_pages(pairs, ids, act, batch=batch, dry_run=dry_run, stop=stop, progress=progress)

    def delete_threads(
        self,
        older_than_s: float,
        where: RunFilter | None = None,
        *,
        force: bool = False,
        dry_run: bool = False,
        batch: int = 500,
        stop: Callable[[], bool] | None = None,
        progress: Callable[[BulkResult], None] | None = None,
    ) -> BulkResult:
        """Delete every thread last used more than ``older_than_s`` seconds ago, as :meth:`delete_thread`
        deletes one (K3). A thread's last use is when its newest run ended (was created, for a run that has
        not ended), by the run record's times; with ``where``, only the threads of the runs it matches
        (tenant, workflow, ...). The threads :meth:`delete_thread` refuses are skipped, counted by reason
        (``"a run is active on it"``, ``"its run awaits input"`` without ``force``, ``"runs wait for it"``);
        a deleted thread is gone, so a repeated call finds it no more.

        The old threads are found first, from pages of the run index (two more round trips per page for
        their newest runs' times), then deleted ``batch`` at a time, each page in one transaction, in a fixed
        number of round trips (:func:`graphcore.backend.ttl.delete_threads`).

        Args:
            older_than_s: seconds since the last use (above 0).
            where: which runs' threads (None: every thread).
            force: delete threads whose active run awaits input too.
            dry_run, batch, stop, progress: as :meth:`cancel_runs`.

        Returns:
            The counts: matched (old threads), done (deleted), skipped by reason; ``sample``: thread ids.

        Raises:
            ArgumentTypeError, ConfigError: ``older_than_s`` not a number above 0, ``where`` not a RunFilter
                or None, ``force`` not a bool; the arguments :meth:`cancel_runs` refuses.
        """
        _seconds("older_than_s", older_than_s, above_zero=True)
        _expect("where", where, (RunFilter, type(None)), "a RunFilter or None")
        _expect("force", force, bool, "a bool")
        _bulk_args(dry_run, batch, stop, progress)
        threads = self._idle_threads(time.time() - older_than_s, where or RunFilter(), batch)

        def act(page: Sequence[str]) -> list[str]:
            if dry_run:
                refused = delete_refusals(self.kv, page, force)
                return [refused[t].reason if t in refused else DONE for t in page]
            return [
                done.reason if isinstance(done, ThreadActiveError) else DONE if done.keys else "gone already"
                for done in delete_threads(self.kv, page, force, self.queue)
            ]

        return in_pages(threads, threads, act, batch=batch, dry_run=dry_run, stop=stop, progress=progress)

    def _idle_threads(self, before_s: float, where: RunFilter, batch: int) -> list[str]:
        """The threads of the runs ``where`` matches whose last use (:meth:`delete_threads`) was before
        ``before_s`` (seconds since the epoch), those of the newest runs first."""
        seen: set[str] = set()
        found: list[str] = []
        for page in self.runs.matching(where, batch):
            threads = [t for t in dict.fromkeys(t for _, t in page) if t not in seen]
            seen.update(threads)
            newest = self._newest_runs(threads)
            pipe = self.kv.pipeline(transaction=False)
            for thread, run_id in newest.items():
                pipe.hmget(keys.run(thread, run_id), ["created_at", "ended_at"])
            for thread, times in zip(newest, pipe.execute(), strict=True):
                used = [datetime.fromisoformat(t.decode()).timestamp() for t in times if t]
                if used and max(used) < before_s:
                    found.append(thread)
        return found

    def _bulk_matching(
        self,
        where: RunFilter,
        dry_run: bool,
        batch: int,
        stop: Callable[[], bool] | None,
        progress: Callable[[BulkResult], None] | None,
    ) -> list[tuple[str, str]]:
        """The ``(run id, thread)`` of every run ``where`` matches, newest first, read ``batch`` ids at a
        time (the arguments of a bulk operation checked first).

        Raises:
            ArgumentTypeError, ConfigError: ``where`` is not a RunFilter or sets no field, ``batch`` not an
                int in range, ``dry_run`` not a bool, ``stop`` or ``progress`` not a callable or None.
        """
        _expect("where", where, RunFilter, "a RunFilter")
        if where == RunFilter():
            raise ConfigError("where: give at least one filter (tenant, status, workflow, schedule, version)")
        _bulk_args(dry_run, batch, stop, progress)
        return [pair for page in self.runs.matching(where, batch) for pair in page]

    def _records_of(self, page: Sequence[tuple[str, str]]) -> list[RunRecord]:
        """The records of a page of ``(run id, thread)`` (one round trip; runs gone meanwhile left out)."""
        return self.runs.fetch(page)

    def resume(self, run_id: str, *, update: dict[str, Any] | None = None, goto: Any = ()) -> str:
        """Continue a run's thread from its latest checkpoint in a new run (R14): same workflow, thread,
        tenant and options, no input (a run that ended before it began, e.g. canceled while queued, gives
        its own input: it never applied it), ``continued_from_run_id`` set. A failed step runs again (its
        finished tasks are kept); a completed run is resumed only when its thread has next tasks again (an
        :meth:`update_state` after it whose ``as_node`` has edges to follow).

        A run stopped at a static breakpoint (``interrupt_before``/``interrupt_after``: awaiting input with
        :attr:`RunRecord.breakpoint` set) goes on itself instead, past that breakpoint, as LangGraph's
        ``invoke(None, config)`` does (:mod:`graphq.worker.step.breakpoints`); its own id is returned. With
        ``update`` and ``goto`` it is LangGraph's ``invoke(Command(update=update, goto=goto), config)`` there:
        they are saved with the resume as the head checkpoint's pending write (as :meth:`answer` saves
        them), and the step it goes on with applies them (the update through the reducers, the goto's nodes
        run too).

        Returns:
            The id of the run that goes on: the new run's, or the stopped run's own.

        Raises:
            RunNotFoundError: no such run.
            InvalidUpdateError: the run has not ended (it is still queued or running, let past its
                breakpoint already, also by a resume racing this one, or awaiting an answer to a request:
                :meth:`answer` continues it), or it was continued already (a chain goes on from its last
                run, which the message names), or its thread has a newer run (the thread went on from
                there: resume that one, which the message names), or it completed and its thread has
                nothing left to run (its latest checkpoint has no next tasks: the new run would be empty).
                Each message names the run
                (:mod:`graphcore.backend.resuming`). ``update`` or ``goto`` given for a run not stopped at a
                breakpoint (an ended run's thread takes them as ``enqueue``'s input ``Command``), or invalid
                (the errors of :meth:`answer`); nothing is written.
        """
        command: Command[Any] = Command(update=update, goto=goto)
        run = self.runs.get(run_id)
        if at_breakpoint(run):
            return self._pass_breakpoint(run, command)
        if not run.terminal:
            asked = len(self.requests(run_id)) if run.status == RunStatus.AWAITING_INPUT else 0
            raise not_ended(run, asked)
        if update is not None or goto:
            raise InvalidUpdateError(
                f"update/goto: run {run_id} is {run.status.value}, not stopped at a breakpoint; give them to "
                f"its thread as the input of a new run: client.enqueue({run.workflow!r}, "
                f"Command(update=..., goto=...), thread_id={run.thread_id!r})"
            )
        _, outcome = self._resume_page([run])[0]
        if isinstance(outcome, str):
            return outcome
        raise outcome()

    def resume_refusal(self, run: RunRecord) -> str | None:
        """Why :meth:`resume` would refuse ``run`` by its rules (R14), read now: ``"not ended"``,
        ``"continued already"``, ``"its thread has a newer run"`` or ``"nothing left to run"`` (the reasons
        :meth:`resume_runs` counts); None when it would let it go on (an ended run that may be continued,
        or one stopped at a breakpoint). The new run's own checks (its workflow loaded, admission) are not
        made here.
        """
        _expect("run", run, RunRecord, "a RunRecord (get_run's)")
        if at_breakpoint(run):
            return None
        newest, (now,) = self._with_newest([run], [run.thread_id])
        refusal = self._resume_refusal(now, newest.get(run.thread_id))
        return None if refusal is None else refusal[0]

    def _resume_page(self, runs: Sequence[RunRecord]) -> list[tuple[str, str | Callable[[], PermanentError]]]:
        """Continue each ended run of ``runs`` in a new run (R14), all in one transaction, in a fixed number
        of round trips however many they are (but a read of the thread's head for a completed run); for
        each, :data:`~graphcore.backend.bulk.DONE` and the new run's id, or why it is refused (a short
        reason, and its error: :meth:`_resume_refusal`, or the error of the new run's checks)."""
        self._ready_to_enqueue()
        runs, outcomes, chosen = self._resume_plan(runs)
        run_keys_ = [keys.run(r.thread_id, r.id) for r, _ in chosen]

        def link(pipe: Any) -> None:
            for key, (_, valid) in zip(run_keys_, chosen, strict=True):
                pipe.hset(key, "continued_by_run_id", valid.record.id)

        once = Guard(  # the links and the new runs in one transaction: of two racing resumes one continues
            [*run_keys_, *(keys.thread_runs(r.thread_id) for r, _ in chosen)],
            lambda pipe: self._resumable_still([r for r, _ in chosen]),
            link,
        )
        if chosen and self._enqueue_valid([v for _, v in chosen], once) is None:
            return self._resume_page(self.runs.fetch([(r.id, r.thread_id) for r in runs]))  # read again
        for run, valid in chosen:
            outcomes[run.id] = (DONE, valid.record.id)
        return [outcomes[r.id] for r in runs]

    def _resume_plan(
        self, runs: Sequence[RunRecord]
    ) -> tuple[
        list[RunRecord],
        dict[str, tuple[str, str | Callable[[], PermanentError]]],
        list[tuple[RunRecord, ValidRun]],
    ]:
        """:meth:`resume`'s rules applied to ``runs``, nothing written: the runs as read now (their
        continuations), why each refused one is refused (by run id: :meth:`_resume_refusal`, or the error
        of the new run's checks), and the others with their checked new runs."""
        threads = list(dict.fromkeys(r.thread_id for r in runs))
        outcomes: dict[str, tuple[str, str | Callable[[], PermanentError]]] = {}
        chosen: list[tuple[RunRecord, ValidRun]] = []
        newest, now = self._with_newest(runs, threads)
        for run in now:
            refusal = self._resume_refusal(run, newest.get(run.thread_id))
            if refusal is not None:
                outcomes[run.id] = refusal
                continue
            try:
                chosen.append((run, self._admissible(_resume_request(run), earlier=run)))
            except PermanentError as exc:
                outcomes[run.id] = (type(exc).__name__, _raised(exc))
        return now, outcomes, chosen

    def _resume_preview(self, runs: Sequence[RunRecord]) -> list[str]:
        """What :meth:`_resume_page` would do to each of ``runs`` now, by its rules, changing nothing:
        :data:`~graphcore.backend.bulk.DONE`, or the reason it would be refused."""
        _, refused, chosen = self._resume_plan(runs)
        continued = {run.id for run, _ in chosen}
        return [DONE if r.id in continued else refused[r.id][0] for r in runs]

    def _with_newest(
        self, runs: Sequence[RunRecord], threads: Sequence[str]
    ) -> tuple[dict[str, str], list[RunRecord]]:
        """The id of each thread's newest run, and ``runs`` with the continuation each has now
        (``continued_by_run_id``), read together in one transaction: a resume that created a newer run
        meanwhile shows as the continuation it is, not as a newer run of the thread."""
        pipe = self.kv.pipeline(transaction=True)
        for thread in threads:
            pipe.zrevrange(keys.thread_runs(thread), 0, 0)
        for run in runs:
            pipe.hget(keys.run(run.thread_id, run.id), "continued_by_run_id")
        replies = pipe.execute()
        newest = {t: ids[0].decode() for t, ids in zip(threads, replies[: len(threads)], strict=True) if ids}
        links = replies[len(threads) :]
        now = [
            r if link is None else r.model_copy(update={"continued_by_run_id": link.decode()})
            for r, link in zip(runs, links, strict=True)
        ]
        return newest, now

    def _newest_runs(self, threads: Sequence[str]) -> dict[str, str]:
        """The id of each thread's newest run (one round trip); threads with no runs left out."""
        pipe = self.kv.pipeline(transaction=False)
        for thread in threads:
            pipe.zrevrange(keys.thread_runs(thread), 0, 0)
        return {t: ids[0].decode() for t, ids in zip(threads, pipe.execute(), strict=True) if ids}

    def _resumable_still(self, runs: Sequence[RunRecord]) -> bool:
        """Whether none of ``runs`` was continued, and none of their threads had a newer run, since they
        were read (one round trip; called once their keys are WATCHed)."""
        pipe = self.kv.pipeline(transaction=False)
        for run in runs:
            pipe.hexists(keys.run(run.thread_id, run.id), "continued_by_run_id")
        continued = pipe.execute()
        newest = self._newest_runs([r.thread_id for r in runs])
        return not any(continued) and all(newest.get(r.thread_id) == r.id for r in runs)

    def _resume_refusal(
        self, run: RunRecord, newest: str | None
    ) -> tuple[str, Callable[[], PermanentError]] | None:
        """Why ``run`` cannot be continued in a new run (:meth:`resume`'s rules, R14): a short reason and
        its error (made when asked: the error of a run continued already reads its chain), or None.
        ``newest``: the id of the newest run of its thread."""
        if not run.terminal:
            return "not ended", lambda: not_ended(run, 0)
        if run.continued_by_run_id:
            return "continued already", lambda: self._continued_already(run)
        if newest is not None and newest != run.id:
            return "its thread has a newer run", lambda: newer_run(run, newest)
        head = self.checkpoints.get(run.thread_id) if run.status == RunStatus.COMPLETED else None
        if head is not None and not head.next_tasks:  # (a canceled run's resume gets it its result)
            return "nothing left to run", lambda: nothing_left(run, head)
        return None

    def _continued_already(self, run: RunRecord) -> InvalidUpdateError:
        """The refusal to resume ``run``, which a new run continues already, naming its chain's last run."""
        last = self.chain(run.id)[-1]
        return InvalidUpdateError(
            f"run {run.id} was continued by run {run.continued_by_run_id} already; its chain goes on "
            f"from its last run, {last.id} ({last.status.value}): resume that one"
        )

    def _pass_breakpoint(self, run: RunRecord, command: Command[Any] | None = None) -> str:
        """Let ``run``, stopped at a breakpoint, go on (its step enqueued again, the stop marked continued),
        ``command``'s update and goto saved with it (:meth:`_command_write`).

        Raises:
            ConfigError: this client has no step queue.
            InvalidUpdateError: another resume let it go on first, or a cancel ended it (checked in the
                transaction that lets it go: of two racing resumes one goes on); ``command`` is invalid.
        """
        if self.queue is None:
            raise ConfigError("this client has no step queue; build it with graphq.connect_client()")
        passed = json.dumps({**(run.breakpoint or {}), "continued": True})
        self._continue(run, {}, {}, {"breakpoint": passed}, command)
        return run.id

    def update_state(
        self,
        workflow: str,
        thread_id: str,
        values: Any,
        as_node: str | None = None,
        *,
        checkpoint_id: str | None = None,
    ) -> Checkpoint:
        """Write a checkpoint on the thread as if ``as_node`` had returned ``values`` (C3); with
        ``checkpoint_id``, on that checkpoint rather than the newest: a fork (LangGraph's ``update_state``
        on a config with a ``checkpoint_id``), the branch it was on staying in the history.

        Args:
            workflow: the thread's workflow (its channels and edges apply the update).
            values: what ``as_node`` returns: a dict of state updates, or a :class:`~graphcore.types.Command`
                (its ``update`` written, its ``goto`` the next tasks, as LangGraph's).
            as_node: the node the update is attributed to, by the in-process rule (LangGraph's,
                :func:`graphcore.engine.snapshot.update_checkpoint`): None → the node that wrote last
                (START when none has: the values act as input; refused as ambiguous after a parallel step).
            checkpoint_id: the checkpoint the update is written on (its child); None: the newest.

        Returns:
            The new checkpoint: the thread's latest, with ``metadata["source"] == "update"``; its next tasks
            follow ``as_node``'s edges, so the next run without input continues from there.

        Raises:
            CheckpointNotFoundError: the thread has no checkpoint (no checkpoint ``checkpoint_id``).
            ConfigError: ``checkpoint_id`` given while a worker keeps no checkpoint history (R5).
            InvalidUpdateError: the thread's newest run is of another workflow (the message names it),
                a run of the thread is queued or running (I3), or awaiting input (its
                answer would continue from the checkpoint that asked, leaving the update behind: answer or
                cancel it first), or the node or keys are unknown, or ``as_node`` is None and the last
                step that ran nodes ran several (ambiguous).
            InputTypeError, SerializationError: a value of the wrong type for its key, or nested too
                deeply, as :meth:`enqueue` refuses an input (:func:`~graphcore.engine.inputs.check_types`,
                paths ``values.<key>``, a Command's ``values.update.<key>``); nothing is written.
            ArgumentTypeError, ConfigError: ``workflow``, ``thread_id`` or ``as_node`` of the wrong type, a
                malformed thread id.
        """
        _expect("workflow", workflow, str, "a workflow name (str)")
        _expect("as_node", as_node, (str, type(None)), "a node name (str) or None")
        graph = self.registry.get(workflow)
        # A paused run goes on from the checkpoint it paused at, not from a newer head: refuse rather than
        # write an update that it would silently leave behind (its answer or resume takes one).
        self._idle_thread_of(workflow, thread_id)
        if checkpoint_id is not None:
            self._refuse_without_history(f"update_state at {_a_fork(checkpoint_id)}")
        head = self.get_state(thread_id, checkpoint_id)
        store = RedisCheckpointStore(self.kv, graph.schema)
        writer = as_node if as_node is not None else last_writer(store, graph, thread_id, head)
        if writer == START or writer in graph.nodes:  # else update_checkpoint refuses it, or ends the step
            values = _checked_update(graph, values, writer)
        cp = update_checkpoint(store, graph, thread_id, head, [StateUpdate(values, writer)])
        owner = head.metadata.get("run_id")
        if not store.history and owner:  # the head goes (R5): its run's result is read from nowhere else
            keep_result(self.kv, thread_id, owner, head.id, head.channel_values)
        store.put(thread_id, cp)
        return cp

    def update_writer(self, workflow: str, thread_id: str, checkpoint_id: str | None = None) -> str:
        """The node :meth:`update_state` attributes an update without ``as_node`` to, on the thread's newest
        checkpoint (or ``checkpoint_id``): the one that wrote last, START when none has.

        Raises:
            CheckpointNotFoundError: the thread has no checkpoint (no checkpoint ``checkpoint_id``).
            InvalidUpdateError: the last step that ran nodes ran several (ambiguous).
            UnknownWorkflowError: ``workflow`` is not loaded.
            ArgumentTypeError, ConfigError: ``workflow`` is not a str, ``thread_id`` not a valid id.
        """
        _expect("workflow", workflow, str, "a workflow name (str)")
        graph = self.registry.get(workflow)
        head = self.get_state(thread_id, checkpoint_id)
        return last_writer(RedisCheckpointStore(self.kv, graph.schema), graph, thread_id, head)

    def _idle_thread_of(self, workflow: str, thread_id: str, prefix: str = "") -> None:
        """Check that ``thread_id`` is a thread of ``workflow`` (its newest run's, or it has none: its
        channels and edges apply the thread's checkpoints) with no active run, before a write at its head.

        Raises:
            InvalidUpdateError: it is a thread of another workflow, or a run of it is queued, running or
                paused (which takes an update through its answer or resume); the message, after ``prefix``,
                names it.
        """
        runs = self.thread_runs(thread_id)
        if runs and runs[-1].workflow != workflow:
            raise InvalidUpdateError(
                f"{prefix or 'update_state: '}thread {thread_id!r} is a thread of workflow "
                f"{runs[-1].workflow!r} (its newest run {runs[-1].id}), not of {workflow!r}; nothing written"
            )
        for run in sorted(runs, key=lambda r: r.status == RunStatus.AWAITING_INPUT):  # active ones first
            if not run.terminal:
                raise InvalidUpdateError(f"{prefix}{_taking_updates(run)}")

    def delete_thread(self, thread_id: str, force: bool = False) -> Deleted:
        """Remove every key of ``thread_id`` and its entries in shared indexes now (K3), in one transaction
        (:func:`graphcore.backend.ttl.delete_thread`); the runs' admission slots are given back.

        Raises:
            ThreadActiveError: a run is active on the thread (queued or running, or awaiting input unless
                ``force``) or waits for it; nothing was removed.
            ArgumentTypeError, ConfigError: a malformed ``thread_id``, ``force`` not a bool.
        """
        keys.validate_id("thread id", thread_id)
        _expect("force", force, bool, "a bool")
        return delete_thread(self.kv, thread_id, force, self.queue)

    def thread_runs(self, thread_id: str) -> list[RunRecord]:
        """The runs of a thread, oldest first.

        Raises:
            ArgumentTypeError, ConfigError: a malformed ``thread_id``.
        """
        keys.validate_id("thread id", thread_id)
        ids = [i.decode() for i in self.kv.zrange(keys.thread_runs(thread_id), 0, -1)]
        return [self.runs.get(run_id, thread_id) for run_id in ids]

    def get_state(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint:
        """The thread's newest checkpoint (or the one with ``checkpoint_id``).

        Raises:
            CheckpointNotFoundError: the thread has no such checkpoint.
            ArgumentTypeError, ConfigError: a malformed ``thread_id``, ``checkpoint_id`` not a str or None.
        """
        keys.validate_id("thread id", thread_id)
        _expect("checkpoint_id", checkpoint_id, (str, type(None)), "a str or None")
        cp = self.checkpoints.get(thread_id, checkpoint_id)
        if cp is None:
            raise CheckpointNotFoundError(
                f"thread {thread_id!r} has no checkpoint {checkpoint_id or ''}".strip()
            )
        return cp

    def get_history(self, thread_id: str, limit: int | None = None) -> list[Checkpoint]:
        """The thread's checkpoints, newest first; at most ``limit`` (1 to :data:`MAX_LIMIT`; None: all).

        Raises:
            ArgumentTypeError, ConfigError: a malformed ``thread_id``, ``limit`` not an int in range.
        """
        keys.validate_id("thread id", thread_id)
        _limit("limit", limit, optional=True)
        return self.checkpoints.list(thread_id, limit=limit)

    def shown_values(self, thread_id: str, cp: Checkpoint, workflow: str | None = None) -> Any:
        """``cp``'s values as ``get_state`` (and a ``values`` event) shows them: through the state schema of
        ``workflow``, by default the one whose run wrote ``cp`` (its metadata's ``run_id``, else the
        thread's newest run): a dict of the channels, or the value itself for a root-channel state (also
        when that code is not loaded here, :func:`graphcore.engine.schema.stored_values`).

        Raises:
            ArgumentTypeError, ConfigError: a malformed ``thread_id``, ``cp`` not a Checkpoint, ``workflow``
                not a str or None.
        """
        keys.validate_id("thread id", thread_id)
        _expect("cp", cp, Checkpoint, "a Checkpoint")
        _expect("workflow", workflow, (str, type(None)), "a workflow name (str) or None")
        if self.registry.graphs and workflow is None:
            workflow = self._workflow_of(thread_id, cp)
        graph = self.registry.graphs.get(workflow) if workflow is not None else None
        return (
            stored_values(cp.channel_values) if graph is None else graph.schema.values_of(cp.channel_values)
        )

    def _workflow_of(self, thread_id: str, cp: Checkpoint) -> str | None:
        """The workflow of the run that wrote ``cp``, else of the thread's newest run; None without one."""
        owner = cp.metadata.get("run_id")
        newest = [i.decode() for i in self.kv.zrange(keys.thread_runs(thread_id), -1, -1)]
        for run_id in ([owner] if isinstance(owner, str) else []) + newest:
            try:
                return self.runs.get(run_id, thread_id).workflow
            except RunNotFoundError:
                continue
        return None


ENDED = "already ended"
"""Why a bulk cancel left a run alone: it had ended (:meth:`Client.cancel_runs`)."""
REQUESTED_ALREADY = "cancel requested already"
"""Why a bulk cancel left a running run alone: its cancel was requested already, in the same mode."""


def _cancelable(leased: bool) -> tuple[RunStatus, ...]:
    """The statuses a cancel ends at once: queued or awaiting input, and running while no worker holds its
    step (``leased`` False: between steps, or its worker died and the lease lapsed; a worker that claims the
    step meanwhile finds the run ended, and its commit is refused, I1, I7)."""
    waiting = (RunStatus.QUEUED, RunStatus.AWAITING_INPUT)
    return waiting if leased else (*waiting, RunStatus.RUNNING)


def _cancel_mode(interrupt: bool) -> bytes:
    """The run hash's ``cancel`` field a cancel asks a running run with (``b"interrupt"``,
    ``b"cooperative"``)."""
    return b"interrupt" if interrupt else b"cooperative"


def _raised(exc: PermanentError) -> Callable[[], PermanentError]:
    """``exc``, as a refusal made when asked."""
    return lambda: exc


def _resume_request(run: RunRecord) -> RunRequest:
    """The request of the new run that continues ``run`` (R14): same workflow, thread, tenant and options,
    no input (``run``'s own when it ended before it applied it)."""
    return RunRequest(
        run.workflow,
        run.input if run.head is None else None,
        thread_id=run.thread_id,
        tenant=run.tenant,
        config=run.config,
        continued_from_run_id=run.id,
        run_id=uuid.uuid4().hex,
    )


def _ended_already(run_id: str, status: str) -> CancelReply:
    """The reply to a cancel of run ``run_id``, which had ended already (``status``)."""
    return CancelReply(f"run {run_id} is already {status}; nothing changed", changed=False)


def _taking_updates(run: RunRecord) -> str:
    """Why the thread of ``run`` (not ended) takes no state update now, and what takes one: the answer of a
    run awaiting one, the resume of a run stopped at a breakpoint."""
    thread, rid = run.thread_id, run.id
    if stop := at_breakpoint(run):
        return (
            f"thread {thread!r} has {stop}; give the update with its resume: client.resume({rid!r}, "
            f"update=..., goto=...) (graphq runs resume {rid} --update JSON), or cancel it (graphq runs "
            f"cancel {rid})"
        )
    if run.status == RunStatus.AWAITING_INPUT:
        return (
            f"thread {thread!r} has run {rid} awaiting input; give the update with its answer: "
            f"client.answer({rid!r}, value, update=..., goto=...) (graphq runs answer {rid} --value JSON "
            f"--update JSON), or cancel it (graphq runs cancel {rid})"
        )
    return f"thread {thread!r} has an active run {rid}; update it once it ends"


def _checked_update(graph: CompiledGraph, values: Any, writer: str) -> Any:
    """``values`` for ``update_state`` as ``writer``, type-checked as an input is
    (:func:`~graphcore.engine.inputs.check_types`); a Command's ``update`` is, under ``values.update``."""
    if isinstance(values, Command):
        update = check_types(graph.schema, values.update, "values.update", writer)
        return dataclasses.replace(values, update=update)
    return check_types(graph.schema, values, "values", writer)
