"""``graphq workflows list``: the registered workflows and their nodes."""

from __future__ import annotations

import click

from cli.context import AppContext
from cli.output import output_option, print_json, print_table

__all__ = ["workflows"]


@click.group(short_help="Inspect the registered workflows.")
def workflows() -> None:
    """Inspect the registered workflows (entry points plus --workflows modules)."""


@workflows.command("list")
@output_option
@click.pass_obj
def list_workflows(app: AppContext, output: str) -> None:
    """List workflow names and their nodes."""
    registry = app.registry
    items = [{"name": name, "nodes": list(registry.get(name).nodes)} for name in registry.names()]
    if output == "json":
        print_json(items)
        return
    rows = [(i["name"], ", ".join(i["nodes"])) for i in items]
    print_table(("workflow", "nodes"), rows, no_wrap=("workflow",))
