"""Shared helpers of the MCP tests: the tiny test server and how to start it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.mcp import ServerConfig

SERVER_SCRIPT = Path(__file__).parent / "servers" / "basic_server.py"


def stdio_config(*extra_args: str, **fields: object) -> ServerConfig:
    """The test server over stdio, run by this interpreter."""
    return ServerConfig.model_validate(
        {"command": sys.executable, "args": [str(SERVER_SCRIPT), *extra_args], **fields}
    )


@pytest.fixture(scope="module")
def http_server_url() -> Iterator[str]:
    """The test server over streamable HTTP on 127.0.0.1 (ephemeral port), stopped after."""
    process = subprocess.Popen(
        [sys.executable, str(SERVER_SCRIPT), "--http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # bounded: the server prints its port first thing
        assert line.startswith("PORT "), f"test server did not start: {line!r}"
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        if process.stdout is not None:
            process.stdout.close()
