"""What went wrong with one MCP server, in words that may be shown and logged.

Every failure text goes through the server's redactor (:mod:`hermes.mcp.failures`): a secret
in the URL, a header or the environment never reaches an error, a status or a log line. The
texts add what the transport saw — the last failed HTTP answer, the last malformed message, the
tail of a stdio server's stderr — so a failure names its likely cause.
"""

from __future__ import annotations

from collections.abc import Callable

import mcp_types as types
from mcp.shared.exceptions import MCPError

from hermes.mcp.client.errors import McpConnectionError
from hermes.mcp.config import ServerConfig
from hermes.mcp.failures import (
    HttpStatus,
    Redactor,
    TransportNote,
    clip,
    exception_text,
    first_leaf,
)

__all__ = ["HTTP_STAND_IN", "Diagnosis"]

#: The streamable-HTTP transport's stand-in message for a non-2xx answer.
HTTP_STAND_IN = "Server returned an error response"


class Diagnosis:
    """The failure texts of one server: redacted, bounded, with what its transport saw.

    ``http`` and ``note`` are the recorders the transport feeds; ``stderr_tail`` reads the
    running stdio server's stderr (``""`` when there is none).
    """

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        http: HttpStatus,
        note: TransportNote,
        stderr_tail: Callable[[], str],
    ) -> None:
        self.name = name
        self.config = config
        self.http = http
        self.note = note
        self._redact = Redactor.for_config(config)
        self._stderr_tail = stderr_tail

    def say(self, text: str) -> str:
        """A failure text as it may be shown and logged: without secrets, bounded."""
        return clip(self._redact(text))

    def stderr_note(self) -> str:
        tail = self._stderr_tail()
        return f"; its stderr ends with: {tail}" if tail else ""

    def connect_timeout(self, started: float) -> str:
        """An attempt begun at ``started`` (``time.monotonic()``) did not connect in time."""
        status = self.http.text
        return self.say(
            f"MCP server {self.name!r} did not start, initialize and list its tools "
            f"within {self.config.connect_timeout:g} s"
            + self.note.since(started)
            + (f"; its last HTTP answer was {status}" if status else "")
            + self.stderr_note()
        )

    def describe(self, exc: BaseException, *, connected: bool) -> str:
        """Why an attempt failed to connect (``connected``: why its session was lost)."""
        if isinstance(exc, BaseExceptionGroup):  # anyio task groups wrap their tasks' failures
            exc = first_leaf(exc)
        if isinstance(exc, McpConnectionError):
            return self.say(exc.message)
        status = self.http.text
        if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
            text = "the server closed the connection" + ("" if connected else " during start-up")
        elif isinstance(exc, MCPError) and status is not None:
            text = f"the server answered {status}"
        elif isinstance(exc, FileNotFoundError | PermissionError):
            text = f"could not start the command: {exc}"
        else:
            text = exception_text(exc)
        what = "lost the connection" if connected else "failed to connect"
        note = self.note.since(0.0)
        return self.say(f"MCP server {self.name!r} {what}: {text}{note}{self.stderr_note()}")

    def request_timeout(self, action: str, started: float, http_seen: int) -> str:
        """A request begun at ``started`` (after ``http_seen`` HTTP answers) got no answer."""
        status = self.http.since(http_seen)
        return self.say(
            f"MCP server {self.name!r} did not answer {action} within {self.config.timeout:g} s"
            + self.note.since(started)
            + (f"; its last HTTP answer was {status}" if status else "")
        )

    def refused(self, action: str, exc: MCPError, http_seen: int) -> str:
        """The server answered a request with a protocol error."""
        detail = exc.message
        status = self.http.since(http_seen)
        if status is not None:
            detail = status if detail == HTTP_STAND_IN else f"{detail} ({status})"
        return self.say(f"MCP server {self.name!r} refused {action}: {detail}")

    def unusable(self, action: str, exc: BaseException) -> str:
        """The server's answer to a request could not be read."""
        return self.say(
            f"MCP server {self.name!r} returned an unusable result for {action}: "
            + exception_text(exc)
        )
