"""The Lua scripts as sent to Redis (graphcore.backend.lua.source): fragments included, comments emptied."""

from __future__ import annotations

from importlib.resources import files

import redis

from graphcore.backend.lua import source

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
    raw = files("graphcore.backend.lua").joinpath("lapse_lease.lua").read_text()
    assert "--#include" not in raw and raw.lstrip().startswith("--")
    assert source("lapse_lease").count("\n") == raw.count("\n")
    assert len(source("lapse_lease")) < len(raw)
