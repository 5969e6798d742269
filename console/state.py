"""What the console serves from: :class:`Console`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import Request

from graphcore.backend.client import Client
from graphcore.settings import Settings
from graphq.console.security import Guard

__all__ = ["Console"]


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

    @property
    def kv(self) -> Any:
        """The Redis connection (bytes replies)."""
        return self.client.kv

    @staticmethod
    def of(request: Request) -> Console:
        """The console serving ``request``."""
        console: Console = request.app.state.console
        return console
