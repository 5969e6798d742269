"""graphq's hooks into RQ's internals (graphq.worker.rq_hooks): every internal they rely on is there with the
parameters they expect, and a real worker sends the step's claim on RQ's start pipeline and its commit on
RQ's success pipeline; on the installed RQ and on the lowest RQ that pyproject.toml allows."""

from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis
import rq

import graphq.worker.rq_hooks
from graphcore.backend.client import Client
from graphcore.backend.lua import script
from graphcore.backend.runs import RunStatus
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.worker.process.rq_worker import run_worker
from graphq.worker.queue import StepJob, step_job_id
from graphq.worker.rq_hooks import RQ_INTERNALS, StepJobHooks
from graphq.worker.step.commit_script import CommitScript
from graphq.worker.step.lease import Lease
from tests.envs import clean_env

REGISTRY = Registry.load(["tests.workflows.basic"])
ROOT = Path(__file__).resolve().parent.parent


def _counted(n: int) -> dict[str, Any]:
    """The result of ``counter`` run to ``limit`` n."""
    return {"n": n, "limit": n, "log": [f"bump{i}" for i in range(1, n + 1)]}


def _resolve(path: str) -> Any:
    """The object a dotted path names: the longest importable module, then attributes (no descriptors run)."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            found = inspect.getattr_static(found, name)
        return found
    raise ImportError(path)


@pytest.mark.parametrize("path", sorted(RQ_INTERNALS))
def test_each_rq_internal_the_hooks_rely_on_is_there(path: str) -> None:
    """Each internal named in RQ_INTERNALS exists on the installed RQ with those parameters, in that order
    (a property where none are listed), and the module's docstring names it."""
    found = _resolve(path)
    expected = RQ_INTERNALS[path]
    if expected:
        assert tuple(inspect.signature(found).parameters) == expected, (rq.__version__, path)
    else:
        assert isinstance(found, property), (rq.__version__, path)
    assert path.rsplit(".", 1)[1] in (graphq.worker.rq_hooks.__doc__ or ""), path


def test_a_worker_rides_claim_and_commit_on_rqs_pipelines(
    client: Client, redis_client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each step's claim is an EVALSHA of claim_step.lua in the pipeline of RQ's start of its job; steps 0
    and 1 commit with an EVALSHA of commit_step.lua in the pipeline of RQ's record of their success; in
    commits of their own only the run's start (the input's checkpoint, before step 0 runs) and step 2 (it
    completes the run, then hands the thread over). No claim of its own."""
    claim_sha = script(redis_client, "claim_step").sha
    commit_sha = script(redis_client, "commit_step").sha
    script(redis_client, "claim_step").load()  # loaded: the first claim rides too
    seen: dict[str, list[str]] = {"start": [], "success": [], "own claims": [], "own commits": []}
    prepare, success = StepJobHooks.prepare_for_execution, StepJobHooks._handle_success
    claim, run = Lease.claim, CommitScript.run

    def evalsha_of(pipeline: Any, sha: str) -> bool:
        return any(args[:2] == ("EVALSHA", sha) for args, _ in pipeline.command_stack)

    def started(self: StepJob, worker_name: str, pipeline: Any) -> None:
        prepare(self, worker_name, pipeline)
        if evalsha_of(pipeline, claim_sha):
            seen["start"].append(self.id)

    def succeeded(self: StepJob, result_ttl: int, pipeline: Any, *args: Any, **kwargs: Any) -> None:
        success(self, result_ttl, pipeline, *args, **kwargs)
        if evalsha_of(pipeline, commit_sha):
            seen["success"].append(self.id)

    def own_claim(self: Lease, step: int, *args: Any) -> Any:
        seen["own claims"].append(str(step))
        return claim(self, step, *args)

    def own_commit(self: CommitScript, script_keys: list[str], argv: list[Any], *rest: Any) -> Any:
        seen["own commits"].append(argv[1])  # the step
        return run(self, script_keys, argv, *rest)

    monkeypatch.setattr(StepJobHooks, "prepare_for_execution", started)
    monkeypatch.setattr(StepJobHooks, "_handle_success", succeeded)
    monkeypatch.setattr(Lease, "claim", own_claim)
    monkeypatch.setattr(CommitScript, "run", own_commit)
    run_id = client.enqueue("counter", {"limit": 3})
    run_worker(Settings(redis_url=redis_url), burst=True, registry=REGISTRY, kv=redis_client)
    done = client.get_run(run_id)
    assert (done.status, done.step, done.result) == (RunStatus.COMPLETED, 3, _counted(3))
    jobs = [step_job_id(run_id, step) for step in range(3)]
    assert seen == {"start": jobs, "success": jobs[:2], "own claims": [], "own commits": ["0", "2"]}


_LOWEST_RUN = "TEST_RQ_HOOKS_LOWEST_RQ"
"""Set in the environment of the run of this file on the lowest RQ (which does not start another)."""


def _lowest_rq() -> str:
    """The lowest RQ that pyproject.toml allows (its ``rq>=X`` bound)."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    found = re.search(r'"rq>=([0-9.]+),', pyproject)
    assert found is not None, "pyproject.toml names no lower bound for rq"
    return found.group(1)


@pytest.mark.skipif(bool(os.environ.get(_LOWEST_RUN)), reason="this is the run it makes")
def test_the_hooks_hold_on_the_lowest_rq_allowed(tmp_path: Path) -> None:
    """This file's other tests pass with the lowest RQ that pyproject.toml allows first on the path (pip
    installs it, without its dependencies, into a directory of its own)."""
    target = tmp_path / "rq"
    lowest = _lowest_rq()
    pip = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--target",
        str(target),
        f"rq=={lowest}",
    ]
    installed = subprocess.run(pip, capture_output=True, text=True, timeout=300, check=False)
    assert installed.returncode == 0, installed.stderr
    env = clean_env(PYTHONPATH=str(target), **{_LOWEST_RUN: str(target)})
    which = [sys.executable, "-c", "import rq; print(rq.__file__, rq.__version__)"]
    said = subprocess.run(
        which, capture_output=True, text=True, env=env, timeout=60, check=True
    ).stdout.split()
    assert (Path(said[0]).parent.parent, tuple(said[1].split(".")[:2])) == (
        target,
        tuple(lowest.split(".")[:2]),
    )
    tests = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(Path(__file__))]
    ran = subprocess.run(tests, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert re.search(rf"\b{len(RQ_INTERNALS) + 1} passed, 1 skipped\b", ran.stdout), ran.stdout[-500:]
