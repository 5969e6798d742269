"""Lua scripts, one per file; every key reaches them through KEYS (I8).

Lua scripts cannot include files: a line ``--#include <part>`` in a script is replaced, as the script is
read, by the text of the fragment ``_<part>.lua`` (a fragment is no script of its own: functions shared
by several scripts, e.g. ``_plan.lua``, the planned checkpoint write of ``put_checkpoint.lua`` and
``commit_step.lua``).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from functools import cache
from importlib.resources import files
from typing import Any

__all__ = ["script", "source", "stage"]

_INCLUDE = re.compile(r"^--#include (\w+)$", re.MULTILINE)
_COMMENT = re.compile(r"^[ \t]*--(?!#include ).*$", re.MULTILINE)


@cache
def source(name: str) -> str:
    """The text of ``graphcore/backend/lua/<name>.lua``, its ``--#include`` lines replaced by fragments and
    its comment-only lines emptied (kept as blank lines, so that Redis's error line numbers still point into
    the file): a staged EVAL carries the text on every call (:func:`stage`), and the comments were about
    a third of its bytes (admission.lua: 13.4 KB, 9.6 KB without them)."""
    text = _COMMENT.sub("", files(__name__).joinpath(f"{name}.lua").read_text())
    return _INCLUDE.sub(lambda include: source(f"_{include.group(1)}").rstrip("\n"), text)


_registered: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def script(kv: Any, name: str) -> Any:
    """``kv.register_script`` of ``graphcore/backend/lua/<name>.lua`` (a callable ``(keys, args)``), made
    once per client: a step job calls scripts on its hot path."""
    scripts = _registered.setdefault(kv, {})
    if name not in scripts:
        scripts[name] = kv.register_script(source(name))
    return scripts[name]


def stage(pipe: Any, name: str, keys: Sequence[str], args: Sequence[Any]) -> None:
    """Queue script ``name`` on ``pipe`` (a MULTI pipeline) as an EVAL carrying its text.

    Not :func:`script` with ``client=pipe``: redis-py then sends SCRIPT EXISTS before the transaction, one
    more round trip each time; and not a bare EVALSHA, which fails alone inside the transaction once Redis
    has lost its script cache (a restart) while the transaction's other writes apply. An EVAL runs in the
    transaction in any case, for the cost of the script's bytes.
    """
    pipe.eval(source(name), len(keys), *keys, *args)
