"""The Lua scripts as sent to Redis (graphcore.backend.lua.source): fragments included, comments emptied."""

from __future__ import annotations

import re
from importlib.resources import files

import redis

from graphcore.backend.lua import source
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
        "lapse_lease",
        "put_checkpoint",
        "release_lease",
        "renew_lease",
        "set_status",
    ]
    assert checks == ["abandon_step", "claim_step", "commit_step", "set_status"]
