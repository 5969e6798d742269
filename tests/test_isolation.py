"""The tests do not depend on the working directory: each runs in an empty directory of its own, and the
``.graphq/`` local data that ``make demo`` leaves in the repository root reaches neither in-process commands
nor subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.envs import clean_env

ROOT = Path(__file__).resolve().parent.parent


def test_each_test_runs_in_an_empty_directory_with_its_own_data_dir() -> None:
    cwd = Path.cwd()
    assert cwd != ROOT
    assert list(cwd.iterdir()) == []
    assert os.environ["GRAPHQ_DATA_DIR"] == str(cwd / ".graphq")
    env = clean_env(GRAPHQ_REDIS_URL="redis://x", PYTHONUNBUFFERED="1")
    assert env["GRAPHQ_DATA_DIR"] == str(cwd / ".graphq")
    assert (env["GRAPHQ_REDIS_URL"], env["PYTHONUNBUFFERED"]) == ("redis://x", "1")


def test_a_subprocess_in_the_repository_root_does_not_see_its_local_data() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "graphq.cli", "runs", "list"],
        env=clean_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    data = Path.cwd() / ".graphq"
    assert done.stderr.splitlines() == [
        f"error: no Redis URL: set GRAPHQ_REDIS_URL or pass --redis-url (and no local data in {data} from "
        "`graphq run`)"
    ]
