"""Human-in-the-loop (G6, R16): ``interrupt(value)`` pauses a node until someone answers.

How it works (semantics follow LangGraph's ``interrupt``):

* The first time a node calls ``interrupt(value)``, the call raises :class:`GraphInterrupt`; the task ends
  with an :class:`~graphcore.types.Interrupt` record instead of writes, and the super-step does not commit.
  Tasks of the same step that finished keep their writes as pending writes (I2).
* An answer is stored under the interrupt's id. When the step runs again, the node re-runs from its start
  and its ``interrupt()`` calls return the answers in call order; an unanswered call pauses again.
* Interrupt ids hash (task id, call index); a task id hashes (checkpoint id, task index, node), so an id is
  unique per call site and stable across re-execution from the same checkpoint.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import TypeAdapter
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

from graphcore.engine.breakpoints import Stop
from graphcore.engine.config import TaskContext, current_task
from graphcore.engine.nested import caller, refusal
from graphcore.errors import AmbiguousAnswerError, ConfigError, InvalidUpdateError
from graphcore.types import Interrupt, TaskWrites

__all__ = [
    "REQUEST_STATUSES",
    "GraphInterrupt",
    "NotAwaitingInputError",
    "RequestRecord",
    "check_response",
    "interrupt",
    "interrupt_id",
    "match_answer",
    "pending_interrupts",
    "resume_plan",
    "schema_fields",
]


class GraphInterrupt(BaseException):
    """Raised by :func:`interrupt` to pause the node (a BaseException: ``except Exception`` cannot eat it);
    also by a graph run inside a node that stopped at a static breakpoint (``stop``, no records)."""

    def __init__(self, *records: Interrupt, stop: Stop | None = None) -> None:
        super().__init__(", ".join(r.id for r in records))
        self.records = records
        """The open requests: one from ``interrupt()``, or every open request of a paused subgraph."""
        self.stop = stop
        """Where a graph the node ran stopped at a breakpoint (its parent stops too), else None."""


RequestStatus = Literal["open", "answered", "unanswered"]
REQUEST_STATUSES: tuple[RequestStatus, ...] = ("open", "answered", "unanswered")
"""``open``: the run waits for its answer; ``answered``; ``unanswered``: the run went on or ended without
an answer to it (canceled while waiting)."""


@dataclass(frozen=True)
class RequestRecord:
    """A human request a run made, open or answered (R16): what ``graphq runs requests RUN --all`` lists.

    Attributes:
        id: the request (interrupt) id; ``answer_again(run, id, value)`` answers it again on a new branch.
        node: the node that asked.
        value: what it asked (the ``interrupt()`` payload).
        status: see :data:`REQUEST_STATUSES`.
        answer: the answer given (None while there is none).
        step: the thread's super-step that asked (the step after ``checkpoint_id``), None when not known.
        checkpoint_id: the checkpoint the asking step started from: a second answer forks the thread there.
        created_at: when it was first asked, ISO-8601 UTC (None when not recorded).
        answered_at: when it was answered, ISO-8601 UTC.
        again_of: for the request that starts a branch run (a second answer), the run that first made it.
        deadline: when it expires unanswered, ISO-8601 UTC (R13; None: no deadline).
        deadline_ms: the same, ms since the epoch.
        response_schema: the JSON Schema of the answer expected (``interrupt(response_schema=...)``), None
            without one.
    """

    id: str
    node: str
    value: Any
    status: RequestStatus
    answer: Any = None
    step: int | None = None
    checkpoint_id: str | None = None
    created_at: str | None = None
    answered_at: str | None = None
    again_of: str | None = None
    deadline: str | None = None
    deadline_ms: int | None = None
    response_schema: dict[str, Any] | type | None = None


class NotAwaitingInputError(InvalidUpdateError):
    """An answer to a run that is not waiting for one; nothing changed.

    Attributes:
        run_id: the run.
        status: its status (``completed``, ``running``, ...).
        answered: the ids of the requests it made that were answered: each can be answered again on a new
            branch (``answer_again``, ``graphq runs answer --again``).
        why: why it ended, when that explains the refusal (``its request R expired at DEADLINE``, R13), else
            "".
        refusal: the message without the hint to answer again: ``run R is completed, not awaiting input;
            nothing to answer``, or ``run R is canceled: its request Q expired at DEADLINE; nothing to
            answer``.
    """

    def __init__(self, run_id: str, status: str, answered: Sequence[str] = (), why: str = "") -> None:
        again = (
            f"; answer one of its requests again, on a new branch, with answer_again (--again): "
            f"{list(answered)}"
            if answered
            else ""
        )
        state = f": {why}" if why else ", not awaiting input"
        self.refusal = f"run {run_id} is {status}{state}; nothing to answer"
        super().__init__(f"{self.refusal}{again}")
        self.why = why
        self.run_id = run_id
        self.status = status
        self.answered = list(answered)


_REQUEST_ID = re.compile(r"[0-9a-f]{16}")
"""What an interrupt id looks like: an answer keyed by such strings is read as keyed by request ids."""


def interrupt_id(task_id: str, index: int) -> str:
    """The id of the ``index``-th ``interrupt()`` call of task ``task_id``."""
    return hashlib.sha1(f"{task_id}|interrupt|{index}".encode()).hexdigest()[:16]


def interrupt(value: Any, timeout_s: float | None = None, *, response_schema: Any = None) -> Any:
    """Pause the running node and ask a human; returns the answer once one is given.

    Args:
        value: what to show the human (allow-listed types: it is stored).
        timeout_s: seconds (> 0) the request stays open from when it is first asked; unanswered by then,
            the run ends Canceled at the next request-expiry scan (R13, ``RequestExpired``). None: the
            workflow's ``request_timeout_s`` (a run option), else no deadline. Only runs on workers expire.
        response_schema: the answer expected, as LangGraph's (keyword only): a JSON Schema dict, shown as
            it is and not checked; or a type pydantic validates (a pydantic model, a dataclass, a
            ``TypedDict``, ``list[int]``, ...): the request shows its JSON Schema (what is stored with it,
            on the queue too: never the class) and the answer is validated and converted. None: no schema.

    Returns:
        The answer to this call site (several calls in one node are matched by order); with a type as
        ``response_schema``, the answer validated by it (a model instance for a model).

    Raises:
        GraphInterrupt: no answer yet; graphq catches it and pauses the run (AwaitingInput).
        OutsideRunError: called outside a running node.
        ConcurrentInterruptError: another thread (or asyncio task) of the same task already called
            ``interrupt()`` or invoked a graph: answers are matched by call order, which threads do not keep
            (LangGraph would risk giving one thread's answer to the other).
        ConfigError: ``timeout_s`` is not a number of seconds > 0, or ``response_schema`` is neither a dict
            nor a type pydantic can validate.
        pydantic.ValidationError: the answer does not match a type ``response_schema`` (the node fails with
            it; its request stays open, so it can be answered again, as LangGraph's).
    """
    ctx = current_task("interrupt")
    timeout = _timeout(ctx, timeout_s)
    adapter = _adapter(response_schema)
    index = ctx.next_interrupt(caller(ctx))
    error = refusal(ctx)
    if error is not None:  # a second thread asks: its answer could be another's (nested.py)
        raise error
    if index < len(ctx.resume):
        return _validated(adapter, ctx.resume[index])
    task_id = ctx.task_id
    iid = interrupt_id(task_id, index)
    if iid in ctx.answers:  # answered before the task first ran (a branch started by a second answer)
        return _validated(adapter, ctx.answers[iid])
    now = datetime.now(UTC)
    deadline = None if timeout is None else round(now.timestamp() * 1000 + timeout * 1000)
    schema = response_schema if adapter is None else adapter.json_schema()
    asked = Interrupt(value, iid, ctx.node, task_id, index, now.isoformat(), deadline, response_schema=schema)
    raise GraphInterrupt(asked)


def _adapter(response_schema: Any) -> TypeAdapter[Any] | None:
    """The validator of ``interrupt(response_schema=...)``: None for no schema or a JSON Schema dict.

    Raises:
        ConfigError: ``response_schema`` is neither a dict nor a type pydantic can validate.
    """
    if response_schema is None or isinstance(response_schema, dict):
        return None
    try:
        return TypeAdapter(response_schema)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
        raise ConfigError(
            f"interrupt(response_schema=...): must be a JSON Schema dict or a type pydantic validates "
            f"(a model, a dataclass, a TypedDict); got {response_schema!r} ({type(exc).__name__})"
        ) from None


def check_response(schema: Any, answer: Any, request_id: str) -> None:
    """Refuse an answer that does not match what its request asks (its ``response_schema``, a JSON Schema),
    before it is stored: a queued run's node would only check it when it runs again, and fail.

    The check is JSON Schema's (the ``jsonschema`` package, the schema's own draft, default draft 2020-12),
    so it is strict where pydantic is lax: a model's field of type ``int`` refuses ``"1"``. A request
    without a schema, or whose schema is not a valid JSON Schema, takes any answer.

    Raises:
        InvalidUpdateError: ``answer to <request_id> at <JSON path>: <why>``.
    """
    if not isinstance(schema, dict):
        return
    import jsonschema  # 40 ms to import: only where an answer is checked

    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(answer))
    except jsonschema.exceptions.SchemaError:
        return
    if error is not None:
        raise InvalidUpdateError(f"answer to {request_id} at {error.json_path}: {error.message}")


def _validated(adapter: TypeAdapter[Any] | None, answer: Any) -> Any:
    """``answer`` validated by ``adapter`` (as it is without one).

    Raises:
        pydantic.ValidationError: it does not match.
    """
    return answer if adapter is None else adapter.validate_python(answer)


def schema_fields(asked: Interrupt) -> dict[str, Any]:
    """The ``response_schema`` field of a request's stored record and ``interrupt`` event on the queue (the
    JSON Schema ``interrupt()`` was given, or made of the type it was given); ``{}`` without one."""
    return {} if asked.response_schema is None else {"response_schema": asked.response_schema}


def _timeout(ctx: TaskContext, timeout_s: Any) -> float | None:
    """The request timeout of an ``interrupt()`` call: its own, else the run's ``request_timeout_s``."""
    if timeout_s is None:
        return ctx.config.request_timeout_s
    number = isinstance(timeout_s, int | float) and not isinstance(timeout_s, bool)
    if not number or not math.isfinite(timeout_s) or timeout_s <= 0:
        raise ConfigError(f"interrupt(timeout_s=...): must be a number of seconds > 0 (got {timeout_s!r})")
    return float(timeout_s)


def pending_interrupts(finished: Mapping[str, TaskWrites]) -> list[Interrupt]:
    """The open requests of a paused step: the interrupts of its tasks, in task order."""
    return [i for tw in finished.values() for i in tw.interrupts]


def resume_plan(
    finished: Mapping[str, TaskWrites], answers: Mapping[str, Any], *, again: bool = False
) -> tuple[dict[str, TaskWrites], dict[str, list[Any]]]:
    """Which paused tasks run again, and with which answers.

    Args:
        finished: the step's pending writes (finished tasks, and paused tasks holding interrupts).
        answers: interrupt id → answer.
        again: every paused task runs again, answered or not (a run given ``Command(update=...)`` or
            ``Command(goto=...)`` without an answer, LangGraph's: the task sees the update and asks again).

    Returns:
        ``(finished, resume)``: ``finished`` without the paused tasks that now have an answer (so they run
        again), and task id → the answers of its own ``interrupt()`` calls in order (up to the first
        unanswered one). A task paused inside a subgraph runs again when any of its subgraph's requests is
        answered; the subgraph finds its answers by id (``TaskContext.answers``).
    """
    keep: dict[str, TaskWrites] = {}
    resume: dict[str, list[Any]] = {}
    for task_id, tw in finished.items():
        if not (again and tw.interrupts) and not any(i.id in answers for i in tw.interrupts):
            keep[task_id] = tw  # finished, or still waiting for an answer
            continue
        resume[task_id] = _answers_in_order(task_id, list(tw.resume), answers)
    return keep, resume


def _answers_in_order(task_id: str, values: list[Any], answers: Mapping[str, Any]) -> list[Any]:
    """``values`` (answers already consumed) extended by the new answers, call index by call index."""
    while (iid := interrupt_id(task_id, len(values))) in answers:
        values.append(answers[iid])
    return values


def match_answer(pending: list[Interrupt], answer: Any, request_id: str | None) -> dict[str, Any]:
    """Turn a human's answer into interrupt id → value (R16).

    Args:
        pending: the open requests.
        answer: one value, or a mapping of request id → value when ``request_id`` is None and several
            requests are open.
        request_id: answer this request only.

    Raises:
        InvalidUpdateError: nothing is pending; the id is unknown.
        AmbiguousAnswerError: several requests are pending and the answer is not keyed by their ids (the
            message lists them); an ``InvalidUpdateError`` and, as LangGraph's, a ``RuntimeError``.
    """
    ids = [i.id for i in pending]
    if not ids:
        raise InvalidUpdateError("the run has no pending request to answer")
    if request_id is not None:
        if request_id not in ids:
            raise InvalidUpdateError(
                f"no pending request {request_id!r}; pending: {ids} (an answered request is answered again "
                "on a new branch: answer_again / --again)"
            )
        return {request_id: answer}
    if isinstance(answer, Mapping) and answer and set(answer) <= set(ids):
        return dict(answer)
    if isinstance(answer, Mapping) and answer and all(_REQUEST_ID.fullmatch(str(k)) for k in answer):
        unknown = sorted(set(answer) - set(ids))
        raise InvalidUpdateError(f"unknown request id(s) {unknown}; pending: {ids}")
    if len(ids) == 1:
        return {ids[0]: answer}
    raise AmbiguousAnswerError(
        "When there are multiple pending interrupts, you must specify the interrupt id when resuming: "
        f"{len(ids)} requests are pending; answer with a map of request id to value, or name one with "
        f"--request: {ids}"
    )
