"""``http_request(url, method="GET", headers=None, body=None)``: one HTTP request for the model,
with server-side request forgery (SSRF) closed off (least privilege, seed 004 §4.1).

Before any connection the host is resolved (every A/AAAA record) and refused if any address
is loopback, private (RFC 1918, ULA), link-local, multicast, unspecified, carrier-grade NAT,
reserved or a cloud metadata endpoint — unless the configuration allows it through
``ToolContext.extras["http_allow"]`` (a list of host names, addresses and CIDRs; metadata
addresses and names only by their exact entry). The connection then goes to the address that
was checked: the request is sent to that IP with the original ``Host`` header and TLS SNI, so
a DNS answer that changes between check and connect (DNS rebinding) changes nothing.
Redirects are followed by hand, at most :data:`MAX_REDIRECTS`, and every hop is checked the
same way. Numeric host spellings (``2130706433``, ``0x7f.1``, ``127.1``) are refused: nobody
needs them except to slip past a filter.

Limits: :data:`MAX_RESPONSE_BYTES` of body (streamed; the rest is dropped and the result says
so), :data:`TIME_LIMIT_SECONDS` for everything (DNS, connect, redirects, body). A 4xx/5xx
answer is a result with its ``status``, not an error. Network failures raise
``httpx2.TransportError`` subclasses, which a retry policy can classify.

HTTP client: ``httpx2``, the maintained successor of ``httpx`` that the OpenAI SDK and the MCP
SDK already install (same API). The tool is async: the request waits on the network, not on
the CPU, so it needs no worker thread.
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import ipaddress
import json
import re
import socket
import ssl
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from hermes.errors import (
    FieldProblem,
    ToolArgumentError,
    ToolError,
    ToolExecutionError,
    ToolTimeoutError,
)
from hermes.observe import get_logger
from hermes.tools.base import ToolContext
from hermes.tools.decorator import tool

__all__ = [
    "MAX_REDIRECTS",
    "MAX_RESPONSE_BYTES",
    "TIME_LIMIT_SECONDS",
    "AllowList",
    "DestinationBlockedError",
    "TooManyRedirectsError",
    "fetch",
    "http_request",
]

logger = get_logger("tools")

MAX_RESPONSE_BYTES = 1 << 20
MAX_REQUEST_BODY_BYTES = 1 << 20
TIME_LIMIT_SECONDS = 10.0
MAX_REDIRECTS = 5
MAX_URL_CHARS = 8192
MAX_HEADERS = 50
MAX_HEADER_VALUE_CHARS = 8192
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
USER_AGENT = "hermes-http-request/0.1"

#: Headers the tool sets itself (framing, routing, encoding); a caller may not set them.
_RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "expect",
        "accept-encoding",
        "proxy-authorization",
        "proxy-connection",
    }
)
#: The only caller headers kept when a redirect leaves the original origin.
_PORTABLE_HEADERS = frozenset({"accept", "accept-language", "user-agent"})
#: Response headers the result shows (never Set-Cookie: the model does not need session keys).
_SHOWN_HEADERS = (
    "content-type",
    "content-length",
    "content-language",
    "content-encoding",
    "location",
    "last-modified",
    "etag",
    "cache-control",
    "expires",
    "retry-after",
    "date",
)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HOST_NAME = re.compile(r"[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*")
_NUMERIC_LABEL = re.compile(r"0x[0-9a-f]*|[0-9]+")

_BLOCKED_NETWORKS: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.ip_network(cidr), reason)
    for cidr, reason in (
        ("0.0.0.0/8", "unspecified"),
        ("::/128", "unspecified"),
        ("127.0.0.0/8", "loopback"),
        ("::1/128", "loopback"),
        ("10.0.0.0/8", "private"),
        ("172.16.0.0/12", "private"),
        ("192.168.0.0/16", "private"),
        ("fc00::/7", "private"),
        ("fec0::/10", "private"),
        ("169.254.0.0/16", "link-local"),
        ("fe80::/10", "link-local"),
        ("100.64.0.0/10", "carrier-grade NAT"),
        ("224.0.0.0/4", "multicast"),
        ("ff00::/8", "multicast"),
        ("::/96", "reserved"),  # IPv4-compatible IPv6, deprecated
        ("64:ff9b:1::/48", "reserved"),  # local-use NAT64
    )
)
_METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)
_METADATA_NAMES = frozenset(
    {"metadata.google.internal", "metadata.goog", "metadata", "instance-data.ec2.internal"}
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
#: Addresses of one host tried before giving up (every one was checked).
_MAX_ADDRESSES_TRIED = 4

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class DestinationBlockedError(ToolError):
    """The URL (or a redirect) leads to an address the tool may not reach."""

    code = "destination_blocked"
    status = 403


class TooManyRedirectsError(ToolExecutionError):
    """More than :data:`MAX_REDIRECTS` redirects."""

    code = "too_many_redirects"


def _bad(field: str, english: str, chinese: str) -> ToolArgumentError:
    return ToolArgumentError([FieldProblem(field, f"{english} ({chinese})")])


# --- allow-list ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AllowList:
    """Destinations the configuration opens despite the SSRF rules: host names (exact,
    case-insensitive) and IP networks. A metadata address is opened only by an entry for
    exactly that address, never by a wider network."""

    names: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @staticmethod
    def parse(entries: Any) -> AllowList:
        """The allow-list from ``ctx.extras["http_allow"]`` (``None`` = nothing allowed)."""
        if entries is None:
            return _EMPTY_ALLOW
        if isinstance(entries, str) or not isinstance(entries, Iterable):
            raise ToolExecutionError("http_allow must be a list of host names or CIDRs")
        return _parse_allow(tuple(entries))

    def allows_name(self, host: str) -> bool:
        return host in self.names

    def allows(self, address: IPAddress) -> bool:
        if address in _METADATA_ADDRESSES:
            return any(net.num_addresses == 1 and address in net for net in self.networks)
        return any(address in net for net in self.networks)


_EMPTY_ALLOW = AllowList()


@functools.lru_cache(maxsize=64)
def _parse_allow(entries: tuple[Any, ...]) -> AllowList:
    names: set[str] = set()
    networks: list[IPNetwork] = []
    for entry in entries:
        if not isinstance(entry, str) or not entry.strip():
            raise ToolExecutionError(f"http_allow entry {entry!r} is not a host name or CIDR")
        text = entry.strip().lower().rstrip(".")
        try:
            networks.append(ipaddress.ip_network(text.strip("[]"), strict=False))
        except ValueError:
            names.add(text)
    return AllowList(frozenset(names), tuple(networks))


# --- destination checks --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Destination:
    url: httpx2.URL  # as the caller wrote it (normalized)
    host: str  # ASCII host name or address text, no trailing dot
    addresses: tuple[str, ...]  # the checked IPs, tried in order; nothing else is contacted


class _Refused(Exception):
    """A destination refused by the rules; the caller says where (the URL or a redirect)."""

    def __init__(self, english: str, chinese: str = "内网、本机或云元数据地址不可访问") -> None:
        super().__init__(english)
        self.english = english
        self.chinese = chinese


def _parse_url(text: str) -> httpx2.URL:
    if not isinstance(text, str) or not text.strip():
        raise _bad("url", "url is empty", "URL 为空")
    if len(text) > MAX_URL_CHARS:
        raise _bad("url", f"url is longer than {MAX_URL_CHARS} characters", "URL 过长")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise _bad("url", "url contains control characters", "URL 包含控制字符")
    try:
        return httpx2.URL(text.strip())
    except (httpx2.InvalidURL, ValueError, TypeError) as exc:
        raise _bad("url", f"not a valid URL: {exc}", "URL 无效") from None


async def _check_destination(url: httpx2.URL, allow: AllowList) -> _Destination:
    """Resolve and check ``url``'s host; raises :class:`_Refused` with the reason."""
    if url.scheme not in ("http", "https"):
        raise _Refused(
            f"only http and https URLs are allowed, not {url.scheme or 'none'!r}",
            "只支持 http 和 https",
        )
    if url.userinfo:
        raise _Refused(
            "credentials in the URL are not allowed; use an Authorization header",
            "URL 中不能包含账号密码",
        )
    host = url.raw_host.decode("ascii").lower().rstrip(".")
    if not host:
        raise _Refused("the URL has no host", "URL 缺少主机名")
    port = url.port or (443 if url.scheme == "https" else 80)
    literal = _ip_literal(host)
    if literal is not None:
        addresses: list[IPAddress] = [literal]
    else:
        if not _HOST_NAME.fullmatch(host):
            raise _Refused(f"{host!r} is not a valid host name", "主机名无效")
        if _NUMERIC_LABEL.fullmatch(host.rsplit(".", 1)[-1]):
            raise _Refused(
                f"{host!r} is a non-standard spelling of an IP address",
                "不接受非标准写法的 IP 地址",
            )
        if not allow.allows_name(host):
            if host == "localhost" or host.endswith(".localhost"):
                raise _Refused(f"{host} is a loopback name")
            if host in _METADATA_NAMES:
                raise _Refused(f"{host} is a cloud metadata endpoint")
        addresses = await _resolve(host, port)
    if literal is not None or not allow.allows_name(host):
        for address in addresses:
            reason = _blocked_reason(address, allow)
            if reason is not None:
                shown = host if literal is not None else f"{host} ({address})"
                raise _Refused(f"{shown} is a {reason} address")
    tried = tuple(str(a) for a in addresses[:_MAX_ADDRESSES_TRIED])
    return _Destination(url=url, host=host, addresses=tried)


def _ip_literal(host: str) -> IPAddress | None:
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped  # ::ffff:a.b.c.d is the IPv4 host itself
    return address


async def _resolve(host: str, port: int) -> list[IPAddress]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise httpx2.ConnectError(f"cannot resolve host {host!r}: {exc.strerror}") from None
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = _ip_literal(str(sockaddr[0]))
        if address is not None and address not in addresses:
            addresses.append(address)
    if not addresses:
        raise httpx2.ConnectError(f"host {host!r} has no address")
    return addresses


def _blocked_reason(address: IPAddress, allow: AllowList) -> str | None:
    """Why ``address`` may not be reached, or ``None`` if it may."""
    if address in _METADATA_ADDRESSES:
        return None if allow.allows(address) else "cloud metadata"
    if allow.allows(address):
        return None
    for network, reason in _BLOCKED_NETWORKS:
        if address.version == network.version and address in network:
            return reason
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            inner = _blocked_reason(embedded, allow)
            if inner is not None:
                return inner
    if not address.is_global:
        return "reserved"
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a 6to4 or NAT64 address reaches."""
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


# --- request and response ------------------------------------------------------------------


def _request_headers(headers: dict[str, str] | None) -> dict[str, str]:
    if headers is None:
        return {}
    if not isinstance(headers, dict):
        raise _bad("headers", "headers must be an object of names to values", "请求头格式错误")
    if len(headers) > MAX_HEADERS:
        raise _bad("headers", f"more than {MAX_HEADERS} headers", "请求头过多")
    clean: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not _TOKEN.fullmatch(name) or len(name) > 256:
            raise _bad("headers", f"invalid header name {str(name)[:40]!r}", "请求头名称无效")
        if name.lower() in _RESERVED_HEADERS:
            raise _bad("headers", f"header {name!r} is set by the tool", "该请求头由工具设置")
        if not isinstance(value, str):
            raise _bad(
                "headers", f"header {name!r} must have a string value", "请求头值必须是字符串"
            )
        if len(value) > MAX_HEADER_VALUE_CHARS or any(
            (ord(ch) < 32 and ch != "\t") or ord(ch) == 127 for ch in value
        ):
            raise _bad(
                "headers",
                f"header {name!r} has a value with CR/LF or control characters",
                "请求头值无效",
            )
        clean[name] = value
    return clean


def _request_body(
    body: str | dict[str, Any] | list[Any] | None, headers: dict[str, str]
) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, str):
        data = body.encode("utf-8", errors="replace")
    else:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        if not any(name.lower() == "content-type" for name in headers):
            headers["Content-Type"] = "application/json"
    if len(data) > MAX_REQUEST_BODY_BYTES:
        raise _bad("body", f"body is larger than {MAX_REQUEST_BODY_BYTES} bytes", "请求体过大")
    return data


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # Built once: loading the trust store costs milliseconds. trust_env=False: no SSL_CERT_*
    # variables steer which servers we trust.
    return httpx2.create_ssl_context(trust_env=False)


async def _send(
    transport: httpx2.AsyncHTTPTransport,
    target: _Destination,
    method: str,
    headers: dict[str, str],
    content: bytes | None,
) -> httpx2.Response:
    """Send to the first checked address that accepts a connection (an IPv6 answer on a
    host without IPv6, say, falls through to the next); only connect failures move on."""
    failure: httpx2.ConnectError | None = None
    for address in target.addresses:
        request = _pinned_request(target, address, method, headers, content)
        try:
            response = await transport.handle_async_request(request)
        except httpx2.ConnectError as exc:
            failure = exc
            continue
        response.request = request
        return response
    raise failure or httpx2.ConnectError(f"no address to connect to for {target.host}")


def _pinned_request(
    target: _Destination,
    address: str,
    method: str,
    headers: dict[str, str],
    content: bytes | None,
) -> httpx2.Request:
    """A request to ``address`` whose Host header and TLS SNI still name the host."""
    extensions: dict[str, Any] = {}
    if target.url.scheme == "https" and _ip_literal(target.host) is None:
        extensions["sni_hostname"] = target.host
    return httpx2.Request(
        method,
        target.url.copy_with(host=address, fragment=None),
        headers={
            "Host": target.url.netloc.decode("ascii"),
            "User-Agent": USER_AGENT,
            "Accept": "*/*",
            "Accept-Encoding": "identity",
            **headers,
        },
        content=content,
        extensions=extensions,
    )


@dataclass(slots=True)
class _Body:
    data: bytes
    truncated: bool
    undecoded: str | None = None  # a content-encoding we could not undo


async def _read_body(response: httpx2.Response, limit: int) -> _Body:
    """Up to ``limit`` bytes of the (decompressed) body; the rest is never downloaded."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    decoder: Any = None
    if encoding in ("gzip", "x-gzip", "deflate"):
        decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header, detected
    elif encoding not in ("identity", ""):
        await response.aclose()
        return _Body(b"", truncated=False, undecoded=encoding)
    chunks: list[bytes] = []
    size = 0
    truncated = False
    try:
        async for raw in response.aiter_raw():
            # max_length bounds what one compressed chunk may expand to (a "zip bomb").
            chunk = decoder.decompress(raw, limit - size + 1) if decoder is not None else raw
            chunks.append(chunk)
            size += len(chunk)
            if size > limit or (decoder is not None and decoder.unconsumed_tail):
                truncated = True
                break
        if decoder is not None and not truncated:
            chunks.append(decoder.flush())
    except zlib.error:
        return _Body(b"", truncated=False, undecoded=f"corrupt {encoding}")
    finally:
        await response.aclose()
    data = b"".join(chunks)
    return _Body(data[:limit], truncated=truncated or len(data) > limit)


def _shape(response: httpx2.Response, body: _Body, url: httpx2.URL, method: str) -> dict[str, Any]:
    content_type = response.headers.get("content-type", "")
    mime = content_type.split(";", 1)[0].strip().lower()
    out: dict[str, Any] = {
        "status": response.status_code,
        "url": str(url),
        "headers": {k: response.headers[k] for k in _SHOWN_HEADERS if k in response.headers},
        "body": None,
        "truncated": body.truncated,
    }
    notes: list[str] = []
    if body.truncated:
        notes.append(f"body cut at {MAX_RESPONSE_BYTES} bytes (响应过大，已截断)")
    if body.undecoded:
        notes.append(f"body is {body.undecoded}-encoded and was not decoded")
    elif method != "HEAD" and body.data:
        if _is_text(mime, body.data):
            text = body.data.decode(_charset(response), errors="replace")
            out["body"] = _maybe_json(text, mime) if not body.truncated else text
        else:
            notes.append(
                f"binary body of {len(body.data)} bytes not shown ({mime or 'unknown type'})"
            )
    if notes:
        out["note"] = "; ".join(notes)
    size = f"{len(body.data)} bytes" + (", truncated" if body.truncated else "")
    out["summary"] = (
        f"{method} {url} -> {response.status_code} {response.reason_phrase} "
        f"({size}{', ' + mime if mime else ''})"
    )
    return out


def _is_text(mime: str, data: bytes) -> bool:
    if mime.startswith("text/") or mime.endswith(("+json", "+xml", "/json", "/xml")):
        return True
    if mime in (
        "application/javascript",
        "application/x-www-form-urlencoded",
        "application/x-ndjson",
    ):
        return True
    return mime == "" and b"\x00" not in data[:1024]  # untyped: sniff


def _charset(response: httpx2.Response) -> str:
    charset = response.charset_encoding or "utf-8"
    try:
        codecs.lookup(charset)
    except LookupError:
        return "utf-8"
    return charset


def _maybe_json(text: str, mime: str) -> Any:
    if mime == "application/json" or mime.endswith("+json"):
        try:
            return json.loads(text)
        except ValueError:
            return text  # labelled JSON but is not: show it as it is
    return text


# --- the request loop ----------------------------------------------------------------------


async def fetch(
    url: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: str | dict[str, Any] | list[Any] | None = None,
    *,
    allow: AllowList = _EMPTY_ALLOW,
    time_limit: float = TIME_LIMIT_SECONDS,
    max_bytes: int = MAX_RESPONSE_BYTES,
) -> dict[str, Any]:
    """What :func:`http_request` does, with its limits as parameters (tests shrink them).

    Raises ``ToolArgumentError`` for a bad argument, :class:`DestinationBlockedError`,
    :class:`TooManyRedirectsError`, ``ToolTimeoutError`` past ``time_limit`` and
    ``httpx2.TransportError`` subclasses for network failures.
    """
    verb = method.strip().upper() if isinstance(method, str) else ""
    if verb not in METHODS:
        raise _bad(
            "method", f"method must be one of {', '.join(sorted(METHODS))}", "不支持的请求方法"
        )
    current = _parse_url(url)
    extra = _request_headers(headers)
    content = _request_body(body, extra)
    deadline = asyncio.timeout(time_limit)
    try:
        async with deadline:
            return await _follow(current, verb, extra, content, allow=allow, max_bytes=max_bytes)
    except TimeoutError:
        if not deadline.expired():
            raise  # not our deadline: an error of its own, not the time limit
        raise ToolTimeoutError(f"no complete response within {time_limit:g} s (请求超时)") from None


async def _follow(
    url: httpx2.URL,
    method: str,
    headers: dict[str, str],
    content: bytes | None,
    *,
    allow: AllowList,
    max_bytes: int,
) -> dict[str, Any]:
    async with httpx2.AsyncHTTPTransport(verify=_tls_context(), trust_env=False) as transport:
        for hop in range(MAX_REDIRECTS + 1):
            try:
                target = await _check_destination(url, allow)
            except _Refused as exc:
                logger.info("http_blocked", origin=_origin(url), hop=hop, reason=str(exc))
                where = "the URL" if hop == 0 else f"redirect {hop} (to {_origin(url)})"
                raise DestinationBlockedError(
                    f"{where} is refused: {exc.english} (目标地址被拒绝：{exc.chinese})"
                ) from None
            response = await _send(transport, target, method, headers, content)
            location = response.headers.get("location")
            if response.status_code not in _REDIRECTS or not location:
                body = await _read_body(response, max_bytes)
                return _shape(response, body, url, method)
            await response.aclose()
            next_url = _redirect_target(url, location)
            if response.status_code == 303 or (
                response.status_code in (301, 302) and method == "POST"
            ):
                method, content = ("HEAD" if method == "HEAD" else "GET"), None
                headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
            if (next_url.scheme, next_url.host, next_url.port) != (url.scheme, url.host, url.port):
                # Another origin gets none of the caller's headers (an X-Api-Key is as secret
                # as an Authorization) and no body: they were meant for the first server only.
                headers = {k: v for k, v in headers.items() if k.lower() in _PORTABLE_HEADERS}
                content = None if method in ("GET", "HEAD") else content
                if content is not None:
                    raise TooManyRedirectsError(
                        "refusing to resend a request body to another origin after a redirect "
                        "(重定向到其他站点时不会重发请求体)"
                    )
            url = next_url
    raise TooManyRedirectsError(f"more than {MAX_REDIRECTS} redirects (重定向次数过多)")


def _origin(url: httpx2.URL) -> str:
    """Scheme, host and port only: paths and queries may carry tokens."""
    return str(url.copy_with(path="/", query=None, fragment=None))


def _redirect_target(url: httpx2.URL, location: str) -> httpx2.URL:
    try:
        return url.join(location).copy_with(fragment=None)
    except (httpx2.InvalidURL, ValueError, TypeError):
        raise DestinationBlockedError(
            f"the server redirected to an invalid URL {location[:100]!r}"
        ) from None


def _changes_anything(arguments: Mapping[str, Any]) -> bool:
    """GET and HEAD only read (a plan node of one is run again on resume); the rest may write."""
    method = arguments.get("method", "GET")
    return not (isinstance(method, str) and method.strip().upper() in {"GET", "HEAD"})


@tool(timeout=TIME_LIMIT_SECONDS + 5.0, toolset="web", side_effects=_changes_anything)
async def http_request(
    url: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: str | dict[str, Any] | list[Any] | None = None,
    *,
    ctx: ToolContext,
) -> dict[str, Any]:
    """Send one HTTP(S) request and return the status, selected headers and body.

    Internal, local and cloud-metadata addresses are refused. JSON responses come back
    parsed; at most 1 MiB of body is read; everything must finish within 10 seconds.

    Args:
        url: The http:// or https:// URL.
        method: GET, HEAD, POST, PUT, PATCH or DELETE.
        headers: Extra request headers, e.g. {"Accept": "application/json"}.
        body: The request body: text, or a JSON object/array (sent as application/json).
    """
    allow = AllowList.parse(ctx.extras.get("http_allow"))
    return await fetch(url, method, headers, body, allow=allow)
