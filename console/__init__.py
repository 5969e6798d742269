"""The operator console and the HTTP API, served together by ``graphq ui`` (:func:`create_app`).

One ASGI application (FastAPI on Starlette, run by uvicorn) on the Redis the workers use:

- ``/api/...``: the HTTP API (JSON; errors as ``application/problem+json``, RFC 9457), for pipelines
  written in any language; its OpenAPI document is served at ``/api/openapi.json``;
- every other path: the console's pages, rendered on the server (Jinja2, autoescaped), with htmx for
  live parts; the assets ship in the package (``static/``), nothing is fetched from a CDN.

:mod:`graphq.console.security` holds who may do what (token, read-only, CSRF, allowed hosts).
"""

from graphq.console.app import create_app
from graphq.console.state import Console

__all__ = ["Console", "create_app"]
