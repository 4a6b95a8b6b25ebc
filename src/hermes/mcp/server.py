"""Hermes tools served over MCP (seed 001 §4.1), on the official SDK's low-level ``Server``.

:class:`HermesMcpServer` answers ``tools/list`` and ``tools/call`` from a
:class:`~hermes.tools.registry.ToolRegistry`; :meth:`~HermesMcpServer.serve_stdio` and
:meth:`~HermesMcpServer.serve_http` put it on the SDK's stdio and streamable-HTTP transports.
The SDK does the protocol (JSON-RPC, both protocol eras, sessions); this module only maps tools.

What a client is offered (``tools/list``)
    Every registry tool with its name, description and ``inputSchema`` (the tool's JSON Schema),
    except: tools adapted from other MCP servers (toolset ``mcp:<server>``) unless
    ``include_remote=True`` — the issue's "not other servers' tools unless asked"; tools with
    ``requires_approval`` unless ``allow_approval=True`` (a client cannot use them, so they are
    not shown); and, with an enabled ``authorizer``, tools the serving user lacks the scopes for.
    ``outputSchema`` comes from the tool's declared ``output_schema``. MCP wants an object
    schema there (required up to protocol 2025-11-25), so any other schema is wrapped, the SDK
    convention for non-object results: ``{"type": "object", "properties": {"result": <schema>},
    "required": ["result"]}`` with the value sent as ``{"result": value}``. Annotations: only
    ``idempotentHint`` (for a tool with an idempotency key, which the executor replays); Hermes
    records nothing else a hint could honestly be derived from.

What a call does (``tools/call``)
    It goes through the tool pipeline (:class:`~hermes.tools.pipeline.ToolExecutor`) like
    every other call (validation, authorizer, approval gate, idempotency, cache, breaker,
    timeout, retry, sandbox), with a call context whose ``session_id`` is ``"mcp"``, ``user_id`` the
    server's, a fresh ``trace_id`` per call, and the server's workspace and extras. Outcomes:

    - success: one ``TextContent`` (a string output as is, anything else as JSON) and
      ``structuredContent`` — the output when it is a JSON object, ``{"result": value}`` for a
      wrapped output schema, none otherwise;
    - failure: ``isError`` with the text ``"<error type>: <message>"`` (``invalid_arguments``
      with every offending field, ``permission_denied``, ``timeout``, ``execution_error`` …;
      never a traceback);
    - an approval-requiring tool while ``allow_approval`` is false: ``isError`` with
      ``approval_required``. With ``allow_approval=True`` the MCP client is the approver (MCP
      hosts ask their user before a call), so each call is pre-approved;
    - an unknown tool: the JSON-RPC error ``INVALID_PARAMS`` ("Unknown tool: x"), as the spec
      asks for "errors in finding the tool" (tool failures are results, a missing tool is not).

    Output is bounded by ``max_output_chars`` (a tool's own ``max_output_chars`` wins): a longer
    string is clipped by the executor; longer JSON is clipped in the text and its structured
    content dropped, or, for a tool with an output schema (whose clients require structured
    content), refused as ``output_too_large``. Every result carries ``_meta["hermes/trace_id"]``
    (and ``"hermes/error_type"`` on failure) so a caller can find the call in the logs.

Streamable HTTP runs stateless: each POST is served on its own (no ``Mcp-Session-Id``, no
standing GET stream). The server never pushes anything outside a call's own response, so
nothing is lost; in exchange any worker can answer any request, no per-client session state
piles up, and a stop never waits on a client's idle event stream.

The server needs an asyncio event loop (the executor's timeouts are asyncio's). Nothing is ever
written to stdout but protocol: Hermes logs go to the log file, the SDK's stdio transport points
fd 1 at stderr while it serves.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from starlette.types import ASGIApp

from hermes.mcp.adapter import clip_text
from hermes.mcp.server_http import (
    BearerGate,
    McpServeError,
    check_http_binding,
    serve_asgi,
    transport_security,
)
from hermes.models.base import ToolCall
from hermes.observe import get_logger, log_context
from hermes.tools.base import Tool, ToolResult
from hermes.tools.executor import REMOVED_EXTRAS
from hermes.tools.permissions import Authorizer
from hermes.tools.pipeline import CallContext, ToolExecutor, json_safe
from hermes.tools.registry import ToolRegistry

__all__ = ["MCP_SESSION_ID", "HermesMcpServer", "McpServeError"]

logger = get_logger("mcp")

#: The ``ToolContext.session_id`` of every call that arrives over MCP.
MCP_SESSION_ID = "mcp"
#: Tools adapted from other MCP servers live in toolsets named ``mcp:<server>``.
_REMOTE_TOOLSET_PREFIX = "mcp:"
_TRACE_KEY = "hermes/trace_id"
_ERROR_TYPE_KEY = "hermes/error_type"


@dataclass(frozen=True, slots=True)
class _Listed:
    """A registry tool as MCP describes it, cached until the registry holds another object."""

    tool: Tool
    described: types.Tool
    #: Validates the structured content against the advertised output schema.
    validator: Draft202012Validator | None
    #: Whether the output is sent as ``{"result": value}`` (a non-object output schema).
    wrapped: bool


class HermesMcpServer:
    """The tools of ``tools`` offered to MCP clients (rules in the module docstring).

    ``user_id`` is who every call runs as (for the ``authorizer`` and idempotency keys);
    ``workspace`` (default: the current directory) and ``extras`` (the tools' settings) fill
    each call's :class:`~hermes.tools.pipeline.CallContext`; approvals follow
    ``allow_approval`` only. Calls run through ``executor`` (an agent's, with its steps and
    durable idempotency records), else through a pipeline of ``tools`` with ``authorizer``
    (whose idempotency keys live in this process only). The registry is read at each request,
    so tools registered later are offered from the next ``tools/list``.
    """

    def __init__(
        self,
        tools: ToolRegistry,
        *,
        name: str = "hermes",
        allow_approval: bool = False,
        authorizer: Authorizer | None = None,
        user_id: str | None = None,
        workspace: Path | None = None,
        extras: Mapping[str, Any] | None = None,
        max_output_chars: int = 20_000,
        include_remote: bool = False,
        before_request: Callable[[], None] | None = None,
        executor: ToolExecutor | None = None,
    ) -> None:
        if max_output_chars < 1:
            raise ValueError(f"max_output_chars must be at least 1, got {max_output_chars}")
        self.tools = tools
        self.allow_approval = allow_approval
        self.authorizer = authorizer
        self.user_id = user_id
        self.workspace = Path(workspace) if workspace is not None else Path.cwd()
        self.max_output_chars = max_output_chars
        self.include_remote = include_remote
        #: Called before each listing and call: brings a registry with remote tools up to
        #: date (``hermes mcp serve`` passes the agent's MCP sync), as a turn would.
        self._before_request = before_request
        self._extras = {k: v for k, v in (extras or {}).items() if k not in REMOVED_EXTRAS}
        self.executor = (
            executor
            if executor is not None
            else ToolExecutor(tools, authorizer=authorizer, max_output_chars=max_output_chars)
        )
        self._listed: dict[str, _Listed] = {}
        self.sdk_server: Server[Any] = Server(
            name,
            version=_hermes_version(),
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
            get_tool_input_schema=self._input_schema,
        )
        """The SDK server (for in-memory clients, or to run it on other streams)."""

    # -- transports ----------------------------------------------------------------------------

    async def serve_stdio(self) -> None:
        """Serve over this process's stdin/stdout until stdin closes (as MCP hosts do to stop
        a server). Cancelling it while stdin stays open waits for the next line or EOF: the
        SDK reads stdin on a thread that cannot be interrupted (python-sdk issue #3551)."""
        server = self.sdk_server
        logger.info("mcp_serve", transport="stdio", tools=len(self.offered_tools()))
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    def http_app(
        self, host: str = "127.0.0.1", *, bearer_token: str | None = None, path: str = "/mcp"
    ) -> ASGIApp:
        """The streamable-HTTP ASGI app (its lifespan must run: it owns the MCP sessions).

        Raises :class:`~hermes.errors.ConfigError` for a non-loopback ``host`` without a
        ``bearer_token``, a malformed token, or a ``path`` not starting with ``/``.
        """
        check_http_binding(host, bearer_token, path)
        app: ASGIApp = self.sdk_server.streamable_http_app(
            streamable_http_path=path,
            host=host,
            transport_security=transport_security(host),
            stateless_http=True,
        )
        return BearerGate(app, bearer_token) if bearer_token is not None else app

    async def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8765,
        *,
        bearer_token: str | None = None,
        path: str = "/mcp",
        on_ready: Callable[[int], None] | None = None,
    ) -> None:
        """Serve streamable HTTP on ``host:port`` until cancelled, then shut down cleanly.

        ``port=0`` picks a free port; ``on_ready(port)`` is called with the real one once the
        server accepts connections. With ``bearer_token`` every request must carry
        ``Authorization: Bearer <token>`` (else 401). Raises ``ConfigError`` (see
        :meth:`http_app`) before binding anything, :class:`McpServeError` when it cannot
        listen or start.
        """
        app = self.http_app(host, bearer_token=bearer_token, path=path)
        logger.info(
            "mcp_serve",
            transport="http",
            host=host,
            port=port,
            token=bearer_token is not None,
            tools=len(self.offered_tools()),
        )
        await serve_asgi(app, host, port, on_ready=on_ready)

    # -- tools/list ----------------------------------------------------------------------------

    def offered_tools(self) -> list[Tool]:
        """The registry tools a client is offered, in registration order."""
        if self._before_request is not None:
            self._before_request()
        offered = [tool for tool in self.tools if self._exposed(tool) and self._approvable(tool)]
        if self.authorizer is not None and self.authorizer.enabled:
            offered = self.authorizer.filter_tools(self.user_id, offered)
        return offered

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[self._listing(tool).described for tool in self.offered_tools()]
        )

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        # The SDK's header check on the 2026 HTTP path: answered without a whole listing.
        tool = self.tools.get(name)
        return tool.parameters if tool is not None and self._exposed(tool) else None

    def _exposed(self, tool: Tool) -> bool:
        return self.include_remote or not tool.toolset.startswith(_REMOTE_TOOLSET_PREFIX)

    def _approvable(self, tool: Tool) -> bool:
        return self.allow_approval or not tool.requires_approval

    def _listing(self, tool: Tool) -> _Listed:
        listed = self._listed.get(tool.name)
        if listed is None or listed.tool is not tool:
            listed = _describe(tool)
            self._listed[tool.name] = listed
        return listed

    # -- tools/call ----------------------------------------------------------------------------

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = params.name
        if self._before_request is not None:
            self._before_request()
        tool = self.tools.get(name)
        if tool is None or not self._exposed(tool):
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")
        trace_id = uuid.uuid4().hex
        start = perf_counter()
        with log_context(trace_id=trace_id, session_id=MCP_SESSION_ID):
            if not self._approvable(tool):
                message = f"tool {name!r} requires human approval and is not available over MCP"
                answer = _failure("approval_required", message, trace_id)
            else:
                answer = await self._run(tool, params.arguments or {}, trace_id)
            logger.info(
                "mcp_tool_call",
                tool=name,
                ok=not answer.is_error,
                error_type=(answer.meta or {}).get(_ERROR_TYPE_KEY),
                cost_ms=round((perf_counter() - start) * 1000, 3),
            )
        return answer

    async def _run(
        self, tool: Tool, arguments: dict[str, Any], trace_id: str
    ) -> types.CallToolResult:
        call_id = f"mcp-{uuid.uuid4().hex}"
        context = CallContext(
            session_id=MCP_SESSION_ID,
            user_id=self.user_id,
            trace_id=trace_id,
            call_id=call_id,
            workspace=str(self.workspace),
            # Reached only with allow_approval for such a tool: the client approved it.
            approved=tool.requires_approval,
            extras=self._extras,
        )
        call = ToolCall(id=call_id, name=tool.name, arguments=arguments)
        result = await self.executor.run(call, context, max_output_chars=self.max_output_chars)
        try:
            return self._answer(tool, result, trace_id)
        except Exception as exc:  # noqa: BLE001 - reported to the client and logged, not raised
            logger.error("mcp_result_failed", tool=tool.name, error_type=type(exc).__name__)
            message = f"the result of tool {tool.name!r} could not be sent: {type(exc).__name__}"
            return _failure("internal_error", message, trace_id)

    def _answer(self, tool: Tool, result: ToolResult, trace_id: str) -> types.CallToolResult:
        """The MCP form of an executor result (the rules in the module docstring)."""
        if not result.ok:
            error = result.error
            if error is None:  # a tool's own ToolResult(ok=False) without an error
                return _failure("execution_error", f"tool {tool.name!r} failed", trace_id)
            return _failure(error.type, error.message, trace_id)
        # Already JSON-safe unless the tool returned its own ToolResult; cheap either way.
        output = json_safe(result.output)
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        limit = (
            tool.max_output_chars if tool.max_output_chars is not None else self.max_output_chars
        )
        oversized = not isinstance(output, str) and len(text) > limit
        listed = self._listing(tool)
        if listed.validator is None:
            structured = output if isinstance(output, dict) and not oversized else None
            if oversized:
                text = clip_text(text, limit)
            return _success(text, structured, trace_id)
        if oversized:
            message = (
                f"the output of tool {tool.name!r} is {len(text)} characters of JSON, over the "
                f"limit of {limit}; ask for less"
            )
            return _failure("output_too_large", message, trace_id)
        structured = {"result": output} if listed.wrapped else output
        problem = best_match(listed.validator.iter_errors(structured))
        if problem is not None:  # a tool's own ToolResult skips the executor's output check
            message = f"output of tool {tool.name!r} does not match its output schema: {problem}"
            return _failure("invalid_output", message, trace_id)
        return _success(text, structured, trace_id)


def _describe(tool: Tool) -> _Listed:
    output_schema, wrapped = _output_schema(tool.output_schema)
    annotations = (
        types.ToolAnnotations(idempotent_hint=True) if tool.idempotency_key is not None else None
    )
    described = types.Tool(
        name=tool.name,
        description=tool.description or None,
        input_schema=tool.parameters,
        output_schema=output_schema,
        annotations=annotations,
    )
    validator = Draft202012Validator(output_schema) if output_schema is not None else None
    return _Listed(tool=tool, described=described, validator=validator, wrapped=wrapped)


def _output_schema(schema: dict[str, Any] | None) -> tuple[dict[str, Any] | None, bool]:
    """The MCP ``outputSchema`` of a tool's output schema, and whether it is wrapped.

    Definitions (``$defs``/``definitions``) move to the wrapper's root, where the schema's
    ``#/$defs/…`` references still find them.
    """
    if schema is None:
        return None, False
    if schema.get("type") == "object":
        return schema, False
    inner = copy.deepcopy(schema)
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
    }
    for key in ("$defs", "definitions"):
        if key in inner:
            wrapper[key] = inner.pop(key)
    inner.pop("$schema", None)
    return wrapper, True


def _success(text: str, structured: Any, trace_id: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=structured,
        _meta={_TRACE_KEY: trace_id},
    )


def _failure(error_type: str, message: str, trace_id: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=f"{error_type}: {message}")],
        is_error=True,
        _meta={_TRACE_KEY: trace_id, _ERROR_TYPE_KEY: error_type},
    )


def _hermes_version() -> str:
    from hermes import __version__  # lazy: the package root imports its names on first use

    return __version__
