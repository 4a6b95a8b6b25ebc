"""The HTTP side of the Hermes MCP server: where it may listen, who may call, start and stop.

- :func:`check_http_binding`: loopback by default; any other address needs a bearer token.
- :class:`BearerGate`: 401 for every request without ``Authorization: Bearer <token>``.
- :func:`serve_asgi`: uvicorn on a socket bound here (so ``port=0`` reports the real port),
  stopped gracefully when the serving task is cancelled — no listening socket or server task
  is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import re
import socket
from collections.abc import Callable, Generator

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from hermes.errors import ConfigError, ErrorCode, HermesError
from hermes.observe import get_logger

__all__ = [
    "BearerGate",
    "McpServeError",
    "check_http_binding",
    "is_loopback",
    "serve_asgi",
    "transport_security",
]

logger = get_logger("mcp")

#: Seconds open connections (a client's event stream, say) get to finish at shutdown.
GRACEFUL_SHUTDOWN_S = 3.0
#: Seconds past the graceful period before the server task is cancelled outright.
_FORCE_STOP_S = 2.0
#: RFC 6750 ``b64token`` characters: what can travel in the header unchanged.
_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_LOOPBACK_ALLOWED_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
_LOOPBACK_ALLOWED_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


class McpServeError(HermesError):
    """The MCP HTTP server could not listen or start; the message says where and why."""

    code: ErrorCode = "mcp_serve_error"
    status = 500


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def check_http_binding(host: str, bearer_token: str | None, path: str = "/mcp") -> None:
    """Refuse a configuration that would expose the tools: raises ``ConfigError``."""
    if bearer_token is not None and not _TOKEN.fullmatch(bearer_token):
        raise ConfigError(
            "the MCP bearer token must be non-empty and use only letters, digits and "
            "- . _ ~ + / (optionally ending with =)"
        )
    if bearer_token is None and not is_loopback(host):
        raise ConfigError(
            f"refusing to serve MCP over HTTP on {host!r} without a bearer token: anyone who "
            "can reach that address could run the tools; set a token or bind to 127.0.0.1"
        )
    if not path.startswith("/"):
        raise ConfigError(f"the MCP HTTP path must start with '/', got {path!r}")


def transport_security(host: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection for a loopback server (a web page in the user's browser must
    not reach it through a name it controls); ``None`` elsewhere, where the token guards."""
    if not is_loopback(host):
        return None
    bracketed = f"[{host.strip('[]')}]" if ":" in host else host
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*_LOOPBACK_ALLOWED_HOSTS, f"{bracketed}:*"],
        allowed_origins=[*_LOOPBACK_ALLOWED_ORIGINS, f"http://{bracketed}:*"],
    )


class BearerGate:
    """An ASGI wrapper answering 401 to every HTTP request without the right bearer token.

    Written here rather than with the SDK's ``AuthSettings``/``TokenVerifier``: those are the
    OAuth resource-server flow (an issuer URL, protected-resource metadata that sends clients
    into OAuth discovery), while this is one static shared secret. The comparison is
    constant-time (``hmac.compare_digest``).
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not _TOKEN.fullmatch(token):
            raise ConfigError("the MCP bearer token is malformed")
        self._app = app
        self._token = token.encode("ascii")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            response = JSONResponse(
                {"error": "unauthorized", "message": "a valid bearer token is required"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="hermes-mcp"'},
            )
            await response(scope, receive, send)
            return
        await self._app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        given = b""
        for key, value in scope["headers"]:
            if key == b"authorization":
                scheme, _, credentials = value.partition(b" ")
                if scheme.lower() == b"bearer":
                    given = credentials.strip()
                break
        return hmac.compare_digest(given, self._token)


class _Uvicorn(uvicorn.Server):
    """uvicorn that says when it listens and leaves signals to the owner of the event loop
    (who stops the server by cancelling :func:`serve_asgi`)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self.ready.set()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


async def serve_asgi(
    app: ASGIApp, host: str, port: int, *, on_ready: Callable[[int], None] | None = None
) -> None:
    """Serve ``app`` on ``host:port`` until cancelled (or until the server stops by itself).

    ``on_ready(port)`` runs once connections are accepted. On cancellation the server stops
    accepting, gives open connections :data:`GRACEFUL_SHUTDOWN_S`, runs the app's lifespan
    shutdown and closes the socket before the cancellation propagates.
    """
    sock = _listen(host, port)
    config = uvicorn.Config(
        app,
        lifespan="on",
        log_config=None,  # uvicorn must not reconfigure the process's logging
        log_level="warning",
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=int(GRACEFUL_SHUTDOWN_S),
    )
    server = _Uvicorn(config)
    serving = asyncio.create_task(_run(server, sock), name=f"mcp-http:{host}:{port}")
    try:
        await _started(server, serving)
        actual = int(sock.getsockname()[1])
        logger.info("mcp_http_listening", host=host, port=actual)
        if on_ready is not None:
            on_ready(actual)
        await asyncio.shield(serving)
    finally:
        await _stop(server, serving)
        sock.close()
        logger.info("mcp_http_stopped", host=host)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family)
    except OSError as exc:
        raise McpServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc


async def _run(server: _Uvicorn, sock: socket.socket) -> None:
    try:
        await server.serve(sockets=[sock])
    except SystemExit:  # uvicorn exits the process when its start-up fails; here it is an error
        raise McpServeError("the MCP HTTP server failed to start (see the log)") from None


async def _started(server: _Uvicorn, serving: asyncio.Task[None]) -> None:
    """Wait until the server listens; raise if it ended before."""
    ready = asyncio.ensure_future(server.ready.wait())
    try:
        await asyncio.wait({ready, serving}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        ready.cancel()
    if not server.ready.is_set():
        serving.result()  # its own error, if it raised one
        raise McpServeError("the MCP HTTP server stopped before it started listening")


async def _stop(server: _Uvicorn, serving: asyncio.Task[None]) -> None:
    """Graceful stop, then a forced one; never leaves the server task running."""
    if serving.done():
        if not serving.cancelled():
            serving.exception()  # retrieved: it was raised to the caller already, or is None
        return
    server.should_exit = True
    await asyncio.wait({serving}, timeout=GRACEFUL_SHUTDOWN_S + _FORCE_STOP_S)
    if not serving.done():
        logger.warning("mcp_http_forced_stop")
        server.force_exit = True
        serving.cancel()
        await asyncio.wait({serving}, timeout=_FORCE_STOP_S)
