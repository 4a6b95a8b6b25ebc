"""``hermes serve`` as a real subprocess on 127.0.0.1 (DESIGN.md, HTTP and "More CLI")."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from hermes.channels.cli.serve_cmd import bind
from tests.channels.http.serve_fixtures import (
    ALICE_KEY,
    bearer,
    run_serve,
    serving,
    wait_ready,
    write_config,
)

KEYED = (
    "server:\n  api_keys:\n    - {key: alice-key-0123456789abcdef, user: alice}\n"
    "  rate_limit: {per_minute: 5}\n  cors_origins: ['http://ok.example']\n"
)


def raw_request(port: int, head: bytes, body: bytes = b"", timeout: float = 10.0) -> bytes:
    """Send ``head`` then as much of ``body`` as the server takes; what it answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(head)
        try:
            for start in range(0, len(body), 65536):
                conn.sendall(body[start : start + 65536])
        except OSError:  # the server answered and closed before the whole body went
            pass
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = conn.recv(65536)
            if not chunk:
                break
            answer += chunk
        return answer


def test_serve_prints_the_real_port_and_serves_openapi(tmp_path: Path) -> None:
    with serving(tmp_path, "") as served:
        assert served.host == "127.0.0.1"
        assert served.port > 0
        answer = httpx.get(f"{served.url}/openapi.json", timeout=10)
    assert answer.status_code == 200
    assert answer.json()["info"]["title"] == "Hermes"
    assert "x-hermes-trace-id" in answer.headers


def test_serve_with_keys_needs_a_key_and_keeps_users_apart(tmp_path: Path) -> None:
    with serving(tmp_path, KEYED) as served:
        anonymous = httpx.get(f"{served.url}/v1/sessions", timeout=10)
        other = httpx.get(
            f"{served.url}/v1/sessions", params={"user_id": "bob"}, headers=bearer(ALICE_KEY),
            timeout=10,
        )  # fmt: skip
        own = httpx.get(f"{served.url}/v1/sessions", headers=bearer(ALICE_KEY), timeout=10)
    assert anonymous.status_code == 401
    assert other.status_code == 403
    assert own.status_code == 200


def test_serve_refuses_a_10_mb_body_declared_or_chunked(tmp_path: Path) -> None:
    big = b"x" * (10 * 1024 * 1024)
    with serving(tmp_path, "") as served:
        declared = raw_request(
            served.port,
            b"POST /v1/memory/alice HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(big),
            big,
        )
        chunk = b"%x\r\n%s\r\n" % (65536, b"x" * 65536)
        chunked = raw_request(
            served.port,
            b"POST /v1/memory/alice HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n",
            chunk * 160,
        )
    assert declared.startswith(b"HTTP/1.1 413"), declared[:200]
    assert chunked.startswith(b"HTTP/1.1 413"), chunked[:200]


def test_serve_rate_limits_a_key_with_retry_after_and_answers_cors(tmp_path: Path) -> None:
    with serving(tmp_path, KEYED) as served:
        statuses = []
        for _ in range(6):
            answer = httpx.get(f"{served.url}/v1/sessions", headers=bearer(ALICE_KEY), timeout=10)
            statuses.append(answer.status_code)
        preflight = {"Access-Control-Request-Method": "GET"}
        allowed = httpx.options(
            f"{served.url}/v1/sessions", headers={**preflight, "Origin": "http://ok.example"},
            timeout=10,
        )  # fmt: skip
        denied = httpx.options(
            f"{served.url}/v1/sessions", headers={**preflight, "Origin": "http://evil.example"},
            timeout=10,
        )  # fmt: skip
    assert statuses == [200] * 5 + [429]
    assert int(answer.headers["retry-after"]) >= 1
    assert allowed.headers["access-control-allow-origin"] == "http://ok.example"
    assert "access-control-allow-origin" not in denied.headers


def test_serve_refuses_a_public_host_without_keys(tmp_path: Path) -> None:
    proc = run_serve(write_config(tmp_path, ""), "--host", "0.0.0.0", "--port", "0")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "server.api_keys" in err
    assert "allow_anonymous" in err


def test_serve_binds_a_public_host_with_allow_anonymous(tmp_path: Path) -> None:
    config = write_config(tmp_path, "server: {allow_anonymous: true}\n")
    proc = run_serve(config, "--host", "0.0.0.0", "--port", "0")
    try:
        host, port = wait_ready(proc)
        assert host == "0.0.0.0"
        assert httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=10).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def test_sigterm_stops_serve_with_exit_0_within_20_s(tmp_path: Path) -> None:
    with serving(tmp_path, "") as served:
        started = time.monotonic()
        served.proc.send_signal(signal.SIGTERM)
        code = served.proc.wait(timeout=20)
        assert time.monotonic() - started < 20
    assert code == 0


def test_ctrl_c_stops_serve_with_exit_130(tmp_path: Path) -> None:
    with serving(tmp_path, "") as served:
        served.proc.send_signal(signal.SIGINT)
        assert served.proc.wait(timeout=20) == 130


def test_a_port_in_use_is_refused_with_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = run_serve(write_config(tmp_path, ""), "--host", "127.0.0.1", "--port", str(port))
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("serve did not refuse a port in use")
    assert proc.returncode == 2
    assert "in use" in err


async def test_accepted_connections_get_tcp_nodelay() -> None:
    """``bind`` makes a socket asyncio recognises as TCP, so every accepted connection has
    TCP_NODELAY: without it a response written as headers then body waits for the client's
    delayed ACK (~40 ms per request on loopback, seen before this was fixed)."""
    listener = bind("127.0.0.1", 0)
    flags: list[int] = []

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        flags.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(accepted, sock=listener)
    try:
        port = listener.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(200):
            if flags:
                break
            await asyncio.sleep(0.01)
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
    assert flags
    assert flags[0] != 0
