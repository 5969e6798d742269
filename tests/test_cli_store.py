"""``graphq store``: namespaces, get, put, delete and search on the workers' Redis store, in-process
(click's runner: the same command as the console script), and a put and get through real subprocesses; bad
input exits 2 with one line."""

from __future__ import annotations

import json

import pytest
import redis
from click.testing import Result

from graphcore.backend.redis_store import RedisStore
from graphcore.engine.inputs import TOO_DEEP
from tests.cli_helpers import invoke
from tests.workers import graphq, worker_env
from tests.workflows.memory import embed

DEEP_OBJECT = '{"a": ' * 1000 + "1" + "}" * 1000


@pytest.fixture
def env(redis_url: str) -> dict[str, str]:
    return worker_env(redis_url, "tests.workflows.memory")


def store(*args: str, env: dict[str, str]) -> Result:
    """``graphq store ARGS`` in-process, on ``env``'s Redis and workflows."""
    return invoke(env["GRAPHQ_WORKFLOWS"], env["GRAPHQ_REDIS_URL"], "store", *args)


def ok(*args: str, env: dict[str, str]) -> str:
    done = store(*args, env=env)
    assert done.exit_code == 0, done.stderr
    return done.stdout


def test_a_put_and_a_get_through_graphq_subprocesses(env: dict[str, str]) -> None:
    put = graphq("store", "put", "users.alice", "prefs", "--value", '{"food": "pizza"}', env=env)
    assert (put.returncode, put.stdout, put.stderr) == (0, "put users.alice prefs\n", "")
    got = graphq("store", "get", "users.alice", "prefs", env=env)
    assert (got.returncode, json.loads(got.stdout), got.stderr) == (0, {"food": "pizza"}, "")
    bad = graphq("store", "get", "users..alice", "k", env=env)
    assert (bad.returncode, bad.stdout, bad.stderr) == (
        2,
        "",
        "error: NAMESPACE: 'users..alice' has an empty label (write labels joined by '.', e.g. "
        "users.alice)\n",
    )


def test_put_get_search_namespaces_delete(env: dict[str, str], redis_client: redis.Redis) -> None:
    assert ok("put", "users.alice", "prefs", "--value", '{"food": "pizza", "n": 3}', env=env) == (
        "put users.alice prefs\n"
    )
    assert ok("put", '["users", "bob"]', "prefs", "--value", '{"food": "soup", "n": 5}', env=env)
    ok("put", "docs", "d1", "--value", '{"t": 1}', "--ttl", "30", env=env)
    item = RedisStore(redis_client).get(("users", "alice"), "prefs")  # what the workers' nodes read
    assert item is not None and item.value == {"food": "pizza", "n": 3}
    shown = json.loads(ok("get", "users.alice", "prefs", "-o", "json", env=env))
    assert (shown["namespace"], shown["key"], shown["value"]) == (["users", "alice"], "prefs", item.value)
    assert json.loads(ok("get", "users.alice", "prefs", env=env)) == {"food": "pizza", "n": 3}
    assert ok("namespaces", env=env) == "docs\nusers.alice\nusers.bob\n"
    assert ok("namespaces", "--prefix", "users", "--max-depth", "1", env=env) == "users\n"
    assert json.loads(ok("namespaces", "--prefix", "users", "-o", "json", env=env)) == [
        ["users", "alice"],
        ["users", "bob"],
    ]
    found = json.loads(ok("search", "users", "--filter", '{"n": {"$gt": 4}}', "-o", "json", env=env))
    assert [(f["namespace"], f["key"], f["value"], f["score"]) for f in found] == [
        (["users", "bob"], "prefs", {"food": "soup", "n": 5}, None)
    ]
    everything = json.loads(ok("search", "-o", "json", "--limit", "2", env=env))
    assert [f["key"] for f in everything] == ["d1", "prefs"]  # newest first
    assert "users.alice" in ok("search", "users.alice", env=env)  # the table
    assert ok("delete", "users.alice", "prefs", env=env) == "deleted users.alice prefs\n"
    assert RedisStore(redis_client).get(("users", "alice"), "prefs") is None
    assert ok("namespaces", env=env) == "docs\nusers.bob\n"


def test_search_by_query_with_a_workflows_index(env: dict[str, str], redis_client: redis.Redis) -> None:
    store = RedisStore(redis_client, index={"embed": embed, "dims": 4, "fields": ["text"]})
    store.put(("memories", "ann"), "note", {"text": "my cat"})
    store.put(("memories", "bob"), "note", {"text": "dog food"})
    found = json.loads(
        ok("search", "memories", "--query", "cat", "--workflow", "recall", "-o", "json", env=env)
    )
    assert [(f["namespace"], f["score"]) for f in found] == [
        (["memories", "ann"], 1.0),
        (["memories", "bob"], 0.5),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["get", "users..alice", "k"], "error: NAMESPACE: 'users..alice' has an empty label"),
        (["get", "users.alice", "nothing"], "error: no item 'nothing' in namespace 'users.alice'"),
        (["get", "[1, 2]", "k"], "error: NAMESPACE: a JSON list of strings, got [1, 2]"),
        (["put", "a", "k", "--value", "[1]"], "error: --value: a JSON object, got [1]"),
        (["put", "a", "k", "--value", "{x"], "error: --value: not JSON: "),
        (["put", '["a.b"]', "k", "--value", "{}"], "error: namespace: label 'a.b' of ('a.b',) must be"),
        (
            ["put", "langgraph", "k", "--value", "{}"],
            'error: namespace: the root label cannot be "langgraph"',
        ),
        (["put", "a", "k", "--value", "{}", "--ttl", "0"], "Invalid value for '--ttl'"),
        (["delete", "a", "k"], "error: no item 'k' in namespace 'a'"),
        (["search", "a", "--filter", '{"n": {"$in": [1]}}'], "error: filter.n: unknown operator '$in'"),
        (["search", "a", "--query", "cat"], "error: --query needs --workflow NAME"),
        (
            ["search", "a", "--query", "cat", "--workflow", "lookup"],
            "error: --workflow lookup: its graph was",
        ),
        (["namespaces", "--max-depth", "0"], "Invalid value for '--max-depth'"),
        # deep JSON was a RecursionError traceback (exit 1); huge numbers were taken or an OverflowError
        (["put", "a", "k", "--value", DEEP_OBJECT], f"error: --value: {TOO_DEEP}"),
        (["search", "a", "--filter", DEEP_OBJECT], f"error: --filter: {TOO_DEEP}"),
        (["get", "[" * 1000 + "]" * 1000, "k"], f"error: NAMESPACE: {TOO_DEEP}"),
        (["put", "a", "k", "--value", '{"x": NaN}'], "error: --value: NaN is not a JSON number"),
        (
            ["put", "a", "k", "--value", "{}", "--ttl", "1e12"],
            "Invalid value for '--ttl': 1000000000000.0 is not in the range 0<x<=5256000",
        ),
        (["put", "a", "k", "--value", "{}", "--ttl", "nan"], "Invalid value for '--ttl': nan is not in the"),
        (
            ["search", "a", "--limit", "99999999999999999999"],
            "Invalid value for '--limit': 99999999999999999999 is not in the range 1<=x<=100000",
        ),
        (["search", "a", "--offset", "99999999999999999999"], "Invalid value for '--offset'"),
        (["namespaces", "--max-depth", "99999999999999999999"], "Invalid value for '--max-depth'"),
        (["namespaces", "--limit", "0"], "Invalid value for '--limit': 0 is not in the range 1<=x<=100000"),
    ],
)
def test_bad_input_exits_2_with_one_line(env: dict[str, str], args: list[str], message: str) -> None:
    done = store(*args, env=env)
    assert done.exit_code == 2, (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert message in done.stderr
    assert done.stdout == ""
