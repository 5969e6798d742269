"""``graphq disable | enable | enabled``: the cluster-wide kill switch (R6)."""

from __future__ import annotations

import click

from graphcore.backend import switch
from graphq.cli.context import AppContext
from graphq.cli.output import output_option, print_json

__all__ = ["disable", "enable", "enabled"]


@click.command(short_help="Turn graphq off cluster-wide: refuse new runs, take no step (kill switch).")
@click.option("--reason", default="", metavar="TEXT", help="Why; shown by `graphq enabled` and in refusals.")
@click.pass_obj
def disable(app: AppContext, reason: str) -> None:
    """Turn the kill switch off for every worker and client on this Redis, until `graphq enable`.

    New runs are refused (enqueue, run, resume, a second answer: exit 2, nothing written); `graphq
    workflows list` and every read still work. Queued step jobs stay queued; a step that is running
    finishes and commits, and its next step's job waits in the queue. Workers wait, heartbeat and all,
    and go on within a second of `graphq enable`. Run timeouts keep counting meanwhile.
    """
    state = switch.disable(app.kv(local=True, share=True), reason)
    click.echo(
        f"graphq disabled {state.describe().removeprefix('off ')}: new runs are refused, workers "
        "take no step; `graphq enable` turns it on again"
    )


@click.command(short_help="Turn graphq on again after `graphq disable`.")
@click.pass_obj
def enable(app: AppContext) -> None:
    """Turn the kill switch on again: workers take steps again within a second, new runs are accepted."""
    was_off = switch.enable(app.kv(local=True, share=True))
    click.echo("graphq enabled" if was_off else "graphq was enabled already; nothing changed")


@click.command(short_help="Show whether graphq is on or off (the kill switch), and why.")
@output_option
@click.pass_obj
def enabled(app: AppContext, output: str) -> None:
    """Print the kill switch: `on`, or `off since TIME (reason: TEXT)`, and whether this process has
    GRAPHQ_ENABLED=false (which turns only its own clients and workers off). --output json: enabled,
    reason, since, process_enabled."""
    state = switch.read(app.kv(local=True, share=True))
    local = app.settings.enabled
    if output == "json":
        print_json(
            {"enabled": state.on, "reason": state.reason, "since": state.since, "process_enabled": local}
        )
        return
    note = "" if local else "; this process: GRAPHQ_ENABLED=false (its clients and workers are off)"
    click.echo(f"{state.describe()}{note}")
