"""Lua scripts, one per file; every key reaches them through KEYS (I8)."""

from __future__ import annotations

import weakref
from functools import cache
from importlib.resources import files
from typing import Any

__all__ = ["script", "source"]


@cache
def source(name: str) -> str:
    """The text of ``graphcore/backend/lua/<name>.lua``."""
    return files(__name__).joinpath(f"{name}.lua").read_text()


_registered: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def script(kv: Any, name: str) -> Any:
    """``kv.register_script`` of ``graphcore/backend/lua/<name>.lua`` (a callable ``(keys, args)``), made
    once per client: a step job calls scripts on its hot path."""
    scripts = _registered.setdefault(kv, {})
    if name not in scripts:
        scripts[name] = kv.register_script(source(name))
    return scripts[name]
