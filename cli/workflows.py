"""``graphq workflows list | show NAME | check NAME``: the workflow catalog (R9), plus the workflows loaded
here, and the upgrade check before a deploy (:mod:`graphcore.backend.upgrade_check`).

``list`` and ``show`` read the catalog the workers publish in Redis (:mod:`graphcore.backend.catalog`), so
they need no workflow code: no ``--workflows``. Workflows this process loads (entry points,
``--workflows``) that no worker published are listed too, with their source ``local`` and the version
their code has here. Without a Redis URL the catalog is read from the local data of ``graphq run`` when
there is some.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import click

from graphcore.backend.catalog import read_catalog
from graphcore.backend.reaper import iso_ms
from graphcore.backend.upgrade_check import ActiveRun, UpgradeReport, active_runs, check_upgrade, pinned
from graphcore.engine.describe import describe, version_of
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.validate import canonical_json
from graphcore.errors import ConfigError, UnknownWorkflowError
from graphq.cli.context import AppContext
from graphq.cli.errors import EXIT_FAILURE
from graphq.cli.output import err_console, output_option, print_json, print_table, short, when
from graphq.worker.pinned import SHORT

__all__ = ["workflows"]


@dataclass
class _Version:
    version: str
    description: dict[str, Any]
    published_at: str | None
    served_by: list[str]
    local: bool
    pinned_runs: int = 0
    """Runs that have not ended and started with this version."""

    @property
    def source(self) -> str:
        """``catalog`` (published by a worker), ``local`` (only loaded here) or ``catalog+local`` (both)."""
        return _source(self.published_at is not None, self.local)


@dataclass
class _Workflow:
    name: str
    versions: list[_Version] = field(default_factory=list)

    @property
    def source(self) -> str:
        """``catalog``, ``local`` or ``catalog+local``: whether any version was published, any loaded here."""
        return _source(
            any(v.published_at is not None for v in self.versions), any(v.local for v in self.versions)
        )


def _source(published: bool, local: bool) -> str:
    if not (published or local):
        return "runs"  # only runs pinned to it name it: the catalog dropped it, and it is not loaded here
    return "catalog+local" if published and local else "catalog" if published else "local"


def _reader(app: AppContext) -> Any | None:
    """The Redis client to read; without a Redis URL, that of the local data (None when there is none)."""
    if not app.local:
        return app.kv()
    try:
        return app.kv(local=True, share=True)
    except ConfigError:
        return None


def _gather(app: AppContext, name: str | None = None) -> list[_Workflow]:
    """Published workflows merged with the local registry's, by name; each version with its pinned runs."""
    kv = _reader(app)
    found: dict[str, _Workflow] = {}
    for entry in [] if kv is None else read_catalog(kv, name):
        found[entry.name] = _Workflow(
            entry.name,
            [
                _Version(v.version, v.description, iso_ms(v.published_ms), v.served_by, False)
                for v in entry.versions
            ],
        )
    registry = app.registry
    for local in registry.names() if name is None else [n for n in registry.names() if n == name]:
        description = describe(registry.get(local), app.settings.max_node_settings_length)
        version = version_of(description)
        flow = found.setdefault(local, _Workflow(local))
        same = [v for v in flow.versions if v.version == version]
        if same:
            same[0].local = True
        else:
            flow.versions.append(_Version(version, description, None, [], True))
    counts = pinned(_active(kv, name))
    for workflow, version in counts:
        _version_of(found.setdefault(workflow, _Workflow(workflow)), version)
    for flow in found.values():
        for v in flow.versions:
            v.pinned_runs = counts[(flow.name, v.version)]
    return [found[n] for n in sorted(found)]


def _version_of(flow: _Workflow, version: str) -> _Version:
    """``flow``'s entry of ``version``, added (source ``runs``, nothing described) when neither the catalog
    nor the code here has it: runs are pinned to a version the catalog dropped."""
    for v in flow.versions:
        if v.version == version:
            return v
    unknown = {"format": 0, "name": flow.name, "channels": [], "nodes": [], "edges": []}
    flow.versions.append(_Version(version, unknown, None, [], False))
    return flow.versions[-1]


def _active(kv: Any | None, name: str | None = None) -> list[ActiveRun]:
    """The runs that have not ended (of workflow ``name`` when given); none without data to read."""
    return [] if kv is None else active_runs(kv, name)


def _version_json(v: _Version, whole: bool) -> dict[str, Any]:
    """A version as JSON: with its whole description (``show``), or its node names only (``list``)."""
    head = {
        "version": v.version,
        "published_at": v.published_at,
        "served_by": v.served_by,
        "pinned_runs": v.pinned_runs,
        "local": v.local,
    }
    if not whole:
        return {**head, "nodes": [n["name"] for n in v.description["nodes"]]}
    return {**head, **{k: v.description[k] for k in ("channels", "nodes", "edges")}}


def _workflow_json(flow: _Workflow, whole: bool) -> dict[str, Any]:
    nodes = [n["name"] for n in flow.versions[0].description["nodes"]]
    versions = [_version_json(v, whole) for v in flow.versions]
    return {"name": flow.name, "source": flow.source, "nodes": nodes, "versions": versions}


@click.group(short_help="The workflow catalog: what the workers serve.")
def workflows() -> None:
    """The workflow catalog: every workflow the workers published (name, version, nodes and their settings,
    edges, the live workers serving it), readable from any machine without the workflow's code; plus the
    workflows this process loads (entry points, --workflows) that no worker published."""


@workflows.command("list")
@output_option
@click.pass_obj
def list_workflows(app: AppContext, output: str) -> None:
    """List workflows, one row per version (newest first): name, version (its first 12 hex digits), nodes,
    how many live workers serve it, how many runs that have not ended are pinned to it (pinned runs),
    source (catalog: published by a worker; local: only loaded here, not published; catalog+local: both,
    the same version; runs: only runs pinned to it name it, the catalog dropped it as unserved for a
    week). A workflow served in two versions at once gets a note on stderr.

    \b
    -o json: [{"name", "source", "nodes": [names, newest version], "versions": [{"version": 64 hex,
    "published_at": ISO UTC | null, "served_by": [worker ids], "pinned_runs": int, "local": bool,
    "nodes": [names]}]}]"""
    flows = _gather(app)
    if output == "json":
        print_json([_workflow_json(f, whole=False) for f in flows])
        return
    rows = [
        (
            f.name,
            v.version[:SHORT],
            ", ".join(n["name"] for n in v.description["nodes"]),
            len(v.served_by),
            v.pinned_runs,
            v.source,
        )
        for f in flows
        for v in f.versions
    ]
    print_table(
        ("workflow", "version", "nodes", "served by", "pinned runs", "source"),
        rows,
        no_wrap=("workflow", "version"),
    )
    _note_versions(flows)


def _note_versions(flows: list[_Workflow]) -> None:
    """One stderr line per workflow that live workers serve in more than one version."""
    for flow in flows:
        served = [v for v in flow.versions if v.served_by]
        if len(served) > 1:
            each = ", ".join(f"{v.version[:SHORT]} by {len(v.served_by)}" for v in served)
            err_console().print(f"note: workflow {flow.name!r} is served in {len(served)} versions ({each})")


def _edge_row(edge: dict[str, Any]) -> tuple[str, str, str, str]:
    targets = edge["targets"]
    return (
        edge["kind"],
        " + ".join(edge["sources"]),
        "any node (the router decides)" if targets is None else ", ".join(targets),
        edge["router"] or "",
    )


def _print_version(v: _Version) -> None:
    served = ", ".join(v.served_by) or "no live worker"
    published = when(v.published_at) + " UTC" if v.published_at else "not published (loaded here)"
    click.echo(f"version {v.version}\n  served by: {served}\n  published: {published}")
    nodes = [
        (
            n["name"],
            short(canonical_json(n["settings"])),
            "" if n["timeout_s"] is None else n["timeout_s"],
            "" if n["retry"] is None else f"{n['retry']['max_attempts']} attempts",
            n["fn"] or f"subgraph {n['subgraph']['name']} {n['subgraph']['version'][:SHORT]}",
        )
        for n in v.description["nodes"]
    ]
    print_table(("node", "settings", "timeout (s)", "retry", "function"), nodes, no_wrap=("node",))
    print_table(("edge", "from", "to", "router"), [_edge_row(e) for e in v.description["edges"]])
    configured = [n for n in v.description["nodes"] if n["settings"]]
    if configured:
        click.echo("  settings (whole):")
    for n in configured:
        click.echo(f"    {n['name']}: {canonical_json(n['settings'])}")


@workflows.command("show")
@click.argument("name")
@output_option
@click.pass_obj
def show_workflow(app: AppContext, name: str, output: str) -> None:
    """Show workflow NAME: each version (newest first) with the live workers serving it, its nodes with
    their settings, and its edges (conditional ones with the targets their path_map allows). An unknown
    NAME exits 2.

    \b
    -o json: {"name", "source", "nodes", "versions": [{"version", "published_at", "served_by",
    "pinned_runs", "local", "channels": [{"name", "kind", "reducer"}], "nodes": [{"name", "fn", "subgraph",
    "settings", "timeout_s", "retry"}], "edges": [{"kind": edge|conditional|join|command, "sources",
    "targets", "router"}]}]}"""
    flows = _gather(app, name)
    if not flows:
        known = ", ".join(f.name for f in _gather(app)) or "none"
        raise UnknownWorkflowError(f"unknown workflow {name!r}; known workflows: {known}")
    [flow] = flows
    if output == "json":
        print_json(_workflow_json(flow, whole=True))
        return
    click.echo(f"workflow {flow.name} ({flow.source}, {len(flow.versions)} version(s))")
    for v in flow.versions:
        _print_version(v)


@workflows.command("check")
@click.argument("workflow")
@click.option(
    "--module",
    metavar="NEW.MODULE",
    default=None,
    help="The module with the new code of WORKFLOW (imported as --workflows modules are); default: the "
    "WORKFLOW loaded here (entry points, --workflows).",
)
@output_option
@click.pass_obj
def check_workflow(app: AppContext, workflow: str, module: str | None, output: str) -> None:
    """Check, before a deploy, that every thread of WORKFLOW with a run that has not ended (queued, running,
    awaiting input, stopped at a breakpoint) would go on under the new code: the nodes its next tasks and
    open requests name exist, its stored values fit the new state schema, its channels keep their
    reducers, its subgraphs are still reachable. One verdict line per thread, then a summary line. Exits 1
    when a thread would break, 0 otherwise; 2 for an unknown WORKFLOW or a module that does not import or
    has no such workflow.

    \b
    --output json: {"workflow", "version": the new code's (64 hex), "threads": [{"thread_id", "runs": [{"id",
    "status", "at_breakpoint", "version"}], "ok", "problems": [str], "notes": [str]}], "checked", "ok",
    "would_break"}"""
    graph = _new_code(app, workflow, module)
    kv = _reader(app)
    report = (
        UpgradeReport(workflow, version_of(describe(graph)), []) if kv is None else check_upgrade(kv, graph)
    )
    if output == "json":
        print_json(_report_json(report))
    else:
        for verdict in report.threads:
            click.echo(verdict.line())
        click.echo(report.summary())
    if report.broken:
        click.get_current_context().exit(EXIT_FAILURE)


def _new_code(app: AppContext, workflow: str, module: str | None) -> CompiledGraph:
    """WORKFLOW in ``module``, else the one loaded here.

    Raises:
        UnknownWorkflowError: no such workflow (in ``module``: naming the module and its workflows).
        ConfigError: ``module`` does not import.
    """
    if module is None:
        if workflow not in app.registry.names():
            known = ", ".join(app.registry.names()) or "none"
            raise UnknownWorkflowError(
                f"workflow {workflow!r} is not loaded here (loaded: {known}): pass its new code with "
                "--module NEW.module, or load it with --workflows"
            )
        return app.registry.get(workflow)
    found = app.module_registry(module)
    if workflow not in found.names():
        known = ", ".join(found.names()) or "none"
        raise UnknownWorkflowError(f"module {module!r} has no workflow {workflow!r}; its workflows: {known}")
    return found.get(workflow)


def _report_json(report: UpgradeReport) -> dict[str, Any]:
    threads = [
        {
            "thread_id": t.thread_id,
            "runs": [
                {"id": r.id, "status": r.status.value, "at_breakpoint": r.at_breakpoint, "version": r.version}
                for r in t.runs
            ],
            "ok": t.ok,
            "problems": t.problems,
            "notes": t.notes,
        }
        for t in report.threads
    ]
    checked = len(report.threads)
    return {
        "workflow": report.workflow,
        "version": report.version,
        "threads": threads,
        "checked": checked,
        "ok": checked - report.broken,
        "would_break": report.broken,
    }
