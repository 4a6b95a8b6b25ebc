"""Servers that misbehave: invalid tool definitions, malformed JSON-RPC, huge results, HTTP
errors — each gives a clear error naming the server, in time, without leaking a secret."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.mcp import ServerConfig
from hermes.mcp.failures import Redactor, safe_url
from hermes.observe import configure_logging, reset_logging
from tests.mcp.conftest import FAST_RECONNECT, connected, raw_config, stdio_config
from tests.mcp.servers.basic_server import HUGE_CHARS

# -- a tool list with invalid definitions ------------------------------------------------------


async def test_tools_with_invalid_definitions_are_skipped_and_the_others_offered() -> None:
    config = raw_config("bad_schema", timeout=5)
    async with connected("mixed", config, reconnect=FAST_RECONNECT) as conn:
        assert [tool.name for tool in conn.tools()] == ["mixed__ping"]
        skipped = {s["tool"]: s["reason"] for s in conn.status()["skipped"]}
        assert set(skipped) == {"bad_required", "(tool #3 without a name)", "bad_type"}
        assert "inputSchema.required" in skipped["bad_required"]
        assert "not a valid JSON Schema" in skipped["bad_type"]
        result = await conn.call_tool("ping", {})
        assert result.ok, result.error
        assert result.output["text"] == "pong"
        assert conn.status()["failures"] == 0


# -- malformed JSON-RPC ----------------------------------------------------------------------


async def test_garbage_instead_of_initialize_is_named_in_the_timeout_reason() -> None:
    config = raw_config("garbage_init", connect_timeout=1)
    async with connected("babbler", config, ready=False) as conn:
        assert not await conn.wait_ready(20)
        assert conn.error is not None
        assert "'babbler'" in conn.error
        assert "within 1 s" in conn.error
        assert "it sent malformed JSON-RPC" in conn.error


async def test_garbage_instead_of_a_call_result_is_named_in_the_timeout() -> None:
    async with connected("mumbler", raw_config("garbage_call", timeout=1)) as conn:
        result = await conn.call_tool("ping", {})
        assert result.error is not None
        assert result.error.type == "timeout"
        assert "'mumbler'" in result.error.message
        assert "it sent malformed JSON-RPC" in result.error.message
        assert "<<<garbage>>>" in result.error.message
        assert conn.state == "ready"


# -- huge results ----------------------------------------------------------------------------


async def test_huge_results_are_bounded_and_the_connection_stays_usable() -> None:
    limit = 10_000
    config = stdio_config(timeout=60)
    async with connected("big", config, max_text_chars=limit, reconnect=FAST_RECONNECT) as conn:
        text = await conn.call_tool("huge", {"kind": "text"})
        assert text.ok, text.error
        assert len(text.to_model_text()) < 2 * limit
        assert f"showing {limit} of {HUGE_CHARS} characters" in text.output["text"]

        structured = await conn.call_tool("huge", {"kind": "structured"})
        assert structured.ok, structured.error
        assert "structured" not in structured.output
        assert "structured content left out" in structured.output["note"]
        assert structured.output["text"] == "many rows"
        assert len(structured.to_model_text()) < 2 * limit
        json.loads(structured.to_model_text())  # still JSON

        again = await conn.call_tool("echo", {"text": "still here"})
        assert again.ok, again.error
        assert again.output["text"] == "still here"


# -- HTTP errors and secrets -----------------------------------------------------------------

SECRETS = ("SECRETQUERY123", "SECRETHEADER456", "hunter2pass")


class _Refuser(BaseHTTPRequestHandler):
    """Answers every request with the server's status and a plain-text body."""

    def _refuse(self) -> None:
        status: int = self.server.status  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = b"no entry"
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _refuse

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture(params=[401, 500])
def refusing_server(request: pytest.FixtureRequest) -> Iterator[tuple[int, int]]:
    """A 127.0.0.1 HTTP server answering every request with one status: (port, status)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuser)
    server.status = request.param  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], request.param
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.parametrize("transport", ["sse", "streamable_http"])
async def test_http_errors_are_named_by_status_without_any_secret(
    refusing_server: tuple[int, int], transport: str, tmp_path: Path
) -> None:
    port, status = refusing_server
    config = ServerConfig.model_validate(
        {
            "url": f"http://user:{SECRETS[2]}@127.0.0.1:{port}/mcp?api_key={SECRETS[0]}",
            "headers": {"Authorization": f"Bearer {SECRETS[1]}"},
            "transport": transport,
            "connect_timeout": 5,
        }
    )
    log_file = tmp_path / "hermes.log"
    configure_logging(log_file, "DEBUG")
    try:
        async with connected("guarded", config, ready=False, reconnect=FAST_RECONNECT) as conn:
            assert not await conn.wait_ready(20)
            error = conn.error
            status_text = json.dumps(conn.status())
            call = await conn.call_tool("anything", {})
    finally:
        reset_logging()
    assert error is not None
    assert "'guarded'" in error
    assert f"HTTP {status}" in error
    logged = log_file.read_text()
    assert "mcp_server_failed" in logged
    for text in (error, status_text, call.to_model_text(), logged):
        for secret in SECRETS:
            assert secret not in text


@given(
    secret=st.text(alphabet="abcdefghijkLMNOP0123456789-_.~", min_size=6, max_size=30),
    where=st.sampled_from(["query", "header", "env", "password"]),
    around=st.text(max_size=20),
)
def test_the_redactor_removes_a_configured_secret_wherever_it_appears(
    secret: str, where: str, around: str
) -> None:
    if where == "env":
        config = ServerConfig(command="srv", env={"TOKEN": secret})
    elif where == "header":
        config = ServerConfig(url="http://h.example/mcp", headers={"X-Key": f"Key {secret}"})
    elif where == "query":
        config = ServerConfig(url=f"http://h.example/mcp?key={secret}&v=1")
    else:
        config = ServerConfig(url=f"http://me:{secret}@h.example/mcp")
    redact = Redactor.for_config(config)
    text = f"{around}{secret}{around} at {config.url}"
    cleaned = redact(text)
    assert secret not in cleaned
    if config.url is not None:
        assert "h.example/mcp" in cleaned


def test_safe_url_keeps_scheme_host_port_and_path_only() -> None:
    url = "https://user:pw@api.example.org:8443/v1/mcp?key=k#frag"
    assert safe_url(url) == "https://api.example.org:8443/v1/mcp"
