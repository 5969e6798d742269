"""Taking a step job off its queue so that stopping a worker never drops one (R17).

RQ pops a job (BLPOP over the worker's queues, or BLMOVE into the queue's intermediate list when it listens
on one) a little before it marks the job started. Stopping the worker by raising out of the pop — RQ's
warm shutdown raises ``StopRequested`` while the worker is idle — drops a job popped in between: after a
BLPOP it is in no list any more (the reaper enqueues it again a lease TTL later), after a BLMOVE it is left
in the intermediate list. A busy worker is there for part of every job, so deploys dropped jobs.

:class:`StopAwareQueue` is the queue class of ``graphq worker``'s children. Its pops never raise on a stop:
:meth:`~StopAwareQueue.stop` (the SIGTERM handler calls it) marks the process stopping, and

- no pop starts once it is marked;
- a pop that returns a job after it gives the job back to the front of its queue (``LPUSH``; after a
  BLMOVE, out of the intermediate list in the same MULTI);
- a blocking pop in progress is ended by the server: ``CLIENT UNBLOCK`` of the pop's connection (a
  connection of its own, whose client id is read as it connects), sent from a thread (not the signal
  handler, which runs in the middle of the pop) until the pop has returned. The server either had served
  the pop — its reply, the job, arrives and is given back — or ends it with no job: nothing is lost in
  between, whatever the timing.

A server that refuses ``CLIENT ID`` or ``CLIENT UNBLOCK`` (an ACL; both are tried as the worker starts) gets
RQ's pops on the worker's connection, which a stop ends by raising, as before (a job popped at that moment
is enqueued again by the reaper a lease TTL later). A Redis error under a pop or a fetch while stopping
ends the dequeue too: nothing is held, and RQ's retry loop would wait for Redis without bound.

Between pops, while the worker holds no job (:meth:`StopAwareQueue.may_end_by_raising`: RQ's heartbeat, its
sleep before retrying when Redis is away), the worker may end its dequeue at once by raising
(:class:`graphq.worker.process.supervisor.SupervisedWorker` does).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from redis import ConnectionPool, Redis
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry
from rq import Queue
from rq.intermediate_queue import IntermediateQueue

from graphcore.backend.connection import outlast, refuses_writes

__all__ = ["StopAwareQueue"]

log = logging.getLogger("graphq.worker")

_WAKE_RETRY_S = 0.05
"""How often the waker thread sends ``CLIENT UNBLOCK`` again while the pop has not returned, seconds (a
stop that lands just before the pop is sent finds nothing blocked yet)."""


class _BlockingConnection:
    """A single-connection client for the blocking pops, the client id of its current connection, and a
    client of its own to end them."""

    def __init__(self, connection: Redis) -> None:
        pool = connection.connection_pool
        once = {**pool.connection_kwargs, "retry": Retry(NoBackoff(), 0)}  # RQ's loop retries a failed pop
        own = ConnectionPool(connection_class=pool.connection_class, **once)
        self.client = Redis(connection_pool=own, single_connection_client=True)
        short = {**once, "socket_timeout": 1.0, "socket_connect_timeout": 1.0}
        self.waker = Redis(connection_pool=ConnectionPool(connection_class=pool.connection_class, **short))
        try:
            assert self.client.connection is not None
            self.client.connection.register_connect_callback(self._connected)  # type: ignore[no-untyped-call]
            self.client_id = int(self.client.client_id())
            self.unblock()  # nothing blocked yet: 0, or refused (an ACL) now rather than at the stop
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close both connections."""
        for client in (self.client, self.waker):
            client.close()
            client.connection_pool.disconnect()

    def _connected(self, conn: Any) -> None:
        conn.send_command("CLIENT", "ID")
        self.client_id = int(conn.read_response())

    def unblock(self) -> bool:
        """End the pop blocked on this connection (``CLIENT UNBLOCK``, the timeout way: the pop returns
        nil); True when the server had it blocked."""
        return bool(self.waker.client_unblock(self.client_id))


class StopAwareQueue(Queue):
    """RQ's queue class, with pops that a stop ends without dropping a job (see the module docstring).
    One worker per process: the state is the class's."""

    stopping: ClassVar[bool] = False
    _popping: ClassVar[bool] = False
    _took: ClassVar[bool] = False
    _blocking: ClassVar[_BlockingConnection | None] = None
    _wake: ClassVar[threading.Event | None] = None

    @classmethod
    def start(cls, connection: Redis) -> None:
        """Get ready to pop for a worker on ``connection`` (as its work loop starts: after RQ set the
        connection's socket timeout above its dequeue timeout)."""
        if cls._wake is not None:  # a worker before this one in the process: its waker ends
            cls._wake.set()
        cls.stopping = cls._took = False
        if cls._blocking is not None:
            cls._blocking.close()
        try:
            cls._blocking = outlast(_BlockingConnection, connection)
        except ResponseError as exc:
            log.warning("CLIENT ID or UNBLOCK refused (%s): a stop ends a waiting dequeue by raising", exc)
            cls._blocking = None
        cls._wake = threading.Event()
        threading.Thread(
            target=cls._waker, args=(cls._wake,), name="graphq-dequeue-waker", daemon=True
        ).start()

    @classmethod
    def begin(cls) -> None:
        """A dequeue of the worker starts: it holds no job yet."""
        cls._took = False

    @classmethod
    def may_end_by_raising(cls) -> bool:
        """No job taken since :meth:`begin` and no pop in progress that a stop ends (one on the worker's
        connection, without ``CLIENT ID``, can only be ended by raising): ending the dequeue now by
        raising drops nothing, or is the only way."""
        return not cls._took and (not cls._popping or cls._blocking is None)

    @classmethod
    def stop(cls) -> None:
        """Take no job from now on; a blocking pop in progress ends now. Safe in a signal handler."""
        cls.stopping = True
        if cls._wake is not None:
            cls._wake.set()

    @classmethod
    def _waker(cls, wake: threading.Event) -> None:
        wake.wait()
        blocking = cls._blocking
        while cls._wake is wake and cls._popping and blocking is not None:
            try:
                if blocking.unblock():
                    return
            except RedisError:  # Redis away: the pop fails too, and then ends the dequeue (dequeue_any)
                pass
            wake.wait(_WAKE_RETRY_S)

    @classmethod
    @contextmanager
    def _popping_on(cls, connection: Redis, timeout: int | None) -> Iterator[Redis | None]:
        """The connection a pop uses (the blocking one when it blocks: ``timeout`` set), or None when the
        worker is stopping. Marked popping before the check: a stop seen by the waker as no pop is in
        progress is seen by the pop."""
        cls._popping, cls._took = True, False
        try:
            blocking = cls._blocking
            if cls.stopping:
                yield None
            else:
                yield connection if timeout is None or blocking is None else blocking.client
        finally:
            cls._popping = False

    @classmethod
    def dequeue_any(cls, *args: Any, **kwargs: Any) -> Any:
        """RQ's dequeue of one job. When it fails — a pop or the fetch of the job popped — the worker holds
        no job (RQ's to lose: the reaper enqueues it again); while stopping, a Redis error ends the dequeue
        at once (SystemExit: RQ would retry, and its heartbeat waits for Redis without bound). A pop refused
        by a full Redis (BLMOVE writes) is tried again until Redis accepts it (:func:`outlast`): RQ's loop
        waits out only a lost connection, and would stop the worker on this error."""
        try:
            return super().dequeue_any(*args, **kwargs)
        except Exception as exc:
            cls._took = False
            if cls.stopping and isinstance(exc, RedisConnectionError | RedisTimeoutError):
                raise SystemExit(0) from exc
            if not refuses_writes(exc):
                raise
        return outlast(super().dequeue_any, *args, **kwargs)

    @classmethod
    def lpop(cls, queue_keys: Sequence[str], timeout: int | None, connection: Redis | None = None) -> Any:
        """RQ's pop over several queues (BLPOP), ended by a stop; a job it took after the stop goes back to
        the front of its queue."""
        assert connection is not None
        with cls._popping_on(connection, timeout) as conn:
            popped = None if conn is None else super().lpop(queue_keys, timeout, connection=conn)
            cls._took = popped is not None
        return cls._unless_stopping(popped, lambda job: outlast(connection.lpush, *job))

    @classmethod
    def lmove(cls, connection: Redis, queue_key: str, timeout: int | None) -> Any:
        """RQ's pop from one queue into its intermediate list (BLMOVE), ended by a stop; a job it took after
        the stop goes back to the front of the queue."""
        with cls._popping_on(connection, timeout) as conn:
            popped = None if conn is None else super().lmove(conn, queue_key, timeout)
            cls._took = popped is not None
        return cls._unless_stopping(popped, lambda job: outlast(_give_back, connection, queue_key, job[1]))

    @classmethod
    def _unless_stopping(cls, popped: Any, give_back: Callable[[Any], object]) -> Any:
        """``popped`` (``(queue key, job id)`` or None), unless the worker is stopping: then
        ``give_back(popped)`` and None."""
        if popped is None or not cls.stopping:
            return popped
        give_back(popped)
        cls._took = False
        return None


def _give_back(connection: Redis, queue_key: str, job_id: Any) -> None:
    """Move ``job_id`` from the intermediate list of ``queue_key`` back to the queue's front."""
    with connection.pipeline(transaction=True) as pipe:
        pipe.lrem(IntermediateQueue.get_intermediate_queue_key(queue_key), -1, job_id)
        pipe.lpush(queue_key, job_id)
        pipe.execute()
