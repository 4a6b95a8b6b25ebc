"""A server's tool listing, and the transport streams a connection watches.

One tool with a schema the SDK rejects must not cost the server all its tools. The SDK checks
a ``tools/list`` answer as a whole, against the negotiated protocol revision's result type,
*before* it applies the result type a caller passes to ``ClientSession.send_request`` — so a
lenient result type cannot get past that check, and neither can a second request. Instead
:class:`ToolListScreen` looks at the answers on their way in: the connection's write stream
(:class:`WriteWatch`) notes the ids of ``tools/list`` requests, its read stream
(:class:`ReadWatch`) hands the answers to those ids to the screen, which checks each tool on its
own (the revision's type, then ``mcp_types.Tool``) and takes out those that fail, recording
them as skipped with the reason. The other tools reach the session, which never sees the bad
ones (nor calls them). An answer that is fine, or not a listing, passes untouched.

:class:`ReadWatch` also calls back when the read stream ends or breaks: the SDK's session
treats that as a quiet close; for us it is how a crashed stdio server (or a dropped SSE
stream) shows, so the owner can reconnect.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Generic, Protocol, Self, TypeVar

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.message import SessionMessage
from mcp_types import methods
from pydantic import ValidationError

from hermes.mcp.adapter import SkippedTool
from hermes.mcp.failures import clip
from hermes.observe import get_logger

__all__ = ["ReadWatch", "ToolListScreen", "WriteWatch", "list_all_tools", "tools_fingerprint"]

logger = get_logger("mcp")

T_co = TypeVar("T_co", covariant=True)
T_contra = TypeVar("T_contra", contravariant=True)

_MAX_TOOL_PAGES = 100
_LIST_METHOD = "tools/list"
#: Requests whose answers the screen still waits for, at most (ids of abandoned requests).
_MAX_PENDING = 64


class ToolListScreen:
    """Takes the tools the SDK would reject out of ``tools/list`` answers (module docstring)."""

    def __init__(self, server: str) -> None:
        self._server = server
        self._pending: set[types.RequestId] = set()
        self._skipped: list[SkippedTool] = []
        #: The negotiated protocol revision (set once the session is initialized).
        self.version: Callable[[], str | None] = lambda: None

    def sent(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCRequest) and message.method == _LIST_METHOD:
            if len(self._pending) >= _MAX_PENDING:
                self._pending.clear()
            self._pending.add(message.id)

    def received(self, item: SessionMessage) -> SessionMessage:
        message = item.message
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return item
        if message.id not in self._pending:
            return item
        self._pending.discard(message.id)
        if isinstance(message, types.JSONRPCError) or self._valid(message.result):
            return item
        tools = message.result.get("tools")
        if not isinstance(tools, list):
            return item  # not a listing the screen can mend: the SDK reports it as malformed
        kept = [tool for index, tool in enumerate(tools) if self._keep(index, tool)]
        result = {**message.result, "tools": kept}
        mended = types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)
        return SessionMessage(message=mended, metadata=item.metadata)

    def take(self) -> list[SkippedTool]:
        """The tools taken out since the last call (one listing's worth)."""
        skipped, self._skipped = self._skipped, []
        return skipped

    def _valid(self, result: dict[str, Any]) -> bool:
        return self._problem(result) is None

    def _problem(self, result: dict[str, Any]) -> str | None:
        """Why the SDK would reject ``result`` as a tools/list answer (``None``: it would not)."""
        version = self.version()
        try:
            if version is not None:
                methods.validate_server_result(_LIST_METHOD, version, result)
            types.ListToolsResult.model_validate(result, by_name=False)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            # The location inside the one tool checked: drop the leading "tools.0".
            where = ".".join(str(part) for part in first["loc"][2:])
            return clip(f"{where}: {first['msg']}" if where else first["msg"], 300)
        except (KeyError, ValueError):
            return None  # a revision the SDK has no table for: leave the answer to it
        return None

    def _keep(self, index: int, tool: Any) -> bool:
        name = tool.get("name") if isinstance(tool, dict) else None
        label = name if isinstance(name, str) else f"(tool #{index + 1} without a name)"
        problem = self._problem({"tools": [tool]})
        if problem is None:
            return True
        reason = f"the server listed it with an invalid definition: {problem}"
        self._skipped.append(SkippedTool(self._server, label, reason))
        return False


async def list_all_tools(
    session: ClientSession, server: str, screen: ToolListScreen
) -> tuple[list[types.Tool], list[SkippedTool]]:
    """All pages of the server's tools, and the tools the screen took out of them."""
    screen.take()
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools, screen.take()
    logger.warning("mcp_tool_pages_capped", server=server, pages=_MAX_TOOL_PAGES)
    return tools, screen.take()


def tools_fingerprint(listed: list[types.Tool]) -> tuple[tuple[str, ...], ...]:
    """What of a listing the adapted tools depend on (a re-listing that equals it changes
    nothing)."""

    def schema(value: dict[str, Any] | None) -> str:
        return json.dumps(value, sort_keys=True, default=str)

    return tuple(
        (
            t.name,
            t.title or "",
            t.description or "",
            schema(t.input_schema),
            schema(t.output_schema),
        )
        for t in listed
    )


class _Readable(Protocol[T_co]):
    async def receive(self) -> T_co: ...
    async def aclose(self) -> None: ...


class _Writable(Protocol[T_contra]):
    async def send(self, item: T_contra, /) -> None: ...
    async def aclose(self) -> None: ...


class _Closable(Protocol):
    async def aclose(self) -> None: ...


class _Wrapper:
    """A stream around ``_inner`` (set by the subclass): closing it closes the inner one."""

    _inner: _Closable

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class ReadWatch(_Wrapper, Generic[T_co]):
    """A transport's read stream that screens listings and calls ``on_end`` when it ends."""

    _inner: _Readable[T_co]

    def __init__(
        self, inner: _Readable[T_co], on_end: Callable[[], None], screen: ToolListScreen
    ) -> None:
        self._inner = inner
        self._on_end = on_end
        self._screen = screen

    @property
    def last_context(self) -> Any:
        # The dispatcher reads it (when present) to run handlers in the sender's context.
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> T_co:
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise
        if isinstance(item, SessionMessage):
            return self._screen.received(item)  # type: ignore[return-value]  # same type
        return item

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T_co:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class WriteWatch(_Wrapper):
    """A transport's write stream that tells the screen which requests are listings."""

    _inner: _Writable[SessionMessage]

    def __init__(self, inner: _Writable[SessionMessage], screen: ToolListScreen) -> None:
        self._inner = inner
        self._screen = screen

    async def send(self, item: SessionMessage, /) -> None:
        self._screen.sent(item)
        await self._inner.send(item)
