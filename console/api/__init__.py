"""The HTTP API under ``/api``: JSON in and out, errors as problem+json (:mod:`graphq.console.problems`)."""

from fastapi import APIRouter

from graphq.console.api import events, runs

__all__ = ["router"]

router = APIRouter(prefix="/api")
router.include_router(runs.router)
router.include_router(events.router)
