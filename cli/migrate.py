"""``graphq runs migrate``: move the runs pinned to one version of a workflow to another, after the upgrade
check (:mod:`graphcore.backend.upgrade_check`) passes on their threads; the move itself is
:mod:`graphq.worker.migrate`."""

from __future__ import annotations

from collections.abc import Iterable

import click

from graphcore.backend.catalog import read_catalog
from graphcore.backend.upgrade_check import ActiveRun, active_runs, check_upgrade
from graphq.cli.context import AppContext
from graphq.cli.errors import EXIT_FAILURE, fail
from graphq.cli.output import err_console
from graphq.worker.migrate import migrate
from graphq.worker.pinned import SHORT, version_queues

__all__ = ["migrate_runs"]


@click.command("migrate", short_help="Move the runs pinned to one version of a workflow to another.")
@click.option("--workflow", required=True, metavar="NAME", help="The workflow whose runs move.")
@click.option(
    "--from",
    "old",
    required=True,
    metavar="VERSION",
    help="The version the runs are pinned to (its first hex digits are enough when only one matches).",
)
@click.option(
    "--to",
    "new",
    required=True,
    metavar="VERSION",
    help="The version they move to: one the catalog lists, or the code loaded here (--workflows).",
)
@click.option(
    "--run",
    "only",
    multiple=True,
    metavar="RUN",
    help="Only this run (repeat for several); default: every run pinned to --from.",
)
@click.option("--dry-run", is_flag=True, help="Check and list the runs that would move; move nothing.")
@click.option("--force", is_flag=True, help="Move without the upgrade check (a warning says so).")
@click.pass_obj
def migrate_runs(
    app: AppContext, workflow: str, old: str, new: str, only: tuple[str, ...], dry_run: bool, force: bool
) -> None:
    """Move every run of --workflow that has not ended and is pinned to version --from (see `graphq runs
    show`), or only the --run ones, to version --to, and its queued step to that version's queue; the move
    is recorded on each run. First, the upgrade check (`graphq workflows check`) runs on their threads
    against the code loaded here, which must be version --to: when a thread would break, nothing moves, the
    threads are named, and the command exits 1. A run with a step running, or one that committed a step
    since the check, is left where it is, named (exit 1: run the command again). --force moves without the
    check. Exit 2 for an unknown workflow or run, or a version that matches none or several.
    """
    kv = app.kv()
    runs = [r for r in active_runs(kv, workflow) if r.pinned and r.version is not None]
    catalog = {v.version for entry in read_catalog(kv, workflow) for v in entry.versions}
    loaded = app.registry.version(workflow) if workflow in app.registry.names() else None
    if not (runs or catalog or loaded):
        fail(f"--workflow {workflow!r}: no such workflow (none is published, loaded here, or has runs)")
    old_v = _resolve("--from", old, {r.version or "" for r in runs} | catalog, workflow)
    new_v = _resolve("--to", new, catalog | ({loaded} if loaded else set()), workflow)
    if old_v == new_v:
        fail(f"--from and --to name the same version {old_v[:SHORT]} of {workflow}")
    moving = _chosen([r for r in runs if r.version == old_v], only, old_v)
    verb = "would move" if dry_run else "moving"
    if force:
        err_console().print(f"warning: --force: {verb} {len(moving)} run(s) without the upgrade check")
    else:
        _check(app, moving, workflow, new_v, loaded)
    if dry_run:
        _list(moving, "would move")
        click.echo(f"{len(moving)} run(s) of {workflow} would move from {old_v[:SHORT]} to {new_v[:SHORT]}")
        return
    moved, left = migrate(kv, moving, old_v, new_v, checked=not force)
    _list([r for r in moving if r.id in moved], "moved")
    for run in (r for r in moving if r.id in left):
        click.echo(f"left run {run.id} (thread {run.thread_id}): {left[run.id]}")
    click.echo(f"{len(moved)} run(s) of {workflow} moved from {old_v[:SHORT]} to {new_v[:SHORT]}")
    if not any(q.served for q in version_queues(kv, app.settings.queue) if q.version == new_v):
        err_console().print(f"note: no live worker serves version {new_v[:SHORT]} yet; the runs wait for one")
    if left:
        fail(f"{len(left)} run(s) left where they were (see above): run the command again", EXIT_FAILURE)


def _chosen(runs: list[ActiveRun], only: tuple[str, ...], old: str) -> list[ActiveRun]:
    """``runs``, or only those ``only`` names (``--run``).

    Raises:
        CliError: a --run names no run that has not ended and is pinned to ``old`` (exit 2).
    """
    if not only:
        return runs
    known = {r.id for r in runs}
    unknown = [r for r in only if r not in known]
    if unknown:
        fail(f"--run {unknown[0]}: no run pinned to version {old[:SHORT]} that has not ended has this id")
    return [r for r in runs if r.id in only]


def _resolve(option: str, given: str, known: Iterable[str], workflow: str) -> str:
    """The one version of ``known`` that ``given`` (a version or its first hex digits) names.

    Raises:
        CliError: none or several match (exit 2), naming the option and the versions known.
    """
    versions = sorted(v for v in known if v)
    found = [v for v in versions if v.startswith(given.lower())] if given else []
    if len(found) == 1:
        return found[0]
    listed = ", ".join(v[:SHORT] for v in versions) or "none"
    what = "matches several versions" if found else "matches no version"
    fail(f"{option} {given!r} {what} of {workflow} (known: {listed})")


def _check(app: AppContext, runs: list[ActiveRun], workflow: str, new: str, loaded: str | None) -> None:
    """The upgrade check of ``runs``' threads against the code loaded here, which must be version ``new``.

    Raises:
        CliError: the code loaded here is not version ``new`` (exit 2); a thread would break (exit 1,
            after its verdict lines).
    """
    if loaded != new:
        here = "does not have it" if loaded is None else f"is version {loaded[:SHORT]}"
        fail(
            f"--to {new[:SHORT]}: the check needs that version's code loaded here (--workflows); the code "
            f"here {here} (--force moves without the check)"
        )
    report = check_upgrade(app.kv(), app.registry.get(workflow), runs)
    broken = [t for t in report.threads if not t.ok]
    for verdict in broken:
        click.echo(verdict.line())
    if broken:
        threads = ", ".join(t.thread_id for t in broken)
        fail(
            f"refused: {len(broken)} thread(s) would break on version {new[:SHORT]}: {threads} (nothing "
            "moved; --force moves them anyway)",
            EXIT_FAILURE,
        )


def _list(runs: list[ActiveRun], verb: str) -> None:
    for run in runs:
        click.echo(f"{verb} run {run.id} (thread {run.thread_id}, {run.status.value})")
