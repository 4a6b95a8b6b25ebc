"""A tiny MCP server for the tests, built on the SDK's ``MCPServer``.

Run ``python basic_server.py`` for stdio, or ``python basic_server.py --http`` for streamable
HTTP on 127.0.0.1 with an ephemeral port (the first stdout line is ``PORT <n>``).
With ``--pid-file PATH`` it writes its pid there first (the tests check it is gone after close).
"""

from __future__ import annotations

import argparse
import base64
import os
import socket
import sys
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.mcpserver import MCPServer

#: A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("hermes-test-server")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def fail() -> types.CallToolResult:
    """Always report a tool error."""
    return types.CallToolResult(
        content=[types.TextContent(text="the disk is on fire")], is_error=True
    )


@server.tool()
def structured() -> types.CallToolResult:
    """Return structured content next to its text."""
    return types.CallToolResult(
        content=[types.TextContent(text="two cities")],
        structured_content={"cities": ["Paris", "Lyon"], "count": 2},
    )


@server.tool()
def image() -> types.CallToolResult:
    """Return a tiny PNG image with a caption."""
    data = base64.b64encode(PNG).decode("ascii")
    return types.CallToolResult(
        content=[
            types.TextContent(text="a pixel"),
            types.ImageContent(data=data, mime_type="image/png"),
        ]
    )


@server.tool()
def environment() -> dict[str, Any]:
    """The names of the server's environment variables."""
    return {"names": sorted(os.environ)}


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return "done"


async def serve_http() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--pid-file")
    options = parser.parse_args()
    if options.pid_file:
        with open(options.pid_file, "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
    if options.http:
        anyio.run(serve_http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    sys.exit(main())
