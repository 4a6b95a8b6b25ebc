"""Remote MCP tools as Hermes tools: names, schemas, and result normalization."""

from __future__ import annotations

import re
from typing import Any

import mcp_types as types
from hypothesis import given
from hypothesis import strategies as st

from hermes.mcp import (
    MCP_TOOL_ERROR,
    McpConnection,
    adapt_tools,
    normalize_result,
    remote_tool,
    tool_name,
)
from hermes.mcp.adapter import MAX_ATTACHMENTS, tool_names
from hermes.models.base import ToolCall
from hermes.tools.base import ToolContext, ToolResult
from hermes.tools.executor import execute_tool_call
from hermes.tools.registry import ToolRegistry
from tests.mcp.conftest import stdio_config

VALID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


def mcp_tool(name: str, schema: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool(name=name, description=f"{name} tool", input_schema=schema or ADD_SCHEMA)


class Recorder:
    """The far side of a remote call: records what would go over the wire."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append((name, arguments))
        return ToolResult(ok=True, output={"text": "ok"})


def test_tool_name_joins_prefix_and_remote_name() -> None:
    assert tool_name("files", "read_file") == "files__read_file"


def test_tool_name_replaces_characters_outside_the_allowed_set() -> None:
    assert tool_name("my srv", "read/file:v2") == "my_srv__read_file_v2"


def test_long_names_are_clipped_with_a_distinguishing_hash() -> None:
    first = tool_name("p", "x" * 80 + "a")
    second = tool_name("p", "x" * 80 + "b")
    assert len(first) == 64
    assert len(second) == 64
    assert first != second


def test_sanitizing_collisions_get_unique_names_independent_of_order() -> None:
    forward = tool_names("p", ["a_b", "a b", "a/b"])
    backward = tool_names("p", ["a/b", "a b", "a_b"])
    assert forward == backward
    assert forward["a_b"] == "p__a_b"  # the name that needed no change keeps it
    assert len(set(forward.values())) == 3


@given(st.text(max_size=30), st.lists(st.text(max_size=90), max_size=8))
def test_local_names_are_always_valid_and_unique(prefix: str, remote: list[str]) -> None:
    names = tool_names(prefix, remote)
    assert all(VALID.match(name) for name in names.values())
    assert len(set(names.values())) == len(names)


def test_text_parts_are_joined() -> None:
    result = normalize_result(
        types.CallToolResult(content=[types.TextContent(text="a"), types.TextContent(text="b")])
    )
    assert result.ok
    assert result.output == {"text": "a\nb"}


def test_structured_content_is_kept_as_structured_output() -> None:
    result = normalize_result(types.CallToolResult(content=[], structured_content={"n": 1}))
    assert result.output == {"text": "", "structured": {"n": 1}}


def test_is_error_becomes_a_failed_result_with_the_server_message() -> None:
    result = normalize_result(
        types.CallToolResult(content=[types.TextContent(text="no such file")], is_error=True)
    )
    assert not result.ok
    assert result.error is not None
    assert (result.error.type, result.error.message) == (MCP_TOOL_ERROR, "no such file")


def test_image_becomes_an_attachment_note_without_its_data() -> None:
    data = "iVBORw0KGgo" * 10
    result = normalize_result(
        types.CallToolResult(content=[types.ImageContent(data=data, mime_type="image/png")])
    )
    (attachment,) = result.output["attachments"]
    assert attachment["type"] == "image"
    assert attachment["mime_type"] == "image/png"
    assert "image/png" in attachment["note"]
    assert data not in result.to_model_text()


def test_embedded_resource_and_link_become_attachments() -> None:
    embedded = types.EmbeddedResource(
        resource=types.TextResourceContents(
            uri="file:///a.txt", text="hello", mime_type="text/plain"
        )
    )
    link = types.ResourceLink(name="b", uri="file:///b.bin")
    result = normalize_result(types.CallToolResult(content=[embedded, link]))
    kinds = [(a["type"], a["uri"]) for a in result.output["attachments"]]
    assert kinds == [("resource", "file:///a.txt"), ("resource_link", "file:///b.bin")]


def test_huge_text_is_truncated_with_a_note() -> None:
    result = normalize_result(
        types.CallToolResult(content=[types.TextContent(text="x" * 500)]), max_text_chars=100
    )
    assert result.output["text"].startswith("x" * 100)
    assert "truncated" in result.output["text"]
    assert len(result.output["text"]) < 200


def test_invalid_input_schema_skips_the_tool_with_a_reason() -> None:
    bad = mcp_tool("broken", {"type": "object", "properties": {"a": {"type": "integr"}}})
    remote_ref = mcp_tool("remote_ref", {"type": "object", "$ref": "https://x.org/s.json"})
    not_object = mcp_tool("array", {"type": "array"})
    tools, skipped = adapt_tools(
        "srv", "srv", [mcp_tool("add"), bad, remote_ref, not_object], Recorder()
    )
    assert {remote: t.name for remote, t in tools.items()} == {"add": "srv__add"}
    assert [s.remote_name for s in skipped] == ["broken", "remote_ref", "array"]
    assert all(s.reason and s.server == "srv" for s in skipped)


async def test_bad_arguments_are_refused_before_any_remote_call() -> None:
    recorder = Recorder()
    registry = ToolRegistry([remote_tool("srv", "srv", mcp_tool("add"), recorder)])
    result = await execute_tool_call(
        registry, ToolCall("c1", "srv__add", {"a": "one", "b": 2}), ToolContext()
    )
    assert not result.ok
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert "a" in result.error.message
    assert recorder.calls == []


async def test_valid_arguments_are_coerced_and_sent_under_the_remote_name() -> None:
    recorder = Recorder()
    registry = ToolRegistry([remote_tool("srv", "srv", mcp_tool("add"), recorder)])
    result = await execute_tool_call(
        registry, ToolCall("c1", "srv__add", {"a": "1", "b": 2}), ToolContext()
    )
    assert result.ok
    assert recorder.calls == [("add", {"a": 1, "b": 2})]


def test_huge_structured_content_is_left_out_with_a_note() -> None:
    big = {"rows": [{"n": i, "text": "z" * 50} for i in range(1_000)]}
    result = normalize_result(
        types.CallToolResult(content=[types.TextContent(text="rows")], structured_content=big),
        max_text_chars=1_000,
    )
    assert result.ok
    assert "structured" not in result.output
    assert "structured content left out" in result.output["note"]
    assert result.output["text"] == "rows"
    assert len(result.to_model_text()) < 2_000


def test_huge_structured_content_without_text_shows_its_clipped_json() -> None:
    big = {"rows": ["z" * 50] * 1_000}
    result = normalize_result(
        types.CallToolResult(content=[], structured_content=big), max_text_chars=500
    )
    assert result.output["text"].startswith('{"rows": ["zzz')
    assert "truncated" in result.output["text"]
    assert len(result.to_model_text()) < 1_500


def test_small_structured_content_is_kept_whole() -> None:
    result = normalize_result(
        types.CallToolResult(content=[], structured_content={"n": 1}), max_text_chars=100
    )
    assert result.output == {"text": "", "structured": {"n": 1}}


def test_attachments_beyond_the_cap_are_only_counted() -> None:
    count = MAX_ATTACHMENTS + 7
    links = [types.ResourceLink(name=str(i), uri=f"file:///{i}") for i in range(count)]
    result = normalize_result(types.CallToolResult(content=links))
    assert len(result.output["attachments"]) == MAX_ATTACHMENTS
    assert "7 more attachments" in result.output["note"]


def test_adapted_tools_carry_the_servers_permissions_and_approval_patterns() -> None:
    tools, _ = adapt_tools(
        "srv",
        "srv",
        [mcp_tool("read_file"), mcp_tool("write_file")],
        Recorder(),
        permissions=("files:read",),
        requires_approval=lambda name: name.startswith("write_"),
    )
    by_name = {tool.name: tool for tool in tools.values()}
    assert by_name["srv__read_file"].permissions == ("files:read",)
    assert by_name["srv__write_file"].permissions == ("files:read",)
    assert by_name["srv__read_file"].requires_approval is False
    assert by_name["srv__write_file"].requires_approval is True


def test_a_connection_protects_its_tools_and_utilities_as_configured() -> None:
    config = stdio_config(permissions=["files:write", "files:read"], requires_approval=["write_*"])
    conn = McpConnection("files", config)
    conn.capabilities = types.ServerCapabilities(resources=types.ResourcesCapability())
    conn._owner.adopt_tools([mcp_tool("read_file"), mcp_tool("write_file")], [])
    by_name = {tool.name: tool for tool in conn._offer.tools}
    assert all(t.permissions == ("files:write", "files:read") for t in by_name.values())
    approval = {name for name, tool in by_name.items() if tool.requires_approval}
    assert approval == {"files__write_file"}
    assert "files__list_resources" in by_name


async def test_an_approval_requiring_remote_tool_is_not_run_without_approval() -> None:
    recorder = Recorder()
    tool = remote_tool("srv", "srv", mcp_tool("add"), recorder, requires_approval=True)
    result = await execute_tool_call(
        ToolRegistry([tool]), ToolCall("c1", "srv__add", {"a": 1, "b": 2}), ToolContext()
    )
    assert result.error is not None
    assert result.error.type == "approval_required"
    assert recorder.calls == []
