"""The Lua scripts as sent to Redis (graphcore.backend.lua.source): fragments included, comments emptied."""

from __future__ import annotations

import re
from importlib.resources import files

import redis

from graphcore.backend.lua import script, source, stage
from graphcore.backend.runs import TERMINAL, RunStatus

SCRIPTS = sorted(
    p.name[: -len(".lua")] for p in files("graphcore.backend.lua").iterdir() if p.name.endswith(".lua")
)


def test_every_script_loads_without_its_comment_lines(redis_client: redis.Redis) -> None:
    """Every script and fragment compiles in Redis as sent, with no comment-only line left."""
    assert "admission" in SCRIPTS and "_retain" in SCRIPTS
    for name in SCRIPTS:
        text = source(name)
        assert not [line for line in text.splitlines() if line.lstrip().startswith("--")], name
        if not name.startswith("_"):
            assert len(redis_client.script_load(text)) == 40, name


def test_comment_lines_stay_as_blank_lines() -> None:
    """A script without includes keeps its line count, so Redis's error line numbers point into the file."""
    raw = files("graphcore.backend.lua").joinpath("owner_unlock.lua").read_text()
    assert "--#include" not in raw and raw.lstrip().startswith("--")
    assert source("owner_unlock").count("\n") == raw.count("\n")
    assert len(source("owner_unlock")) < len(raw)


def _raw(name: str) -> str:
    return files("graphcore.backend.lua").joinpath(f"{name}.lua").read_text()


def test_the_terminal_statuses_of_the_scripts_are_the_runs(redis_client: redis.Redis) -> None:
    """``_terminal.lua``'s ``finished`` holds for exactly graphcore.backend.runs.TERMINAL (and not for a run
    without a status: HGET's false, a missing field's nil)."""
    statuses = [s.value for s in RunStatus]
    probe = "\nlocal r = {} for i, s in ipairs(ARGV) do r[i] = finished(s) and 1 or 0 end"
    probe += "\nreturn {r, finished(false) and 1 or 0, finished(nil) and 1 or 0}"
    said, of_false, of_nil = redis_client.eval(source("_terminal") + probe, 0, *statuses)  # type: ignore[misc]
    assert dict(zip(statuses, said, strict=True)) == {s.value: int(s in TERMINAL) for s in RunStatus}
    assert (of_false, of_nil) == (0, 0)


def test_the_fence_and_the_terminal_statuses_are_written_once() -> None:
    """Every script that checks a step's lease token or a run's terminal statuses takes in the fragment
    (``--#include fence``, ``--#include terminal``) instead of its own copy."""
    token_check = re.compile(r"redis\.call\('GET', KEYS\[\d\]\) [~=]= (ARGV\[\d\]|token)")
    listed = re.compile(r"'completed' or \w+ == 'failed'")
    fenced = [n for n in SCRIPTS if re.search("^--#include fence$", _raw(n), re.MULTILINE)]
    checks = [n for n in SCRIPTS if re.search("^--#include terminal$", _raw(n), re.MULTILINE)]
    # owner_lock and owner_unlock compare a lock's owner token: no lease, no fence
    assert [n for n in SCRIPTS if token_check.search(_raw(n))] == ["owner_lock", "owner_unlock"]
    assert [n for n in SCRIPTS if listed.search(_raw(n))] == []
    assert fenced == [
        "abandon_step",
        "commit_step",
        "fenced_hset",
        "fenced_xadd",
        "finish_batch",
        "lapse_lease",
        "put_checkpoint",
        "release_lease",
        "renew_batch",
        "renew_lease",
        "set_status",
        "split_close",
        "split_open",
        "split_progress",
    ]
    assert checks == [
        "abandon_step",
        "claim_step",
        "commit_step",
        "hand_back",
        "migrate_run",
        "set_status",
        "split_progress",
    ]


def _calls(kv: redis.Redis) -> dict[str, int]:
    """Calls of script commands (EVAL, EVALSHA, SCRIPT, its subcommands apart from Redis 7 on) since the last
    CONFIG RESETSTAT."""
    stats = kv.info("commandstats")
    calls = {name.removeprefix("cmdstat_"): stat["calls"] for name, stat in stats.items()}
    return {name: n for name, n in calls.items() if name.startswith(("eval", "script"))}


def test_a_script_call_is_one_evalsha_and_a_lost_script_is_loaded_once(redis_client: redis.Redis) -> None:
    """A call of a loaded script is one EVALSHA (no SCRIPT EXISTS first); after Redis lost its scripts, the
    NOSCRIPT reply loads it and the call is made again, once. The SHA is the one Redis computes."""
    unlock = script(redis_client, "owner_unlock")
    assert script(redis_client, "owner_unlock") is unlock
    redis_client.set("lock", "me")
    unlock.load()
    redis_client.config_resetstat()
    assert unlock(keys=["lock"], args=["someone"]) == 0
    assert _calls(redis_client) == {"evalsha": 1}
    redis_client.script_flush()
    redis_client.config_resetstat()
    assert unlock(keys=["lock"], args=["me"]) == 1
    assert _calls(redis_client) in ({"evalsha": 2, "script|load": 1}, {"evalsha": 2, "script": 1})
    assert redis_client.script_load(source("owner_unlock")) == unlock.sha


def test_a_script_queued_on_a_pipeline_tells_its_reply_index(redis_client: redis.Redis) -> None:
    """Script.queue adds one EVALSHA to a pipeline and says where its reply is; stage() an EVAL of the text
    (it runs without the script loaded; the EVALSHA before it finds none)."""
    unlock = script(redis_client, "owner_unlock")
    redis_client.script_flush()
    pipe = redis_client.pipeline(transaction=True)
    pipe.set("lock", "me")
    index = unlock.queue(pipe, ["lock"], ["me"])
    stage(pipe, "owner_unlock", ["lock"], ["me"])
    replies = pipe.execute(raise_on_error=False)
    assert (index, replies[0], replies[2]) == (1, True, 1)
    assert isinstance(replies[1], redis.exceptions.NoScriptError)
