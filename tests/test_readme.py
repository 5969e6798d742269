"""The README is a front page and the documentation in ``docs/`` holds the rest: the five-minute tour (on
both) leaves the shell as it found it, and its Redis listens on localhost only; the layout page names every
package and benchmark; the import map is the compat suite's."""

from __future__ import annotations

import re
from pathlib import Path

from tests.compat.imports import IMPORT_MAP

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def tour(page: Path = README) -> list[str]:
    """The command lines of the tour's bash block (comments and blank lines dropped)."""
    section = read(page).split("## A five-minute tour", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_tour_redis_binds_to_localhost() -> None:
    [server] = [line for line in tour() if line.startswith("$REDIS_BIN ")]
    assert server == "$REDIS_BIN --port 6390 --bind 127.0.0.1 --save '' --daemonize yes"


def test_the_tour_tidy_up_unsets_what_it_exported() -> None:
    lines = tour()
    exported = [line.split()[1].split("=")[0] for line in lines if line.startswith("export ")]
    assert exported == ["GRAPHQ_REDIS_URL"]
    assert lines[-2:] == [
        "kill %2 %1; wait; $(dirname $REDIS_BIN)/redis-cli -p 6390 shutdown",
        "unset GRAPHQ_REDIS_URL",
    ]


def test_getting_started_has_the_readmes_tour() -> None:
    """The tour is on the front page and in Getting started: the same block, comments included."""

    def block(page: Path) -> str:
        return read(page).split("## A five-minute tour", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]

    assert block(DOCS / "getting-started.md") == block(README)


def test_the_readmes_workflow_is_the_guides() -> None:
    """The front page's workflow is the first one of *Writing a workflow* (the one tests/test_wheel.py
    installs and runs)."""
    readme = read(README).split("## Writing a workflow", 1)[1]
    guide = read(DOCS / "guides" / "writing-a-workflow.md")
    assert python_blocks(readme)[0] == python_blocks(guide)[0]


def test_the_readme_is_a_front_page() -> None:
    """What graphq is, the two commands, the tour, one workflow and links: at most 300 lines (it was 1,624,
    with the settings, the commands and the LangGraph differences in it)."""
    assert len(read(README).splitlines()) <= 300


def test_the_layout_names_every_package_and_benchmark() -> None:
    """The Layout table has a row for each installed top-level package (``scheduler/`` was missing) and
    names the benchmarks up to the last one in ``bench/`` (it said P1–P6 with P7 there)."""
    import tomllib

    layout = read(DOCS / "guides" / "layout.md")
    project = tomllib.loads(read(ROOT / "pyproject.toml"))
    packages = project["tool"]["mypy"]["packages"]
    assert [p for p in packages if f"| `{p}/` |" not in layout] == []
    last = max(int(p.name[1]) for p in (ROOT / "bench").glob("p[0-9]_*.py"))
    assert f"benchmarks P1\u2013P{last} (`make bench`)" in layout


def test_tzdata_is_a_dependency() -> None:
    """zoneinfo falls back to the tzdata package where the system has no zone database or lacks legacy names
    (python:3.12-slim: US/Eastern), so schedules in any IANA zone work in the image."""
    import tomllib

    project = tomllib.loads(read(ROOT / "pyproject.toml"))
    assert [d for d in project["project"]["dependencies"] if d.startswith("tzdata")] == ["tzdata>=2024.1"]


def test_the_import_map_table_is_the_compat_suites_map() -> None:
    """The import map of *Move a LangGraph program* lists exactly the imports tests/compat runs programs
    with."""
    text = read(DOCS / "how-to" / "from-langgraph.md")
    table = text.split("<!-- import-map:", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|")[1:4] for line in table.splitlines() if line.startswith("| `")]
    shown = {
        src.strip(" `"): (dst.strip(" `"), tuple(n.strip(" `") for n in names.split(",")))
        for src, dst, names in rows
    }
    assert shown == IMPORT_MAP
