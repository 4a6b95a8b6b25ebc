"""Remote MCP tools as Hermes tools (seed 001 §4.2–4.3).

A remote tool becomes a :class:`~hermes.tools.base.Tool` named ``<prefix>__<tool>`` whose
``parameters`` are the remote ``inputSchema``, so the executor validates and coerces arguments
locally before anything goes over the wire (DESIGN principle 1). Its result is normalized into a
:class:`~hermes.tools.base.ToolResult`::

    output = {"text": "joined text parts",
              "structured": {...},              # only when the server sent structuredContent
              "attachments": [{"type", "mime_type", "note", ...}]}       # only when there are

Binary payloads (images, audio, blobs) are never put in ``output``: the model reads ``output``
as JSON text and base64 would flood its context; an attachment carries a short note instead.
``isError`` becomes ``ok=False`` with error type ``mcp_tool_error`` and the server's message.

The output stays bounded whatever the server sends: text is clipped to ``max_text_chars`` with a
note; structured content whose JSON is longer than that is left out — cutting JSON anywhere
would break it — and ``output["note"]`` says so (when there is no text, the clipped JSON
becomes the text, so the model still sees the beginning); past :data:`MAX_ATTACHMENTS`
attachments the rest are only counted in the note.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from hermes.mcp.config import sanitize_name
from hermes.mcp.failures import clip
from hermes.tools.base import Tool, ToolResult
from hermes.tools.validation import check_json_schema

__all__ = [
    "MAX_ATTACHMENTS",
    "MCP_TOOL_ERROR",
    "RemoteCall",
    "SkippedTool",
    "adapt_tools",
    "clip_text",
    "content_attachment",
    "no_approval",
    "normalize_result",
    "remote_tool",
    "resource_attachment",
    "tool_name",
    "tool_names",
]

#: ``ToolResult.error.type`` of a call the remote tool itself reported as failed (``isError``).
MCP_TOOL_ERROR = "mcp_tool_error"
#: Sends one call to the server: ``call(remote_name, arguments) -> ToolResult``.
RemoteCall = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]

_MAX_NAME = 64
_HASH_CHARS = 8
_MAX_ERROR_CHARS = 2_000
_MAX_DESCRIPTION_CHARS = 4_000
#: Attachments listed in one result; the rest are counted in the result's note.
MAX_ATTACHMENTS = 50


@dataclass(frozen=True, slots=True)
class SkippedTool:
    """A remote tool that was not adapted, and why (reported in the server's status)."""

    server: str
    remote_name: str
    reason: str


def no_approval(remote_name: str) -> bool:
    """The default ``requires_approval`` of :func:`adapt_tools`: no tool needs approval."""
    return False


def tool_name(prefix: str, remote_name: str) -> str:
    """``<prefix>__<remote_name>`` made to match ``^[A-Za-z0-9_.-]{1,64}$``.

    Characters outside the set become ``_``; a name that had to be clipped ends with a short hash
    of the remote name, so two long names sharing a beginning stay distinct.
    """
    raw = f"{sanitize_name(prefix)}__{remote_name}"
    clean = sanitize_name(raw, limit=len(raw))
    if len(clean) <= _MAX_NAME:
        return clean
    return _hashed(clean, remote_name)


def tool_names(prefix: str, remote_names: Iterable[str]) -> dict[str, str]:
    """Local names for all of one server's tools, by remote name, each unique.

    When sanitizing makes names collide (``a b`` and ``a_b``), a name that was changed gets a
    hash of its remote name appended; a name that needed no change keeps it. The outcome depends
    only on the set of names, not on the order the server listed them in.
    """
    names = list(dict.fromkeys(remote_names))
    local = {remote: tool_name(prefix, remote) for remote in names}
    counts: dict[str, int] = {}
    for name in local.values():
        counts[name] = counts.get(name, 0) + 1
    exact = f"{sanitize_name(prefix)}__"
    for remote in names:
        name = local[remote]
        if counts[name] > 1 and name != exact + remote:
            local[remote] = _hashed(name, remote)
    return local


def _hashed(name: str, remote_name: str) -> str:
    digest = hashlib.sha256(remote_name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    return f"{name[: _MAX_NAME - _HASH_CHARS - 1]}_{digest}"


def normalize_result(result: types.CallToolResult, *, max_text_chars: int = 20_000) -> ToolResult:
    """A server's ``CallToolResult`` as a :class:`ToolResult` (see the module docstring).

    Text longer than ``max_text_chars`` is clipped with a note, and so is everything else that
    could grow without bound (a huge result must not flood the model's context).
    """
    texts: list[str] = []
    attachments: list[dict[str, Any]] = []
    extra = 0
    for block in result.content:
        if isinstance(block, types.TextContent):
            texts.append(block.text)
        elif len(attachments) < MAX_ATTACHMENTS:
            attachments.append(content_attachment(block))
        else:
            extra += 1
    text = clip_text("\n".join(texts), max_text_chars)
    if result.is_error:
        message = text or "the tool reported an error without a message"
        return ToolResult.failure(MCP_TOOL_ERROR, clip(message, _MAX_ERROR_CHARS))
    output: dict[str, Any] = {"text": text}
    notes: list[str] = []
    if result.structured_content is not None:
        structured = result.structured_content
        dumped = json.dumps(structured, ensure_ascii=False, default=str)
        if len(dumped) <= max_text_chars:
            output["structured"] = structured
        else:
            notes.append(
                f"structured content left out: {len(dumped):,} characters of JSON, over the "
                f"{max_text_chars:,}-character limit"
            )
            if not text:
                output["text"] = clip_text(dumped, max_text_chars)
    if attachments:
        output["attachments"] = attachments
    if extra:
        notes.append(f"{extra:,} more attachments not listed (at most {MAX_ATTACHMENTS})")
    if notes:
        output["note"] = "; ".join(notes)
    return ToolResult(ok=True, output=output)


def clip_text(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` with a note saying how much was left out (for outputs;
    :func:`hermes.mcp.failures.clip` shortens messages and descriptions with "…")."""
    if len(text) <= max_chars:
        return text
    shown = f"showing {max_chars} of {len(text)} characters"
    return f"{text[:max_chars]}\n…[truncated: {shown}]"


def content_attachment(block: types.ContentBlock) -> dict[str, Any]:
    """A non-text content block as a small description, without its payload."""
    if isinstance(block, types.ImageContent | types.AudioContent):
        size = _base64_size(block.data)
        return {
            "type": block.type,
            "mime_type": block.mime_type,
            "size_bytes": size,
            "note": f"[{block.type} {block.mime_type}, {size} bytes, not shown]",
        }
    if isinstance(block, types.EmbeddedResource):
        return resource_attachment(block.resource, embedded=True)
    if isinstance(block, types.ResourceLink):
        mime = block.mime_type or "unknown type"
        return {
            "type": "resource_link",
            "mime_type": block.mime_type,
            "uri": block.uri,
            "note": f"[link to resource {block.uri} ({mime})]",
        }
    # ContentBlock is a closed union today; a future block type is still reported, not dropped.
    kind = str(getattr(block, "type", type(block).__name__))
    return {"type": kind, "mime_type": None, "note": f"[{kind} content, not shown]"}


def resource_attachment(
    contents: types.TextResourceContents | types.BlobResourceContents, *, embedded: bool = False
) -> dict[str, Any]:
    """Resource contents as a small description (uri, type, size), without the payload."""
    if isinstance(contents, types.TextResourceContents):
        size = len(contents.text.encode("utf-8", "replace"))
    else:
        size = _base64_size(contents.blob)
    mime = contents.mime_type or "application/octet-stream"
    what = "embedded resource" if embedded else "resource"
    return {
        "type": "resource",
        "mime_type": mime,
        "uri": contents.uri,
        "size_bytes": size,
        "note": f"[{what} {contents.uri} ({mime}, {size} bytes), not shown]",
    }


def _base64_size(data: str) -> int:
    """Decoded size of base64 text, computed without decoding it."""
    stripped = data.rstrip("=")
    return len(stripped) * 3 // 4


def remote_tool(
    server_name: str,
    prefix: str,
    mcp_tool: types.Tool,
    call: RemoteCall,
    *,
    name: str | None = None,
    timeout: float = 30.0,
    permissions: tuple[str, ...] = (),
    requires_approval: bool = False,
) -> Tool:
    """A Hermes tool that runs ``mcp_tool`` on the server through ``call``.

    ``name`` overrides the local name (``tool_names`` gives collision-free ones). ``timeout`` is
    the executor's bound on the call; ``permissions`` (RBAC scopes) and ``requires_approval``
    become the tool's own, so the executor enforces them like a local tool's. Raises
    ``ValueError`` with the reason when the remote input schema is not a valid JSON Schema
    object (the caller skips and reports the tool).
    """
    schema = mcp_tool.input_schema
    check_json_schema(schema, what=f"input schema of MCP tool {mcp_tool.name!r}")
    if schema.get("type", "object") != "object":
        raise ValueError(f"input schema of MCP tool {mcp_tool.name!r} must have type 'object'")
    parameters = {**schema, "type": "object"}
    remote_name = mcp_tool.name

    async def run_remote(**arguments: Any) -> ToolResult:
        return await call(remote_name, arguments)

    description = clip(
        mcp_tool.description or mcp_tool.title or f"Tool {remote_name!r}", _MAX_DESCRIPTION_CHARS
    )
    return Tool(
        name=name if name is not None else tool_name(prefix, remote_name),
        description=f"{description} (MCP server {server_name!r})",
        parameters=parameters,
        fn=run_remote,
        is_async=True,
        timeout=timeout,
        toolset=f"mcp:{server_name}",
        permissions=permissions,
        requires_approval=requires_approval,
    )


def adapt_tools(
    server_name: str,
    prefix: str,
    mcp_tools: Iterable[types.Tool],
    call: RemoteCall,
    *,
    timeout: float = 30.0,
    permissions: tuple[str, ...] = (),
    requires_approval: Callable[[str], bool] = no_approval,
) -> tuple[dict[str, Tool], list[SkippedTool]]:
    """Every usable tool of one server by its remote name (in listing order), plus the ones
    skipped with their reasons.

    ``permissions`` apply to every tool; ``requires_approval`` tells by remote name which
    need a person's approval (e.g. ``ServerConfig.needs_approval``).
    """
    listed = list(mcp_tools)
    names = tool_names(prefix, (t.name for t in listed))
    tools: dict[str, Tool] = {}
    skipped: list[SkippedTool] = []
    seen: set[str] = set()
    for mcp_tool in listed:
        if mcp_tool.name in seen:
            skipped.append(SkippedTool(server_name, mcp_tool.name, "listed twice by the server"))
            continue
        seen.add(mcp_tool.name)
        try:
            tool = remote_tool(
                server_name,
                prefix,
                mcp_tool,
                call,
                name=names[mcp_tool.name],
                timeout=timeout,
                permissions=permissions,
                requires_approval=requires_approval(mcp_tool.name),
            )
        except ValueError as exc:
            skipped.append(SkippedTool(server_name, mcp_tool.name, str(exc)))
            continue
        tools[mcp_tool.name] = tool
    return tools, skipped
