"""Opening one MCP server's transport and its ``ClientSession`` (stdio, streamable HTTP, SSE).

:func:`open_session` enters everything it opens on the caller's ``AsyncExitStack``, so the
owner task that called it closes it in the same task (STYLE §7). The stdio server's stderr goes
to a private file whose tail explains a failed start (:class:`~hermes.mcp.process.StdioLaunch`);
both HTTP transports use an HTTP client built here, with the hook that records failed answers
(:class:`~hermes.mcp.failures.HttpStatus`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass

import httpx2
import mcp_types as types
from mcp.client.session import ClientSession, MessageHandlerFnT
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from hermes._version import __version__
from hermes.mcp.client.errors import McpConnectionError
from hermes.mcp.config import ServerConfig
from hermes.mcp.failures import HttpStatus
from hermes.mcp.listing import ReadWatch, ToolListScreen, WriteWatch
from hermes.mcp.process import StdioLaunch

__all__ = ["SessionHooks", "open_session"]

_HTTP_READ_TIMEOUT_S = 300.0


@dataclass(frozen=True, slots=True)
class SessionHooks:
    """What the connection hears from its session's tasks."""

    #: Every message the server sends on its own (notifications, transport errors).
    on_message: MessageHandlerFnT
    #: The transport's read stream ended (a stdio server exited, an SSE stream closed).
    on_transport_end: Callable[[], None]
    #: A stdio launch, before its process starts: a failed start can quote its stderr, and
    #: the owner closes it with the attempt.
    on_launch: Callable[[StdioLaunch], None]
    #: The started stdio server's process id (``None`` when it cannot be told), heard before
    #: the session opens so a failure after the start still sweeps the process group.
    on_pid: Callable[[int | None], None]


async def open_session(
    stack: AsyncExitStack,
    name: str,
    config: ServerConfig,
    *,
    screen: ToolListScreen,
    http: HttpStatus,
    hooks: SessionHooks,
) -> ClientSession:
    """Open the transport ``config`` names and a session on it, entered on ``stack``."""
    if config.transport == "stdio":
        launch = StdioLaunch(config)
        hooks.on_launch(launch)
        if launch.params is None or launch.errlog is None:
            raise McpConnectionError(
                f"MCP server {name!r}: command {config.command!r} was not found"
                + (" (looked on PATH)" if "/" not in str(config.command) else "")
            )
        # The server's stderr goes to a private file: its tail explains a failed start.
        streams = await stack.enter_async_context(stdio_client(launch.params, errlog=launch.errlog))
        hooks.on_pid(launch.find_pid())
    elif config.transport == "streamable_http":
        assert config.url is not None
        # Built here (not the SDK's private factory) to bound connecting by our timeout
        # and to see the HTTP status of failed answers; reads stay long because the
        # server may hold a response stream open.
        client = httpx2.AsyncClient(
            headers=dict(config.headers),
            timeout=httpx2.Timeout(config.connect_timeout, read=_HTTP_READ_TIMEOUT_S),
            event_hooks={"response": [http]},
        )
        await stack.enter_async_context(client)
        streams = await stack.enter_async_context(
            streamable_http_client(config.url, http_client=client)
        )
    else:
        assert config.url is not None
        streams = await stack.enter_async_context(
            sse_client(
                config.url,
                headers=dict(config.headers),
                timeout=config.connect_timeout,
                httpx_client_factory=_SseClientFactory(http),
            )
        )
    read, write = streams
    watched: ReadWatch[SessionMessage | Exception] = ReadWatch(read, hooks.on_transport_end, screen)
    session = ClientSession(
        watched,
        WriteWatch(write, screen),
        message_handler=hooks.on_message,
        client_info=_client_info(),
    )
    screen.version = lambda: session.protocol_version
    return await stack.enter_async_context(session)


@dataclass(frozen=True, slots=True)
class _SseClientFactory:
    """The SSE transport's HTTP client, with the hook that records failed answers."""

    http: HttpStatus

    def __call__(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout if timeout is not None else httpx2.Timeout(30.0),
            auth=auth,
            event_hooks={"response": [self.http]},
        )


def _client_info() -> types.Implementation:
    return types.Implementation(name="hermes", version=__version__)
