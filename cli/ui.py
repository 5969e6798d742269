"""``graphq ui``: serve the operator console and the HTTP API (:mod:`graphq.console`)."""

from __future__ import annotations

import click

from graphcore.backend.client import Client
from graphq.cli.context import AppContext
from graphq.cli.errors import fail
from graphq.worker.queue import RQStepQueue

__all__ = ["ui"]


@click.command(short_help="Serve the operator console and the HTTP API.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(1, 65535), default=8000, show_default=True, help="TCP port to listen on."
)
@click.option(
    "--read-only",
    is_flag=True,
    help="Refuse every action (cancel, answer, enqueue ...): pages and GET requests only.",
)
@click.pass_obj
def ui(app: AppContext, host: str, port: int, read_only: bool) -> None:
    """Serve the operator console (pages at /) and the HTTP API (/api, OpenAPI at /api/openapi.json) from
    the Redis the workers use, or without a URL from the local data of `graphq run`.

    It listens on 127.0.0.1 unless --host says otherwise. Another host needs GRAPHQ_UI_TOKEN (every request
    then carries it) or --read-only. Enqueueing through the API needs the workflows' code here
    (--workflows); the pages enqueue nothing, and act on what the workers wrote. Ctrl-C stops it.
    """
    # FastAPI, Jinja2 and uvicorn load for this command only: every other graphq command (a worker's start
    # among them) took 0.3 s more with them
    from graphq.console.security import Guard, is_loopback
    from graphq.console.serve import serve
    from graphq.console.state import Console

    secret = app.settings.ui_token
    token = None if secret is None else secret.get_secret_value()
    if token is not None and not token.strip():
        fail("GRAPHQ_UI_TOKEN is empty: set a token, or unset it to serve loopback only")
    if not is_loopback(host) and token is None and not read_only:
        fail(f"--host {host} is reachable from other machines: set GRAPHQ_UI_TOKEN or pass --read-only")
    kv = app.kv(local=True, share=True)
    client = Client(kv, app.loaded(), RQStepQueue(kv, app.settings))
    console = Console(client, app.settings, Guard(token, read_only, is_loopback(host)))
    click.echo(f"graphq console on http://{_shown(host)}:{port}/ (API under /api; Ctrl-C stops it)")
    serve(console, host, port)


def _shown(host: str) -> str:
    """``host`` as it goes in a URL (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
