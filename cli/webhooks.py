"""``graphq webhooks``: the webhook deliveries waiting or given up, and trying a dead letter again
(:mod:`graphcore.backend.webhooks`)."""

from __future__ import annotations

import click

from graphcore.backend.reaper import iso_ms
from graphcore.backend.webhooks import Outbox
from graphq.cli.context import AppContext
from graphq.cli.errors import fail
from graphq.cli.output import output_option, print_json, print_table
from graphq.worker.logs import redact_urls

__all__ = ["webhooks"]


@click.group(short_help="Webhook deliveries: list them, retry a dead letter.")
def webhooks() -> None:
    """The webhook deliveries of runs enqueued with --webhook (see the webhooks guide)."""


@webhooks.command("list", short_help="The deliveries waiting, or given up (--dead).")
@click.option("--dead", is_flag=True, help="The dead letters: deliveries given up after their last try.")
@output_option
@click.pass_obj
def list_deliveries(app: AppContext, dead: bool, output: str) -> None:
    """List the webhook deliveries waiting to be made (with --dead: given up), earliest first: id, run,
    status, tries, last error, URL (a password in it masked), and when it is due (or was given up).

    --output json prints [{"id", "run_id", "thread_id", "workflow", "tenant", "status", "url", "attempts",
    "last_error", "created_at", "due_at" | "dead_at"}].
    """
    found = Outbox(app.kv()).listed(dead=dead)
    when = "dead_at" if dead else "due_at"
    rows = [
        {
            "id": d.id,
            "run_id": d.run_id,
            "thread_id": d.thread_id,
            "workflow": d.workflow,
            "tenant": d.tenant,
            "status": d.status,
            "url": redact_urls(d.url),
            "attempts": d.attempts,
            "last_error": d.last_error,
            "created_at": iso_ms(d.created_ms),
            when: iso_ms(at),
        }
        for d, at in found
    ]
    if output == "json":
        print_json(rows)
        return
    print_table(
        ("delivery", "run", "status", "tries", "last error", "url", "dead (UTC)" if dead else "due (UTC)"),
        [
            (r["id"], r["run_id"], r["status"], r["attempts"], r["last_error"], r["url"], r[when])
            for r in rows
        ],
        no_wrap=("delivery", "run"),
    )


@webhooks.command("retry", short_help="Make a dead letter due again.")
@click.argument("delivery")
@click.pass_obj
def retry(app: AppContext, delivery: str) -> None:
    """Make the dead letter DELIVERY (an id from `graphq webhooks list --dead`) due again now, its tries
    counted from 0. Exit 2 when there is no such dead letter."""
    if not Outbox(app.kv()).revive(delivery):
        fail(f"webhooks retry: no dead letter {delivery!r}")
    click.echo(f"webhook {delivery} is due again")
