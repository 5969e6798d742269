"""``Command(graph=Command.PARENT, ...)`` on the queue: a worker subprocess runs the subgraph node's command
in the parent graph (LangGraph's value), and a root graph's fails the run with ParentCommand."""

from __future__ import annotations

from pathlib import Path

from graphcore.backend.client import Client
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from tests.workers import burst, worker_env

REGISTRY = Registry.load(["tests.workflows.parent_command"])


def test_a_worker_runs_a_subgraphs_parent_command(client: Client, redis_url: str, tmp_path: Path) -> None:
    """LangGraph gives {'log': ['in', 'from sub', 'other']} for the same program (a new-user trial's)."""
    run_id = client.enqueue("parent-command", {"log": ["in"]})
    burst(worker_env(redis_url, "tests.workflows.parent_command", tmp_path))
    run = client.get_run(run_id)
    assert (run.status, run.result) == (RunStatus.COMPLETED, {"log": ["in", "from sub", "other"]})


def test_a_root_graphs_parent_command_fails_the_run(client: Client, redis_url: str, tmp_path: Path) -> None:
    """A root graph has no parent: the run fails with ParentCommand and its message."""
    run_id = client.enqueue("root-parent-command", {"log": ["in"]})
    burst(worker_env(redis_url, "tests.workflows.parent_command", tmp_path))
    run = client.get_run(run_id)
    assert run.status == RunStatus.FAILED
    assert run.error is not None
    assert (run.error.type, run.error.message) == (
        "ParentCommand",
        "node 'a' returned Command(graph=Command.PARENT) but its graph is not a subgraph: there is no parent "
        "graph to update or go to (goto='other')",
    )
