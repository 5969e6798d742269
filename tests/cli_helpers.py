"""Helpers shared by the CLI tests: run ``graphq`` in-process and check its exit code and error line."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from click.testing import CliRunner, Result

from graphq.cli.main import main


@contextmanager
def process_state_restored() -> Iterator[None]:
    """Restore what a command or an in-process worker changes process-wide: signal handlers (RQ) and the
    retry logger's level."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    level = logging.getLogger("graphcore.backend.connection").level
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        logging.getLogger("graphcore.backend.connection").setLevel(level)


def invoke(workflows: str, url: str, *args: str) -> Result:
    """``graphq --redis-url URL --workflows WORKFLOWS ARGS`` in-process, with GRAPHQ_* variables cleared."""
    clean = {"GRAPHQ_REDIS_URL": None, "GRAPHQ_WORKFLOWS": None, "GRAPHQ_DATA_DIR": None}
    return CliRunner().invoke(
        main, ["--redis-url", url, "--workflows", workflows, *args], env=clean, catch_exceptions=False
    )


def run_in_process(*args: str, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """``graphq ARGS`` in-process, as :func:`tests.workers.graphq` runs it as a process: its exit code,
    stdout and stderr, with the ``GRAPHQ_*`` settings of ``env`` (this process's others cleared)."""
    settings = {k: env.get(k) for k in {*os.environ, *env} if k.startswith("GRAPHQ_")}
    with process_state_restored():
        result = CliRunner().invoke(main, list(args), env=settings, catch_exceptions=False)
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, result.stderr)


def ok(result: Result, code: int = 0) -> Result:
    """Assert the exit code (showing stderr when it differs) and that nothing crashed."""
    assert result.exit_code == code, result.stderr
    assert "Traceback" not in result.stderr
    return result


def error_line(result: Result) -> str:
    """The one ``error:`` line on stderr (exactly one, no traceback)."""
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]
