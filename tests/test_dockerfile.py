"""The image's ``Dockerfile``, parsed by Docker's own parser (the ``dockerfile`` package binds BuildKit's):
no Docker daemon runs here (nor in CI), so the image is not built; what the chart relies on is checked
instead: a slim Python 3.11+ base, the graphq package and WORKFLOW_PACKAGES installed into a virtualenv, the
unprivileged user whose uid the chart's podSecurityContext runs as, ``graphq`` as the entry point, and a
build context without the local state."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import dockerfile
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = dockerfile.parse_file(str(ROOT / "Dockerfile"))


def final_stage() -> list[dockerfile.Command]:
    starts = [n for n, c in enumerate(COMMANDS) if c.cmd == "FROM"]
    return list(COMMANDS[starts[-1] :])


def test_final_stage_is_a_slim_python_311_or_later() -> None:
    args = {
        c.value[0].split("=")[0]: c.value[0].split("=", 1)[1]
        for c in COMMANDS
        if c.cmd == "ARG" and "=" in c.value[0]
    }
    (base, *_) = final_stage()[0].value
    image = base.replace("${PYTHON_VERSION}", args["PYTHON_VERSION"])
    match = re.fullmatch(r"python:3\.(\d+)-slim", image)
    assert match is not None, image
    assert int(match.group(1)) >= 11


def test_runs_as_the_uid_the_chart_runs_its_pods_as() -> None:
    (user,) = [c.value[0] for c in final_stage() if c.cmd == "USER"]
    values = yaml.safe_load((ROOT / "charts" / "graphq" / "values.yaml").read_text())
    pod = values["podSecurityContext"]
    assert user == f"{pod['runAsUser']}:{pod['runAsGroup']}" == "10001:10001"
    (adduser,) = [c.value[0] for c in final_stage() if c.cmd == "RUN" and "useradd" in c.value[0]]
    assert "--uid 10001" in adduser and "--gid 10001" in adduser
    last_user = max(n for n, c in enumerate(final_stage()) if c.cmd == "USER")
    assert not [c for c in final_stage()[last_user:] if c.cmd == "RUN"], "RUN after USER runs as the user"


def test_entrypoint_is_the_graphq_console_script() -> None:
    (entrypoint,) = [c for c in final_stage() if c.cmd == "ENTRYPOINT"]
    assert entrypoint.json and entrypoint.value == ("graphq",)
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["graphq"] == "graphq.cli.main:main"
    env = " ".join(v for c in final_stage() if c.cmd == "ENV" for v in c.value)
    assert "/opt/graphq/bin" in env  # the virtualenv's graphq is on PATH (probes run `graphq health`)
    assert "PYTHONDONTWRITEBYTECODE" in env  # nothing written next to the code: read-only root file system


def test_the_package_and_the_workflow_packages_are_installed_in_the_build_stage() -> None:
    runs = [c.value[0] for c in COMMANDS if c.cmd == "RUN"]
    (install,) = [run for run in runs if "pip install --no-cache-dir ." in run]
    assert install.rstrip().endswith("/opt/graphq/bin/pip install --no-cache-dir . ${WORKFLOW_PACKAGES}")
    assert [c.value for c in final_stage() if c.cmd == "COPY"] == [("/opt/graphq", "/opt/graphq")]
    assert [c.flags for c in final_stage() if c.cmd == "COPY"] == [("--from=build",)]


def test_the_chart_runs_the_image_of_this_version() -> None:
    """The chart's appVersion (the default image tag) is the package's version."""
    chart = yaml.safe_load((ROOT / "charts" / "graphq" / "Chart.yaml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert chart["appVersion"] == project["version"] == "0.1.0"


def test_build_context_leaves_out_local_state() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", ".graphq", "**/__pycache__", "tests"} <= ignored
    assert not {"graphcore", "graphq", "worker", "scheduler", "cli", "examples", "pyproject.toml"} & ignored
    assert "README.md" not in ignored
