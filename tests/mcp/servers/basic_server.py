"""A tiny MCP server for the tests, built on the SDK's ``MCPServer``.

Run ``python basic_server.py`` for stdio, or ``python basic_server.py --http`` for streamable
HTTP on 127.0.0.1 (the first stdout line is ``PORT <n>``; ``--port N`` picks the port, else an
ephemeral one). Other flags:

* ``--pid-file PATH`` writes its pid there first (the tests check it is gone after close);
* ``--collide`` adds a tool named ``list_resources`` (the server's tool beats the utility).

Besides its tools it has two resources (text ``test://greeting``, PNG ``test://pixel.png``), a
resource template ``test://notes/{topic}`` and a prompt ``greet``; the tool ``register_tool``
adds a tool and sends ``notifications/tools/list_changed``, ``crash`` ends the process,
``huge`` answers with about 5 MB of text or of structured content.
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
from mcp.server.mcpserver import Context, MCPServer

#: A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

# CRITICAL: the SDK logs refused requests with rich tracebacks, which take a second each.
server = MCPServer("hermes-test-server", log_level="CRITICAL")


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


@server.tool()
async def register_tool(name: str, ctx: Context) -> str:
    """Add a tool ``name`` (it echoes its text) and tell the client the tool list changed."""

    def added(text: str = "") -> str:
        return f"{name}: {text}"

    server.add_tool(added, name=name, description=f"A tool added at run time ({name}).")
    await ctx.session.send_tool_list_changed()
    return f"registered {name}"


#: The size of the ``huge`` tool's answers, in characters.
HUGE_CHARS = 5_000_000


@server.tool()
def huge(kind: str) -> types.CallToolResult:
    """About 5 MB of text (kind ``text``) or of structured content (kind ``structured``)."""
    if kind == "text":
        return types.CallToolResult(content=[types.TextContent(text="x" * HUGE_CHARS)])
    rows = [{"row": i, "value": "y" * 90} for i in range(HUGE_CHARS // 100)]
    return types.CallToolResult(
        content=[types.TextContent(text="many rows")], structured_content={"rows": rows}
    )


@server.tool()
def crash() -> str:
    """End the server process at once, without answering."""
    os._exit(1)


@server.resource(
    "test://greeting", name="greeting", description="A friendly text.", mime_type="text/plain"
)
def greeting() -> str:
    return "hello from the test server"


@server.resource("test://pixel.png", name="pixel", description="A 1x1 PNG.", mime_type="image/png")
def pixel() -> bytes:
    return PNG


@server.resource("test://notes/{topic}", name="note", description="A note about a topic.")
def note(topic: str) -> str:
    return f"a note about {topic}"


@server.prompt()
def greet(name: str, style: str = "plain") -> str:
    """Write a greeting for someone."""
    return f"Please greet {name} in a {style} style."


def list_resources_tool() -> str:
    """The server's own tool that happens to share a utility's name."""
    return "the server's own list_resources"


async def serve_http(port: int) -> None:
    import uvicorn  # here: stdio runs do not pay for its import

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--pid-file")
    parser.add_argument("--collide", action="store_true")
    options = parser.parse_args()
    if options.pid_file:
        with open(options.pid_file, "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
    if options.collide:
        server.add_tool(list_resources_tool, name="list_resources")
    if options.http:
        anyio.run(serve_http, options.port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    sys.exit(main())
