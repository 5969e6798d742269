"""Serving the console: :func:`serve` runs its app with uvicorn until SIGTERM or Ctrl-C."""

from __future__ import annotations

import signal
from types import FrameType

import uvicorn

from graphq.console.app import create_app
from graphq.console.state import Console

__all__ = ["serve"]


def serve(console: Console, host: str, port: int) -> None:
    """Serve ``console`` on ``host``:``port`` until asked to stop; then every wait ends at once and the
    process exits 0 (SIGTERM as Ctrl-C)."""
    _stop_cleanly()
    config = uvicorn.Config(
        create_app(console), host=host, port=port, log_level="warning", timeout_graceful_shutdown=5
    )
    _Server(config, console).run()


class _Server(uvicorn.Server):
    """uvicorn's server that, asked to stop (SIGTERM, Ctrl-C), also ends the console's waits at once
    (:meth:`Console.stop`): uvicorn waits for open connections before it stops, and a long-poll or an event
    stream would otherwise hold it until its graceful-shutdown timeout, then be cut."""

    def __init__(self, config: uvicorn.Config, console: Console) -> None:
        super().__init__(config)
        self.console = console

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self.console.stop()


def _stop_cleanly() -> None:
    """Make SIGTERM and SIGINT end the server with exit code 0: uvicorn stops on either, then raises the
    signal again with the handler it found, which now does nothing (the default would end the process by the
    signal: status 143 in a pod, where the workers and the scheduler exit 0)."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)
