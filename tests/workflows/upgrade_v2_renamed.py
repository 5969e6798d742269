"""Workflow ``upgrade`` with node ``review`` renamed ``approve``."""

from __future__ import annotations

from tests.workflows.upgrade_v1 import build

graph = build(review_as="approve").compile(name="upgrade")
stops = build(review_as="approve").compile(name="upgrade_stops", interrupt_before=["approve"])
