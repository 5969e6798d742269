"""The console's server in process (FastAPI's TestClient on the test Redis): problems, the token, read-only,
CSRF, allowed hosts, escaping; and ``graphq ui``'s refusals on the command line."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from fastapi.testclient import TestClient

from graphcore.backend.client import Client
from graphcore.engine.registry import Registry
from graphcore.settings import Settings
from graphq.console import Console, create_app
from graphq.console.security import CSRF_COOKIE, SESSION_COOKIE, SESSION_S, Guard
from tests.browser import start_console
from tests.workers import Procs, graphq

REGISTRY = Registry.load(["tests.workflows.basic"])


def serve(client: Client, guard: Guard | None = None) -> TestClient:
    console = Console(client, Settings(), guard or Guard())
    return TestClient(create_app(console), base_url="http://127.0.0.1:8000")


def test_a_run_reads_as_the_cli_shows_it(client: Client) -> None:
    run_id = client.enqueue("counter", {"n": 1}, run_id="r-api-1")
    reply = serve(client).get(f"/api/runs/{run_id}")
    assert reply.status_code == 200
    body = reply.json()
    assert (body["id"], body["workflow"], body["status"], body["input"]) == (
        "r-api-1",
        "counter",
        "queued",
        {"n": 1},
    )


def test_an_unknown_run_is_a_404_problem_with_the_cli_text(client: Client) -> None:
    reply = serve(client).get("/api/runs/nope")
    assert reply.status_code == 404
    assert reply.headers["content-type"] == "application/problem+json"
    problem = reply.json()
    assert (problem["status"], problem["title"]) == (404, "Not Found")
    with pytest.raises(Exception) as cli_error:
        client.get_run("nope")
    assert problem["detail"] == str(cli_error.value)


def test_with_a_token_the_api_wants_a_bearer_and_pages_send_to_sign_in(client: Client) -> None:
    run_id = client.enqueue("counter", {"n": 1})
    web = serve(client, Guard(token="s3cret"))
    refused = web.get(f"/api/runs/{run_id}")
    assert (refused.status_code, refused.headers["www-authenticate"]) == (401, "Bearer")
    wrong_bearer = web.get(f"/api/runs/{run_id}", headers={"Authorization": "Bearer wrong"})
    assert (wrong_bearer.status_code, wrong_bearer.json()["detail"]) == (
        401,
        "that is not the console's token",
    )
    assert web.get(f"/api/runs/{run_id}", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    page = web.get("/runs", follow_redirects=False)
    assert (page.status_code, page.headers["location"]) == (303, "/login?next=/runs")
    wrong = web.post("/login", data={"token": "nope", "next": "/runs"}, follow_redirects=False)
    assert wrong.status_code == 401
    signed = web.post("/login", data={"token": "s3cret", "next": "/runs"}, follow_redirects=False)
    assert (signed.status_code, signed.headers["location"]) == (303, "/runs")
    assert SESSION_COOKIE in signed.cookies
    assert "s3cret" not in signed.headers["set-cookie"]
    assert web.get("/runs").status_code == 200  # the session cookie now
    assert "Max-Age=43200" in signed.headers["set-cookie"]
    web.get("/runs")
    out = web.post("/logout", headers={"X-CSRF-Token": web.cookies[CSRF_COOKIE]}, follow_redirects=False)
    assert (out.status_code, out.headers["hx-redirect"]) == (204, "/login")
    assert web.get("/runs", follow_redirects=False).status_code == 303


def test_a_session_lasts_twelve_hours_and_a_new_token_ends_it(client: Client) -> None:
    guard = Guard(token="t1")
    web = serve(client, guard)
    web.cookies.set(SESSION_COOKIE, guard.session(now=time.time() - SESSION_S - 5))
    assert web.get("/runs", follow_redirects=False).status_code == 303  # expired
    web.cookies.set(SESSION_COOKIE, guard.session())
    assert web.get("/runs", follow_redirects=False).status_code == 200
    renewed = serve(client, Guard(token="t2"))
    renewed.cookies.set(SESSION_COOKIE, guard.session())
    assert renewed.get("/runs", follow_redirects=False).status_code == 303
    forged = serve(client, Guard(token="t1"))
    forged.cookies.set(SESSION_COOKIE, f"{int(time.time())}.{'0' * 64}")
    assert forged.get("/runs", follow_redirects=False).status_code == 303


def test_sign_in_never_redirects_off_the_site(client: Client) -> None:
    web = serve(client, Guard(token="t"))
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
        reply = web.post("/login", data={"token": "t", "next": target}, follow_redirects=False)
        assert reply.headers["location"] == "/", target


def test_read_only_refuses_every_action(client: Client) -> None:
    web = serve(client, Guard(read_only=True))
    reply = web.post("/api/runs/x/cancel", json={})
    assert (reply.status_code, reply.json()["detail"]) == (
        403,
        "the console is read-only (started with --read-only)",
    )
    assert web.get("/runs").status_code == 200


def test_a_browser_post_needs_the_csrf_token_of_its_cookie(client: Client) -> None:
    web = serve(client)
    web.get("/runs")  # sets the CSRF cookie
    csrf = web.cookies[CSRF_COOKIE]
    refused = web.post("/runs/x/cancel", data={})
    assert refused.status_code == 403
    assert "CSRF" in refused.text
    forged = web.post("/runs/x/cancel", data={}, headers={"X-CSRF-Token": "guess"})
    assert forged.status_code == 403
    # a value the caller made up, sent as both cookie and header (a non-browser client), is refused too
    made_up = serve(client)
    made_up.cookies.set(CSRF_COOKIE, "abc")
    assert made_up.post("/runs/x/cancel", data={}, headers={"X-CSRF-Token": "abc"}).status_code == 403
    # with the right token the request reaches its route (no such page: 404 or 405, not 403)
    passed = web.post("/runs/x/cancel", data={}, headers={"X-CSRF-Token": csrf})
    assert passed.status_code != 403


def test_an_api_post_without_a_bearer_must_be_json(client: Client) -> None:
    web = serve(client)
    form = web.post("/api/runs/x/cancel", content=b"a=1", headers={"Content-Type": "text/plain"})
    assert form.status_code == 403
    assert form.headers["content-type"] == "application/problem+json"


def test_without_a_token_only_loopback_host_names_are_served(client: Client) -> None:
    web = serve(client)
    assert web.get("/runs", headers={"Host": "evil.example"}).status_code == 400
    assert web.get("/runs", headers={"Host": "localhost:8000"}).status_code == 200
    with_token = serve(client, Guard(token="t"))
    assert with_token.get("/login", headers={"Host": "graphq.internal"}).status_code == 200
    public_read_only = serve(client, Guard(read_only=True, loopback=False))
    assert public_read_only.get("/runs", headers={"Host": "graphq.internal"}).status_code == 200


def test_pages_render_values_from_redis_as_text(client: Client) -> None:
    client.enqueue("counter", {"n": 1}, run_id="r-x", tenant="t1")
    page = serve(client).get("/runs?tenant=t1")
    assert page.status_code == 200
    assert '<a href="/runs/r-x">r-x</a>' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    evil = serve(client).get("/runs?workflow=%3Cscript%3Ealert(1)%3C/script%3E")
    assert "<script>alert(1)</script>" not in evil.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in evil.text


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ("--host", "0.0.0.0"),
            {},
            "error: --host 0.0.0.0 is reachable from other machines: set GRAPHQ_UI_TOKEN or pass --read-only",
        ),
        (("--port", "0"), {}, "Invalid value for '--port'"),
        (
            (),
            {"GRAPHQ_UI_TOKEN": " "},
            "error: GRAPHQ_UI_TOKEN is empty: set a token, or unset it to serve loopback only",
        ),
    ],
)
def test_ui_refuses_bad_input_in_one_line(
    graphq_env: dict[str, str], args: tuple[str, ...], env: dict[str, str], message: str
) -> None:
    done = graphq("ui", *args, env={**graphq_env, **env})
    assert done.returncode == 2
    assert message in done.stderr.strip().splitlines()[-1]


def test_healthz_answers_without_the_token_and_shows_no_data(client: Client) -> None:
    reply = serve(client, Guard(token="t")).get("/healthz", headers={"Host": "graphq.internal"})
    assert (reply.status_code, reply.json()) == (200, {"redis": "ok"})


def test_ctrl_c_stops_the_console(procs: Procs, graphq_env: dict[str, str]) -> None:
    console = start_console(procs, graphq_env)
    console.proc.send_signal(signal.SIGINT)
    assert console.proc.wait(30) == 0
    assert "Traceback" not in procs.logged(console.proc)


def test_an_htmx_request_gets_the_error_line_alone(client: Client) -> None:
    web = serve(client)
    web.get("/runs")
    csrf = web.cookies[CSRF_COOKIE]
    reply = web.get("/workflows/nope", headers={"HX-Request": "true", "X-CSRF-Token": csrf})
    assert reply.status_code == 404
    assert reply.text.strip().startswith('<p class="error" role="alert">')
    assert "<html" not in reply.text
    page = web.get("/workflows/nope")
    assert "<html" in page.text


def test_other_commands_do_not_load_the_web_stack() -> None:
    """FastAPI, Starlette, Jinja2, uvicorn and jsonschema load only where they are used: every graphq
    command took 0.3 s more with them, a worker's start among them (a SIGTERM that came first killed it)."""
    web = ("fastapi", "starlette", "jinja2", "uvicorn", "jsonschema")
    code = (
        f"import sys, graphq.cli.main, graphq.worker.step.job; print([m for m in {web} if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
