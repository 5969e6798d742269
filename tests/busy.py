"""A pytest plugin for ``make test-loaded``: the suite runs beside two busy-loop processes, as on a loaded
laptop or a shared CI runner (one per core of a 2-core machine). A test that assumes a speed fails here.

Use: ``python -m pytest -p tests.busy``. The loops start before the first test and are killed after the
last (and with this process: they exit when their parent is gone).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

LOOPS = 2
_BUSY = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    sum(range(10**6))\n"
"""Spins until its parent (pytest) is gone."""
_procs: list[subprocess.Popen[bytes]] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    _procs.extend(subprocess.Popen([sys.executable, "-c", _BUSY]) for _ in range(LOOPS))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for proc in _procs:
        proc.kill()
        proc.wait(10)


def pytest_report_header(config: pytest.Config) -> str:
    return f"loaded: {LOOPS} busy-loop processes run beside the tests"
