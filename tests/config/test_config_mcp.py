"""``mcp_servers:`` and ``mcp_serve:`` in hermes.yaml: both shapes, ${VAR} secrets, errors
naming the file and the key without echoing values."""

from __future__ import annotations

import pytest

from hermes.errors import ConfigError


def test_our_shape_and_env_placeholders(load_text) -> None:
    text = (
        "mcp_servers:\n"
        "  files: {command: npx, args: [-y, server], env: {TOKEN: '${FILES_TOKEN}'}}\n"
        "  web:\n"
        "    url: http://127.0.0.1:8931/mcp\n"
        "    headers: {Authorization: 'Bearer ${WEB_TOKEN}'}\n"
    )
    config = load_text(text, {"FILES_TOKEN": "s3cret-1", "WEB_TOKEN": "s3cret-2"}).config
    files, web = config.mcp_servers["files"], config.mcp_servers["web"]
    assert files.transport == "stdio"
    assert files.env == {"TOKEN": "s3cret-1"}
    assert web.transport == "streamable_http"
    assert web.headers == {"Authorization": "Bearer s3cret-2"}
    assert "s3cret" not in repr(config)


def test_pasted_mcp_servers_json_is_accepted(load_text) -> None:
    text = (
        '{"mcp_servers": {"mcpServers": {"git": {"type": "sse", "url": "http://127.0.0.1:1/sse",'
        ' "disabled": true, "autoApprove": []}}}}\n'
    )
    git = load_text(text).config.mcp_servers["git"]
    assert git.transport == "sse"
    assert git.enabled is False


def test_empty_section_means_no_servers(load_text) -> None:
    assert load_text("mcp_servers:\n").config.mcp_servers == {}


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("mcp_servers:\n  a: {command: x, colour: red}\n", "mcp_servers.a.colour"),
        ("mcp_servers:\n  a: {url: 'ftp://h/x'}\n", "mcp_servers.a.url"),
        ("mcp_servers:\n  a: {command: x, timeout: -1}\n", "mcp_servers.a.timeout"),
        ("mcp_servers: [a, b]\n", "mcp_servers"),
        (
            'mcp_servers: {"mcpServers": {"a": {"type": "carrier-pigeon", "url": "http://h"}}}\n',
            "mcp_servers.a.type",
        ),
        ("mcp_servers:\n  3: {command: x}\n", "mcp_servers"),
        ("mcp_servers:\n  '': {command: x}\n", "mcp_servers"),
        (
            'mcp_servers: {"mcpServers": {"a": {"command": "x", "disabled": "yes"}}}\n',
            "mcp_servers.a.disabled",
        ),
    ],
)
def test_mistakes_name_the_file_and_key(load_text, text: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_text(text)
    assert info.value.key == key
    assert info.value.file is not None
    assert info.value.file.endswith("hermes.yaml")


def test_server_errors_read_like_every_other_config_error(load_text) -> None:
    text = "mcp_servers:\n  a: {command: x, prefix: 'has space', argz: []}\n"
    with pytest.raises(ConfigError) as info:
        load_text(text)
    message = str(info.value)
    assert "Value error," not in message  # pydantic's prefix of a validator's ValueError
    assert message.startswith("invalid configuration: ")
    assert "mcp_servers.a.prefix: must be 1-40 characters" in message
    assert "mcp_servers.a.argz: unknown key; did you mean 'args'?" in message
    assert info.value.file is not None


def test_errors_never_echo_secret_values(load_text) -> None:
    text = "mcp_servers:\n  a: {command: x, env: {TOKEN: '${T}'}, url: 'http://h/${T}'}\n"
    with pytest.raises(ConfigError) as info:
        load_text(text, {"T": "hunter2-secret"})
    assert "hunter2" not in str(info.value)


def test_mcp_serve_defaults_and_empty_token(load_text) -> None:
    serve = load_text(
        "mcp_serve:\n  transport: http\n  token: '${NO_SUCH_VAR:-}'\n"
    ).config.mcp_serve
    assert (serve.transport, serve.host, serve.port) == ("http", "127.0.0.1", 8765)
    assert serve.token is None
    assert serve.allow_approval is False
    with pytest.raises(ConfigError) as info:
        load_text("mcp_serve:\n  transport: carrier\n")
    assert info.value.key == "mcp_serve.transport"
