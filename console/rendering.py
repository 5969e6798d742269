"""The console's files: :data:`HERE` (``templates/``, ``static/``) and the page :data:`templates`."""

from __future__ import annotations

from importlib.resources import files

from fastapi.templating import Jinja2Templates

from graphq.worker.pinned import SHORT

__all__ = ["HERE", "templates"]

HERE = files("graphq.console")
"""The package's folder: ``templates/`` and ``static/``."""

templates = Jinja2Templates(directory=str(HERE / "templates"))
"""The page templates (autoescaped: a value read from Redis is always text, never HTML)."""
templates.env.globals["SHORT"] = SHORT  # hex digits of a version shown, as the CLI's tables
