"""The API's request and response bodies (pydantic): what the OpenAPI document describes.

Request bodies refuse unknown fields (422, naming the field). Run records, requests and checkpoints are the
JSON forms the CLI prints with ``--output json`` (:mod:`graphcore.backend.json_forms`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from graphcore.backend.client import MAX_LIMIT
from graphcore.backend.runs import RunRecord
from graphcore.engine.interrupts import RequestRecord

__all__ = [
    "MAX_BATCH",
    "AnswerIn",
    "Answered",
    "BatchIn",
    "CancelIn",
    "Canceled",
    "EnqueueIn",
    "Enqueued",
    "OpenRequest",
    "OpenRequestOfRun",
    "Problem",
    "ResumeIn",
    "Resumed",
    "RunIn",
    "ShownRun",
]

MAX_BATCH = 10_000
"""Most runs one ``POST /api/runs`` enqueues."""

Multitask = Literal["enqueue", "reject"]


class _Body(BaseModel):
    """A request body: unknown fields refused; strict types (``"yes"`` is no boolean, ``"1"`` no number)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class RunIn(_Body):
    """One run to enqueue: the fields of ``Client.enqueue`` (``RunRequest``), as ``graphq enqueue`` takes
    them."""

    workflow: str = Field(description="The workflow's name; its code must be loaded in the server.")
    input: Any = Field(default_factory=dict, description="The run's input (JSON); default {}.")
    thread_id: str | None = Field(default=None, description="The thread; default a new one (the run id).")
    tenant: str = Field(default="default", description="Who the run is for (fairness, quotas).")
    config: dict[str, Any] = Field(
        default_factory=dict,
        description="Run options, as `graphq enqueue --config` takes them: LangGraph's config "
        "(configurable.thread_id, checkpoint_id, recursion_limit, tags, metadata) or graphq's "
        "(max_super_steps, run_timeout_s, ...).",
    )
    run_id: str | None = Field(
        default=None, description="The run's id when the caller chooses it; refused (409) when it is taken."
    )
    webhook: str | None = Field(
        default=None,
        description="An http(s) URL the run's end or pause is POSTed to: the run option webhook "
        "(`graphq enqueue --webhook`); it wins over a webhook in config.",
    )


class BatchIn(_Body):
    """Several runs, enqueued all or nothing: every run is checked before any is enqueued."""

    runs: list[RunIn] = Field(min_length=1, max_length=MAX_BATCH)
    multitask: Multitask = Field(
        default="enqueue",
        description="A run on a busy thread waits behind its active run (enqueue) or is refused (reject, "
        "409: nothing enqueued).",
    )


class OneIn(RunIn):
    """One run, with the multitask policy of its thread."""

    multitask: Multitask = Field(default="enqueue", description="As in a batch.")


def _kind(body: Any) -> str:
    return "batch" if isinstance(body, dict) and "runs" in body else "run"


EnqueueIn = Annotated[Annotated[OneIn, Tag("run")] | Annotated[BatchIn, Tag("batch")], Discriminator(_kind)]
"""``POST /api/runs``: one run, or ``{"runs": [...]}``."""


class Enqueued(BaseModel):
    """The runs enqueued, in request order."""

    run_ids: list[str]


class CancelIn(_Body):
    interrupt: bool = Field(
        default=False,
        description="Also signal the running nodes' cancel tokens, instead of letting the step in flight "
        "finish.",
    )


class Canceled(BaseModel):
    """What the cancel did, in the CLI's words; ``changed`` false when the run had ended already."""

    message: str
    changed: bool


class ResumeIn(_Body):
    update: dict[str, Any] | None = Field(
        default=None, description="State updates (a run stopped at a breakpoint only), as `--update`."
    )
    goto: list[str] = Field(default_factory=list, description="Nodes the next step runs too, as `--goto`.")


class Resumed(BaseModel):
    """The run that goes on: a new run continuing the thread, or the stopped run itself."""

    run_id: str
    continued_from_run_id: str | None


class AnswerIn(_Body):
    value: Any = Field(
        description="The answer (JSON); with several open requests of a run answered at once, "
        "use one request per call."
    )
    run_id: str | None = Field(
        default=None, description="The run that made the request; default: found among the open requests."
    )
    again: bool = Field(
        default=False,
        description="Answer an answered request again (needs run_id): a new run branches off the thread "
        "where the request was made.",
    )
    update: dict[str, Any] | None = Field(default=None, description="As `graphq runs answer --update`.")
    goto: list[str] = Field(default_factory=list, description="As `graphq runs answer --goto`.")


class Answered(BaseModel):
    """The request answered; ``branch_run_id``: the new run of a second answer (``again``)."""

    request_id: str
    run_id: str
    branch_run_id: str | None = None


class OpenRequestOfRun(BaseModel):
    """An open human request as ``graphq runs requests RUN -o json`` lists it."""

    id: str
    value: Any
    node: str | None
    task_id: str | None
    index: int | None
    created_at: str | None
    deadline_ms: int | None
    deadline: str | None
    response_schema: Any = None


class OpenRequest(OpenRequestOfRun):
    """An open human request (``graphq runs requests RUN -o json``) with the run that made it."""

    run_id: str
    thread_id: str
    workflow: str
    tenant: str


LIMIT = Annotated[int, Field(ge=1, le=MAX_LIMIT)]
"""A listing's ``limit``, as the CLI's ``--limit`` takes it."""


class Problem(BaseModel):
    """An error (RFC 9457), sent as ``application/problem+json``; ``detail`` is the line the CLI prints for
    the same error."""

    type: str = Field(description='Always "about:blank": the status says what kind of error it is.')
    title: str = Field(description="The status's phrase (Not Found, Unprocessable Entity, ...).")
    status: int = Field(description="The HTTP status.")
    detail: str = Field(description="What was wrong and where, in one line.")
    errors: list[str] | None = Field(
        default=None, description="A request that does not validate: each error as `where: what`."
    )


class ShownRun(RunRecord):
    """A run as ``graphq runs show RUN -o json`` prints it (:func:`~graphcore.backend.json_forms.shown_json`):
    its record, then where it is and what it waits for, and its requests. Describes the answer only: the
    server sends the JSON form as it is."""

    thread_step: int | None = Field(description="The thread's super-step the run is at (`state --history`).")
    waiting_for_slot_until: str | None = Field(
        description="A queued run waiting for an admission slot: until when (ISO-8601 UTC)."
    )
    waiting_for_version: str | None = Field(
        description="A pinned run no live worker serves: the version it waits for."
    )
    all_requests: list[RequestRecord] = Field(description="Every request the run made, open or answered.")
    requests: list[OpenRequestOfRun] | None = Field(
        default=None, description="A run waiting for input: its open requests (absent otherwise)."
    )
