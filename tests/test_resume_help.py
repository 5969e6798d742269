"""``graphq runs resume --help`` and README's Commands row begin with the same sentence, true to the rules of
graphcore/backend/resuming.py."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from graphq.cli.main import main

SENTENCE = (
    "continue RUN: an ended run's thread in a new run, from its latest checkpoint (a failed or canceled "
    "run; a completed one only when its thread has tasks left), or a run stopped at a static breakpoint, "
    "itself, past that breakpoint"
)


def test_resume_help_and_the_readme_row_begin_alike() -> None:
    shown = CliRunner().invoke(main, ["runs", "resume", "--help"], prog_name="graphq", catch_exceptions=False)
    assert shown.exit_code == 0
    usage, first = " ".join(shown.stdout.split()).split(" RUN ", 1)
    assert (usage, first.split(". ")[0]) == ("Usage: graphq runs resume [OPTIONS]", "C" + SENTENCE[1:])
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    [row] = [line for line in readme.splitlines() if line.startswith("| `graphq runs resume RUN` |")]
    assert row.split(" | ")[1].split("; prints")[0] == SENTENCE
