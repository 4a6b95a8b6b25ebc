"""``hermes mcp``: the configured MCP servers, one remote call, and Hermes as an MCP server.

    hermes mcp list [--json]
    hermes mcp call SERVER TOOL --args '{"a": 1}' [--json]
    hermes mcp serve [--transport stdio|http] [--host H] [--port P]

``list`` connects every configured server (each bounded by its ``connect_timeout``) and shows
its state and tools, and in ``collisions`` those whose names the agent's own tools (built-ins,
plugins) already take; with ``--json`` one JSON list of ``{"name", "state", "transport",
"tools", "error", "collisions", …}``. ``call`` takes the server's own tool name (not the
``<prefix>__`` one) and runs the call through the executor pipeline like the agent would, so
the arguments are validated locally first; with ``--json`` it prints ``{"ok", "output",
"error", "server", "tool"}`` for a call that was made.

Exit codes: 0 done; 2 refused before any call (bad ``--args`` JSON, unknown server or tool, bad
config) — with ``--json`` stdout is ``{"error": {"type", "message"}}`` as for every command;
3 the call was made and failed (invalid arguments for the server's schema, the server was
unreachable, the call timed out, or the tool reported an error).
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from hermes.channels.cli.app import JsonFlag, app, loaded_config, open_agent, run_async
from hermes.channels.cli.output import (
    fail,
    note,
    out,
    report_error,
    report_warning,
    write_json,
    write_text,
)
from hermes.errors import ConfigError, HermesError, InvalidInputError

if TYPE_CHECKING:
    from hermes.config import LoadedConfig
    from hermes.tools.base import ToolResult

#: Exit code of a call that ran but failed (server unavailable, tool error, timeout).
EXIT_CALL_FAILED = 3
_MAX_ARGS_CHARS = 1_000_000

mcp_app = typer.Typer(
    help="MCP servers: list, call, serve. / MCP 服务器：查看、调用、对外提供。",
    no_args_is_help=True,
)
app.add_typer(mcp_app, name="mcp")


@mcp_app.command("list")
def mcp_list(as_json: JsonFlag = False) -> None:
    """Connect the configured MCP servers and show their state and tools. / 列出 MCP 服务器。"""
    try:
        loaded = loaded_config()
    except HermesError as exc:
        fail(exc, as_json)
    servers = loaded.config.mcp_servers
    if not servers:
        if as_json:
            write_json([])
        else:
            note("no MCP servers configured (mcp_servers: in hermes.yaml) / 未配置 MCP 服务器")
        return
    try:
        status = run_async(lambda: _statuses(loaded))
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        write_json(status)
        return
    table = Table("server", "state", "transport", "tools", "error")
    for row in status:
        tools = ", ".join(row["tools"]) or "-"
        table.add_row(
            Text(row["name"]),
            Text(row["state"]),
            Text(row["transport"]),
            Text(tools),
            Text(row["error"] or ""),
        )
    out.print(table)


async def _statuses(loaded: LoadedConfig) -> list[dict[str, Any]]:
    # The agent's tools (built-ins, plugins, memory tools) reserve their names as in a turn,
    # so a collision shown here is one the agent meets — never its model or store.
    agent = open_agent(loaded, offline=True, store=":memory:")
    try:
        return await agent.connect_mcp()
    finally:
        await agent.aclose()


@mcp_app.command("call")
def mcp_call(
    server: Annotated[str, typer.Argument(help="The server's name in mcp_servers.")],
    tool: Annotated[str, typer.Argument(help="The server's own tool name (no prefix).")],
    args: Annotated[
        str, typer.Option("--args", "-a", help="The arguments as one JSON object.")
    ] = "{}",
    as_json: JsonFlag = False,
) -> None:
    """Call one tool of one configured MCP server. / 调用 MCP 服务器上的一个工具。"""
    try:
        arguments = parse_arguments(args)
        loaded = loaded_config()
        config = loaded.config.mcp_servers.get(server)
        if config is None:
            known = ", ".join(loaded.config.mcp_servers) or "none"
            raise InvalidInputError(
                f"no MCP server named {server!r} (configured: {known}) / 未配置该 MCP 服务器"
            )
        if not config.enabled:
            raise InvalidInputError(
                f"MCP server {server!r} is disabled (enabled: false) / 该 MCP 服务器已停用"
            )
        result = run_async(lambda: _call(loaded, server, tool, arguments))
    except HermesError as exc:
        fail(exc, as_json)
    _print_result(result, server, tool, as_json)


def parse_arguments(text: str) -> dict[str, Any]:
    """``--args``: one JSON object; anything else is an ``InvalidInputError`` saying why."""
    if len(text) > _MAX_ARGS_CHARS:
        raise InvalidInputError(
            f"--args is too long (more than {_MAX_ARGS_CHARS:,} characters) / --args 过长"
        )
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"--args is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno} / "
            "--args 不是有效的 JSON"
        ) from None
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"--args must be a JSON object like '{{\"a\": 1}}', got {type(value).__name__} / "
            "--args 必须是 JSON 对象"
        )
    return value


async def _call(
    loaded: LoadedConfig, server: str, tool: str, arguments: dict[str, Any]
) -> ToolResult:
    from hermes.mcp.client import McpManager
    from hermes.models.base import ToolCall
    from hermes.tools.base import ToolContext, ToolResult
    from hermes.tools.executor import execute_tool_call
    from hermes.tools.registry import ToolRegistry

    manager = McpManager({server: loaded.config.mcp_servers[server]})
    manager.start()
    try:
        connection = manager.connection(server)
        if not await connection.wait_ready():
            return ToolResult.failure("service_unavailable", connection.error or "not connected")
        adapted = connection.tool_for(tool)
        if adapted is None:
            offered = sorted(connection.remote_names())
            raise InvalidInputError(
                f"MCP server {server!r} has no tool {tool!r} (it offers: "
                f"{', '.join(offered) or 'none'}) / 该服务器没有这个工具"
            )
        registry = ToolRegistry([adapted])
        call = ToolCall(id=f"cli-{uuid.uuid4().hex[:12]}", name=adapted.name, arguments=arguments)
        context = ToolContext(
            session_id="cli", trace_id=uuid.uuid4().hex, workspace=loaded.workspace
        )
        return await execute_tool_call(registry, call, context)
    finally:
        await manager.aclose()


def _print_result(result: ToolResult, server: str, tool: str, as_json: bool) -> None:
    error = (
        None
        if result.error is None
        else {"type": result.error.type, "message": result.error.message}
    )
    if as_json:
        write_json(
            {
                "ok": result.ok,
                "output": result.output,
                "error": error,
                "server": server,
                "tool": tool,
            }
        )
    elif result.ok:
        output = result.output
        if isinstance(output, dict) and set(output) <= {"text", "structured", "attachments"}:
            shown = output.get("text") or json.dumps(output.get("structured"), ensure_ascii=False)
            write_text(str(shown))
        else:
            write_text(
                output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            )
    else:
        assert error is not None
        report_error(f"{error['type']}: {error['message']}")
    if not result.ok:
        raise typer.Exit(code=EXIT_CALL_FAILED)


@mcp_app.command("serve")
def mcp_serve(
    transport: Annotated[
        str | None, typer.Option("--transport", "-t", help="stdio or http (default: config).")
    ] = None,
    host: Annotated[
        str | None, typer.Option("--host", help="HTTP address (default 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", "-p", min=0, max=65535, help="HTTP port.")
    ] = None,
) -> None:
    """Offer Hermes's tools to MCP clients (stdio or HTTP). / 通过 MCP 提供 Hermes 的工具。"""
    try:
        loaded = loaded_config()
        settings = loaded.config.mcp_serve
        chosen = transport or settings.transport
        if chosen not in ("stdio", "http"):
            raise ConfigError(f"unknown transport {chosen!r}: use stdio or http")
        run_async(
            lambda: _serve(
                loaded, chosen, host or settings.host, settings.port if port is None else port
            )
        )
    except HermesError as exc:
        fail(exc)
    except KeyboardInterrupt:
        raise typer.Exit(code=130) from None


async def _serve(loaded: LoadedConfig, transport: str, host: str, port: int) -> None:
    from hermes.mcp.server import HermesMcpServer

    settings = loaded.config.mcp_serve
    # The agent's tools, plugins, authorizer and tool extras — never its model or store.
    agent = open_agent(loaded, offline=True, store=":memory:")
    try:
        if settings.include_mcp_tools:
            await agent.connect_mcp()
        server = HermesMcpServer(
            agent.tools,
            allow_approval=settings.allow_approval,
            authorizer=agent.authorizer,
            user_id=settings.user,
            workspace=loaded.workspace,
            extras=agent.tool_extras,
            executor=agent.executor,
            include_remote=settings.include_mcp_tools,
            # Servers that connect late, reconnect or change their tools are picked up at the
            # next request, as an agent picks them up at the next turn.
            before_request=agent.mcp.sync if settings.include_mcp_tools and agent.mcp else None,
        )
        if transport == "stdio":
            await server.serve_stdio()
        else:
            if settings.token is None:
                report_warning(
                    "no mcp_serve.token: any program on this machine can call these tools / "
                    "未设置令牌：本机任何程序都可以调用这些工具"
                )

            def ready(actual: int) -> None:
                note(f"Hermes MCP server on http://{host}:{actual}/mcp / MCP 服务已启动")

            await server.serve_http(host, port, bearer_token=settings.token, on_ready=ready)
    finally:
        await agent.aclose()
