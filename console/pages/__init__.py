"""The console's pages: server-rendered HTML (:data:`graphq.console.rendering.templates`)."""

from fastapi import APIRouter

from graphq.console.pages import (
    bulk,
    health,
    inbox,
    login,
    run,
    runs,
    schedules,
    tenants,
    thread,
    workers,
    workflows,
)

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
router.include_router(health.router)
router.include_router(login.router)
router.include_router(runs.router)
router.include_router(bulk.router)
router.include_router(run.router)  # after runs: /runs/table is not a run
router.include_router(thread.router)
router.include_router(inbox.router)
router.include_router(workers.router)
router.include_router(tenants.router)
router.include_router(schedules.router)
router.include_router(workflows.router)
