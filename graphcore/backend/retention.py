"""What is kept of a thread's checkpoints once they are not needed (R5, R7).

A completed run's result is the values of its head checkpoint, read from there (not stored twice, I4), so
before that checkpoint goes — replaced by a later run's working state when no history is kept
(``GRAPHQ_ENABLE_CHECKPOINTING=false``), or removed after completion
(``GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION=false``) — the result is copied into the run record
(:func:`keep_result`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphcore import keys
from graphcore.backend.lua import script
from graphcore.checkpoints import serde

__all__ = ["keep_result"]


def keep_result(kv: Any, thread_id: str, run_id: str, head_id: str, values: Mapping[str, Any]) -> bool:
    """Store ``values`` (the channel values of checkpoint ``head_id``) as the result of ``run_id``, if the
    run is Completed with that head and has no stored result yet (``keep_result.lua``; idempotent).

    Returns:
        True when the result was stored now.

    Raises:
        SerializationError: a value is outside the serde allow-list (it was stored once, so only a changed
            allow-list can cause this).
    """
    blob = serde.dumps(dict(values), path="result")
    return bool(script(kv, "keep_result")(keys=[keys.run(thread_id, run_id)], args=[head_id, blob]))
