"""``http_request``: real requests to a local server, and SSRF targets refused before any
connection. Nothing here sends a packet anywhere but 127.0.0.1: a guard on the socket module
records every connection and DNS lookup, and each refusal test asserts there was none."""

from __future__ import annotations

import asyncio
import gzip
import ipaddress
import json
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.errors import ToolArgumentError, ToolTimeoutError
from hermes.models.base import ToolCall
from hermes.tools import BUILTIN_TOOLS, ToolContext, ToolRegistry, execute_tool_call
from hermes.tools.builtin.web import (
    MAX_REDIRECTS,
    MAX_RESPONSE_BYTES,
    AllowList,
    DestinationBlockedError,
    TooManyRedirectsError,
    fetch,
)

LOCAL = AllowList.parse(["127.0.0.1"])


# --- guard: only 127.0.0.1, and every attempt recorded -------------------------------------


@dataclass
class NetworkGuard:
    connects: list[str] = field(default_factory=list)
    lookups: list[str] = field(default_factory=list)
    #: Answers for names the test pretends to resolve (a list: one answer per lookup).
    fake_dns: dict[str, list[str]] = field(default_factory=dict)

    def connect_to(self, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else str(address)
        self.connects.append(host)
        if host != "127.0.0.1":
            raise AssertionError(f"test tried to connect to {host}")

    def resolve(self, host: Any) -> list[str] | None:
        name = host.decode() if isinstance(host, bytes) else str(host)
        self.lookups.append(name)
        if name == "127.0.0.1":
            return None  # the real resolver answers a numeric host without any traffic
        answers = self.fake_dns.get(name)
        if not answers:
            raise socket.gaierror(socket.EAI_NONAME, "blocked by the test guard")
        return [answers.pop(0) if len(answers) > 1 else answers[0]]

    @property
    def outside_traffic(self) -> list[str]:
        return [h for h in self.connects if h != "127.0.0.1"] + [
            h for h in self.lookups if h != "127.0.0.1"
        ]


@contextmanager
def guarded() -> Iterator[NetworkGuard]:
    guard = NetworkGuard()
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(sock: socket.socket, address: Any) -> None:
        guard.connect_to(address)
        real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        guard.connect_to(address)
        return real_connect_ex(sock, address)

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        answer = guard.resolve(host)
        if answer is None:
            return real_getaddrinfo(host, port, *args, **kwargs)
        return real_getaddrinfo(answer[0], port, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", connect)
        patch.setattr(socket.socket, "connect_ex", connect_ex)
        patch.setattr(socket, "getaddrinfo", getaddrinfo)
        yield guard


@pytest.fixture
def guard() -> Iterator[NetworkGuard]:
    with guarded() as active:
        yield active


# --- a local server ------------------------------------------------------------------------

BIG = b"0123456789abcdef" * (MAX_RESPONSE_BYTES // 8)  # 2 MiB


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _route(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        match url.path:
            case "/text":
                self._send(200, "héllo wörld".encode(), "text/plain; charset=utf-8")
            case "/gbk":
                self._send(200, "你好，世界".encode("gbk"), "text/html; charset=GBK")
            case "/json":
                self._send(
                    200, b'{"answer": 42, "name": "\xe5\x8c\x97\xe4\xba\xac"}', "application/json"
                )
            case "/badjson":
                self._send(200, b"{not json", "application/json")
            case "/big":
                self._send(200, BIG, "text/plain")
            case "/gzip-bomb":
                bomb = gzip.compress(b"\x00" * (64 << 20))  # 64 MiB of zeros, ~64 KiB on the wire
                self._send(200, bomb, "text/plain", Content_Encoding="gzip")
            case "/binary":
                self._send(200, bytes(range(256)), "application/octet-stream")
            case "/status":
                code = int(query.get("code", "500"))
                self._send(code, f"status {code}".encode(), "text/plain", Retry_After="7")
            case "/redirect":
                status = int(query.get("code", "302"))
                self._send(status, b"", "text/plain", Location=query["to"])
            case "/loop":
                self._send(302, b"", "text/plain", Location="/loop")
            case "/slow":
                self.server.release.wait(10)
                self._send(200, b"late", "text/plain")
            case "/echo":
                payload = {
                    "method": self.command,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body.decode("utf-8", errors="replace"),
                }
                self._send(200, json.dumps(payload).encode(), "application/json")
            case _:
                self._send(404, b"no such route", "text/plain")

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _route


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    release: threading.Event

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The client hanging up mid-body is what the size and time limits do on purpose.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


@contextmanager
def serving() -> Iterator[str]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.release = threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with serving() as url:
        yield url


# --- the allowed path, against the real local server ---------------------------------------


async def test_text_is_decoded_with_its_charset(base: str, guard: NetworkGuard) -> None:
    out = await fetch(f"{base}/text", allow=LOCAL)
    assert out["status"] == 200
    assert out["body"] == "héllo wörld"
    assert out["truncated"] is False
    assert out["url"] == f"{base}/text"
    assert out["headers"]["content-type"] == "text/plain; charset=utf-8"
    assert guard.outside_traffic == []


async def test_gbk_page_is_decoded(base: str) -> None:
    assert (await fetch(f"{base}/gbk", allow=LOCAL))["body"] == "你好，世界"


async def test_json_is_parsed(base: str) -> None:
    out = await fetch(f"{base}/json", allow=LOCAL)
    assert out["body"] == {"answer": 42, "name": "北京"}
    assert out["summary"] == f"GET {base}/json -> 200 OK (32 bytes, application/json)"


async def test_json_that_is_not_json_comes_back_as_text(base: str) -> None:
    assert (await fetch(f"{base}/badjson", allow=LOCAL))["body"] == "{not json"


@pytest.mark.parametrize("code", [404, 429, 500, 503])
async def test_error_statuses_are_results(base: str, code: int) -> None:
    out = await fetch(f"{base}/status?code={code}", allow=LOCAL)
    assert out["status"] == code
    assert out["body"] == f"status {code}"
    assert out["headers"]["retry-after"] == "7"


async def test_head_has_no_body(base: str) -> None:
    out = await fetch(f"{base}/text", "head", allow=LOCAL)
    assert out["status"] == 200
    assert out["body"] is None


async def test_json_body_is_sent_as_json(base: str) -> None:
    out = await fetch(f"{base}/echo", "POST", body={"城市": "北京"}, allow=LOCAL)
    echoed = out["body"]
    assert echoed["method"] == "POST"
    assert echoed["headers"]["content-type"] == "application/json"
    assert json.loads(echoed["body"]) == {"城市": "北京"}


async def test_custom_headers_and_host_reach_the_server(base: str) -> None:
    out = await fetch(f"{base}/echo", headers={"X-Trace": "abc"}, allow=LOCAL)
    headers = out["body"]["headers"]
    assert headers["x-trace"] == "abc"
    assert headers["host"] == base.removeprefix("http://")
    assert headers["accept-encoding"] == "identity"


async def test_oversize_response_is_cut_with_a_note(base: str) -> None:
    out = await fetch(f"{base}/big", allow=LOCAL)
    assert out["truncated"] is True
    assert len(out["body"]) == MAX_RESPONSE_BYTES
    assert "cut at" in out["note"]


async def test_compressed_bomb_is_bounded(base: str) -> None:
    out = await fetch(f"{base}/gzip-bomb", allow=LOCAL, max_bytes=4096)
    assert out["truncated"] is True
    assert len(out["body"]) == 4096


async def test_binary_body_is_not_shown(base: str) -> None:
    out = await fetch(f"{base}/binary", allow=LOCAL)
    assert out["body"] is None
    assert "binary body of 256 bytes" in out["note"]


async def test_slow_response_hits_the_time_limit(base: str) -> None:
    with pytest.raises(ToolTimeoutError, match=r"no complete response within 0\.2 s"):
        await fetch(f"{base}/slow", allow=LOCAL, time_limit=0.2)


async def test_connection_refused_is_a_transport_error(guard: NetworkGuard) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    with pytest.raises(httpx2.TransportError):
        await fetch(f"http://127.0.0.1:{port}/", allow=LOCAL)


async def test_redirects_are_followed(base: str) -> None:
    out = await fetch(f"{base}/redirect?to=/json", allow=LOCAL)
    assert out["body"]["answer"] == 42
    assert out["url"] == f"{base}/json"


async def test_303_turns_a_post_into_a_get_without_body(base: str) -> None:
    out = await fetch(f"{base}/redirect?code=303&to=/echo", "POST", body="data", allow=LOCAL)
    assert out["body"]["method"] == "GET"
    assert out["body"]["body"] == ""


async def test_307_keeps_method_and_body(base: str) -> None:
    out = await fetch(f"{base}/redirect?code=307&to=/echo", "PUT", body="data", allow=LOCAL)
    assert out["body"]["method"] == "PUT"
    assert out["body"]["body"] == "data"


async def test_caller_headers_are_dropped_when_a_redirect_changes_origin(base: str) -> None:
    with serving() as other:
        out = await fetch(
            f"{base}/redirect?to={other}/echo",
            headers={"Authorization": "Bearer secret", "X-Api-Key": "SECRET", "Accept": "*/*"},
            allow=LOCAL,
        )
    headers = out["body"]["headers"]
    assert "authorization" not in headers
    assert "x-api-key" not in headers  # any header may be a secret for the first server
    assert headers["accept"] == "*/*"


async def test_custom_headers_stay_on_a_same_origin_redirect(base: str) -> None:
    out = await fetch(
        f"{base}/redirect?to={base}/echo", headers={"X-Api-Key": "SECRET"}, allow=LOCAL
    )
    assert out["body"]["headers"]["x-api-key"] == "SECRET"


async def test_redirect_loop_stops(base: str) -> None:
    with pytest.raises(TooManyRedirectsError, match=f"more than {MAX_REDIRECTS} redirects"):
        await fetch(f"{base}/loop", allow=LOCAL)


# --- SSRF: refused before any connection ---------------------------------------------------

BLOCKED_URLS = [
    "http://127.0.0.1/",
    "http://127.0.0.1:8080/admin",
    "http://127.1.2.3/",
    "http://localhost/",
    "http://LOCALHOST./",
    "http://api.localhost/",
    "http://[::1]/",
    "http://[::]/",
    "http://0.0.0.0/",
    "http://10.0.0.1/",
    "http://172.16.5.4/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://169.254.1.1/",
    "http://[fe80::1]/",
    "http://[fd00:ec2::254]/",
    "http://[fc00::1]/",
    "http://224.0.0.1/",
    "http://[ff02::1]/",
    "http://240.0.0.1/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://[::127.0.0.1]/",
    "http://[64:ff9b::7f00:1]/",
    "http://[2002:7f00:1::]/",
    "http://2130706433/",
    "http://0x7f.1/",
    "http://0x7f000001/",
    "http://017700000001/",
    "http://127.1/",
    "http://0/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://metadata/",
    "file:///etc/passwd",
    "gopher://127.0.0.1:6379/_INFO",
    "ftp://example.com/",
    "dict://127.0.0.1:11211/",
    "http://user:pass@example.com/",
    "http://exa mple.com/",
]


@pytest.mark.parametrize("url", BLOCKED_URLS)
async def test_ssrf_targets_are_refused_without_connecting(url: str, guard: NetworkGuard) -> None:
    with pytest.raises((DestinationBlockedError, ToolArgumentError)):
        await fetch(url)
    assert guard.connects == []
    assert guard.lookups == []


async def test_allow_list_for_loopback_does_not_open_other_private_ranges(
    guard: NetworkGuard,
) -> None:
    with pytest.raises(DestinationBlockedError, match="private"):
        await fetch("http://10.1.2.3/", allow=LOCAL)
    assert guard.connects == []


async def test_a_wide_allowed_network_does_not_open_the_metadata_address(
    guard: NetworkGuard,
) -> None:
    wide = AllowList.parse(["169.254.0.0/16"])
    with pytest.raises(DestinationBlockedError, match="cloud metadata"):
        await fetch("http://169.254.169.254/", allow=wide)
    assert guard.connects == []


def test_metadata_is_opened_only_by_its_exact_entry() -> None:
    metadata = ipaddress.ip_address("169.254.169.254")
    assert AllowList.parse(["169.254.169.254"]).allows(metadata) is True
    assert AllowList.parse(["169.254.0.0/16"]).allows(metadata) is False
    assert AllowList.parse(["169.254.0.0/16"]).allows(ipaddress.ip_address("169.254.1.1"))


@pytest.mark.parametrize(
    "target",
    [
        "http://10.0.0.1/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://localhost/",
        "file:///etc/passwd",
        "http://2130706433/",
    ],
)
async def test_redirect_to_a_blocked_address_is_refused_before_connecting(
    base: str, guard: NetworkGuard, target: str
) -> None:
    with pytest.raises(DestinationBlockedError, match="redirect 1"):
        await fetch(f"{base}/redirect?to={target}", allow=LOCAL)
    assert guard.outside_traffic == []
    assert guard.connects  # the first hop did go out, to the local server only
    assert set(guard.connects) == {"127.0.0.1"}


async def test_dns_answers_are_checked_and_pinned(base: str, guard: NetworkGuard) -> None:
    # "rebind.test" answers 127.0.0.1 first (allowed here), then 10.0.0.1: a rebinding attack
    # would pass the check and connect to the second answer. The request must go to the
    # address that was checked, with the name in the Host header, and resolve only once.
    guard.fake_dns["rebind.test"] = ["127.0.0.1", "10.0.0.1"]
    port = base.rsplit(":", 1)[1]
    out = await fetch(f"http://rebind.test:{port}/echo", allow=LOCAL)
    assert out["body"]["headers"]["host"] == f"rebind.test:{port}"
    assert guard.lookups.count("rebind.test") == 1
    assert set(guard.connects) == {"127.0.0.1"}


async def test_a_name_with_any_blocked_address_is_refused(guard: NetworkGuard) -> None:
    guard.fake_dns["mixed.test"] = ["10.9.9.9"]
    with pytest.raises(DestinationBlockedError, match=r"mixed\.test \(10\.9\.9\.9\) is a private"):
        await fetch("http://mixed.test/")
    assert guard.connects == []


async def test_unresolvable_name_is_a_transport_error(guard: NetworkGuard) -> None:
    with pytest.raises(httpx2.ConnectError, match="cannot resolve"):
        await fetch("http://no-such-host.test/")
    assert guard.connects == []


# --- argument validation -------------------------------------------------------------------


@pytest.mark.parametrize("method", ["TRACE", "CONNECT", "OPTIONS", "G ET", ""])
async def test_unsupported_methods_are_refused(method: str, guard: NetworkGuard) -> None:
    with pytest.raises(ToolArgumentError, match="method"):
        await fetch("http://127.0.0.1/", method, allow=LOCAL)
    assert guard.connects == []


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Evil": "a\r\nInjected: yes"},
        {"X-Evil": "a\nb"},
        {"X-Nul": "a\x00b"},
        {"Bad Name": "x"},
        {"Bad:Name": "x"},
        {"Host": "internal.example"},
        {"Content-Length": "0"},
        {"Transfer-Encoding": "chunked"},
        {"X-Big": "x" * 10_000},
    ],
)
async def test_bad_headers_are_refused(headers: dict[str, str], guard: NetworkGuard) -> None:
    with pytest.raises(ToolArgumentError, match="header"):
        await fetch("http://127.0.0.1/", headers=headers, allow=LOCAL)
    assert guard.connects == []


async def test_oversize_request_body_is_refused(guard: NetworkGuard) -> None:
    with pytest.raises(ToolArgumentError, match="body"):
        await fetch("http://127.0.0.1/", "POST", body="x" * (2 << 20), allow=LOCAL)


@pytest.mark.parametrize("url", ["", "   ", "http://x/\r\nHost: evil", "x" * 10_000])
async def test_malformed_urls_are_argument_errors(url: str, guard: NetworkGuard) -> None:
    with pytest.raises(ToolArgumentError, match="url"):
        await fetch(url)
    assert guard.connects == []


# --- through the executor ------------------------------------------------------------------


async def _call(arguments: dict[str, Any], extras: dict[str, Any] | None = None) -> Any:
    registry = ToolRegistry([BUILTIN_TOOLS["http_request"]])
    ctx = ToolContext(extras=extras or {})
    return await execute_tool_call(registry, ToolCall("c1", "http_request", arguments), ctx)


async def test_tool_uses_the_allow_list_from_the_context(base: str) -> None:
    result = await _call({"url": f"{base}/json"}, {"http_allow": ["127.0.0.1"]})
    assert result.ok is True
    assert result.output["body"]["answer"] == 42
    assert result.summary is not None
    assert result.summary.endswith("-> 200 OK (32 bytes, application/json)")


async def test_tool_without_allow_list_blocks_loopback(base: str, guard: NetworkGuard) -> None:
    result = await _call({"url": f"{base}/json"})
    assert result.ok is False
    assert result.error is not None
    assert result.error.type == "destination_blocked"
    assert "loopback" in result.error.message
    assert "目标地址被拒绝" in result.error.message
    assert guard.connects == []


async def test_tool_error_status_is_ok_result(base: str) -> None:
    result = await _call({"url": f"{base}/status?code=503"}, {"http_allow": ["127.0.0.0/8"]})
    assert result.ok is True
    assert result.output["status"] == 503


async def test_tool_rejects_a_broken_allow_list(base: str) -> None:
    result = await _call({"url": f"{base}/json"}, {"http_allow": "127.0.0.1"})
    assert result.ok is False
    assert result.error is not None
    assert "http_allow" in result.error.message


def test_schema_matches_the_design() -> None:
    schema = BUILTIN_TOOLS["http_request"].parameters
    assert schema["required"] == ["url"]
    assert set(schema["properties"]) == {"url", "method", "headers", "body"}
    assert schema["properties"]["method"]["default"] == "GET"


# --- property: every address in a blocked range is refused before connecting ------------

_BLOCKED_RANGES = [
    "127.0.0.0/8",
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "169.254.0.0/16",
    "100.64.0.0/10",
    "224.0.0.0/4",
    "0.0.0.0/8",
    "240.0.0.0/4",
    "fc00::/7",
    "fe80::/10",
    "ff00::/8",
]


@st.composite
def _blocked_addresses(draw: st.DrawFn) -> str:
    network = ipaddress.ip_network(draw(st.sampled_from(_BLOCKED_RANGES)))
    address = draw(st.ip_addresses(network=network))
    if address.version == 4 and draw(st.booleans()):
        return f"[::ffff:{address}]"  # the same host, spelled as IPv4-mapped IPv6
    return f"[{address}]" if address.version == 6 else str(address)


@settings(max_examples=200, deadline=None)
@given(host=_blocked_addresses(), port=st.integers(1, 65535), path=st.text(max_size=20))
def test_any_blocked_address_is_refused_before_connecting(host: str, port: int, path: str) -> None:
    url = f"http://{host}:{port}/{path}"
    with guarded() as guard:
        try:
            asyncio.run(fetch(url))
        except (DestinationBlockedError, ToolArgumentError):
            pass
        else:
            raise AssertionError(f"{url} was not refused")
        assert guard.connects == []
        assert guard.lookups == []
