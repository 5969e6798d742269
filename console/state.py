"""What the console serves from: :class:`Console`."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

import redis
import redis.asyncio as aioredis
from fastapi import Request
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff

from graphcore.backend.client import Client
from graphcore.settings import Settings
from graphq.console.security import Guard

__all__ = ["MAX_WAITING", "READ_TIMEOUT_S", "Console", "async_twin"]


@dataclass
class Console:
    """What the console serves from.

    Attributes:
        client: the client on the workers' Redis; it enqueues only the workflows its registry loaded.
        settings: the process's settings (queue prefix, limits).
        guard: who may do what (:class:`graphq.console.security.Guard`).
    """

    client: Client
    settings: Settings
    guard: Guard
    _aio: aioredis.Redis | None = field(default=None, init=False, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False, repr=False)
    _stopping: asyncio.Event = field(default_factory=asyncio.Event, init=False, repr=False)

    @property
    def aio(self) -> aioredis.Redis:
        """An async connection to the same Redis (bytes replies), for reads that wait (long-polls, event
        streams) without holding a thread; opened and closed by the app's lifespan (:meth:`open`).

        Raises:
            RuntimeError: the app was not started (a TestClient used without ``with``).
        """
        if self._aio is None:
            raise RuntimeError("the console's async Redis connection is opened when the app starts")
        return self._aio

    def open(self) -> None:
        """(In the app's event loop.) Open :attr:`aio` on the Redis of :attr:`client` (its host, port,
        database, credentials, TLS), retrying a lost connection as :attr:`settings` say
        (``GRAPHQ_REDIS_RETRY_ATTEMPTS``, backoff up to ``GRAPHQ_REDIS_RETRY_MAX_WAIT_S``)."""
        retry = Retry(
            ExponentialWithJitterBackoff(cap=self.settings.redis_retry_max_wait_s),
            self.settings.redis_retry_attempts - 1,
        )
        self._aio = async_twin(self.client.kv, retry)
        self._loop = asyncio.get_running_loop()

    def stop(self) -> None:
        """Tell every wait (a long-poll, an event stream) to end now: the server is stopping. Safe to call
        from a signal handler or another thread; does nothing before :meth:`open` or after the loop closed."""
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._loop.call_soon_threadsafe(self._stopping.set)

    async def stopping(self) -> None:
        """Return once :meth:`stop` was called."""
        await self._stopping.wait()

    async def close(self) -> None:
        """Close :attr:`aio` (idempotent)."""
        if self._aio is not None:
            await self._aio.aclose()
            self._aio = None

    @property
    def kv(self) -> Any:
        """The Redis connection (bytes replies)."""
        return self.client.kv

    @staticmethod
    def of(request: Request) -> Console:
        """The console serving ``request``."""
        console: Console = request.app.state.console
        return console


_SHARED = ("host", "port", "db", "username", "password", "path", "socket_connect_timeout", "client_name")


MAX_WAITING = 5000
"""Most connections :func:`async_twin`'s client opens: each long-poll or event stream waiting holds one
while its ``XREAD BLOCK`` waits (redis-py's default, 100, refused the 101st; Redis serves 10,000 clients
by default)."""

READ_TIMEOUT_S = 60.0
"""How long :func:`async_twin`'s connections wait for a reply: longer than any ``XREAD BLOCK`` the console
sends (:data:`graphq.console.api.follow.BLOCK_S`), which redis-py's default (5 s) is not."""


def async_twin(kv: redis.Redis, retry: Retry) -> aioredis.Redis:
    """An async client on the server ``kv`` is connected to: its address (TCP or Unix socket), database,
    credentials and TLS options (``ssl_*``). Replies are awaited up to :data:`READ_TIMEOUT_S`, at most
    :data:`MAX_WAITING` connections are opened, and ``retry`` says how a lost connection is retried."""
    given = kv.connection_pool.connection_kwargs
    kwargs = {k: v for k, v in given.items() if k in _SHARED or k.startswith("ssl_")}
    kind: type[aioredis.Connection | aioredis.UnixDomainSocketConnection] = aioredis.Connection
    if issubclass(kv.connection_pool.connection_class, redis.SSLConnection):
        kind = aioredis.SSLConnection
    elif issubclass(kv.connection_pool.connection_class, redis.UnixDomainSocketConnection):
        kind = aioredis.UnixDomainSocketConnection
    pool = aioredis.ConnectionPool(
        connection_class=kind, socket_timeout=READ_TIMEOUT_S, max_connections=MAX_WAITING, **kwargs
    )
    return aioredis.Redis(connection_pool=pool, retry=retry)
