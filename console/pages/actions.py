"""What the pages' actions answer: one line (:data:`Outcome`), the client call's words, shown where the
action was taken (``_outcome.html``, swapped in by htmx); a refusal with the CLI's text and the status of
:func:`graphq.console.problems.status_of`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from graphcore.backend.client import Client
from graphcore.backend.json_forms import from_json
from graphcore.engine.inputs import check_answer
from graphcore.errors import GraphqError, PermanentError
from graphq.console.problems import status_of
from graphq.console.rendering import quote_id, templates

__all__ = ["ActionError", "Confirm", "Outcome", "act", "answer", "json_field"]


@dataclass(frozen=True)
class Confirm:
    """A question an outcome asks: a button that POSTs ``fields`` (hidden) to ``url``. Its answer is shown
    where the outcome is (the form inherits the htmx target of the outcome's container)."""

    url: str
    fields: tuple[tuple[str, str], ...]
    button: str = "Confirm"


@dataclass(frozen=True)
class Outcome:
    """What an action did, in words, and where to look next (a run, a checkpoint), if anywhere; ``items``:
    ``(text, link)`` pairs listed under the line (the first runs a bulk action matched); ``confirm``: the
    question it asks, if any."""

    text: str
    link: str | None = None
    link_text: str = ""
    items: tuple[tuple[str, str], ...] = ()
    confirm: Confirm | None = None


class ActionError(PermanentError):
    """Bad input to an action (a field that is not JSON, ...): its message names the field."""


def json_field(name: str, text: str) -> Any:
    """The JSON value of form field ``name`` (strict, as the CLI reads ``--value``).

    Raises:
        ActionError: ``<name>: <why>`` (malformed JSON, NaN, nested too deeply).
    """
    try:
        return from_json(text)
    except ValueError as exc:
        raise ActionError(f"{name}: {exc}") from None


async def act(request: Request, call: Callable[..., Outcome], *args: Any) -> Response:
    """Run ``call(*args)`` off the event loop and answer with its outcome, or with its refusal (a graphq
    error: its text, with its HTTP status)."""
    try:
        outcome = await run_in_threadpool(call, *args)
    except GraphqError as exc:
        return _shown(request, str(exc), error=True, status=status_of(exc))
    return _shown(
        request,
        outcome.text,
        link=outcome.link,
        link_text=outcome.link_text,
        items=outcome.items,
        confirm=outcome.confirm,
    )


def _shown(request: Request, text: str, *, error: bool = False, status: int = 200, **extra: Any) -> Response:
    context = {"text": text, "error": error, "link": None, **extra}
    return templates.TemplateResponse(request, "_outcome.html", context, status_code=status)


def answer(client: Client, run_id: str, request_id: str, value_text: str, again: bool) -> Outcome:
    """Answer request ``request_id`` of run ``run_id`` with the JSON ``value_text``, as ``graphq runs answer
    RUN --request ID --value JSON [--again]`` does: the value read strictly, refused when it cannot be
    stored (:func:`~graphcore.engine.inputs.check_answer`), then the client's answer (or second answer, a
    new branch run).

    Raises:
        ActionError: ``value: ...`` (not JSON; not storable).
        GraphqError: the client's refusals (:meth:`Client.answer`, :meth:`Client.answer_again`).
    """
    value = json_field("value", value_text)
    try:
        check_answer(value)
    except PermanentError as exc:
        raise ActionError(f"value: {exc}") from None
    if again:
        new_id = client.answer_again(run_id, request_id, value)
        return Outcome(
            f"run {new_id} branches off run {run_id} with a new answer", f"/runs/{quote_id(new_id)}", new_id
        )
    answered = client.answer(run_id, value, request_id)
    return Outcome(
        f"answered {', '.join(answered)}; run {run_id} continues on a worker",
        f"/runs/{quote_id(run_id)}",
        run_id,
    )
