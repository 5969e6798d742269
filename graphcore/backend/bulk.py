"""Bulk operations: one action (cancel, resume, delete) on every run or thread a filter matches, a page at
a time (``Client.cancel_runs``, ``Client.resume_runs``, ``Client.delete_threads``).

What matches is read first (pages of the run index, :meth:`graphcore.backend.runs.RunStore.matching`), then
the action works through it a page at a time: a fixed number of round trips per page however many it
holds, never one per run. Each page applies the rules of the one-run command (the one-run command is the
action on a page of one), so a repeated call finds nothing more to do. Between pages, ``stop()`` ends the
work with what was done so far. A dry run reads the same pages and applies the same rules, changing
nothing: its counts say what the action would do now.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from graphcore.backend.connection import retry_transient

__all__ = [
    "DONE",
    "REQUESTED",
    "SAMPLE",
    "BulkResult",
    "count_of",
    "in_pages",
    "needs_filter",
    "summary",
    "would_do",
]

DONE = "done"
"""The outcome of an item the action applied to."""
REQUESTED = "requested"
"""The outcome of a running run whose cancel was requested (it stops before its next super-step)."""
SAMPLE = 10
"""How many of the matched ids a result names (:attr:`BulkResult.sample`)."""

T = TypeVar("T")


@dataclass
class BulkResult:
    """What a bulk operation found and did.

    Attributes:
        matched: runs (or threads) the filter matched.
        done: those the action applied to (canceled, resumed, deleted).
        requested: running runs whose cancel was requested (a cancel only; they stop before their next
            super-step).
        skipped: the others, counted by reason (``{"already ended": 4}``).
        sample: the first matched ids (at most :data:`SAMPLE`), newest first.
        dry_run: nothing was changed: ``done``, ``requested`` and ``skipped`` count what the action would
            do as things are now (the same rules, applied without acting).
        stopped: ``stop()`` ended the work before its last page; the counts are those so far.
    """

    matched: int = 0
    done: int = 0
    requested: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    sample: list[str] = field(default_factory=list)
    dry_run: bool = False
    stopped: bool = False

    @property
    def handled(self) -> int:
        """Items worked through so far (done, requested or skipped)."""
        return self.done + self.requested + sum(self.skipped.values())


def in_pages(
    items: Sequence[T],
    ids: Sequence[str],
    act: Callable[[Sequence[T]], Sequence[str]],
    *,
    batch: int,
    dry_run: bool,
    stop: Callable[[], bool] | None,
    progress: Callable[[BulkResult], None] | None,
) -> BulkResult:
    """Apply ``act`` to ``items`` (whose ids are ``ids``) ``batch`` at a time, counting its outcomes
    (:data:`DONE`, :data:`REQUESTED`, or a reason to skip); a page that meets a transient Redis error is
    tried again (its action is idempotent). ``stop()`` is asked before each page; ``progress`` gets the
    result after each page. With ``dry_run``, ``act`` is the action's rules without the action (it says what
    it would do) and the result says so."""
    result = BulkResult(matched=len(items), sample=list(ids[:SAMPLE]), dry_run=dry_run)
    for start in range(0, len(items), batch):
        if stop is not None and stop():
            result.stopped = True
            break
        for outcome in retry_transient(act, items[start : start + batch]):
            if outcome == DONE:
                result.done += 1
            elif outcome == REQUESTED:
                result.requested += 1
            else:
                result.skipped[outcome] = result.skipped.get(outcome, 0) + 1
        if progress is not None:
            progress(result)
    return result


def count_of(n: int, noun: str) -> str:
    """``1 run``, ``2 runs``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def summary(result: BulkResult, verb: str, noun: str) -> str:
    """One line: ``canceled 996 runs; 4 skipped: already ended`` (``verb`` in the past tense, ``noun`` what
    the action acts on: ``run``, ``thread``)."""
    line = f"{verb} {count_of(result.done, noun)}"
    if result.requested:
        line += f", cancel requested for {count_of(result.requested, 'running run')}"
    return line + _skipped(result, "; ")


def would_do(result: BulkResult, infinitive: str) -> str:
    """What a dry run found the action would do: ``4 to delete, 11 skipped: its run awaits input``
    (``infinitive``: ``cancel``, ``resume``, ``delete``)."""
    line = f"{result.done} to {infinitive}"
    if result.requested:
        line += f", {count_of(result.requested, 'running run')} to ask to stop"
    return line + _skipped(result, ", ")


def _skipped(result: BulkResult, before: str) -> str:
    """``before`` and the skipped items by reason (``11 skipped: its run awaits input``, ``5 skipped: 3 a,
    2 b``, most first); nothing when none was skipped."""
    skipped = sum(result.skipped.values())
    if len(result.skipped) == 1:
        return f"{before}{skipped} skipped: {next(iter(result.skipped))}"
    if not skipped:
        return ""
    ranked = sorted(result.skipped.items(), key=lambda item: -item[1])
    return f"{before}{skipped} skipped: " + ", ".join(f"{n} {why}" for why, n in ranked)


def needs_filter(infinitive: str, filters: Sequence[str]) -> str:
    """The refusal of a bulk action without a filter, from where it is given: ``at least one of --status,
    --tenant to cancel every run they match``."""
    return f"at least one of {', '.join(filters)} to {infinitive} every run they match"
