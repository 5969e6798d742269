"""Environments for subprocesses started by tests."""

from __future__ import annotations

import os

__all__ = ["clean_env"]


def clean_env(**extra: str) -> dict[str, str]:
    """``os.environ`` without the developer's ``GRAPHQ_*`` settings, plus ``extra``.

    ``GRAPHQ_DATA_DIR`` is kept: the autouse fixture ``_private_cwd`` points it into the test's own empty
    directory, so a subprocess started in the repository root does not see the ``.graphq/`` there. So is
    ``GRAPHQ_RUN_PROCESSES``, which that fixture sets to 1: `graphq run` works a run in its own process
    only, unless a test asks for a pool (tests/test_run_pool.py).
    """
    kept = ("GRAPHQ_DATA_DIR", "GRAPHQ_RUN_PROCESSES")
    base = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHQ_") or k in kept}
    return {**base, **extra}
