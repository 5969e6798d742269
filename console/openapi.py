"""The API's OpenAPI document: ``python -m graphq.console.openapi > docs/reference/openapi.json``.

The document is checked in (``docs/reference/openapi.json``); a test compares it with what the server
serves at ``/api/openapi.json``.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.console.app import create_app
from graphq.console.security import Guard
from graphq.console.state import Console

__all__ = ["document", "text"]


def document() -> dict[str, Any]:
    """The OpenAPI document of the console's API (no Redis is contacted)."""
    console = Console(Client(redis.Redis(), Registry({})), Settings(), Guard())
    doc: dict[str, Any] = create_app(console).openapi()
    return doc


def text(doc: dict[str, Any]) -> str:
    """``doc`` as it is checked in: indented JSON, keys in the server's order, a final newline."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(text(document()), end="")
