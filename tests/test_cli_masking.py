"""What the CLI prints never shows a Redis password: a run's error and traceback quoting a Redis URL, or the
configured password itself (new-user trial, issue 10: `graphq runs show` printed it)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result

from cli.main import main
from graphcore.backend.embedded import EmbeddedRedis

PASSWORD = "s3cret-pw"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    server = EmbeddedRedis(appendonly=False, extra_args=["--requirepass", PASSWORD]).start()
    try:
        yield server.url.replace("redis://", f"redis://:{PASSWORD}@")
    finally:
        server.stop()


def graphq(url: str, *args: str) -> Result:
    env = {"GRAPHQ_REDIS_URL": url, "GRAPHQ_WORKFLOWS": "tests.workflows.leaky", "GRAPHQ_DATA_DIR": None}
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def test_run_errors_and_tracebacks_are_masked(url: str) -> None:
    says = f"redis://:s3cretPW@host:6379/0 and {PASSWORD}"
    ran = graphq(url, "run", "leaky", "--input", json.dumps({"says": says}))
    assert ran.exit_code == 1
    [run_id] = re.findall(r"run ([0-9a-f]{32})", ran.stderr)[:1]
    shown = graphq(url, "runs", "show", run_id)
    as_json = graphq(url, "runs", "show", run_id, "--output", "json")
    listed = graphq(url, "runs", "list")
    masked = "kaboom redis://:***@host:6379/0 and ***"
    assert f"RuntimeError: {masked}" in shown.stdout  # the traceback
    assert masked in json.loads(as_json.stdout)["error"]["message"]
    assert masked in json.loads(as_json.stdout)["error"]["traceback"]
    for result in (ran, shown, as_json, listed):
        everything = result.stdout + result.stderr
        assert "s3cretPW" not in everything and PASSWORD not in everything, everything
