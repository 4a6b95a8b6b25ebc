"""server-filesystem (the MCP reference server, from npm) driven through Hermes over stdio, with
a temporary directory as its only allowed root: reads, writes and listings inside it work, and
the server refuses everything outside it. Also both reference servers behind one manager,
configured with the widespread ``{"mcpServers": ...}`` shape pasted from another client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from hermes.mcp import McpConnection, McpManager, parse_mcp_servers
from tests.mcp.conftest import connected
from tests.mcp.interop.conftest import (
    LIMIT_S,
    ReferenceServers,
    counting,
    run_tool,
    tool_named,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "outside-secret-7f3a"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``<base>/allowed`` (the server's root, with a file and a sub-directory) beside
    ``<base>/outside`` (a file the server must never read), both real paths."""
    base = tmp_path_factory.mktemp("filesystem").resolve()
    allowed = base / "allowed"
    (allowed / "sub").mkdir(parents=True)
    (allowed / "hello.txt").write_text("hello from the allowed root\n", encoding="utf-8")
    (base / "outside").mkdir()
    (base / "outside" / "secret.txt").write_text(SECRET, encoding="utf-8")
    (allowed / "escape").symlink_to(base / "outside" / "secret.txt")
    return allowed


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def files(servers: ReferenceServers, root: Path) -> AsyncIterator[McpConnection]:
    async with connected("files", servers.filesystem_stdio(root)) as connection:
        yield connection


async def fs(files: McpConnection, tool: str, arguments: dict[str, Any]) -> Any:
    return await run_tool(files.tools(), f"files__{tool}", arguments)


async def test_tools_are_listed_under_the_server_prefix(files: McpConnection) -> None:
    names = {tool.name for tool in files.tools()}
    expected = {"read_text_file", "write_file", "list_directory", "list_allowed_directories"}
    assert {f"files__{name}" for name in expected} <= names
    assert files.server_info is not None
    assert files.server_info.name == "secure-filesystem-server"


async def test_the_allowed_root_is_the_temporary_directory(
    files: McpConnection, root: Path
) -> None:
    result = await fs(files, "list_allowed_directories", {})
    assert result.ok, result.error
    assert str(root) in result.output["text"].splitlines()


async def test_a_file_inside_is_read_with_structured_output(
    files: McpConnection, root: Path
) -> None:
    result = await fs(files, "read_text_file", {"path": str(root / "hello.txt")})
    assert result.ok, result.error
    assert result.output["text"] == "hello from the allowed root\n"
    assert result.output["structured"] == {"content": "hello from the allowed root\n"}


async def test_a_file_written_inside_reads_back(files: McpConnection, root: Path) -> None:
    target = root / "sub" / "notes.txt"
    content = "第一行 first line\nsecond line\nthird line\n"
    written = await fs(files, "write_file", {"path": str(target), "content": content})
    assert written.ok, written.error
    assert target.read_text(encoding="utf-8") == content
    head = await fs(files, "read_text_file", {"path": str(target), "head": 1})
    assert head.ok, head.error
    assert head.output["text"] == "第一行 first line"


async def test_a_directory_inside_is_listed(files: McpConnection, root: Path) -> None:
    result = await fs(files, "list_directory", {"path": str(root)})
    assert result.ok, result.error
    lines = set(result.output["text"].splitlines())
    assert {"[FILE] hello.txt", "[DIR] sub"} <= lines


@pytest.mark.parametrize(
    "relative",
    ["../outside/secret.txt", "escape"],
    ids=["dot-dot", "symlink"],
)
async def test_reading_outside_the_root_is_refused_by_the_server(
    files: McpConnection, root: Path, relative: str
) -> None:
    adapted, reached = counting(tool_named(files, "files__read_text_file"))
    arguments = {"path": str(root / relative)}
    result = await run_tool([adapted], adapted.name, arguments)
    assert reached == [arguments]  # it went to the server, which refused it
    assert result.error is not None
    assert result.error.type == "mcp_tool_error"
    assert "Access denied" in result.error.message
    assert SECRET not in result.error.message


async def test_writing_outside_the_root_is_refused_by_the_server(
    files: McpConnection, root: Path
) -> None:
    target = root.parent / "outside" / "planted.txt"
    result = await fs(files, "write_file", {"path": str(target), "content": "x"})
    assert result.error is not None
    assert result.error.type == "mcp_tool_error"
    assert "Access denied" in result.error.message
    assert not target.exists()


async def test_bad_arguments_are_refused_locally_before_the_wire(
    files: McpConnection, root: Path
) -> None:
    target = root / "never.txt"
    adapted, reached = counting(tool_named(files, "files__write_file"))
    result = await run_tool([adapted], adapted.name, {"path": str(target)})
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert "content" in result.error.message
    assert result.attempts == 0
    assert reached == []
    assert not target.exists()


async def test_a_pasted_mcp_servers_config_runs_both_reference_servers(
    servers: ReferenceServers, root: Path
) -> None:
    pasted = {
        "mcpServers": {
            "everything": {"command": servers.node, "args": [str(servers.everything)]},
            "files": {
                "type": "stdio",
                "command": servers.node,
                "args": [str(servers.filesystem), str(root)],
                "alwaysAllow": ["read_text_file"],
            },
        }
    }
    manager = McpManager(parse_mcp_servers(pasted))
    manager.start()
    try:
        await asyncio.wait_for(manager.wait_ready(LIMIT_S), LIMIT_S + 1)
        assert [s["state"] for s in manager.status()] == ["ready", "ready"]
        tools = manager.tools()
        assert manager.collisions == []
        total = await run_tool(tools, "everything__get-sum", {"a": 40, "b": 2})
        assert total.ok, total.error
        assert total.output["text"] == "The sum of 40 and 2 is 42."
        read = await run_tool(tools, "files__read_text_file", {"path": str(root / "hello.txt")})
        assert read.ok, read.error
        assert read.output["text"] == "hello from the allowed root\n"
    finally:
        await asyncio.wait_for(manager.aclose(), LIMIT_S)
