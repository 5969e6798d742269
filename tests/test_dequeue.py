"""StopAwareQueue (graphq.worker.process.dequeue): a stop ends a worker's pop without dropping a job, on a
real Redis.

RQ's warm shutdown raised out of the pop: a job popped just before (BLPOP: out of every list; BLMOVE: left in
the intermediate list) was dropped. Here the stop and a job's arrival race on purpose, many times: the job is
always back at the front of its queue, exactly once, and the pop returns no job.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from rq import Queue
from rq.exceptions import DequeueTimeout

from graphcore.backend.embedded import EmbeddedRedis
from graphq.worker.process.dequeue import StopAwareQueue

QUEUES = ["rq:queue:graphq:a", "rq:queue:graphq:b"]
INTERMEDIATE = "rq:queue:graphq:a:intermediate"


@pytest.fixture
def started(redis_client: redis.Redis) -> Iterator[redis.Redis]:
    redis_client.flushdb()
    StopAwareQueue.start(redis_client)
    yield redis_client
    StopAwareQueue.stop()  # ends the waker thread


def in_thread(pop: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """Run ``pop`` in a thread; its result (or exception) lands in the list."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(pop())
        except DequeueTimeout as exc:
            out.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def wait_until(predicate: Callable[[], bool], timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def blocked_pops(kv: redis.Redis, user: str | None = None) -> int:
    """Clients of this worker blocked in a pop: its pop connection (by client id), or, when it has none
    (an ACL), those of ``user``: other clients of the shared test server do not count."""
    blocking = StopAwareQueue._blocking
    ours = (lambda c: c["id"] == str(blocking.client_id)) if blocking else (lambda c: c["user"] == user)
    return sum("b" in c["flags"] and ours(c) for c in kv.client_list())


def test_a_stop_ends_a_blocking_pop_at_once(started: redis.Redis) -> None:
    thread, out = in_thread(lambda: StopAwareQueue.lpop(QUEUES, 30, connection=started))
    wait_until(lambda: blocked_pops(started) == 1)
    begun = time.monotonic()
    StopAwareQueue.stop()
    thread.join(20)
    assert time.monotonic() - begun < 15  # the pop would wait 30 s
    assert len(out) == 1 and isinstance(out[0], DequeueTimeout)  # the server ended it: nil, RQ's timeout
    assert StopAwareQueue.lpop(QUEUES, 30, connection=started) is None  # no pop once stopping
    assert blocked_pops(started) == 0


def test_no_pop_takes_a_job_once_stopping(started: redis.Redis) -> None:
    started.rpush(QUEUES[1], "job-1")
    StopAwareQueue.stop()
    assert StopAwareQueue.lpop(QUEUES, None, connection=started) is None
    assert StopAwareQueue.lmove(started, QUEUES[1], 5) is None
    assert started.lrange(QUEUES[1], 0, -1) == [b"job-1"]


class StopsAfterPopping:
    """A client whose pops are followed by a stop (as if SIGTERM landed just after the server popped)."""

    def __init__(self, kv: redis.Redis) -> None:
        self.kv = kv

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.kv, name)
        if name not in ("lpop", "lmove"):
            return attr

        def then_stop(*args: Any) -> Any:
            popped = attr(*args)
            StopAwareQueue.stop()
            return popped

        return then_stop


def test_a_job_popped_as_the_stop_lands_goes_back_to_the_front(started: redis.Redis) -> None:
    started.rpush(QUEUES[0], "job-1", "job-2")
    assert StopAwareQueue.lpop(QUEUES, None, connection=StopsAfterPopping(started)) is None  # type: ignore[arg-type]
    assert started.lrange(QUEUES[0], 0, -1) == [b"job-1", b"job-2"]
    StopAwareQueue.start(started)
    assert StopAwareQueue.lmove(StopsAfterPopping(started), QUEUES[0], None) is None  # type: ignore[arg-type]
    assert started.lrange(QUEUES[0], 0, -1) == [b"job-1", b"job-2"]
    assert started.llen(INTERMEDIATE) == 0
    StopAwareQueue.start(started)
    assert StopAwareQueue.lmove(started, QUEUES[0], None) == (QUEUES[0], b"job-1")  # not stopping: RQ's
    assert started.lrange(INTERMEDIATE, 0, -1) == [b"job-1"]


@pytest.mark.parametrize("kind", ["blpop", "blmove"])
def test_a_stop_racing_a_job_never_drops_it(started: redis.Redis, kind: str) -> None:
    """40 races of a stop against a job's arrival on a blocked pop: either the pop took the job before the
    stop (the worker runs it) or the job is at the front of its queue, once, and nothing is left in the
    intermediate list."""
    kv = started
    outcomes: Counter[str] = Counter()
    for i in range(40):
        StopAwareQueue.start(kv)  # a fresh worker process each time
        if kind == "blpop":
            thread, out = in_thread(lambda: StopAwareQueue.lpop(QUEUES, 30, connection=kv))
        else:
            thread, out = in_thread(lambda: StopAwareQueue.lmove(kv, QUEUES[0], 30))
        deadline = time.monotonic() + 20
        while blocked_pops(kv) == 0 and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(0.0005 * (i % 4))  # vary who wins: the push, the stop
        if i % 2:
            kv.rpush(QUEUES[0], f"job-{i}")
            StopAwareQueue.stop()
        else:
            StopAwareQueue.stop()
            kv.rpush(QUEUES[0], f"job-{i}")
        thread.join(20)
        assert not thread.is_alive()
        job = f"job-{i}".encode()
        if out[0] is None or isinstance(out[0], DequeueTimeout):  # the stop came first: the job waits
            assert kv.lrange(QUEUES[0], 0, -1) == [job], i
            assert kv.llen(INTERMEDIATE) == 0
            outcomes["given back or not taken"] += 1
        else:  # the job came first: the worker took it (it runs it, then stops)
            assert out[0] == (QUEUES[0].encode() if kind == "blpop" else QUEUES[0], job), i
            assert kv.llen(QUEUES[0]) == 0
            assert kv.lrange(INTERMEDIATE, 0, -1) == ([job] if kind == "blmove" else [])
            outcomes["taken"] += 1
        kv.delete(QUEUES[0], INTERMEDIATE)
    assert outcomes["given back or not taken"] >= 20  # every stop before the push, at least


ACL_USERS = {"no-client": ["+@all", "-client"], "no-unblock": ["+@all", "-client", "+client|id"]}


def as_user(kv: redis.Redis, user: str) -> redis.Redis:
    kwargs = {**kv.connection_pool.connection_kwargs, "username": user, "password": "pw"}
    return redis.Redis(connection_pool=redis.ConnectionPool(**kwargs))


def test_without_client_id_or_unblock_a_stop_ends_a_waiting_pop_by_raising(redis_client: redis.Redis) -> None:
    """A server whose ACL refuses CLIENT ID, or CLIENT UNBLOCK: pops go on the worker's connection, and the
    dequeue may be ended by raising even while one waits (the only way; with CLIENT UNBLOCK refused at the
    stop the pop waited out RQ's dequeue timeout); with both it may not (the pop ends by itself)."""
    redis_client.flushdb()
    for user, commands in ACL_USERS.items():
        redis_client.acl_setuser(user, enabled=True, passwords=["+pw"], keys=["*"], commands=commands)
    users = [as_user(redis_client, user) for user in ACL_USERS]
    try:
        cases = zip([*users, redis_client], [*ACL_USERS, "default"], [False, False, True], strict=True)
        for conn, user, blocking in cases:
            StopAwareQueue.start(conn)
            assert (StopAwareQueue._blocking is not None) == blocking
            thread, out = in_thread(lambda: StopAwareQueue.lpop(QUEUES, 2, connection=conn))  # noqa: B023
            wait_until(lambda: blocked_pops(redis_client, user) == 1)  # noqa: B023
            assert StopAwareQueue.may_end_by_raising() is not blocking
            thread.join(20)
            assert isinstance(out[0], DequeueTimeout)  # nothing came within its 2 s
            assert StopAwareQueue.may_end_by_raising()  # between pops, holding nothing
            StopAwareQueue.stop()
    finally:
        for kv in users:
            kv.close()
        for user in ACL_USERS:
            redis_client.acl_deluser(user)


def test_a_stop_then_redis_failing_under_the_pop_ends_the_dequeue_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stop lands while the pop waits and Redis fails before CLIENT UNBLOCK gets through: the pop's error
    ends the dequeue (SystemExit) instead of RQ's retry loop, whose heartbeat waits for Redis without bound
    (the worker ended only at the drain timeout, 20 s)."""
    monkeypatch.setattr(
        "graphq.worker.process.dequeue._BlockingConnection.unblock", lambda self: False
    )  # never through
    server = EmbeddedRedis(appendonly=False).start()
    try:
        kv = redis.Redis.from_url(server.url)
        StopAwareQueue.start(kv)
        queues = [Queue(q.removeprefix("rq:queue:"), connection=kv) for q in QUEUES]

        def dequeue() -> Any:
            try:
                return StopAwareQueue.dequeue_any(queues, 30, connection=kv)
            except SystemExit as exc:
                return exc

        thread, out = in_thread(dequeue)
        wait_until(lambda: blocked_pops(kv) == 1)
        StopAwareQueue.stop()
        begun = time.monotonic()
        server.stop()
        thread.join(20)
        assert time.monotonic() - begun < 15  # the pop would wait 30 s, RQ's retry loop without bound
        assert isinstance(out[0], SystemExit) and out[0].code == 0
    finally:
        server.stop()


def test_a_failed_fetch_leaves_the_worker_holding_nothing(
    started: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RQ drops a job whose fetch fails after the pop (its loop retries the dequeue): the worker holds no
    job, so a stop during RQ's retry sleep ends the dequeue at once."""

    def failing_fetch(cls: Any, *args: Any, **kwargs: Any) -> Any:
        raise redis.exceptions.ConnectionError("Redis went away")

    monkeypatch.setattr(Queue, "_fetch_dequeued_job", classmethod(failing_fetch))
    started.rpush(QUEUES[0], "job-1")
    queues = [Queue(q.removeprefix("rq:queue:"), connection=started) for q in QUEUES]
    with pytest.raises(redis.exceptions.ConnectionError):
        StopAwareQueue.dequeue_any(queues, 5, connection=started)
    assert StopAwareQueue.may_end_by_raising()
