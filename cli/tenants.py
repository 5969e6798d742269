"""``graphq tenants``: per tenant, its runs holding a slot and waiting for one, its limit and its oldest wait
(R8)."""

from __future__ import annotations

import click

from graphcore.backend.admission import tenants_report, waited
from graphcore.backend.reaper import server_ms
from graphq.cli.context import AppContext
from graphq.cli.output import output_option, print_json, print_table

__all__ = ["tenants", "waited"]


@click.command(short_help="Per tenant: runs running and queued, limit, oldest wait.")
@output_option
@click.pass_obj
def tenants(app: AppContext, output: str) -> None:
    """Show every tenant that has runs holding a slot (running: admitted, from their first step until they
    end or wait for input) or waiting for one (queued over GRAPHQ_MAX_CONCURRENT_RUNS,
    GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT or a workflow's own limit): its weight (GRAPHQ_TENANT_WEIGHTS),
    running, queued, limit (the per-tenant one, else the cluster's; "-" for none) and how long its oldest
    queued run has waited. A last line gives the cluster's totals against GRAPHQ_MAX_CONCURRENT_RUNS. The
    limits are the lower of this shell's settings and those the workers published.

    --output json prints {"limit", "per_tenant_limit", "running", "queued", "tenants": [{"tenant",
    "weight", "running", "queued", "limit", "oldest_wait_s"}]} (null = no limit, nothing waiting).
    """
    kv = app.reader().kv
    report = tenants_report(kv, app.settings, server_ms(kv))
    if output == "json":
        print_json(report)
        return
    print_table(
        ("tenant", "weight", "running", "queued", "limit", "oldest wait"),
        [
            (
                t["tenant"],
                t["weight"],
                t["running"],
                t["queued"],
                "-" if t["limit"] is None else t["limit"],
                waited(t["oldest_wait_s"]),
            )
            for t in report["tenants"]
        ],
        no_wrap=("tenant",),
    )
    limit, running, queued = report["limit"], report["running"], report["queued"]
    of = (
        "no limit (GRAPHQ_MAX_CONCURRENT_RUNS unset)"
        if limit is None
        else f"{limit} (GRAPHQ_MAX_CONCURRENT_RUNS)"
    )
    click.echo(f"cluster: {running} running of {of}, {queued} queued")
