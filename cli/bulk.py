"""What the commands that act on many runs or threads share (``runs cancel``, ``runs resume`` and
``threads delete`` with filters; ``runs list``'s filters): the filter options, the count, the confirmation,
the progress, Ctrl-C between pages and the one-line summary.

Ctrl-C (SIGINT, or SIGTERM) during the work ends it before the next page (the page in flight finishes):
the command prints what was done and exits 130; running it again goes on with what is left.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, TypeVar

import click

from graphcore.backend.bulk import BulkResult, count_of, summary, would_do
from graphcore.backend.client import Client
from graphcore.backend.runs import RunFilter, RunStatus
from graphq.cli.errors import EXIT_FAILURE, EXIT_INTERRUPTED, fail
from graphq.cli.inputs import check_ids
from graphq.cli.output import print_json
from graphq.scheduler.schedules import ScheduleStore

__all__ = ["FILTERS", "bulk_options", "filter_options", "perform", "run_filter"]

_F = TypeVar("_F", bound=Callable[..., Any])

FILTERS = ("--status", "--workflow", "--tenant", "--schedule")


def filter_options(fn: _F) -> _F:
    """Decorator: ``runs list``'s filters (``--tenant``, ``--status``, ``--workflow``, ``--schedule``)."""
    options = [
        click.option(
            "--tenant", metavar="TENANT", help="Only the runs of TENANT (runs given none are 'default')."
        ),
        click.option(
            "--status",
            type=click.Choice([s.value for s in RunStatus]),
            help="Only the runs with this status.",
        ),
        click.option("--workflow", metavar="NAME", help="Only the runs of workflow NAME."),
        click.option(
            "--schedule",
            metavar="NAME",
            help="Only the runs schedule NAME started since it was added (not those of a schedule of that "
            "name removed before); exit 2 when no schedule has that name.",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def bulk_options(fn: _F) -> _F:
    """Decorator: ``--dry-run`` and ``--yes`` of a command that acts on every run (or thread) it matches."""
    fn = click.option("--yes", "-y", is_flag=True, help="Do not ask to confirm (needed without a terminal).")(
        fn
    )
    return click.option(
        "--dry-run",
        is_flag=True,
        help="Change nothing: print how many match, how many it would act on and skip (by reason), and the "
        "first ids.",
    )(fn)


def run_filter(
    reader: Client, tenant: str | None, status: str | None, workflow: str | None, schedule: str | None
) -> RunFilter:
    """The :class:`RunFilter` of the filter options (a malformed ``--tenant``, or an unknown ``--schedule``:
    exit 2)."""
    check_ids(None, tenant)  # a tenant no run can have is a typo, not an empty list
    since = None if schedule is None else ScheduleStore(reader.kv).created_at(schedule)
    return RunFilter(tenant, None if status is None else RunStatus(status), workflow, schedule, since)


class _Interrupted:
    """Ctrl-C (SIGINT, SIGTERM) while the work goes on: noted, asked by :meth:`stop` between pages."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def stop(self) -> bool:
        return self.event.is_set()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        def note(signum: int, frame: FrameType | None) -> None:
            if self.event.is_set():
                raise KeyboardInterrupt  # a second one: at once
            self.event.set()

        saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        for s in saved:
            signal.signal(s, note)
        try:
            yield
        finally:
            for s, handler in saved.items():
                signal.signal(s, handler)


def perform(
    work: Callable[..., BulkResult],
    *,
    verb: str,
    infinitive: str,
    noun: str,
    dry_run: bool,
    yes: bool,
    output: str,
) -> None:
    """Count what ``work`` (a bulk client method: ``dry_run``, ``stop``, ``progress`` keywords) matches,
    then (unless ``dry_run``) confirm, do it with progress on stderr and print the summary: ``verb`` (past
    tense) and ``infinitive`` name the action, ``noun`` what it acts on. Exit 2 without a terminal and
    without ``yes``; 1 when not confirmed; 130 at Ctrl-C (what was done is printed)."""
    counted = work(dry_run=True)
    if dry_run:
        _print_count(counted, infinitive, noun, output)
        return
    if counted.matched == 0:  # nothing to confirm
        _print_done(dataclasses.replace(counted, dry_run=False, sample=[]), verb, noun, output)
        return
    if not yes:
        if not sys.stdin.isatty():
            asked = f"{infinitive} {count_of(counted.matched, noun)}"
            fail(f"{asked}: add --yes to confirm (no terminal to ask on)")
        click.echo(f"{count_of(counted.matched, noun)} match", err=True)
        if not click.confirm(f"{infinitive} {count_of(counted.matched, noun)}?", err=True):
            fail("not confirmed; nothing changed", EXIT_FAILURE)

    def progress(result: BulkResult) -> None:
        click.echo(f"{result.handled} of {count_of(result.matched, noun)} looked at", err=True)

    ctrl_c = _Interrupted()
    with ctrl_c.installed():
        result = work(stop=ctrl_c.stop, progress=progress)
    _print_done(result, verb, noun, output)


def _print_done(result: BulkResult, verb: str, noun: str, output: str) -> None:
    """The summary (``-o json``: the result's fields); after Ctrl-C, exit 130 saying what is left."""
    line = summary(result, verb, noun)
    if output == "json":
        print_json(dataclasses.asdict(result))
    elif not result.stopped:
        click.echo(line)
    if result.stopped:
        left = result.matched - result.handled
        fail(
            f"interrupted: {line}; {left} of {count_of(result.matched, noun)} left as they were (run the "
            "command again to go on)",
            EXIT_INTERRUPTED,
        )


def _print_count(result: BulkResult, infinitive: str, noun: str, output: str) -> None:
    """A dry run's output: the count and what the action would do to them, then the first ids."""
    if output == "json":
        print_json(dataclasses.asdict(result))
        return
    first = f"; the first {len(result.sample)}:" if result.matched > len(result.sample) else ":"
    listed = first if result.sample else ""
    found = f"{count_of(result.matched, noun)} match: {would_do(result, infinitive)}"
    click.echo(f"{found} (dry run, nothing changed){listed}")
    for item in result.sample:
        click.echo(item)
