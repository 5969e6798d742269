"""The README's five-minute tour leaves the shell as it found it, and its Redis listens on localhost only."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def tour() -> list[str]:
    """The command lines of the tour's bash block (comments and blank lines dropped)."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## A five-minute tour", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def test_the_tour_redis_binds_to_localhost() -> None:
    [server] = [line for line in tour() if line.startswith("$REDIS_BIN ")]
    assert server == "$REDIS_BIN --port 6390 --bind 127.0.0.1 --save '' --daemonize yes"


def test_the_tour_tidy_up_unsets_what_it_exported() -> None:
    lines = tour()
    exported = [line.split()[1].split("=")[0] for line in lines if line.startswith("export ")]
    assert exported == ["GRAPHQ_REDIS_URL"]
    assert lines[-2:] == [
        "kill %1 && $(dirname $REDIS_BIN)/redis-cli -p 6390 shutdown",
        "unset GRAPHQ_REDIS_URL",
    ]
