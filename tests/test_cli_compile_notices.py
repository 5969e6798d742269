"""A workflow module's compile notice (a node no edge reaches: graphcore.engine.validate logs a warning, as
the engine promises in process) is not printed by every ``graphq`` command that loads the module; it is
with ``--verbose``."""

from __future__ import annotations

from tests.workers import graphq, worker_env

NOTICE = "cannot be reached from START by an edge"


def test_a_command_does_not_print_a_modules_compile_notice(redis_url: str) -> None:
    env = worker_env(redis_url, "tests.workflows.unreached")
    quiet = graphq("workflows", "list", env=env)
    assert quiet.returncode == 0, quiet.stderr
    assert "unreached" in quiet.stdout
    assert NOTICE not in quiet.stderr
    verbose = graphq("--verbose", "workflows", "list", env=env)
    assert verbose.returncode == 0, verbose.stderr
    assert verbose.stderr.count(NOTICE) >= 1
