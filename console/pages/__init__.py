"""The console's pages: server-rendered HTML (:data:`graphq.console.app.templates`)."""

from fastapi import APIRouter

from graphq.console.pages import inbox, login, run, runs, thread

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
router.include_router(login.router)
router.include_router(runs.router)
router.include_router(run.router)  # after runs: /runs/table is not a run
router.include_router(thread.router)
router.include_router(inbox.router)
