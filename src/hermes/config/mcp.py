"""Configuration of MCP servers (seed 001 §4): the ``mcp_servers:`` section of ``hermes.yaml``.

Two shapes are accepted, so a user can paste a config from another MCP client unchanged::

    mcp_servers:                         # ours
      files: {command: npx, args: [-y, "@modelcontextprotocol/server-filesystem", /tmp]}
      search: {url: "http://127.0.0.1:8931/mcp", headers: {Authorization: "Bearer ${TOKEN}"}}

    {"mcpServers": {"files": {"command": "npx", "args": [...], "env": {...}}}}   # widespread

In the widespread shape, ``type`` (``stdio`` / ``http`` / ``streamable-http`` / ``sse``) maps to
``transport`` and ``disabled`` to ``enabled``; a few display-only keys other clients write
(``_FOREIGN_KEYS``) are ignored. Every other unknown key is an error naming the server and key.
``${ENV}`` placeholders are expanded by the config loader before these models see the values.

Remote tools can be protected like local ones: ``permissions`` lists the RBAC scopes every tool
of the server requires, and ``requires_approval`` is ``true`` (every tool), ``false`` (none) or
a list of ``fnmatch`` patterns on the server's own tool names (``[write_*, delete_*]``)::

    mcp_servers:
      files: {command: npx, args: [...], permissions: ["files:write"], requires_approval: [write_*]}
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)

from hermes.config.checks import check_scopes, problems_text, validation_problems
from hermes.config.urls import http_url
from hermes.errors import ConfigError

__all__ = ["ServerConfig", "ToolFilter", "Transport", "parse_mcp_servers", "sanitize_name"]

Transport = Literal["stdio", "streamable_http", "sse"]

_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]")
_PREFIX = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")
_MAX_SERVER_NAME = 64
#: ``type`` values other clients write, mapped to our ``transport``.
_TYPE_ALIASES: dict[str, Transport] = {
    "stdio": "stdio",
    "http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamable_http": "streamable_http",
    "streamablehttp": "streamable_http",
    "sse": "sse",
}
#: Keys other MCP clients keep per server that mean nothing to Hermes (display, their own
#: approval lists); dropped in the ``mcpServers`` shape only.
_FOREIGN_KEYS = frozenset({"alwaysAllow", "autoApprove", "description", "icon", "name"})


def sanitize_name(text: str, *, limit: int = 40) -> str:
    """``text`` with every character outside ``[A-Za-z0-9_.-]`` replaced by ``_``, clipped."""
    cleaned = _NAME_CHARS.sub("_", text)[:limit]
    return cleaned or "_"


class ToolFilter(BaseModel):
    """Which remote tools to offer: ``include`` (empty: all) minus ``exclude``.

    Entries are the server's own tool names or ``fnmatch`` patterns (``read_*``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def allows(self, remote_name: str) -> bool:
        if self.include and not any(fnmatch.fnmatchcase(remote_name, p) for p in self.include):
            return False
        return not any(fnmatch.fnmatchcase(remote_name, p) for p in self.exclude)


class ServerConfig(BaseModel):
    """One MCP server: a child process over stdio, or a URL (streamable HTTP or SSE).

    ``prefix`` namespaces its tools (``<prefix>__<tool>``); ``None`` means the server's name.
    ``timeout`` bounds each call, ``connect_timeout`` the start + initialize + tool listing.
    ``env`` and ``headers`` often carry secrets: they are kept out of ``repr`` and errors.
    ``permissions`` (RBAC scopes) and ``requires_approval`` (all, none, or name patterns)
    protect the server's tools like local ones (module docstring).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = Field(default=None, min_length=1)
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    transport: Transport = "stdio"
    prefix: str | None = None
    tools: ToolFilter = ToolFilter()
    timeout: float = Field(default=30.0, gt=0, le=86_400)
    connect_timeout: float = Field(default=10.0, gt=0, le=3_600)
    enabled: bool = True
    permissions: tuple[str, ...] = ()
    requires_approval: StrictBool | tuple[str, ...] = False

    @model_validator(mode="before")
    @classmethod
    def _default_transport(cls, data: Any) -> Any:
        # A URL without an explicit transport speaks streamable HTTP (seed 001 §4.3: new
        # deployments speak HTTP).
        if isinstance(data, dict) and "transport" not in data and data.get("url") is not None:
            return {**data, "transport": "streamable_http"}
        return data

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        return None if value is None else http_url(value)

    @field_validator("prefix")
    @classmethod
    def _check_prefix(cls, value: str | None) -> str | None:
        if value is not None and not _PREFIX.match(value):
            raise ValueError("must be 1-40 characters from A-Z a-z 0-9 _ . -")
        return value

    @field_validator("permissions")
    @classmethod
    def _check_scopes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        check_scopes(value)
        return value

    @field_validator("requires_approval")
    @classmethod
    def _check_patterns(cls, value: bool | tuple[str, ...]) -> bool | tuple[str, ...]:
        if isinstance(value, tuple) and not all(pattern.strip() for pattern in value):
            raise ValueError("tool name patterns must not be empty")
        return value

    @model_validator(mode="after")
    def _check_shape(self) -> ServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either 'command' (stdio) or 'url' (streamable_http / sse)")
        if self.command is not None:
            if self.transport != "stdio":
                raise ValueError(f"transport {self.transport!r} needs 'url', not 'command'")
            if self.headers:
                raise ValueError("'headers' only applies to a 'url' server")
        else:
            if self.transport == "stdio":
                raise ValueError("transport 'stdio' needs 'command', not 'url'")
            stdio_keys = [k for k in ("args", "env", "cwd") if getattr(self, k)]
            if stdio_keys:
                raise ValueError(f"{', '.join(stdio_keys)} only apply to a 'command' server")
        return self

    def needs_approval(self, remote_name: str) -> bool:
        """Whether a person must approve each call of the server's tool ``remote_name``."""
        value = self.requires_approval
        if isinstance(value, bool):
            return value
        return any(fnmatch.fnmatchcase(remote_name, pattern) for pattern in value)

    def prefix_for(self, server_name: str) -> str:
        """The tool-name namespace: ``prefix``, else the server's name made name-safe."""
        return self.prefix if self.prefix is not None else sanitize_name(server_name)


def parse_mcp_servers(value: Any, *, file: str | None = None) -> dict[str, ServerConfig]:
    """The servers of an ``mcp_servers`` value, by name (both shapes; see the module doc).

    ``None`` gives no servers. Raises :class:`~hermes.errors.ConfigError` for the first bad
    server, listing all its problems worded as the loader words every other section's
    (``invalid configuration: mcp_servers.<name>.<key>: …``), its key that of the first.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"mcp_servers must be a mapping of server names, got {type(value).__name__}",
            key="mcp_servers",
            file=file,
        )
    foreign = "mcpServers" in value
    if foreign:
        extra = [str(k) for k in value if k != "mcpServers"]
        if extra:
            raise ConfigError(
                f"unexpected keys beside 'mcpServers': {', '.join(extra)}",
                key="mcp_servers",
                file=file,
            )
        value = value["mcpServers"]
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ConfigError("mcpServers must be a mapping", key="mcpServers", file=file)
    servers: dict[str, ServerConfig] = {}
    for name, raw in value.items():
        servers[_check_server_name(name, file)] = _parse_one(name, raw, foreign=foreign, file=file)
    return servers


def _check_server_name(name: Any, file: str | None) -> str:
    if (
        not isinstance(name, str)
        or not name.strip()
        or len(name) > _MAX_SERVER_NAME
        or any(ord(c) < 32 for c in name)
    ):
        raise ConfigError(
            f"an MCP server name must be a non-empty string of at most {_MAX_SERVER_NAME} "
            f"printable characters, got {name!r:.80}",
            key="mcp_servers",
            file=file,
        )
    return name


def _parse_one(name: str, raw: Any, *, foreign: bool, file: str | None) -> ServerConfig:
    key = f"mcp_servers.{name}"
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"MCP server {name!r} must be a mapping, got {type(raw).__name__}", key=key, file=file
        )
    data = dict(raw)
    if foreign:
        data = _from_foreign_shape(name, data, key=key, file=file)
    try:
        return ServerConfig.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, ServerConfig, prefix=("mcp_servers", name))
        raise ConfigError(problems_text(problems), key=problems[0][0], file=file) from None


def _from_foreign_shape(
    name: str, data: dict[str, Any], *, key: str, file: str | None
) -> dict[str, Any]:
    """Map the widespread ``mcpServers`` keys (``type``, ``disabled``) onto ours."""
    for foreign_key in _FOREIGN_KEYS & data.keys():
        del data[foreign_key]
    if "type" in data:
        kind = data.pop("type")
        transport = _TYPE_ALIASES.get(str(kind).lower()) if isinstance(kind, str) else None
        if transport is None:
            raise ConfigError(
                f"MCP server {name!r}: unknown type {kind!r:.40} "
                f"(expected one of {', '.join(sorted(_TYPE_ALIASES))})",
                key=f"{key}.type",
                file=file,
            )
        data.setdefault("transport", transport)
    if "disabled" in data:
        disabled = data.pop("disabled")
        if not isinstance(disabled, bool):
            raise ConfigError(
                f"MCP server {name!r}: 'disabled' must be true or false",
                key=f"{key}.disabled",
                file=file,
            )
        data.setdefault("enabled", not disabled)
    return data
