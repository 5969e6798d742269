"""Workflows ``upgrade`` and ``upgrade_stops`` with node ``review`` renamed ``approve``, ``upgrade_fan`` with
node ``each`` renamed ``item``."""

from __future__ import annotations

from tests.workflows.upgrade_v1 import build, fanned

graph = build(review_as="approve").compile(name="upgrade")
stops = build(review_as="approve").compile(name="upgrade_stops", interrupt_before=["approve"])
fan = fanned(each_as="item").compile(name="upgrade_fan")
