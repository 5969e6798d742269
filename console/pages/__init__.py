"""The console's pages: server-rendered HTML (:data:`graphq.console.app.templates`)."""

from fastapi import APIRouter

from graphq.console.pages import health, login, runs

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
router.include_router(health.router)
router.include_router(login.router)
router.include_router(runs.router)
