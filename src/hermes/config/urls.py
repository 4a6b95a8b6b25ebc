"""URL checks shared by the configuration models (the model endpoint, MCP servers)."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["http_url"]


def http_url(value: str) -> str:
    """``value`` stripped, if it is an http(s) URL with a host; else ``ValueError``.

    The message never echoes the value: a URL may carry a key in its query string.
    """
    value = value.strip()
    try:
        parts = urlsplit(value)
    except ValueError as exc:
        raise ValueError("must be an http:// or https:// URL") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL with a host")
    return value
