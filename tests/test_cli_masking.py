"""What the CLI prints never shows the password of a URL: a run's error and traceback quoting a Redis URL
(found by a new-user trial: `graphq runs show` printed it). Nothing else is changed: the configured password
is not masked as a bare string, which changed data (second trial: password ``default`` made every tenant
``***``, password ``s`` made ``schedules show -o json`` invalid JSON)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
import redis
from click.testing import CliRunner, Result

from graphcore.backend.embedded import EmbeddedRedis
from graphq.cli.main import main

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
    masked = f"kaboom redis://:***@host:6379/0 and {PASSWORD}"  # the URL's password, not a bare string
    assert f"RuntimeError: {masked}" in shown.stdout  # the traceback
    assert masked in json.loads(as_json.stdout)["error"]["message"]
    assert masked in json.loads(as_json.stdout)["error"]["traceback"]
    for result in (ran, shown, as_json, listed):
        everything = result.stdout + result.stderr
        assert "s3cretPW" not in everything and f":{PASSWORD}@" not in everything, everything


LONG = "a-long-password-0123"


def as_user(url: str, user: str, password: str) -> str:
    """``url`` (``redis://:PASSWORD@host...``) as the ACL user ``user`` with ``password``."""
    return url.replace(f"redis://:{PASSWORD}@", f"redis://{user}:{password}@")


@pytest.fixture(scope="module")
def users(url: str) -> Iterator[None]:
    """ACL users bob (password ``default``), sam (``s``) and lee (a long one) on the same data."""
    kv = redis.Redis.from_url(url)
    for user, password in (("bob", "default"), ("sam", "s"), ("lee", LONG)):
        kv.execute_command("ACL", "SETUSER", user, "on", f">{password}", "~*", "&*", "+@all")
    yield
    kv.close()


def test_a_common_word_password_leaves_the_data_alone(url: str, users: None) -> None:
    bob = as_user(url, "bob", "default")
    ran = graphq(bob, "run", "leaky", "--input", json.dumps({"says": "default"}))
    [run_id] = re.findall(r"run ([0-9a-f]{32})", ran.stderr)[:1]
    listed = graphq(bob, "runs", "list")
    as_json = graphq(bob, "runs", "list", "-o", "json")
    shown = graphq(bob, "runs", "show", run_id, "-o", "json")
    assert (listed.exit_code, as_json.exit_code, shown.exit_code) == (0, 0, 0)
    assert "***" not in shown.stdout  # (the run of the first test quotes a masked URL)
    assert {r["tenant"] for r in json.loads(as_json.stdout)} == {"default"}
    assert json.loads(shown.stdout)["error"]["message"] == "node 'leak' raised RuntimeError: kaboom default"
    assert " default " in listed.stdout
    assert as_json.stdout == graphq(as_user(url, "lee", LONG), "runs", "list", "-o", "json").stdout


def test_a_one_letter_password_leaves_the_data_alone(url: str, users: None) -> None:
    sam = as_user(url, "sam", "s")
    cron = ["--workflow", "leaky", "--cron", "0 3 * * *", "--tz", "UTC"]
    assert graphq(sam, "schedules", "add", "s1", *cron).exit_code == 0
    assert graphq(sam, "schedules", "pause", "s1").stdout == "schedule s1: paused\n"
    listed = graphq(sam, "schedules", "list")
    shown = graphq(sam, "schedules", "show", "s1", "-o", "json")
    assert listed.stdout.split()[:3] == ["schedule", "┃", "workflow"] and "***" not in listed.stdout
    data = json.loads(shown.stdout)  # valid JSON
    assert (data["name"], data["workflow"], data["paused"]) == ("s1", "leaky", True)
    assert shown.stdout == graphq(as_user(url, "lee", LONG), "schedules", "show", "s1", "-o", "json").stdout


def test_a_refused_password_is_said_in_plain_words(url: str, users: None) -> None:
    health = graphq(as_user(url, "bob", "wrong"), "health")
    assert health.exit_code == 1
    assert "(authentication failed: a wrong password, or a user it does not know)" in health.stderr
    assert "redis://bob:***@" in health.stderr
