"""A page with a part that reloads itself: :func:`live_page`.

The page (``GET path``) renders ``page``; its live part alone (``GET path/table``) renders ``part``, which the
page includes inside the ``live`` macro of ``_live.html`` (htmx polls ``path/table`` every 2 s and swaps the
part in, with the page's filter form's values when it has one). Both get the context ``load`` returns.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from graphq.console.rendering import templates

__all__ = ["Load", "live_page"]

Load = Callable[[Request], Awaitable[dict[str, Any]]]
"""What a live page shows: the template context for a request (its query string holds the filters)."""


def live_page(router: APIRouter, path: str, page: str, part: str, load: Load) -> None:
    """Serve ``GET path`` (template ``page``) and ``GET path/table`` (template ``part``) from ``load``."""

    async def whole(request: Request) -> Response:
        return templates.TemplateResponse(request, page, await load(request))

    async def fragment(request: Request) -> Response:
        return templates.TemplateResponse(request, part, await load(request))

    router.add_api_route(path, whole, methods=["GET"], name=page)
    router.add_api_route(f"{path}/table", fragment, methods=["GET"], name=part)
