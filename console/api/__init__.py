"""The HTTP API under ``/api``: JSON in and out, errors as problem+json (:mod:`graphq.console.problems`)."""

from fastapi import APIRouter

from graphq.console.api import requests, runs, threads

__all__ = ["router"]

router = APIRouter(prefix="/api")
router.include_router(runs.router)
router.include_router(requests.router)
router.include_router(threads.router)
