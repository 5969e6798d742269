"""Release 1 of the ``versioned`` workflow with the version policy ``latest`` (a workflow option)."""

from __future__ import annotations

from tests.workflows.versioned import build
from tests.workflows.versioned_v1 import a, ask, c

versioned = build(a, ask, c, config={"version_policy": "latest"})
