"""Lua scripts, one per file; every key reaches them through KEYS (I8)."""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any

__all__ = ["script", "source"]


@cache
def source(name: str) -> str:
    """The text of ``graphcore/lua/<name>.lua``."""
    return files(__name__).joinpath(f"{name}.lua").read_text()


def script(kv: Any, name: str) -> Any:
    """``kv.register_script`` of ``graphcore/lua/<name>.lua`` (a callable ``(keys, args)``)."""
    return kv.register_script(source(name))
