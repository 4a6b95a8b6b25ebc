"""``hermes serve [--host H] [--port P]``: the HTTP API (DESIGN.md, HTTP and "More CLI").

Loads the configuration, builds the agent (every API key's user also holding the key's RBAC
roles), binds the socket itself (a port in use is refused with exit 2; ``--port 0`` takes a free
one) and runs uvicorn on it. One line on stderr once it serves:
``Hermes serving on http://HOST:PORT (OpenAPI: /docs)`` (the real port).

A non-loopback host without ``server.api_keys`` is refused (exit 2) unless
``server.allow_anonymous: true``. SIGTERM stops gracefully — uvicorn stops accepting, the
app's shutdown finishes or checkpoints running turns within ``server.shutdown_grace_seconds``
(≤ 20) — and exits 0; Ctrl-C exits 130. The agent is closed after the server stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import math
import signal
import socket
import sys
import threading
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Annotated

import typer
import uvicorn

from hermes.channels.cli.app import app, loaded_config, open_agent
from hermes.channels.cli.output import fail
from hermes.channels.http.shutdown import KEEP_ALIVE_SECONDS, SETTLE_SECONDS, GracefulServer
from hermes.errors import ConfigError, HermesError, InvalidInputError

if TYPE_CHECKING:
    from hermes.config import LoadedConfig

EXIT_INTERRUPTED = 130


@app.command("serve")
def serve(
    host: Annotated[
        str | None, typer.Option("--host", help="Address to bind (default: server.host).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", "-p", min=0, max=65535, help="Port (default: server.port; 0: any)."),
    ] = None,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs). / 提供 HTTP API 服务。"""
    try:
        loaded = with_key_roles_config(loaded_config())
        settings = loaded.config.server
        chosen_host = host or settings.host
        check_exposure(
            chosen_host, has_keys=bool(settings.api_keys), allow=settings.allow_anonymous
        )
        sock = bind(chosen_host, settings.port if port is None else port)
    except HermesError as exc:
        fail(exc)
    try:
        signals = asyncio.run(_serve(loaded, sock, chosen_host))
    except HermesError as exc:
        fail(exc)
    except KeyboardInterrupt:
        raise typer.Exit(code=EXIT_INTERRUPTED) from None
    if signal.SIGINT in signals:
        raise typer.Exit(code=EXIT_INTERRUPTED)


def with_key_roles_config(loaded: LoadedConfig) -> LoadedConfig:
    """``loaded`` with every API key's user also holding the key's RBAC roles (the agent's
    authorizer is built from ``rbac.users``)."""
    from hermes.channels.http.auth import with_key_roles

    config = loaded.config
    if not config.server.api_keys:
        return loaded
    rbac = with_key_roles(config.rbac, config.server.api_keys)
    return dataclasses.replace(loaded, config=config.model_copy(update={"rbac": rbac}))


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, *, has_keys: bool, allow: bool) -> None:
    """Refuse a non-loopback ``host`` without API keys unless anonymous serving is allowed."""
    if is_loopback(host) or has_keys or allow:
        return
    raise ConfigError(
        f"refusing to serve {host} without server.api_keys (set server.allow_anonymous: true "
        "to allow it) / 未配置 API 密钥时拒绝在非本机地址上提供服务"
    )


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; a port in use (or an address that cannot be bound)
    is an ``InvalidInputError`` saying so."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY only on sockets whose ``proto``
    # says TCP (``base_events._set_nodelay``), and accepted sockets inherit the listener's.
    # Without it every response written in two parts (headers, then body) waits ~40 ms for
    # the client's delayed ACK (Nagle) — measured: 44 ms → 0.9 ms per request on loopback.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        reason = "the port is in use" if exc.errno in (48, 98) else exc.strerror or str(exc)
        raise InvalidInputError(
            f"cannot listen on {host}:{port}: {reason} / 无法监听该地址或端口"
        ) from None
    sock.set_inheritable(True)
    return sock


class _Server(GracefulServer):
    """The service's graceful server (shutdown begins the moment uvicorn is told to stop),
    keeping the signals it caught instead of raising them again after a
    graceful stop (so SIGTERM ends in exit 0, SIGINT in 130)."""

    caught: list[int]
    #: Called with the bound port once the server accepts connections.
    on_ready: Callable[[int], None] = staticmethod(lambda port: None)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and sockets:
            self.on_ready(sockets[0].getsockname()[1])

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        self.caught = []
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, sig: int, frame: object) -> None:
        self.caught.append(sig)
        self.handle_exit(sig, None)


async def _serve(loaded: LoadedConfig, sock: socket.socket, host: str) -> list[int]:
    from hermes.channels.http.app import create_app

    settings = loaded.config.server
    agent = open_agent(loaded)
    try:
        api = create_app(agent, settings, loaded=loaded)
        config = uvicorn.Config(
            api,
            log_config=None,
            access_log=False,
            lifespan="on",
            # Running turns get shutdown_grace_seconds (at most 15) from the stop, then are
            # checkpointed; open streams end with their reply: all within the 20 s of
            # DESIGN.md "More CLI".
            timeout_graceful_shutdown=math.ceil(settings.shutdown_grace_seconds + SETTLE_SECONDS),
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
        )
        server = _Server(config, api.state.hermes)
        shown = f"[{host}]" if ":" in host else host

        def ready(port: int) -> None:
            sys.stderr.write(f"Hermes serving on http://{shown}:{port} (OpenAPI: /docs)\n")
            sys.stderr.flush()

        server.on_ready = ready
        await server.serve(sockets=[sock])
        if not server.started and not server.caught:
            raise ConfigError("the HTTP service failed to start (see the log) / HTTP 服务启动失败")
        return server.caught
    finally:
        sock.close()
        await agent.aclose()
