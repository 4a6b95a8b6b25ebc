"""One MCP tool call through Hermes vs the same call with the bare official SDK, over stdio.

Both sides talk to their own copy of the same server (``tests/mcp/servers/basic_server.py``,
its ``add`` tool; a Python server on the SDK's ``MCPServer``), each connected once before
timing. Then many calls are made in alternating blocks (SDK, Hermes, Hermes direct, SDK, …)
so machine noise hits all paths alike; we report medians, p95s and the ratio of medians.

- **SDK**: ``ClientSession.call_tool("add", {...})`` on a session opened with
  ``stdio_client`` — the floor any client on this SDK pays.
- **Hermes**: the adapted tool ``bench__add`` run by ``execute_tool_call`` with a
  ``ToolRegistry``, as the agent calls it: local validation of the arguments against the
  remote schema, the executor pipeline (timeout, result shaping), ``McpConnection.call_tool``
  and the result normalized into a ``ToolResult``. The issue's target: median ratio ≤ 1.15.
- **Hermes direct** (context, not the target): ``McpConnection.call_tool`` alone, to split
  the executor's share from the connection's.

With ``--everything`` the same comparison also runs against the Node reference server
(``get-sum`` of ``@modelcontextprotocol/server-everything``, installed by ``make mcp-servers``).
``--profile N`` then profiles N Hermes calls with cProfile and prints where the time goes.

Run: ``.venv/bin/python bench/mcp_call.py [--rounds R] [--batch B] [--everything]``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import importlib.metadata
import io
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from hermes.mcp import McpConnection, ServerConfig
from hermes.models.base import ToolCall
from hermes.tools.base import ToolContext
from hermes.tools.executor import execute_tool_call
from hermes.tools.registry import ToolRegistry

REPO = Path(__file__).resolve().parents[1]
BASIC_SERVER = REPO / "tests" / "mcp" / "servers" / "basic_server.py"
EVERYTHING = (
    REPO / ".cache/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)

CallFn = Callable[[int], Awaitable[None]]
SDK = "SDK ClientSession.call_tool"


class Target:
    """A server to call: its command line and the tool (remote name, arguments, check)."""

    def __init__(
        self,
        label: str,
        command: list[str],
        tool: str,
        arguments: Callable[[int], dict[str, Any]],
        expected: Callable[[int], str],
    ) -> None:
        self.label = label
        self.command = command
        self.tool = tool
        self.arguments = arguments
        self.expected = expected


def basic_target() -> Target:
    return Target(
        "basic_server.py add (Python, MCPServer)",
        [sys.executable, str(BASIC_SERVER)],
        "add",
        lambda i: {"a": i, "b": 1},
        lambda i: str(i + 1),
    )


def everything_target() -> Target | None:
    node = shutil.which("node")
    if node is None or not EVERYTHING.is_file():
        return None
    return Target(
        "server-everything get-sum (Node)",
        [node, str(EVERYTHING), "stdio"],
        "get-sum",
        lambda i: {"a": i, "b": 1},
        lambda i: f"The sum of {i} and 1 is {i + 1}.",
    )


def check(good: bool, result: object) -> None:
    """A wrong answer stops the run (a fast wrong call must not count)."""
    if not good:
        raise SystemExit(f"unexpected result: {result!r}")


async def sdk_call_fn(stack: AsyncExitStack, target: Target) -> CallFn:
    """The bare SDK: one ``stdio_client`` + ``ClientSession``, opened in this task."""
    params = StdioServerParameters(command=target.command[0], args=target.command[1:])
    # The server's stderr goes nowhere, as Hermes's goes to a private file (opening
    # /dev/null does not block the loop).
    errlog = stack.enter_context(open(os.devnull, "w", encoding="utf-8"))  # noqa: ASYNC230, SIM115
    read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()

    async def one(i: int) -> None:
        result = await session.call_tool(target.tool, target.arguments(i))
        text = getattr(result.content[0], "text", None)
        check(not result.is_error and text == target.expected(i), result)

    return one


async def hermes_connection(target: Target) -> McpConnection:
    """A ready Hermes connection to its own copy of the server."""
    config = ServerConfig(command=target.command[0], args=tuple(target.command[1:]), prefix="bench")
    connection = McpConnection("bench", config)
    connection.start()
    if not await connection.wait_ready(30):
        await connection.aclose()
        raise SystemExit(f"Hermes could not connect: {connection.status()}")
    return connection


def executor_fn(connection: McpConnection, target: Target) -> CallFn:
    """Hermes as the agent calls a tool: the adapted tool through ``execute_tool_call``."""
    registry = ToolRegistry(connection.tools())
    name = f"bench__{target.tool}"
    ctx = ToolContext(session_id="bench-session", user_id="u1")

    async def through_executor(i: int) -> None:
        call = ToolCall(f"call-{i}", name, target.arguments(i))
        result = await execute_tool_call(registry, call, ctx)
        check(result.ok and result.output["text"] == target.expected(i), result)

    return through_executor


def direct_fn(connection: McpConnection, target: Target) -> CallFn:
    """The connection's own call (no executor): normalizing included, validation not."""

    async def direct(i: int) -> None:
        result = await connection.call_tool(target.tool, target.arguments(i))
        check(result.ok and result.output["text"] == target.expected(i), result)

    return direct


class Samples:
    """Wall time of each call (µs) and client-process CPU time of each block, by path."""

    def __init__(self, names: list[str]) -> None:
        self.wall: dict[str, list[float]] = {name: [] for name in names}
        self.cpu: dict[str, float] = dict.fromkeys(names, 0.0)


async def measure(fns: dict[str, CallFn], rounds: int, batch: int) -> Samples:
    """``rounds`` × (``batch`` calls of each path in turn)."""
    samples = Samples(list(fns))
    counter = 0
    for _ in range(rounds):
        for name, fn in fns.items():
            cpu = time.process_time()
            for _ in range(batch):
                counter += 1
                start = time.perf_counter_ns()
                await fn(counter)
                samples.wall[name].append((time.perf_counter_ns() - start) / 1000)
            samples.cpu[name] += time.process_time() - cpu
    return samples


def report(target: Target, samples: Samples, batch: int) -> None:
    base = samples.wall[SDK]
    print(f"\n{target.label}: {len(base)} calls per path")
    print(
        f"{'path':<40}{'median µs':>11}{'p95 µs':>10}{'ratio':>8}{'per-round':>11}"
        f"{'client CPU µs':>15}"
    )
    for name, values in samples.wall.items():
        median = statistics.median(values)
        p95 = statistics.quantiles(values, n=20)[18]
        # The median over rounds of (this path's round median / the SDK's round median):
        # a check on the main ratio that slow drifts of the machine's speed cannot move.
        rounds = statistics.median(
            statistics.median(values[i : i + batch]) / statistics.median(base[i : i + batch])
            for i in range(0, len(values), batch)
        )
        ratio = median / statistics.median(base)
        # CPU time of this (client) process per call: what the client itself spends, which
        # the machine's other load does not inflate as much as it inflates wall time.
        cpu = samples.cpu[name] / len(values) * 1e6
        print(f"{name:<40}{median:>11.1f}{p95:>10.1f}{ratio:>8.3f}{rounds:>11.3f}{cpu:>15.1f}")


async def compare(target: Target, rounds: int, batch: int, warmup: int) -> None:
    """Each path on its own server process, so every block starts on an equally idle one."""
    async with AsyncExitStack() as stack:
        sdk = await sdk_call_fn(stack, target)
        through_executor = await hermes_connection(target)
        stack.push_async_callback(through_executor.aclose)
        direct = await hermes_connection(target)
        stack.push_async_callback(direct.aclose)
        fns = {
            SDK: sdk,
            "Hermes execute_tool_call (the target)": executor_fn(through_executor, target),
            "Hermes McpConnection.call_tool": direct_fn(direct, target),
        }
        await measure(fns, 1, warmup)
        report(target, await measure(fns, rounds, batch), batch)


async def profile(target: Target, calls: int) -> None:
    """cProfile over ``calls`` Hermes calls (executor path); the top of the cumulative list."""
    connection = await hermes_connection(target)
    hermes = executor_fn(connection, target)
    try:
        for i in range(50):
            await hermes(i)
        profiler = cProfile.Profile()
        profiler.enable()
        for i in range(calls):
            await hermes(i)
        profiler.disable()
    finally:
        await connection.aclose()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumtime").print_stats(r"hermes[/\\]", 25)
    print(f"\ncProfile of {calls} Hermes calls: by own time, then Hermes's functions by cumtime")
    print(out.getvalue())


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    node = ""
    if shutil.which("node"):
        version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
        node = f", node {version.stdout.strip()}"
    return (
        f"{os.cpu_count()} CPUs ({cpu}), {platform.system()} {platform.release()}, "
        f"CPython {platform.python_version()}, mcp {importlib.metadata.version('mcp')}{node}"
    )


async def main(options: argparse.Namespace) -> None:
    print(f"Machine: {machine()}")
    print(
        f"Method: {options.warmup} warm-up calls per path, then {options.rounds} rounds × "
        f"{options.batch} calls per path, paths interleaved by block; each side its own server"
    )
    targets = [basic_target()]
    if options.everything:
        found = everything_target()
        if found is None:
            print("(server-everything not installed: run `make mcp-servers`; skipped)")
        else:
            targets.append(found)
    for target in targets:
        await compare(target, options.rounds, options.batch, options.warmup)
    if options.profile:
        await profile(targets[0], options.profile)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--batch", type=int, default=25)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--everything", action="store_true", help="also server-everything")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="cProfile N calls")
    asyncio.run(main(parser.parse_args()))
