"""A Hermes MCP server for the tests: two built-ins and a few tools that each show one behaviour.

Run ``python hermes_server.py`` for stdio, or ``python hermes_server.py --http`` for streamable
HTTP on 127.0.0.1 with an ephemeral port (the first stdout line is then ``PORT <n>``).
Options: ``--allow-approval``, ``--token TOKEN`` (HTTP), ``--user ID`` with ``--rbac`` (an
authorizer where only user ``hr`` may read salaries).

``build_registry()`` and ``build_authorizer()`` are imported by the in-memory tests too.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from hermes.errors import ToolError
from hermes.mcp.server import HermesMcpServer
from hermes.tools import ToolRegistry, get_builtin, tool
from hermes.tools.base import Tool
from hermes.tools.permissions import Authorizer

FORECAST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "high_c": {"type": "number"}},
    "required": ["city", "high_c"],
}


@tool(output_schema={"type": "integer"})
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(output_schema=FORECAST_SCHEMA)
def forecast(city: str, days: int = 1) -> dict[str, Any]:
    """Tomorrow's high temperature in a city.

    Args:
        city: The city name.
        days: How many days ahead (1-7).
    """
    return {"city": city, "high_c": 21.5 + days}


@tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@tool
def chatty() -> str:
    """Prints to stdout (which must never reach the protocol stream), then answers."""
    print("stray output from a tool", flush=True)
    return "said"


@tool
def profile(name: str) -> dict[str, Any]:
    """A JSON object without a declared output schema."""
    return {"name": name, "tags": ["a", "b"]}


@tool
def explode() -> str:
    """Always raises."""
    raise RuntimeError("the flux capacitor broke")


@tool
def refuse() -> str:
    """Fails on purpose with its own error code."""
    raise _QuotaError("the daily quota is used up")


class _QuotaError(ToolError):
    code = "quota_exceeded"


@tool(timeout=0.3)
async def nap(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "rested"


@tool(requires_approval=True)
def wipe(target: str) -> str:
    """Delete something (needs a person's approval)."""
    return f"wiped {target}"


@tool(permissions=("hr:salary:read",))
def salary(employee: str) -> dict[str, Any]:
    """An employee's salary (HR only)."""
    return {"employee": employee, "monthly": 12_000}


@tool
def flood(count: int) -> list[str]:
    """A list of ``count`` long strings (to test output bounds)."""
    return ["x" * 100] * count


@tool(output_schema={"type": "array", "items": {"type": "string"}})
def flood_typed(count: int) -> list[str]:
    """Like flood, with an output schema."""
    return ["x" * 100] * count


@tool(idempotency_key=("order_id",))
def refund(order_id: str) -> str:
    """Refund an order once."""
    return f"refunded {order_id}"


def _remote_double() -> Tool:
    """A tool as the MCP client would adapt it from another server (never re-exported)."""

    async def run(**_: Any) -> str:
        return "remote"

    return Tool(
        name="other__thing",
        description="From another MCP server",
        parameters={"type": "object", "properties": {}},
        fn=run,
        is_async=True,
        toolset="mcp:other",
    )


def build_registry() -> ToolRegistry:
    registry = ToolRegistry()
    for name in ("calculator", "current_time"):
        builtin = get_builtin(name)
        assert builtin is not None
        registry.register(builtin)
    local = (add, forecast, echo, chatty, profile, explode, refuse, nap, wipe, salary, flood)
    for fn in (*local, flood_typed, refund):
        registry.register(fn)
    registry.register(_remote_double())
    return registry


def build_authorizer() -> Authorizer:
    """RBAC on: user ``hr`` holds ``hr:*``; everyone else holds nothing."""
    return Authorizer(
        enabled=True,
        user_scopes={"hr": frozenset({"hr:*"})},
        default_scopes=frozenset(),
        audit=None,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--allow-approval", action="store_true")
    parser.add_argument("--token")
    parser.add_argument("--user")
    parser.add_argument("--rbac", action="store_true")
    parser.add_argument("--workspace")
    options = parser.parse_args()
    server = HermesMcpServer(
        build_registry(),
        name="hermes-test",
        allow_approval=options.allow_approval,
        authorizer=build_authorizer() if options.rbac else None,
        user_id=options.user,
        workspace=Path(options.workspace) if options.workspace else None,
        max_output_chars=5_000,
    )
    if options.http:

        def announce(port: int) -> None:
            print(f"PORT {port}", flush=True)

        asyncio.run(server.serve_http(port=0, bearer_token=options.token, on_ready=announce))
    else:
        asyncio.run(server.serve_stdio())


if __name__ == "__main__":
    main()
