"""``/login``: trade the console's token for a session cookie."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from graphq.console.rendering import templates
from graphq.console.security import SESSION_COOKIE, SESSION_S
from graphq.console.state import Console

__all__ = ["router"]

router = APIRouter()


@router.get("/login")
def login_page(request: Request, next: str = "/") -> Response:
    return templates.TemplateResponse(request, "login.html", {"next": _local(next), "wrong": False})


@router.post("/login")
def login(request: Request, token: Annotated[str, Form()], next: Annotated[str, Form()] = "/") -> Response:
    guard = Console.of(request).guard
    if not guard.admits(token):
        return templates.TemplateResponse(
            request, "login.html", {"next": _local(next), "wrong": True}, status_code=401
        )
    response = RedirectResponse(_local(next), status_code=303)
    response.set_cookie(SESSION_COOKIE, guard.session(), max_age=SESSION_S, httponly=True, samesite="strict")
    return response


@router.post("/logout")
def logout() -> Response:
    """End the browser's session (an htmx POST: its CSRF header) and go to the sign-in page."""
    response = Response(status_code=204, headers={"HX-Redirect": "/login"})
    response.delete_cookie(SESSION_COOKIE, httponly=True, samesite="strict")
    return response


def _local(path: str) -> str:
    """``path`` when it is a path of this site, else ``/`` (no open redirect)."""
    return path if path.startswith("/") and not path.startswith("//") and "\\" not in path else "/"
