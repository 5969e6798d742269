"""What every command shares: settings, workflows and Redis connections, built lazily from global options."""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphcore.backend.catalog import loaded_workflow
from graphcore.backend.client import Client
from graphcore.backend.connection import check_url, connect
from graphcore.backend.embedded import EmbeddedRedis
from graphcore.engine.executor import CompiledGraph
from graphcore.engine.registry import Registry
from graphcore.errors import ConfigError, GraphqError
from graphcore.settings import Settings, get_settings
from graphq.worker.queue import RQStepQueue

__all__ = ["SERVER_URL_FILE", "AppContext", "export_env"]

SERVER_URL_FILE = "server.url"
"""In the local data directory while a command's embedded server runs: its URL, so that other commands can
read the data (and cancel a run) meanwhile."""


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
    _url: str | None = None
    _server: EmbeddedRedis | None = field(default=None, repr=False)
    url_source: str = "GRAPHQ_REDIS_URL"
    """Where the Redis URL came from, as error messages name it: ``--redis-url`` or the variable."""

    @classmethod
    def from_options(cls, redis_url: str | None, workflows: str | None, url_source: str) -> AppContext:
        """Export the global options as ``GRAPHQ_REDIS_URL``/``GRAPHQ_WORKFLOWS`` and reset the settings;
        ``url_source``: ``--redis-url`` when the option (not the variable) gave the URL."""
        export_env("GRAPHQ_REDIS_URL", redis_url)
        export_env("GRAPHQ_WORKFLOWS", workflows)
        get_settings.cache_clear()
        return cls(url_source=url_source)

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
            _importable_here()
            self._registry = Registry.load(self.settings.workflows.split(","))
        return self._registry

    def module_registry(self, name: str) -> Registry:
        """The workflows of module ``name`` alone (:meth:`Registry.of_module`), importable from the current
        directory as :attr:`registry`'s modules are.

        Raises:
            ConfigError: the module cannot be imported.
        """
        _importable_here()
        return Registry.of_module(name)

    def redis_url(self) -> str:
        """The configured Redis URL.

        Raises:
            ConfigError: none is configured, or the value is not a Redis URL (not shown: it may be a secret).
        """
        if not self.settings.redis_url:
            raise ConfigError("no Redis URL: set GRAPHQ_REDIS_URL or pass --redis-url")
        return check_url(self.settings.redis_url, self.url_source)  # before anything prints it

    @property
    def local(self) -> bool:
        """True when no Redis URL is configured: commands then use the local data of ``graphq run``."""
        return not self.settings.redis_url

    def url(self, local: bool = False, *, share: bool = False) -> str:
        """The Redis URL to use, fixed for the rest of the command.

        Args:
            local: without a URL, use the local data that ``graphq run`` keeps in ``GRAPHQ_DATA_DIR``: an
                embedded server is started on it for this command (stopped by :meth:`close`).
            share: when another graphq command holds the local data, use the server it started (for short
                reads and writes, not for working runs: that server stops with its command).

        Raises:
            ConfigError: no or a malformed URL (and no local data when ``local``); the local data is in use
                by another command (and ``share`` is false or its server does not answer).
        """
        if self._url is None:
            self._url = self._local_url(share) if local and self.local else self.redis_url()
        return self._url

    def kv(self, local: bool = False, *, share: bool = False) -> Any:
        """A connected Redis client (bytes replies) on :meth:`url` (same arguments).

        Raises:
            ConfigError: see :meth:`url`.
            RedisUnavailableError: Redis cannot be reached after bounded retries (password redacted).
        """
        if self._kv is None:
            self._kv = connect(self.url(local, share=share))
        return self._kv

    def _local_url(self, share: bool) -> str:
        """Start an embedded server on the local data and publish its URL (or, with ``share``, use the one
        another command runs there)."""
        data = Path(self.settings.data_dir)
        if not data.is_dir():
            raise ConfigError(
                f"no Redis URL: set GRAPHQ_REDIS_URL or pass --redis-url (and no local data in "
                f"{data} from `graphq run`)"
            )
        try:
            self._server = EmbeddedRedis(data_dir=data).start()
        except ConfigError:
            shared = _running_server(data) if share else None
            if shared is None:
                raise
            return shared
        (data / SERVER_URL_FILE).write_text(self._server.url + "\n", encoding="utf-8")
        return self._server.url

    @property
    def private(self) -> bool:
        """True when this command started the Redis it uses: no other process works its queues."""
        return self._server is not None

    def close(self) -> None:
        """Close the connection and stop the embedded server this command started (idempotent)."""
        if self._kv is not None:
            self._kv.close()
            self._kv = None
        if self._server is not None:
            (self._server.data_dir / SERVER_URL_FILE).unlink(missing_ok=True)
            self._server.stop()
            self._server = None

    def workflow(self, name: str, kv: Any = None) -> CompiledGraph:
        """The workflow ``name`` of this process's registry, to enqueue it (its input is checked against its
        state schema, which needs its code here).

        Raises:
            UnknownWorkflowError: not loaded here; when the workers published it (the catalog on ``kv``, R9)
                the message says so and how to load it (``--workflows``).
        """
        return loaded_workflow(self.registry, lambda: kv if kv is not None else self.kv(), name)

    def reader(self) -> Client:
        """A read-only client (runs, state, history); needs no workflow modules. Without a Redis URL it
        reads the local data of ``graphq run``, also while another command holds it.

        The workflows are still loaded when they can be: that is what allows the classes their state
        schemas name to be read back (serde, I5), and a completed run's result to be shown as ``invoke``
        returns it (narrowed to its workflow's output schema; the state values when its code is not
        loaded). When they cannot, values of those classes fail to load with an error naming the class and
        ``GRAPHQ_SERDE_ALLOWED_CLASSES``; everything else reads."""
        return Client(self.kv(local=True, share=True), self.loaded())

    def loaded(self) -> Registry:
        """The workflows of this process when they can be loaded (:attr:`registry`), else none."""
        with contextlib.suppress(ConfigError):
            return self.registry
        return Registry({})

    def client(self, kv: Any = None, *, local: bool = False, share: bool = False) -> Client:
        """A client that can enqueue, on ``kv`` (default :meth:`kv` with ``local`` and ``share``)."""
        kv = self.kv(local, share=share) if kv is None else kv
        return Client(kv, self.registry, RQStepQueue(kv, self.settings))


def _running_server(data: Path) -> str | None:
    """The URL of the server another graphq command runs on ``data``, if it answers."""
    try:
        url = (data / SERVER_URL_FILE).read_text(encoding="utf-8").strip()
        probe = connect(url, attempts=1)
    except (OSError, GraphqError):
        return None
    probe.close()
    return url


def _importable_here() -> None:
    """Put the current directory on ``sys.path`` (last, so that a user's module cannot shadow graphq's)."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
