"""Every dependency is bounded at the newest major version tested (an unbounded
``redis>=5.0`` let a fresh install take redis-py 8.2, whose pub/sub stop hung every worker's exit)."""

from __future__ import annotations

import re
import tomllib

from tests.workers import ROOT

UNBOUNDED = {"tzdata"}
"""The IANA time zone database: versioned by year, each release a data update."""


def requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = [r for group in project["optional-dependencies"].values() for r in group]
    return [*project["dependencies"], *extras]


def test_every_dependency_has_an_upper_bound() -> None:
    names = {r: re.match(r"[A-Za-z0-9_.-]+", r)[0].lower() for r in requirements()}  # type: ignore[index]
    bounded = [r for r in names if re.search(r"<|~=", r.split(";")[0])]  # ~=1.37.0 is <1.38
    unbounded = [r for r, name in names.items() if r not in bounded and name not in UNBOUNDED]
    assert unbounded == []
    assert {"redis", "rq", "click", "langgraph"} <= set(names.values())
