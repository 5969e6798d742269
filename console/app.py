"""The console's ASGI application: :func:`create_app`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from graphq.console.api import document_api
from graphq.console.api import router as api_router
from graphq.console.pages import router as pages_router
from graphq.console.problems import install_problem_handlers
from graphq.console.rendering import HERE
from graphq.console.state import Console

__all__ = ["create_app"]


def create_app(console: Console) -> FastAPI:
    """The console and API application for ``console``.

    Routes: ``/api/...`` (:mod:`graphq.console.api`; OpenAPI at ``/api/openapi.json``, no docs page),
    ``/static/...`` (the package's assets) and the pages (:mod:`graphq.console.pages`). Starting the app
    opens the console's async Redis connection (:attr:`Console.aio`); stopping it closes it.
    """

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        console.open()
        try:
            yield
        finally:
            await console.close()

    app = FastAPI(
        lifespan=lifespan,
        title="graphq",
        summary="Durable graph workflows on Redis: runs, human requests, threads.",
        version=version("graphq"),
        openapi_url="/api/openapi.json",
        docs_url=None,  # Swagger UI loads from a CDN with an inline script, which the CSP refuses
        redoc_url=None,
    )
    made = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = document_api(made())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.state.console = console
    install_problem_handlers(app)
    console.guard.install(app)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.include_router(api_router)
    app.include_router(pages_router)
    return app
