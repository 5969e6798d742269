"""Who may do what in the console and the API: :class:`Guard`.

- **Token.** With a token (``GRAPHQ_UI_TOKEN``) every request but ``/login``, ``/healthz`` and ``/static``
  must carry it: the API as ``Authorization: Bearer <token>``, the browser as the session cookie ``/login``
  sets (an HMAC of the token, HttpOnly, SameSite=Strict). Bound to loopback without one, only loopback host
  names are served (``Host`` is checked: a page of another site cannot reach the console through DNS
  rebinding).
- **Read-only.** Every method but GET and HEAD is refused (403).
- **CSRF.** A POST that a cookie (or no token at all) authenticates must carry the ``X-CSRF-Token`` header
  equal to the ``graphq_csrf`` cookie (the double-submit pattern; the pages send it with every htmx
  request). A POST with a bearer token needs none: a browser never adds that header by itself. A POST to the
  API without a bearer token must also be JSON: another site cannot send that without a CORS preflight,
  which the console never grants.
- **Headers.** A Content-Security-Policy allows only the console's own scripts and styles.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from starlette.middleware.trustedhost import TrustedHostMiddleware

from graphq.console.problems import problem

__all__ = ["CSRF_COOKIE", "LOOPBACK", "SESSION_COOKIE", "Guard", "is_loopback"]

SESSION_COOKIE = "graphq_session"
CSRF_COOKIE = "graphq_csrf"
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
"""Host names a console without a token answers to."""
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
_OPEN = ("/static/", "/login", "/healthz")
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or name to bind) is this machine only."""
    return host in LOOPBACK or host.startswith("127.")


@dataclass(frozen=True)
class Guard:
    """The console's access rules.

    Attributes:
        token: the shared secret callers must present; None: no authentication.
        read_only: refuse every action (all methods but GET and HEAD).
        loopback: the server listens on loopback only; without a token it then answers loopback host names
            only.
    """

    token: str | None = None
    read_only: bool = False
    loopback: bool = True

    def install(self, app: FastAPI) -> None:
        """Add the checks to ``app`` (outermost first: allowed hosts, then :meth:`check`)."""
        app.middleware("http")(self.check)
        if self.token is None and self.loopback:
            app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK))

    def session(self) -> str:
        """The session cookie's value: HMAC-SHA256 of a fixed label under the token (hex)."""
        assert self.token is not None
        return hmac.new(self.token.encode(), b"graphq console session", hashlib.sha256).hexdigest()

    def admits(self, presented: str) -> bool:
        """Whether ``presented`` is the token (constant time)."""
        return self.token is not None and hmac.compare_digest(presented.encode(), self.token.encode())

    async def check(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        """The middleware: authenticate, refuse what is not allowed, then add the CSRF cookie and headers."""
        csrf = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)
        request.state.csrf = csrf
        refused = self._refusal(request)
        response = refused if refused is not None else await call_next(request)
        if request.cookies.get(CSRF_COOKIE) != csrf:
            response.set_cookie(CSRF_COOKIE, csrf, httponly=True, samesite="strict")
        response.headers.setdefault("Content-Security-Policy", _CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response

    def _refusal(self, request: Request) -> Response | None:
        """The response refusing ``request``, or None to serve it."""
        path = request.url.path
        if path.startswith(_OPEN):
            return None
        bearer = _bearer(request)
        if self.token is not None and not self._authenticated(request, bearer):
            if path.startswith("/api"):
                answer = problem(request, 401, "a token is required: send Authorization: Bearer <token>")
                answer.headers["WWW-Authenticate"] = "Bearer"
                return answer
            return RedirectResponse(f"/login?next={request.url.path}", status_code=303)
        if request.method in _SAFE:
            return None
        if self.read_only:
            return problem(request, 403, "the console is read-only (started with --read-only)")
        if bearer is not None:
            return None
        return _csrf_refusal(request)

    def _authenticated(self, request: Request, bearer: str | None) -> bool:
        if bearer is not None:
            return self.admits(bearer)
        cookie = request.cookies.get(SESSION_COOKIE, "")
        return hmac.compare_digest(cookie.encode(), self.session().encode())


def _bearer(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer`` header, if any."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def _csrf_refusal(request: Request) -> Response | None:
    """The 403 for a cookie-authenticated POST without the matching CSRF header, or a non-JSON API POST."""
    sent = request.headers.get("x-csrf-token", "")
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if cookie and hmac.compare_digest(sent.encode(), cookie.encode()):
        return None
    if request.url.path.startswith("/api") and _json(request.headers):
        return None
    return problem(request, 403, "refused: a console action needs its CSRF token (reload the page)")


def _json(headers: Any) -> bool:
    return str(headers.get("content-type", "")).split(";")[0].strip().lower() == "application/json"
