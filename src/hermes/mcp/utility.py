"""A server's resources and prompts as utility tools (seed 001 §4.3).

When a server's capabilities include ``resources`` it gets two more tools, when they include
``prompts`` two others, named like its own tools (:func:`~hermes.mcp.adapter.tool_name`):

* ``<prefix>__list_resources`` (``cursor``?) → ``structured.resources``: ``uri``, ``name``,
  ``mimeType``, ``description`` each; ``structured.templates`` (first page, when any):
  ``uriTemplate``, ``name``, ``mimeType``, ``description``; ``structured.nextCursor`` when
  there are more.
* ``<prefix>__read_resource`` (``uri``) → ``text`` (the text contents joined) and
  ``attachments`` (binary contents described, never their base64).
* ``<prefix>__list_prompts`` (``cursor``?) → ``structured.prompts``: ``name``, ``description``,
  ``arguments`` (``name``, ``description``, ``required``); ``structured.nextCursor``.
* ``<prefix>__get_prompt`` (``name``, ``arguments``?: string → string) → ``text`` (the messages
  as ``role: text`` lines), ``structured.messages`` (``role``, ``text``), ``attachments``.

Outputs share the shape of adapted tool results (``text``, ``structured``, ``attachments``).
A server's own tool wins over a utility of the same local name: the utility is skipped and
reported. The server's ``tools.include`` / ``tools.exclude`` filter applies to the bare utility
names too (``exclude: [list_*]`` hides them), and so do its ``permissions`` and
``requires_approval`` patterns: a utility reaches the same server as its tools.

``list_resources`` makes two requests (resources, then templates) within one budget, the
connection's per-request timeout: the first is bounded by the connection's request itself (so
its timeout message says what the server last did), the templates — a bonus on the first page —
by what is left of the budget, and skipped when too little is: the executor's bound on the tool
is only a little longer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

import anyio
import mcp_types as types
from mcp.client.session import ClientSession

from hermes.mcp.adapter import (
    SkippedTool,
    clip_text,
    content_attachment,
    no_approval,
    resource_attachment,
    tool_name,
)
from hermes.observe import get_logger
from hermes.tools.base import Tool, ToolResult

__all__ = ["UTILITY_NAMES", "SessionRequest", "utility_tools"]

logger = get_logger("mcp")

R = TypeVar("R")

#: ``list_resources`` asks for templates only with at least this share of its deadline left.
_TEMPLATES_MIN_SHARE = 0.25


class SessionRequest(Protocol):
    """Runs ``send`` on the connection's live session: its result, or a failed ``ToolResult``
    (not connected, timed out, refused) whose message names the server and ``action``."""

    async def __call__(
        self, action: str, send: Callable[[ClientSession], Awaitable[R]]
    ) -> R | ToolResult: ...


_CURSOR = {
    "type": "object",
    "properties": {
        "cursor": {
            "type": "string",
            "description": "The nextCursor of the previous page; omit for the first page.",
        }
    },
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class _Spec:
    name: str
    capability: Literal["resources", "prompts"]
    description: str
    parameters: dict[str, Any]


_SPECS = (
    _Spec(
        "list_resources",
        "resources",
        "List the resources (documents, files, data) this server offers, with uri, name, "
        "mimeType and description; read one with read_resource.",
        _CURSOR,
    ),
    _Spec(
        "read_resource",
        "resources",
        "Read one resource of this server by its uri (from list_resources or a template).",
        {
            "type": "object",
            "properties": {"uri": {"type": "string", "minLength": 1}},
            "required": ["uri"],
            "additionalProperties": False,
        },
    ),
    _Spec(
        "list_prompts",
        "prompts",
        "List the prompt templates this server offers, with their arguments; fill one "
        "with get_prompt.",
        _CURSOR,
    ),
    _Spec(
        "get_prompt",
        "prompts",
        "Fill one prompt template of this server by name with its arguments (strings) and "
        "return its messages.",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "arguments": {"type": "object", "additionalProperties": {"type": "string"}},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    ),
)

#: The bare names of the utility tools, in the order they are offered.
UTILITY_NAMES = tuple(spec.name for spec in _SPECS)


def utility_tools(
    server: str,
    prefix: str,
    capabilities: types.ServerCapabilities | None,
    request: SessionRequest,
    *,
    taken: Collection[str],
    allows: Callable[[str], bool],
    timeout: float,
    max_text_chars: int = 20_000,
    request_timeout: float | None = None,
    permissions: tuple[str, ...] = (),
    requires_approval: Callable[[str], bool] = no_approval,
) -> tuple[list[Tool], list[SkippedTool]]:
    """The utility tools ``capabilities`` call for, minus those whose local name is ``taken``
    by one of the server's own tools (reported as skipped) or that ``allows`` rejects.

    ``timeout`` is the executor's bound on a utility call, ``request_timeout`` (default: the
    same) the deadline of all of one call's requests. ``permissions`` and ``requires_approval``
    (a predicate on the bare utility names) are set on the tools as on the server's own.
    """
    if capabilities is None:
        return [], []
    offered = {
        "resources": capabilities.resources is not None,
        "prompts": capabilities.prompts is not None,
    }
    budget = timeout if request_timeout is None else request_timeout
    runner = _Utilities(server, request, max_text_chars, budget)
    tools: list[Tool] = []
    skipped: list[SkippedTool] = []
    for spec in _SPECS:
        if not offered[spec.capability] or not allows(spec.name):
            continue
        name = tool_name(prefix, spec.name)
        if name in taken:
            reason = f"the server has its own tool named {name!r}, which is offered instead"
            skipped.append(SkippedTool(server, spec.name, reason))
            continue
        tools.append(
            Tool(
                name=name,
                description=f"{spec.description} (MCP server {server!r})",
                parameters=spec.parameters,
                fn=getattr(runner, spec.name),
                is_async=True,
                timeout=timeout,
                toolset=f"mcp:{server}",
                permissions=permissions,
                requires_approval=requires_approval(spec.name),
            )
        )
    return tools, skipped


class _Utilities:
    """The implementations, one method per utility tool (bound as the tools' ``fn``)."""

    def __init__(
        self, server: str, request: SessionRequest, max_text_chars: int, budget: float
    ) -> None:
        self._server = server
        self._request = request
        self._max_text_chars = max_text_chars
        self._budget = budget

    async def list_resources(self, cursor: str | None = None) -> ToolResult:
        # The request bounds the listing itself (its timeout says what the server last did);
        # the deadline, taken first, is what is left of the budget for the templates.
        deadline = anyio.current_time() + self._budget
        page = await self._request(
            "resources/list", lambda s: s.list_resources(params=_page(cursor))
        )
        if isinstance(page, ToolResult):
            return page
        templates: list[types.ResourceTemplate] = []
        if cursor is None:
            templates = await self._templates(deadline)
        return ToolResult(ok=True, output=resources_output(page, templates))

    async def _templates(self, deadline: float) -> list[types.ResourceTemplate]:
        """The first page of resource templates, before ``deadline`` (``anyio`` time).

        Templates are a bonus on the first page: a server that fails to list them (the
        failure itself is logged by the request), or too little time left, costs only them.
        """
        left = deadline - anyio.current_time()
        if left < self._budget * _TEMPLATES_MIN_SHARE:
            logger.info("mcp_resource_templates_skipped", server=self._server, left_s=left)
            return []
        with anyio.CancelScope(deadline=deadline):
            listed = await self._request(
                "resources/templates/list", lambda s: s.list_resource_templates()
            )
            if not isinstance(listed, ToolResult):
                return listed.resource_templates
        return []

    async def read_resource(self, uri: str) -> ToolResult:
        result = await self._request(f"resources/read of {uri!r}", lambda s: s.read_resource(uri))
        if isinstance(result, ToolResult):
            return result
        return ToolResult(ok=True, output=contents_output(result, self._max_text_chars))

    async def list_prompts(self, cursor: str | None = None) -> ToolResult:
        page = await self._request("prompts/list", lambda s: s.list_prompts(params=_page(cursor)))
        if isinstance(page, ToolResult):
            return page
        return ToolResult(ok=True, output=prompts_output(page))

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> ToolResult:
        args = {str(k): str(v) for k, v in (arguments or {}).items()}
        result = await self._request(
            f"prompts/get of {name!r}", lambda s: s.get_prompt(name, args or None)
        )
        if isinstance(result, ToolResult):
            return result
        return ToolResult(ok=True, output=prompt_output(result, self._max_text_chars))


def resources_output(
    page: types.ListResourcesResult, templates: list[types.ResourceTemplate]
) -> dict[str, Any]:
    """A resource listing as ``{"text", "structured"}`` (module docstring)."""
    structured: dict[str, Any] = {
        "resources": [
            {
                "uri": r.uri,
                "name": r.name,
                "mimeType": r.mime_type,
                "description": r.description,
            }
            for r in page.resources
        ]
    }
    text = _count(len(page.resources), "resource")
    if templates:
        structured["templates"] = [
            {
                "uriTemplate": t.uri_template,
                "name": t.name,
                "mimeType": t.mime_type,
                "description": t.description,
            }
            for t in templates
        ]
        text += f", {_count(len(templates), 'template')}"
    return {"text": text + _more(page.next_cursor, structured), "structured": structured}


def contents_output(result: types.ReadResourceResult, max_text_chars: int) -> dict[str, Any]:
    """A read resource as ``{"text", "attachments"?}``: text joined, blobs described."""
    texts: list[str] = []
    attachments: list[dict[str, Any]] = []
    for contents in result.contents:
        if isinstance(contents, types.TextResourceContents):
            texts.append(contents.text)
        else:
            attachments.append(resource_attachment(contents))
    output: dict[str, Any] = {"text": clip_text("\n".join(texts), max_text_chars)}
    if attachments:
        output["attachments"] = attachments
    return output


def prompts_output(page: types.ListPromptsResult) -> dict[str, Any]:
    """A prompt listing as ``{"text", "structured"}`` (module docstring)."""
    structured: dict[str, Any] = {
        "prompts": [
            {
                "name": p.name,
                "description": p.description,
                "arguments": [
                    {"name": a.name, "description": a.description, "required": bool(a.required)}
                    for a in p.arguments or ()
                ],
            }
            for p in page.prompts
        ]
    }
    text = _count(len(page.prompts), "prompt") + _more(page.next_cursor, structured)
    return {"text": text, "structured": structured}


def prompt_output(result: types.GetPromptResult, max_text_chars: int) -> dict[str, Any]:
    """A filled prompt as ``{"text", "structured", "attachments"?}`` (module docstring)."""
    messages: list[dict[str, Any]] = []
    attachments: list[dict[str, Any]] = []
    for message in result.messages:
        block = message.content
        if isinstance(block, types.TextContent):
            text = block.text
        else:
            attachment = content_attachment(block)
            attachments.append(attachment)
            text = str(attachment["note"])
        messages.append({"role": message.role, "text": clip_text(text, max_text_chars)})
    joined = "\n".join(f"{m['role']}: {m['text']}" for m in messages)
    output: dict[str, Any] = {
        "text": clip_text(joined, max_text_chars),
        "structured": {"description": result.description, "messages": messages},
    }
    if attachments:
        output["attachments"] = attachments
    return output


def _page(cursor: str | None) -> types.PaginatedRequestParams | None:
    return types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _more(cursor: str | None, structured: dict[str, Any]) -> str:
    if cursor is None:
        return ""
    structured["nextCursor"] = cursor
    return "; more with cursor=nextCursor"
