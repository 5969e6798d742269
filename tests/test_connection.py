"""redact_url, the transient-error predicate, the retry policy and connect(), against real redis-servers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis
import redis.exceptions as rex

from graphcore.backend.connection import (
    TRANSIENT_REDIS_ERRORS,
    connect,
    is_transient,
    redact_url,
    redis_retry,
    redis_retrying,
)
from graphcore.backend.embedded import EmbeddedRedis, free_port
from graphcore.errors import ConfigError, RedisUnavailableError


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://:secret@h:6379/0", "redis://:***@h:6379/0"),
        ("redis://user:pw@h/1", "redis://user:***@h/1"),
        ("rediss://default:p%40ss@cache.example.com:6380/2", "rediss://default:***@cache.example.com:6380/2"),
        ("redis://:p@ss@h:6379/0", "redis://:***@h:6379/0"),
        ("redis://:pa/ss?x#y@h/0", "redis://:***@h/0"),
        ("redis://:@h/0", "redis://:***@h/0"),
        ("unix://:pw@/run/redis.sock?db=3", "unix://:***@/run/redis.sock?db=3"),
        ("unix:///run/redis.sock?db=1&password=secret", "unix:///run/redis.sock?db=1&password=***"),
        ("redis://h:6379/0?password=p@ss&db=2", "redis://h:6379/0?password=***&db=2"),
        # no password: unchanged
        ("redis://h:6379/0", "redis://h:6379/0"),
        ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
        ("redis://user@h/1", "redis://user@h/1"),
        ("unix:///run/redis.sock", "unix:///run/redis.sock"),
        ("localhost:6379", "localhost:6379"),
        ("", ""),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (rex.ConnectionError("refused"), True),
        (rex.TimeoutError("timed out"), True),
        (rex.BusyLoadingError("LOADING"), True),
        (rex.TryAgainError("TRYAGAIN"), True),
        (rex.MaxConnectionsError("too many"), True),
        (rex.AuthenticationError("WRONGPASS"), False),
        (rex.AuthorizationError("denied"), False),
        (rex.ResponseError("ERR wrong type"), False),
        (rex.NoPermissionError("NOPERM"), False),
        (rex.DataError("bad"), False),
        (ValueError("x"), False),
        (OSError("x"), False),
    ],
)
def test_is_transient(exc: BaseException, expected: bool) -> None:
    assert is_transient(exc) is expected


def test_transient_error_tuple() -> None:
    assert set(TRANSIENT_REDIS_ERRORS) == {
        rex.ConnectionError,
        rex.TimeoutError,
        rex.BusyLoadingError,
        rex.TryAgainError,
    }


def test_redis_retry_retries_transient_errors_then_succeeds() -> None:
    calls: list[int] = []

    @redis_retry(attempts=5, max_wait_s=0.02)
    def fn(x: int) -> int:
        calls.append(x)
        if len(calls) < 3:
            raise rex.ConnectionError("dropped")
        return x * 2

    assert fn(21) == 42
    assert calls == [21, 21, 21]
    assert fn.__name__ == "fn"


def test_redis_retry_reraises_the_last_error_after_the_attempts() -> None:
    calls = 0

    @redis_retry(attempts=4, max_wait_s=0.02)
    def fn() -> None:
        nonlocal calls
        calls += 1
        raise rex.TimeoutError(f"timeout #{calls}")

    with pytest.raises(rex.TimeoutError, match=r"^timeout #4$"):
        fn()
    assert calls == 4


@pytest.mark.parametrize("error", [rex.ResponseError("WRONGTYPE"), rex.AuthenticationError("WRONGPASS")])
def test_redis_retry_fails_fast_on_permanent_errors(error: Exception) -> None:
    """Retried, the ten tries would pause about 23 s in all."""
    calls = 0

    @redis_retry(attempts=10, max_wait_s=10.0)
    def fn() -> None:
        nonlocal calls
        calls += 1
        raise error

    started = time.monotonic()
    with pytest.raises(type(error)):
        fn()
    assert calls == 1
    assert time.monotonic() - started < 5


def test_redis_retry_defaults_come_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHQ_REDIS_RETRY_ATTEMPTS", "2")
    monkeypatch.setenv("GRAPHQ_REDIS_RETRY_MAX_WAIT_S", "0.01")
    calls = 0

    @redis_retry()
    def fn() -> None:
        nonlocal calls
        calls += 1
        raise rex.ConnectionError("down")

    with pytest.raises(rex.ConnectionError):
        fn()
    assert calls == 2


def test_redis_retrying_backoff_is_bounded() -> None:
    """The pauses the policy asks for (its sleep recorded, not timed): uncapped they would double to 0.8 s."""
    pauses: list[float] = []
    policy = redis_retrying(attempts=6, max_wait_s=0.1).copy(sleep=pauses.append)
    calls = 0

    def fn() -> None:
        nonlocal calls
        calls += 1
        raise rex.ConnectionError("down")

    with pytest.raises(rex.ConnectionError):
        policy(fn)
    assert calls == 6
    assert len(pauses) == 5
    assert all(0.05 <= pause <= 0.1 for pause in pauses), pauses  # from 0.05 s (half fixed), none above 0.1


@pytest.mark.parametrize(("attempts", "max_wait_s"), [(0, 1.0), (3, 0.0)])
def test_redis_retrying_rejects_bad_arguments(attempts: int, max_wait_s: float) -> None:
    with pytest.raises(ConfigError):
        redis_retrying(attempts, max_wait_s)


def test_connect_returns_a_working_bytes_client(redis_url: str) -> None:
    client = connect(redis_url)
    assert isinstance(client, redis.Redis)
    assert client.ping() is True
    client.set("k", "v")
    assert client.get("k") == b"v"
    client.close()


def test_redis_url_fixture_gives_an_empty_database(redis_client: redis.Redis) -> None:
    assert redis_client.dbsize() == 0
    redis_client.set("left-behind", "1")  # the next test's redis_url flushes it


def test_graphq_env_points_subprocesses_at_the_test_database(
    graphq_env: dict[str, str], redis_url: str
) -> None:
    from graphcore.settings import get_settings

    assert graphq_env["GRAPHQ_REDIS_URL"] == redis_url
    assert graphq_env["PYTHONUNBUFFERED"] == "1"
    assert get_settings().redis_url == redis_url


def test_connect_retries_until_the_server_comes_up() -> None:
    port = free_port()
    started: list[EmbeddedRedis] = []

    def start_later() -> None:
        time.sleep(0.5)
        started.append(EmbeddedRedis(port=port, appendonly=False).start())

    thread = threading.Thread(target=start_later)
    begin = time.monotonic()
    thread.start()
    try:
        client = connect(f"redis://127.0.0.1:{port}/0", attempts=60, max_wait_s=0.2)  # tries for ~12 s
        elapsed = time.monotonic() - begin
        assert client.ping() is True
        assert elapsed >= 0.5
        client.close()
    finally:
        thread.join()
        for server in started:
            server.stop()
    assert len(started) == 1


def test_connect_gives_up_with_a_redacted_one_line_message() -> None:
    port = free_port()  # nothing listens there
    started = time.monotonic()
    with pytest.raises(RedisUnavailableError) as info:
        connect(f"redis://:hunter2@127.0.0.1:{port}/0", attempts=3, max_wait_s=0.05)
    assert time.monotonic() - started < 10  # two short pauses, no hanging on the refused port
    message = str(info.value)
    assert message.startswith(f"cannot reach Redis at redis://:***@127.0.0.1:{port}/0: ")
    assert "Connection refused" in message
    assert "hunter2" not in message
    assert "\n" not in message
    assert isinstance(info.value.__cause__, rex.ConnectionError)


@pytest.fixture(scope="module")
def password_server() -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(appendonly=False, extra_args=["--requirepass", "s3cret-pw"]).start()
    yield server
    server.stop()


@pytest.mark.parametrize("credentials", [":wrong-pw@", "default:wrong-pw@"])
def test_wrong_password_fails_fast(password_server: EmbeddedRedis, credentials: str) -> None:
    url = f"redis://{credentials}127.0.0.1:{password_server.port}/0"
    started = time.monotonic()
    with pytest.raises(RedisUnavailableError) as info:
        connect(url, attempts=20, max_wait_s=2.0)
    assert time.monotonic() - started < 10  # retried, the 20 tries would pause about 31 s
    message = str(info.value)
    assert message == (
        f"Redis at {redact_url(url)} refused the password in the URL (authentication failed: a wrong "
        "password, or a user it does not know)"
    )
    assert "s3cret-pw" not in message and "wrong-pw" not in message


def test_a_missing_password_is_named_as_such(password_server: EmbeddedRedis) -> None:
    url = f"redis://127.0.0.1:{password_server.port}/0"
    started = time.monotonic()
    with pytest.raises(RedisUnavailableError) as info:
        connect(url, attempts=20, max_wait_s=2.0)
    assert time.monotonic() - started < 10  # retried, the 20 tries would pause about 31 s
    assert str(info.value) == (
        f"Redis at {url} needs a password: give it in the URL, redis://:PASSWORD@HOST:PORT/DB "
        "(or redis://USER:PASSWORD@... for an ACL user)"
    )


def test_right_password_connects(password_server: EmbeddedRedis) -> None:
    client = connect(f"redis://:s3cret-pw@127.0.0.1:{password_server.port}/0")
    assert client.ping() is True
    client.close()


def test_a_refused_select_fails_fast(redis_server: EmbeddedRedis) -> None:
    url = f"redis://127.0.0.1:{redis_server.port}/99"
    started = time.monotonic()
    with pytest.raises(
        RedisUnavailableError, match=r"^Redis at .*/99 refused the connection: .*out of range"
    ):
        connect(url, attempts=20, max_wait_s=2.0)
    assert time.monotonic() - started < 10  # retried, the 20 tries would pause about 31 s


@pytest.mark.parametrize("value", ["localhost:6379", "s3cret-pw", "http://user:pw@h/0", ""])
def test_a_value_that_is_no_redis_url_is_never_shown(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        connect(value)
    assert str(info.value) == (
        "GRAPHQ_REDIS_URL is not a redis:// URL (its value is not shown: it may hold a secret); expected "
        "redis://[[user]:password@]host[:port][/db], rediss://... or unix:///path/to/socket"
    )


def test_a_db_path_that_is_no_number_is_refused() -> None:
    """redis-py ignores such a path: ``redis://h/abc`` connected to db 0 (found by a new-user trial)."""
    with pytest.raises(ConfigError) as info:
        connect("redis://:pw@127.0.0.1:6379/abc")
    assert str(info.value) == (
        "GRAPHQ_REDIS_URL=redis://:***@127.0.0.1:6379/abc: its path 'abc' is not a database number; expected "
        "redis://[[user]:password@]host[:port][/db], rediss://... or unix:///path/to/socket"
    )


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("redis://h:notaport/0", "Port could not be cast"),
        ("redis://u:hunt/er2@h:6379/0", None),  # urllib misreads "hunt" as the port: no reason shown
    ],
)
def test_malformed_url_is_a_config_error(url: str, reason: str | None) -> None:
    with pytest.raises(ConfigError) as info:
        connect(url)
    message = str(info.value)
    assert message.startswith(f"GRAPHQ_REDIS_URL={redact_url(url)} is not a valid Redis URL")
    assert "\n" not in message
    if reason is None:
        assert "hunt" not in message
        assert "er2" not in message
    else:
        assert reason in message
