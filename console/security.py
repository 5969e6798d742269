"""Who may do what in the console and the API: :class:`Guard`.

- **Token.** With a token (``GRAPHQ_UI_TOKEN``) every request but ``/login``, ``/healthz`` and ``/static``
  must carry it: the API as ``Authorization: Bearer <token>``, the browser as the session cookie ``/login``
  sets (when it was issued, signed with a key derived from the token: HttpOnly, SameSite=Strict, good for
  :data:`SESSION_S`; ``/logout`` ends it, a new token ends them all). Bound to loopback without one, only
  loopback host names are served (``Host`` is checked: a page of another site cannot reach the console
  through DNS rebinding).
- **Read-only.** Every method but GET and HEAD is refused (403).
- **CSRF.** A POST that a cookie (or no token at all) authenticates must carry the ``X-CSRF-Token`` header
  equal to the ``graphq_csrf`` cookie, a value the console signed (the signed double-submit pattern: the
  pages send it with every htmx request; a value the caller made up is refused). A POST with a bearer
  token needs none: a browser never adds that header by itself. A POST to the API without a bearer token
  must also be JSON: another site cannot send that without a CORS preflight, which the console never
  grants.
- **Headers.** A Content-Security-Policy allows only the console's own scripts and styles.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from starlette.middleware.trustedhost import TrustedHostMiddleware

from graphq.console.problems import problem

__all__ = ["CSRF_COOKIE", "LOOPBACK", "SESSION_COOKIE", "SESSION_S", "Guard", "is_json", "is_loopback"]

SESSION_COOKIE = "graphq_session"
SESSION_S = 12 * 3600
"""How long a browser's sign-in lasts, seconds."""
_PROCESS_KEY = secrets.token_bytes(32)
"""The signing key of a console without a token (one process on loopback)."""
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

    def _sign(self, label: str, value: str) -> str:
        """HMAC-SHA256 (hex) of ``label:value`` under the console's key: derived from the token (so that
        every replica signs alike and a new token voids what the old one signed), else this process's."""
        key = _PROCESS_KEY
        if self.token is not None:
            key = hmac.new(self.token.encode(), b"graphq console keys", hashlib.sha256).digest()
        return hmac.new(key, f"{label}:{value}".encode(), hashlib.sha256).hexdigest()

    def session(self, now: float | None = None) -> str:
        """A new session cookie's value: ``<issued, unix s>.<signature>``."""
        issued = str(int(time.time() if now is None else now))
        return f"{issued}.{self._sign('session', issued)}"

    def _valid_session(self, value: str) -> bool:
        """Whether ``value`` is a session this console issued less than :data:`SESSION_S` ago."""
        issued, _, mac = value.partition(".")
        if not issued.isdigit() or not 0 <= time.time() - int(issued) <= SESSION_S:
            return False
        return hmac.compare_digest(mac.encode(), self._sign("session", issued).encode())

    def new_csrf(self) -> str:
        """A new CSRF token: ``<nonce>.<signature>``."""
        nonce = secrets.token_urlsafe(18)
        return f"{nonce}.{self._sign('csrf', nonce)}"

    def _valid_csrf(self, value: str) -> bool:
        """Whether ``value`` is a CSRF token this console signed."""
        nonce, _, mac = value.rpartition(".")
        return bool(nonce) and hmac.compare_digest(mac.encode(), self._sign("csrf", nonce).encode())

    def admits(self, presented: str) -> bool:
        """Whether ``presented`` is the token (constant time)."""
        return self.token is not None and hmac.compare_digest(presented.encode(), self.token.encode())

    async def check(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        """The middleware: authenticate, refuse what is not allowed, then add the CSRF cookie and headers."""
        given = request.cookies.get(CSRF_COOKIE, "")
        csrf = given if self._valid_csrf(given) else self.new_csrf()
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
                said = "a token is required: send Authorization: Bearer <token>"
                answer = problem(request, 401, said if bearer is None else "that is not the console's token")
                answer.headers["WWW-Authenticate"] = "Bearer"
                return answer
            return RedirectResponse(f"/login?next={request.url.path}", status_code=303)
        if request.method in _SAFE:
            return None
        if self.read_only:
            return problem(request, 403, "the console is read-only (started with --read-only)")
        if bearer is not None:
            return None
        return self._csrf_refusal(request)

    def _authenticated(self, request: Request, bearer: str | None) -> bool:
        if bearer is not None:
            return self.admits(bearer)
        return self._valid_session(request.cookies.get(SESSION_COOKIE, ""))

    def _csrf_refusal(self, request: Request) -> Response | None:
        """The 403 for a cookie-authenticated POST without the matching, signed CSRF token, or a non-JSON API
        POST."""
        sent = request.headers.get("x-csrf-token", "")
        cookie = request.cookies.get(CSRF_COOKIE, "")
        if self._valid_csrf(cookie) and hmac.compare_digest(sent.encode(), cookie.encode()):
            return None
        if request.url.path.startswith("/api"):
            if is_json(request.headers):
                return None
            return problem(
                request, 403, "an API POST without a bearer token must be Content-Type: application/json"
            )
        return problem(request, 403, "refused: a console action needs its CSRF token (reload the page)")


def _bearer(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer`` header, if any."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def is_json(headers: Any) -> bool:
    """Whether ``headers`` say the body is ``application/json`` (parameters such as charset aside)."""
    return str(headers.get("content-type", "")).split(";")[0].strip().lower() == "application/json"
