"""Failure texts of MCP connections: what went wrong, said briefly and without secrets.

Every reason a connection records (its ``error``, a failed call's message, a log line) goes
through the server's :class:`Redactor` first. A URL server's address may carry a key in its
query string (``?api_key=…``) or its user info, its headers carry tokens, a stdio server's
``env`` carries secrets — and error texts of the HTTP stack quote the full URL. The redactor
replaces the configured URL by ``scheme://host/path`` and every secret value by ``***``.

:func:`exception_text` names an exception briefly: an HTTP status error becomes
``HTTP 401 Unauthorized`` (never httpx's text, which quotes the URL); :class:`HttpStatus` records
the last non-2xx answer of a connection's HTTP client, because the streamable-HTTP transport
reports one only as "Server returned an error response"; :class:`TransportNote` keeps the last
malformed message a server sent, so a timeout can say why the server seemed silent.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

import httpx2
from pydantic import ValidationError

from hermes.mcp.config import ServerConfig
from hermes.observe import REDACTED

__all__ = [
    "HttpStatus",
    "Redactor",
    "TransportNote",
    "clip",
    "exception_text",
    "first_leaf",
    "safe_url",
]

#: Values shorter than this are not treated as secrets: they cannot be meaningful keys, and
#: replacing every "1" or "true" would garble the messages.
_MIN_SECRET_CHARS = 6
_NOTE_CHARS = 200


def clip(text: str, limit: int = 1_000) -> str:
    """``text`` in at most ``limit`` characters, ending in "…" when cut: the mcp package's
    clip for messages and descriptions (outputs: :func:`hermes.mcp.adapter.clip_text`)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def safe_url(url: str) -> str:
    """``url`` without user info, query and fragment: ``scheme://host[:port]/path``."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "(an invalid URL)"
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))


class Redactor:
    """Removes one server's secrets (URL query and user info, header and env values) from text."""

    __slots__ = ("_safe", "_secrets", "_url")

    def __init__(self, url: str | None, secrets: Iterable[str]) -> None:
        self._url = url
        self._safe = safe_url(url) if url is not None else None
        wanted = {s for s in secrets if len(s) >= _MIN_SECRET_CHARS}
        # Longest first: a secret that contains another is replaced whole.
        self._secrets = sorted(wanted, key=len, reverse=True)

    @classmethod
    def for_config(cls, config: ServerConfig) -> Redactor:
        secrets: list[str] = []
        for value in (*config.headers.values(), *config.env.values()):
            secrets.append(value)
            secrets.extend(value.split())  # "Bearer <token>": the token alone too
        if config.url is not None:
            secrets.extend(_url_secrets(config.url))
        return cls(config.url, secrets)

    def __call__(self, text: str) -> str:
        if self._url is not None and self._safe is not None and self._url in text:
            text = text.replace(self._url, self._safe)
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text


def _url_secrets(url: str) -> list[str]:
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return [url]
    found: list[str] = []
    if parts.query:
        found.append(parts.query)
        for _, value in parse_qsl(parts.query, keep_blank_values=True):
            found.extend((value, unquote(value)))
        # Raw values too: parse_qsl decodes them, error texts quote them as written.
        for pair in parts.query.split("&"):
            found.append(pair.partition("=")[2])
    if parts.fragment:
        found.append(parts.fragment)
    userinfo = parts.netloc.rpartition("@")[0]
    if userinfo:
        found.extend((userinfo, unquote(userinfo)))
    found.extend(part for part in (username, password) if part)
    return found


def first_leaf(group: BaseExceptionGroup[Any]) -> BaseException:
    first = group.exceptions[0]
    return first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


def exception_text(exc: BaseException) -> str:
    """A short description of ``exc`` (not yet redacted)."""
    if isinstance(exc, BaseExceptionGroup):  # anyio task groups wrap their tasks' failures
        exc = first_leaf(exc)
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"the server answered {_status_text(exc.response)}"
    if isinstance(exc, ValidationError):
        return f"malformed answer: {_validation_text(exc)}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _status_text(response: httpx2.Response) -> str:
    try:
        reason = response.reason_phrase
    except (KeyError, ValueError, AttributeError):
        reason = ""
    return f"HTTP {response.status_code} {reason}".rstrip()


def _validation_text(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    if not errors:
        return clip(str(exc), _NOTE_CHARS)
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"])
    given = clip(repr(first.get("input")), 80)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return clip(f"{where + ': ' if where else ''}{first['msg']}, got {given}{more}", _NOTE_CHARS)


@dataclass(slots=True)
class HttpStatus:
    """The last non-2xx answer of a connection's HTTP client (an httpx2 response hook).

    ``count`` grows with each one, so a request can tell whether one came while it ran.
    """

    count: int = 0
    text: str | None = None

    async def __call__(self, response: httpx2.Response) -> None:
        if not 200 <= response.status_code < 300:
            self.count += 1
            self.text = _status_text(response)

    def reset(self) -> None:
        self.count, self.text = 0, None

    def since(self, count: int) -> str | None:
        """The last status text if one was recorded after ``count`` was read."""
        return self.text if self.count > count else None


@dataclass(slots=True)
class TransportNote:
    """The last malformed message (or other transport error) a server's transport reported."""

    at: float = 0.0
    text: str | None = None

    def record(self, exc: BaseException) -> str:
        if isinstance(exc, ValidationError | ValueError):
            what = "it sent malformed JSON-RPC"
            detail = _validation_text(exc) if isinstance(exc, ValidationError) else str(exc)
        else:
            what = "its transport failed"
            detail = exception_text(exc)
        self.at, self.text = time.monotonic(), f"{what}: {clip(detail, _NOTE_CHARS)}"
        return self.text

    def reset(self) -> None:
        self.at, self.text = 0.0, None

    def since(self, moment: float) -> str:
        """``"; <note>"`` when one was recorded at or after ``moment`` (monotonic), else ``""``."""
        return f"; {self.text}" if self.text is not None and self.at >= moment else ""
