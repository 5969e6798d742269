"""The built wheel installs what a new user gets: the import packages ``graphcore`` and ``graphq``
and no other (before, ``worker``, ``cli``, ``scheduler`` and ``examples`` went to the top level of
site-packages), a working ``graphq`` command, and the client snippet of *Writing a workflow* that runs from a
project directory holding its own ``worker.py``.

The wheel is built from this checkout and installed into a fresh virtualenv, its dependencies resolved by
pip from the package index (or pip's cache), as ``pip install graphq`` does.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.envs import clean_env
from tests.workers import ROOT, worker_env

pytestmark = pytest.mark.timeout(600)  # a build, a virtualenv and an install: minutes on a cold pip cache

FOLDERS = {"graphcore": "graphcore", "graphq": "graphq"} | {
    f"graphq/{name}": name for name in ("worker", "scheduler", "console", "cli", "examples")
}
"""Where each package of the wheel comes from in the repository."""


def run(*argv: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Run ``argv``; its stdout, or a failure carrying its output."""
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=540, check=False
    )
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def fresh_env(**extra: str) -> dict[str, str]:
    """The environment of a process of the fresh virtualenv: nothing of this checkout's on its path."""
    env = clean_env(**extra)
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        env.pop(name, None)
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv (``python -m venv``, no system site-packages) with the wheel built from a copy of
    this checkout (its sources, not an earlier build's leftovers) installed in it."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "src"  # a copy: a build writes build/ and *.egg-info, and packs what an old build/ held
    skipped = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".graphq")
    shutil.copytree(ROOT, source, symlinks=True, ignore=skipped)
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", base / "dist", source, env=fresh_env())
    [wheel] = (base / "dist").glob("graphq-*.whl")
    run(sys.executable, "-m", "venv", base / "venv")
    run(base / "venv/bin/python", "-m", "pip", "install", "-q", wheel, env=fresh_env())
    return base / "venv"


def installed(venv: Path) -> list[str]:
    """The files the wheel installed into site-packages, from its RECORD."""
    [record] = venv.glob("lib/python*/site-packages/graphq-*.dist-info/RECORD")
    return [line.split(",")[0] for line in record.read_text().splitlines()]


def test_the_wheel_installs_only_graphq_and_graphcore(venv: Path) -> None:
    files = installed(venv)
    assert {f.split("/")[0] for f in files if not f.startswith("../") and ".dist-info/" not in f} == {
        "graphcore",
        "graphq",
    }
    [top_level] = venv.glob("lib/python*/site-packages/graphq-*.dist-info/top_level.txt")
    assert top_level.read_text().split() == ["graphcore", "graphq"]


def test_the_wheel_holds_every_module_of_the_repository(venv: Path) -> None:
    """Each ``.py`` of graphcore/, graphq/, worker/, scheduler/, cli/ and examples/ is in the wheel, under
    its package (graphq/worker/... for worker/...)."""
    expected = {
        f"{package}/{path.relative_to(ROOT / folder).as_posix()}"
        for package, folder in FOLDERS.items()
        for path in ((ROOT / folder).glob("*.py") if folder == "graphq" else (ROOT / folder).rglob("*.py"))
    }
    assert {f for f in installed(venv) if f.endswith(".py")} == expected


def test_the_wheel_holds_every_file_the_console_serves(venv: Path) -> None:
    """Each file under console/static/ and console/templates/ (the favicon, the CSS, htmx, the pages) is in
    the wheel: pyproject's package-data globs name each kind."""
    expected = {
        f"graphq/console/{path.relative_to(ROOT / 'console').as_posix()}"
        for folder in ("static", "templates")
        for path in (ROOT / "console" / folder).rglob("*")
        if path.is_file()
    }
    assert expected - set(installed(venv)) == set()


def test_graphq_help_runs(venv: Path) -> None:
    out = run(venv / "bin/graphq", "--help", env=fresh_env())
    assert out.startswith("Usage: graphq ")


def readme_blocks() -> tuple[str, str]:
    """The workflow of *Writing a workflow* (its first Python block; the README shows the same) and its client
    snippet."""
    text = (ROOT / "docs" / "guides" / "writing-a-workflow.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    [client] = [b for b in blocks if "connect_client" in b]
    return blocks[0], client


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's project: the workflow of *Writing a workflow* as ``mypkg.flows``, beside its own
    ``worker.py``, ``cli.py`` and ``examples.py`` (modules an RQ project commonly has), which fail if
    imported."""
    workflow, _ = readme_blocks()
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg/__init__.py").write_text("")
    (tmp_path / "mypkg/flows.py").write_text(workflow)
    for name in ("worker", "cli", "examples"):
        (tmp_path / f"{name}.py").write_text(f"raise SystemExit('the project own {name}.py was imported')\n")
    return tmp_path


@pytest.fixture
def installed_worker(venv: Path, project: Path, redis_url: str) -> Iterator[subprocess.Popen[bytes]]:
    """``graphq worker`` of the fresh virtualenv, started in the project for ``mypkg.flows``."""
    env = fresh_env(**worker_env(redis_url, "mypkg.flows"))
    proc = subprocess.Popen(
        [venv / "bin/graphq", "worker"],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(30)


def test_the_readme_client_snippet_runs_beside_a_project_worker_py(
    venv: Path, project: Path, redis_url: str, installed_worker: subprocess.Popen[bytes]
) -> None:
    _, client = readme_blocks()
    assert client.count("redis://127.0.0.1:6390/0") == 1
    (project / "snippet.py").write_text(client.replace("redis://127.0.0.1:6390/0", redis_url))
    out = run(venv / "bin/python", "snippet.py", cwd=project, env=fresh_env())
    assert out.splitlines() == [
        "completed {'words': ['a', 'bb'], 'lengths': [1, 2], 'total': 3}",
        "[2, 1, 0, -1]",
    ]
    assert installed_worker.poll() is None
