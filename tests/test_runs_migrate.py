"""``graphq runs migrate``: runs pinned to release 1 of ``versioned`` (tests/workflows/versioned_v1.py)
move to release 2 (a compatible change: other node functions) after the upgrade check, or are refused
when it fails (release 3 renamed the node they wait at)."""

from __future__ import annotations

from dataclasses import replace

import redis

from graphcore import keys
from graphcore.backend.client import Client
from graphcore.backend.events import read_events
from graphcore.backend.runs import RunStatus
from graphcore.backend.upgrade_check import active_runs
from graphcore.engine.registry import Registry
from graphq.worker.migrate import migrate as move_runs
from graphq.worker.pinned import unserved
from graphq.worker.queue import RQStepQueue
from tests.cli_helpers import invoke
from tests.test_version_pinning import V1, V2, VERSION_1, VERSION_2, burst, job_of, paused, queued, ran

REGISTRY = V1
V2_MODULE, V3_MODULE = "tests.workflows.versioned_v2", "tests.workflows.versioned_v3"
VERSION_3 = Registry.load([V3_MODULE]).version("versioned")


def migrate(url: str, module: str, *args: str) -> tuple[int, str, str]:
    """``graphq --workflows MODULE runs migrate --workflow versioned ARGS``: (exit code, stdout, stderr)."""
    result = invoke(module, url, "runs", "migrate", "--workflow", "versioned", *args)
    assert "Traceback" not in result.stderr
    return result.exit_code, result.stdout, result.stderr


def test_a_waiting_run_moves_to_the_new_release_and_runs_there(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """The issue's case: paused on release 1, answered once release 1 is gone, it waits; moved to release
    2 (the check passes), its queued step goes to release 2's queue and runs on release 2."""
    waiting = paused(client, redis_client, redis_url)
    asked = paused(client, redis_client, redis_url)  # still waiting for its answer: moves too
    client.answer(waiting, "yes")
    job = job_of(client, waiting)
    burst(redis_client, redis_url, V2)  # release 1 is gone: nothing takes the step
    assert client.get_run(waiting).status == RunStatus.QUEUED
    code, out, _ = migrate(redis_url, V2_MODULE, "--from", VERSION_1[:8], "--to", VERSION_2[:8])
    assert code == 0, out
    assert out.splitlines() == [
        f"moved run {waiting} (thread {waiting}, queued)",
        f"moved run {asked} (thread {asked}, awaiting_input)",
        f"2 run(s) of versioned moved from {VERSION_1[:12]} to {VERSION_2[:12]}",
    ]
    record = client.get_run(waiting)
    assert (record.version, record.pinned, record.migrated_from) == (VERSION_2, True, VERSION_1)
    assert record.migrated_at is not None
    assert queued(redis_client, VERSION_1) == [] and queued(redis_client, VERSION_2) == [job.encode()]
    assert redis_client.hget(f"rq:job:{job}", "origin") == RQStepQueue(redis_client).of(record).name.encode()
    events = [e for e in read_events(redis_client, record.thread_id, waiting) if e.mode == "status"]
    assert events[-1].data == {"status": "queued", "version": VERSION_2, "migrated_from": VERSION_1}
    assert burst(redis_client, redis_url, V2)
    assert client.get_run(waiting).status == RunStatus.COMPLETED
    assert ran(client, waiting) == ["v1:a", "v2:ask", "v2:c"]
    client.answer(asked, "yes")
    burst(redis_client, redis_url, V2)
    assert ran(client, asked) == ["v1:a", "v2:ask", "v2:c"]
    assert not unserved(redis_client, "graphq", client.get_run(asked))


def test_a_failing_check_refuses_naming_the_threads_and_moves_nothing(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    run_id = paused(client, redis_client, redis_url)
    before = redis_client.hgetall(keys.run(run_id, run_id))
    code, out, err = migrate(redis_url, V3_MODULE, "--from", VERSION_1, "--to", VERSION_3)
    assert code == 1
    assert out.startswith(f"thread {run_id} (run {run_id} awaiting_input): would break: ")
    assert "'ask'" in out
    assert error_line_of(err) == (
        f"error: refused: 1 thread(s) would break on version {VERSION_3[:12]}: {run_id} (nothing moved; "
        "--force moves them anyway)"
    )
    assert redis_client.hgetall(keys.run(run_id, run_id)) == before
    code, out, err = migrate(redis_url, V3_MODULE, "--from", VERSION_1, "--to", VERSION_3, "--force")
    assert code == 0 and "warning: --force: moving 1 run(s) without the upgrade check" in err
    assert client.get_run(run_id).version == VERSION_3


def test_dry_run_lists_and_moves_nothing(client: Client, redis_client: redis.Redis, redis_url: str) -> None:
    run_id = paused(client, redis_client, redis_url)
    code, out, _ = migrate(redis_url, V2_MODULE, "--from", VERSION_1, "--to", VERSION_2, "--dry-run")
    assert (code, out) == (
        0,
        f"would move run {run_id} (thread {run_id}, awaiting_input)\n"
        f"1 run(s) of versioned would move from {VERSION_1[:12]} to {VERSION_2[:12]}\n",
    )
    assert client.get_run(run_id).version == VERSION_1


def test_bad_versions_are_refused_in_one_line(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    paused(client, redis_client, redis_url)
    code, _, err = migrate(redis_url, V2_MODULE, "--from", "ffff", "--to", VERSION_2)
    assert code == 2
    assert (
        error_line_of(err)
        == f"error: --from 'ffff' matches no version of versioned (known: {VERSION_1[:12]})"
    )
    code, _, err = migrate(redis_url, V2_MODULE, "--from", VERSION_1, "--to", VERSION_1)
    assert code == 2 and error_line_of(err) == (
        f"error: --from and --to name the same version {VERSION_1[:12]} of versioned"
    )
    code, _, err = migrate(redis_url, V3_MODULE, "--from", VERSION_1, "--to", VERSION_2)
    assert code == 2 and error_line_of(err) == (
        f"error: --to {VERSION_2!r} matches no version of versioned (known: "
        f"{', '.join(sorted(v[:12] for v in (VERSION_1, VERSION_3)))})"
    )
    burst(redis_client, redis_url, V2)  # published: the catalog knows version 2
    code, _, err = migrate(redis_url, V3_MODULE, "--from", VERSION_1, "--to", VERSION_2)
    assert code == 2 and error_line_of(err) == (
        f"error: --to {VERSION_2[:12]}: the check needs that version's code loaded here (--workflows); the "
        f"code here is version {VERSION_3[:12]} (--force moves without the check)"
    )


def error_line_of(stderr: str) -> str:
    [line] = [line for line in stderr.splitlines() if line.startswith("error: ")]
    return line


def test_a_run_with_a_step_running_or_committed_since_the_check_is_left_named(
    client: Client, redis_client: redis.Redis, redis_url: str
) -> None:
    """From the new-user trial: a run whose step was running passed the check on its checkpoint from before
    that step and was moved; the step then made next tasks the new code lacks, and the run failed. Such a
    run is left where it is, named, and moved by a later run of the command."""
    busy, other = paused(client, redis_client, redis_url), paused(client, redis_client, redis_url)
    lease = keys.lease(busy, busy)
    redis_client.set(lease, "held-by-a-worker")  # a step of it running
    code, out, err = migrate(redis_url, V2_MODULE, "--from", VERSION_1, "--to", VERSION_2)
    assert code == 1
    assert out.splitlines() == [
        f"moved run {other} (thread {other}, awaiting_input)",
        f"left run {busy} (thread {busy}): a step of it is running",
        f"1 run(s) of versioned moved from {VERSION_1[:12]} to {VERSION_2[:12]}",
    ]
    assert error_line_of(err) == "error: 1 run(s) left where they were (see above): run the command again"
    assert client.get_run(busy).version == VERSION_1
    redis_client.delete(lease)
    assert migrate(redis_url, V2_MODULE, "--from", VERSION_1, "--to", VERSION_2)[0] == 0
    assert client.get_run(busy).version == VERSION_2
    [stale] = [r for r in active_runs(redis_client, "versioned") if r.id == other]
    moved, left = move_runs(redis_client, [replace(stale, head="an older checkpoint")], VERSION_2, VERSION_1)
    assert (moved, left) == ([], {other: "a step of it committed since the check"})


def test_run_moves_only_the_runs_named(client: Client, redis_client: redis.Redis, redis_url: str) -> None:
    """Only the runs named move, and only their queued steps (second new-user trial: every step job on the old
    version's queue moved)."""
    first, second = paused(client, redis_client, redis_url), paused(client, redis_client, redis_url)
    for run_id in (first, second):
        client.answer(run_id, "yes")
    jobs = [job_of(client, r).encode() for r in (first, second)]
    code, out, _ = migrate(redis_url, V2_MODULE, "--from", VERSION_1, "--to", VERSION_2, "--run", second)
    assert code == 0 and f"moved run {second} " in out and first not in out
    assert [client.get_run(r).version for r in (first, second)] == [VERSION_1, VERSION_2]
    assert (queued(redis_client, VERSION_1), queued(redis_client, VERSION_2)) == ([jobs[0]], [jobs[1]])
    code, _, err = migrate(redis_url, V2_MODULE, "--from", VERSION_1, "--to", VERSION_2, "--run", "nope")
    assert code == 2 and error_line_of(err) == (
        f"error: --run nope: no run pinned to version {VERSION_1[:12]} that has not ended has this id"
    )
    result = invoke(V2_MODULE, redis_url, "runs", "migrate", "--workflow", "nope", "--from", "a", "--to", "b")
    assert result.exit_code == 2 and error_line_of(result.stderr) == (
        "error: --workflow 'nope': no such workflow (none is published, loaded here, or has runs)"
    )
