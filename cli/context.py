"""What every command shares: settings, workflows and Redis connections, built lazily from global options."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphcore.client import Client
from graphcore.connection import connect
from graphcore.embedded import EmbeddedRedis
from graphcore.errors import ConfigError
from graphcore.registry import Registry
from graphcore.settings import Settings, get_settings
from worker.queue import RQStepQueue

__all__ = ["AppContext", "export_env"]


def export_env(name: str, value: str | None) -> None:
    """Put ``value`` into ``os.environ[name]`` (when given), so that worker child processes see it."""
    if value is not None:
        os.environ[name] = value


@dataclass
class AppContext:
    """Lazily built shared objects of one ``graphq`` invocation.

    The global options are exported into the environment before anything is built, so the settings, this
    process and spawned worker processes all agree.
    """

    _settings: Settings | None = None
    _registry: Registry | None = None
    _kv: Any = field(default=None, repr=False)

    @classmethod
    def from_options(cls, redis_url: str | None, workflows: str | None) -> AppContext:
        """Export the global options as ``GRAPHQ_REDIS_URL``/``GRAPHQ_WORKFLOWS`` and reset the settings."""
        export_env("GRAPHQ_REDIS_URL", redis_url)
        export_env("GRAPHQ_WORKFLOWS", workflows)
        get_settings.cache_clear()
        return cls()

    @property
    def settings(self) -> Settings:
        """The validated settings.

        Raises:
            ConfigError: a ``GRAPHQ_*`` variable is malformed or out of range.
        """
        if self._settings is None:
            self._settings = get_settings()
        return self._settings

    @property
    def registry(self) -> Registry:
        """Workflows from entry points and ``GRAPHQ_WORKFLOWS`` modules.

        The current directory is put on ``sys.path`` (last, so that it cannot shadow graphq's own
        packages), so that a project's own modules import from a console script too.

        Raises:
            ConfigError: a module cannot be imported or an entry point is broken.
        """
        if self._registry is None:
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.append(os.getcwd())  # last: a user's worker.py or cli.py must not shadow graphq
            self._registry = Registry.load(self.settings.workflows.split(","))
        return self._registry

    def redis_url(self) -> str:
        """The configured Redis URL.

        Raises:
            ConfigError: none is configured.
        """
        if not self.settings.redis_url:
            raise ConfigError("no Redis URL: set GRAPHQ_REDIS_URL or pass --redis-url")
        return self.settings.redis_url

    def kv(self, local: bool = False) -> Any:
        """A connected Redis client (bytes replies) on :meth:`redis_url`.

        Args:
            local: without a URL, read the local data that ``graphq run`` keeps in ``GRAPHQ_DATA_DIR``
                (an embedded server is started on it for this command and stopped at exit).

        Raises:
            ConfigError: no or a malformed URL (and no local data when ``local``); the local data is in use
                by a running ``graphq run``.
            RedisUnavailableError: Redis cannot be reached after bounded retries (password redacted).
        """
        if self._kv is None:
            url = self._local_url() if local and not self.settings.redis_url else self.redis_url()
            self._kv = connect(url)
        return self._kv

    def _local_url(self) -> str:
        data = Path(self.settings.data_dir)
        if not data.is_dir():
            raise ConfigError(
                f"no Redis URL: set GRAPHQ_REDIS_URL or pass --redis-url (and no local data in "
                f"{data} from `graphq run`)"
            )
        return EmbeddedRedis(data_dir=data).start().url  # stopped at exit (atexit)

    def reader(self) -> Client:
        """A read-only client (runs, state, history); needs no workflow modules. Without a Redis URL it
        reads the local data of ``graphq run``."""
        return Client(self.kv(local=True), Registry({}))

    def client(self, kv: Any = None) -> Client:
        """A client that can enqueue, on ``kv`` (default :meth:`kv`)."""
        kv = self.kv() if kv is None else kv
        return Client(kv, self.registry, RQStepQueue(kv, self.settings))
