"""``POST /runs/bulk``: a bulk action on every run the runs page's filters match (cancel, cancel with
interrupt, resume; delete the threads of those runs unused for a duration), as ``graphq runs cancel
--status ...``, ``runs resume --status failed``, ``threads delete --older-than 30d`` do.

Without ``confirmed`` it is a dry run: the answer says how many match, how many the action would act on
and skip (by reason, by the rules the action applies), names the first, and asks to confirm with a button
that carries the count it showed. With ``confirmed`` the runs are counted again: when the count is still
that, the action is done and the answer is the CLI's summary line (``canceled 3 runs;
1 skipped: already ended``); when it changed, nothing is done and the answer asks again with the new count.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response

from graphcore.backend.bulk import BulkResult, count_of, needs_filter, summary, would_do
from graphcore.backend.client import Client
from graphcore.backend.runs import RunFilter
from graphq.console.pages.actions import ActionError, Confirm, Outcome, act
from graphq.console.pages.runs import FILTERS, run_filter
from graphq.console.rendering import quote_id
from graphq.console.state import Console
from graphq.scheduler.schedules import parse_duration

__all__ = ["ACTIONS", "BulkAction", "router"]

router = APIRouter()

_FIELDS = tuple(f for f in FILTERS if f != "q")
"""The runs page's filters a bulk action acts on (not its search)."""


@dataclass(frozen=True)
class BulkAction:
    """One bulk action: what the form's select says, its infinitive and the question a count asks
    (``cancel``, ``cancel them``), the past tense and the noun of its summary (``canceled`` 3 ``run``s)."""

    label: str
    infinitive: str
    question: str
    verb: str
    noun: str = "run"


ACTIONS = {
    "cancel": BulkAction("cancel", "cancel", "cancel them", "canceled"),
    "interrupt": BulkAction(
        "cancel with interrupt", "cancel", "cancel them and interrupt their running nodes", "canceled"
    ),
    "resume": BulkAction("resume", "resume", "resume them", "resumed"),
    "delete": BulkAction("delete threads", "delete", "delete them", "deleted", "thread"),
}
"""The bulk actions by the value the form sends."""


@router.post("/runs/bulk")
async def bulk(
    request: Request,
    action: Annotated[str, Form()] = "",
    older_than: Annotated[str, Form()] = "",
    confirmed: Annotated[int | None, Form()] = None,
) -> Response:
    """Count (dry run) or, with ``confirmed``, do a bulk action on the runs the form's filters match."""
    form = await request.form()
    filters = {k: str(form.get(k) or "") for k in FILTERS}
    return await act(request, _bulk, Console.of(request).client, action, filters, older_than, confirmed)


def _bulk(
    client: Client, name: str, filters: Mapping[str, str], older_than: str, confirmed: int | None
) -> Outcome:
    """The count of action ``name`` on the runs ``filters`` match and the question to confirm it; or, when
    ``confirmed`` is that count still, the action done and its summary.

    Raises:
        ActionError: an unknown action; a search (``q``) given; no filter (a run action); no duration (a
            thread delete).
        ConfigError: a malformed duration or status. ScheduleNotFoundError: an unknown schedule.
        GraphqError: the client's refusals (DisabledError: the kill switch is off, for a resume).
    """
    action = ACTIONS.get(name)
    if action is None:
        raise ActionError(f"action: {name!r} is not a bulk action (one of {', '.join(ACTIONS)})")
    if filters.get("q", "").strip():
        raise ActionError("q: a bulk action acts on the filters, not on a search: clear the search first")
    where = run_filter(client, filters)
    work = _work(client, name, where, older_than)
    counted = work(dry_run=True)
    if confirmed is None or counted.matched != confirmed:
        return _ask(action, counted, filters, name, older_than, confirmed)
    return Outcome(summary(work(), action.verb, action.noun))


def _work(client: Client, name: str, where: RunFilter, older_than: str) -> Callable[..., BulkResult]:
    """The client's bulk method for action ``name`` on ``where`` (``dry_run`` and the other keywords of
    :meth:`Client.cancel_runs` left to give).

    Raises:
        ActionError: no filter for a run action; no ``older_than`` for a thread delete.
        ConfigError: a malformed ``older_than``.
    """
    if name == "delete":
        if not older_than.strip():
            raise ActionError(
                "older than: give a duration (e.g. 30d) to delete every thread unused that long"
            )
        seconds = parse_duration(older_than, "older than", "a thread used just now is not old")
        return lambda **kw: client.delete_threads(seconds, where, **kw)
    if where == RunFilter():
        raise ActionError(f"give {needs_filter(ACTIONS[name].infinitive, _FIELDS)}")
    if name == "resume":
        return lambda **kw: client.resume_runs(where, **kw)
    return lambda **kw: client.cancel_runs(where, interrupt=name == "interrupt", **kw)


def _ask(
    action: BulkAction,
    counted: BulkResult,
    filters: Mapping[str, str],
    name: str,
    older_than: str,
    confirmed: int | None,
) -> Outcome:
    """A dry run's answer: ``3 runs match: 2 to cancel, 1 skipped: already ended; cancel them?``, the first
    ids, and the Confirm button carrying the count and the filters it counted (``the count changed`` first,
    when it is not the one confirmed)."""
    what = count_of(counted.matched, action.noun)
    if action.noun == "thread":
        what += f" unused for {older_than.strip()}"
    text = f"{what} match"
    if confirmed is not None:
        text = f"the count changed since you counted {confirmed}: {text} now"
    if counted.matched > len(counted.sample):
        text += f" (the first {len(counted.sample)} below)"
    if counted.matched == 0:
        return Outcome(f"{text}: nothing to {action.infinitive}")
    fields = [(k, filters[k]) for k in _FIELDS if filters.get(k)]
    fields += [("action", name), ("older_than", older_than), ("confirmed", str(counted.matched))]
    base = "/threads/" if action.noun == "thread" else "/runs/"
    return Outcome(
        f"{text}: {would_do(counted, action.infinitive)}; {action.question}?",
        items=tuple((item, base + quote_id(item)) for item in counted.sample),
        confirm=Confirm(
            "/runs/bulk",
            tuple(fields),
            f"Confirm: {action.infinitive} {count_of(counted.matched, action.noun)}",
        ),
    )
