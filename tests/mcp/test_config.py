"""Parsing the ``mcp_servers`` configuration: our shape, the ``mcpServers`` shape, bad keys."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.errors import ConfigError
from hermes.mcp import ServerConfig, parse_mcp_servers


def test_stdio_server_gets_defaults() -> None:
    servers = parse_mcp_servers({"files": {"command": "npx", "args": ["-y", "pkg"]}})
    files = servers["files"]
    assert files.transport == "stdio"
    assert files.args == ("-y", "pkg")
    assert (files.timeout, files.connect_timeout, files.enabled) == (30.0, 10.0, True)
    assert files.prefix_for("files") == "files"


def test_url_server_defaults_to_streamable_http() -> None:
    servers = parse_mcp_servers({"web": {"url": "http://127.0.0.1:9/mcp"}})
    assert servers["web"].transport == "streamable_http"


def test_sse_transport_is_accepted_for_a_url() -> None:
    servers = parse_mcp_servers({"old": {"url": "https://example.org/sse", "transport": "sse"}})
    assert servers["old"].transport == "sse"


def test_widespread_mcp_servers_shape_is_accepted_unchanged() -> None:
    pasted = {
        "mcpServers": {
            "fs": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                "env": {"DEBUG": "1"},
            },
            "remote": {"type": "http", "url": "https://example.org/mcp", "headers": {"X": "y"}},
            "legacy": {"type": "sse", "url": "https://example.org/sse", "disabled": True},
            "tagged": {"command": "srv", "alwaysAllow": ["read"], "description": "shown in UI"},
        }
    }
    servers = parse_mcp_servers(pasted)
    assert servers["fs"].env == {"DEBUG": "1"}
    assert servers["remote"].transport == "streamable_http"
    assert servers["legacy"].transport == "sse"
    assert servers["legacy"].enabled is False
    assert servers["tagged"].command == "srv"


def test_unknown_key_names_the_server_and_key() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_mcp_servers({"files": {"command": "npx", "argz": []}})
    assert "files" in caught.value.message
    assert caught.value.key == "mcp_servers.files.argz"
    assert "unknown key" in caught.value.message


def test_server_without_command_or_url_is_rejected() -> None:
    with pytest.raises(ConfigError, match="either 'command'"):
        parse_mcp_servers({"empty": {"timeout": 5}})


def test_server_with_both_command_and_url_is_rejected() -> None:
    with pytest.raises(ConfigError, match="either 'command'"):
        parse_mcp_servers({"both": {"command": "x", "url": "http://127.0.0.1/mcp"}})


def test_headers_on_a_stdio_server_are_rejected() -> None:
    with pytest.raises(ConfigError, match="headers"):
        parse_mcp_servers({"s": {"command": "x", "headers": {"A": "b"}}})


def test_env_on_a_url_server_is_rejected() -> None:
    with pytest.raises(ConfigError, match="env only apply"):
        parse_mcp_servers({"s": {"url": "http://127.0.0.1/mcp", "env": {"A": "b"}}})


def test_bad_url_is_rejected_without_echoing_it() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_mcp_servers({"s": {"url": "ftp://secret-token@host/x"}})
    assert "secret-token" not in str(caught.value)
    assert caught.value.key == "mcp_servers.s.url"


def test_header_values_never_appear_in_errors_or_repr() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_mcp_servers({"s": {"url": "http://127.0.0.1/mcp", "headers": {"A": 12345678}}})
    assert "12345678" not in str(caught.value)
    config = ServerConfig(url="http://127.0.0.1/mcp", headers={"Authorization": "Bearer sk-1"})
    assert "sk-1" not in repr(config)


def test_stdio_transport_with_a_url_is_rejected() -> None:
    with pytest.raises(ConfigError, match="stdio"):
        parse_mcp_servers({"s": {"url": "http://127.0.0.1/mcp", "transport": "stdio"}})


def test_unknown_type_in_mcp_servers_shape_is_rejected() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_mcp_servers({"mcpServers": {"s": {"type": "websocket", "url": "http://h/x"}}})
    assert caught.value.key == "mcp_servers.s.type"


@pytest.mark.parametrize("name", ["", "  ", "a" * 65, "a\nb", "tab\there", 3])
@pytest.mark.parametrize("shape", ["ours", "mcpServers"])
def test_a_bad_server_name_is_rejected_naming_the_section(name: object, shape: str) -> None:
    servers = {name: {"command": "x"}}
    with pytest.raises(ConfigError) as caught:
        parse_mcp_servers(servers if shape == "ours" else {"mcpServers": servers})
    assert caught.value.key == "mcp_servers"
    assert "MCP server name must be a non-empty string of at most 64 printable" in str(caught.value)


def test_a_server_name_of_64_printable_characters_is_accepted() -> None:
    name = "a" * 63 + "é"
    assert list(parse_mcp_servers({name: {"command": "x"}})) == [name]


@pytest.mark.parametrize("value", ["yes", "true", 1, 0, None])
def test_disabled_must_be_a_boolean(value: object) -> None:
    pasted = {"mcpServers": {"x": {"command": "npx", "disabled": value}}}
    with pytest.raises(ConfigError) as caught:
        parse_mcp_servers(pasted)
    assert caught.value.key == "mcp_servers.x.disabled"
    assert "'disabled' must be true or false" in str(caught.value)


def test_keys_beside_mcp_servers_are_rejected() -> None:
    with pytest.raises(ConfigError, match="beside 'mcpServers'"):
        parse_mcp_servers({"mcpServers": {}, "other": {}})


def test_non_mapping_value_is_rejected() -> None:
    with pytest.raises(ConfigError, match="mapping"):
        parse_mcp_servers(["a", "b"])


def test_non_mapping_server_is_rejected_naming_it() -> None:
    with pytest.raises(ConfigError, match="'s' must be a mapping"):
        parse_mcp_servers({"s": "npx server"})


def test_invalid_prefix_is_rejected() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_mcp_servers({"s": {"command": "x", "prefix": "has space"}})
    assert caught.value.key == "mcp_servers.s.prefix"


def test_non_positive_timeout_is_rejected() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_mcp_servers({"s": {"command": "x", "timeout": 0}})
    assert caught.value.key == "mcp_servers.s.timeout"


def test_none_means_no_servers() -> None:
    assert parse_mcp_servers(None) == {}
    assert parse_mcp_servers({"mcpServers": None}) == {}


def test_default_prefix_is_the_sanitized_server_name() -> None:
    servers = parse_mcp_servers({"my server/1": {"command": "x"}})
    assert servers["my server/1"].prefix_for("my server/1") == "my_server_1"


def test_tool_filter_includes_then_excludes_with_patterns() -> None:
    config = parse_mcp_servers(
        {
            "s": {
                "command": "x",
                "tools": {"include": ["read_*", "list"], "exclude": ["read_secret"]},
            }
        }
    )["s"]
    allowed = [n for n in ("read_file", "read_secret", "list", "write") if config.tools.allows(n)]
    assert allowed == ["read_file", "list"]


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=12,
    )
)
def test_arbitrary_values_parse_or_raise_config_error(value: object) -> None:
    try:
        servers = parse_mcp_servers(value)
    except ConfigError:
        return
    assert all(isinstance(config, ServerConfig) for config in servers.values())


def test_permissions_and_approval_patterns_are_parsed() -> None:
    servers = parse_mcp_servers(
        {
            "files": {
                "command": "x",
                "permissions": ["files:read", "files:admin:*"],
                "requires_approval": ["write_*", "delete"],
            },
            "all": {"command": "x", "requires_approval": True},
            "none": {"command": "x"},
        }
    )
    files = servers["files"]
    assert files.permissions == ("files:read", "files:admin:*")
    assert [n for n in ("read", "write_file", "delete", "deleted") if files.needs_approval(n)] == [
        "write_file",
        "delete",
    ]
    assert servers["all"].needs_approval("anything")
    assert not servers["none"].needs_approval("anything")
    assert servers["none"].permissions == ()


def test_permissions_and_approval_are_accepted_in_the_mcp_servers_shape() -> None:
    fs_config = {"command": "x", "permissions": ["fs:*"], "requires_approval": True}
    pasted = {"mcpServers": {"fs": fs_config}}
    fs = parse_mcp_servers(pasted)["fs"]
    assert fs.permissions == ("fs:*",)
    assert fs.requires_approval is True


@pytest.mark.parametrize("scope", ["has space", "a::b", ":a", "a:", "*:a", "a*", ""])
def test_invalid_permission_scopes_are_rejected_naming_the_key(scope: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_mcp_servers({"s": {"command": "x", "permissions": [scope]}})
    assert caught.value.key == "mcp_servers.s.permissions"


@pytest.mark.parametrize("value", ["yes", "write_*", 1, [""], ["  "], [3]])
def test_invalid_requires_approval_is_rejected(value: object) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_mcp_servers({"s": {"command": "x", "requires_approval": value}})
    assert caught.value.key.startswith("mcp_servers.s.requires_approval")


@given(st.from_regex(r"\*|[A-Za-z0-9_.-]{1,8}(:[A-Za-z0-9_.-]{1,8}){0,3}(:\*)?", fullmatch=True))
def test_every_rbac_style_scope_is_accepted(scope: str) -> None:
    config = parse_mcp_servers({"s": {"command": "x", "permissions": [scope]}})["s"]
    assert config.permissions == (scope,)
