"""``graphq runs resume --help`` and the command reference (``docs/reference/cli.md``, generated from the help
at build time) begin with the same sentence, true to the rules of graphcore/backend/resuming.py."""

from __future__ import annotations

from click.testing import CliRunner

from docs_hooks.reference import cli_reference
from graphq.cli.main import main

SENTENCE = (
    "continue RUN: an ended run's thread in a new run, from its latest checkpoint (a failed or canceled "
    "run; a completed one only when its thread has tasks left), or a run stopped at a static breakpoint, "
    "itself, past that breakpoint"
)


def test_resume_help_and_the_command_reference_begin_alike() -> None:
    shown = CliRunner().invoke(main, ["runs", "resume", "--help"], prog_name="graphq", catch_exceptions=False)
    assert shown.exit_code == 0
    usage, first = " ".join(shown.stdout.split()).split(" [RUN] ", 1)
    assert (usage, first.split(". ")[0]) == ("Usage: graphq runs resume [OPTIONS]", "C" + SENTENCE[1:])
    assert SENTENCE[1:] in " ".join(cli_reference().split())
