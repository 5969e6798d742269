"""``graphq runs list`` and ``graphq runs show``: run records."""

from __future__ import annotations

from typing import Any

import click

from cli.context import AppContext
from cli.output import output_option, print_json, print_table, short, when
from graphcore.runs import RunRecord

__all__ = ["record_json", "runs"]


def record_json(record: RunRecord) -> dict[str, Any]:
    """A run record as a JSON-ready dict (``status`` as its string value)."""
    return record.model_dump(mode="python") | {"status": record.status.value}


@click.group()
def runs() -> None:
    """Inspect runs: list the newest, show one."""


@runs.command("list", short_help="List the newest runs.")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=20, show_default=True, metavar="N",
              help="How many runs, newest first.")
@output_option
@click.pass_obj
def list_runs(app: AppContext, limit: int, output: str) -> None:
    """List the newest runs (id, workflow, status, step, thread, tenant, created)."""
    records = app.reader().list_runs(limit)
    if output == "json":
        print_json([record_json(r) for r in records])
        return
    rows = [(r.id, r.workflow, r.status.value, r.step, r.thread_id, r.tenant, when(r.created_at))
            for r in records]
    print_table(("run", "workflow", "status", "steps", "thread", "tenant", "created (UTC)"), rows,
                no_wrap=("run", "created (UTC)"))


def _summary(result: Any) -> list[tuple[str, str]]:
    if not isinstance(result, dict):
        return [("result", short(result, 100))]
    return [(f"result.{key}", short(value, 100)) for key, value in result.items()]


def _fields(r: RunRecord) -> list[tuple[str, Any]]:
    fields: list[tuple[str, Any]] = [
        ("run", r.id), ("workflow", r.workflow), ("status", r.status.value), ("thread", r.thread_id),
        ("tenant", r.tenant), ("steps done", r.step), ("head", r.head), ("created", r.created_at),
        ("started", r.started_at), ("ended", r.ended_at), ("input", short(r.input, 100)),
    ]
    if r.config:
        fields.append(("config", short(r.config, 100)))
    if r.error is not None:
        fields += [("error type", r.error.type), ("error", r.error.message)]
    return fields + _summary(r.result)


@runs.command("show", short_help="Show one run, its error and result.")
@click.argument("run_id", metavar="RUN")
@output_option
@click.pass_obj
def show_run(app: AppContext, run_id: str, output: str) -> None:
    """Show one run: status, workflow, thread, tenant, step, times, error with traceback, result summary.

    --output json prints the whole record, result and error included.
    """
    record = app.reader().get_run(run_id)
    if output == "json":
        print_json(record_json(record))
        return
    print_table(("field", "value"), _fields(record), no_wrap=("field",))
    if record.error is not None and record.error.traceback:
        click.echo("\ntraceback:")
        click.echo(record.error.traceback.rstrip())
