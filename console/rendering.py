"""The console's files: :data:`HERE` (``templates/``, ``static/``) and the page :data:`templates`."""

from __future__ import annotations

from importlib.resources import files
from urllib.parse import quote

from fastapi.templating import Jinja2Templates

from graphq.worker.pinned import SHORT

__all__ = ["HERE", "quote_id", "templates"]

HERE = files("graphq.console")
"""The package's folder: ``templates/`` and ``static/``."""


def quote_id(value: str) -> str:
    """``value`` (a run or thread id) as one URL path segment: every reserved character percent-encoded,
    ``/`` and ``#`` too (Jinja's ``urlencode`` leaves ``/``). Used as the templates' ``quote_id`` filter."""
    return quote(value, safe="")


templates = Jinja2Templates(directory=str(HERE / "templates"))
"""The page templates (autoescaped: a value read from Redis is always text, never HTML)."""
templates.env.globals["SHORT"] = SHORT  # hex digits of a version shown, as the CLI's tables
templates.env.filters["quote_id"] = quote_id
