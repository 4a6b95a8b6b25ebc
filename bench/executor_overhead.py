"""The executor's own overhead per tool call: a plain tool vs one with every policy on.

The tool is an async no-op, so the time of a call is the pipeline's cost: validation,
authorization (a tiny allow-all authorizer), the approval gate, the idempotency claim and
record (two SQLite writes to a WAL file in a temp dir, each call a new key so nothing is
replayed), the result cache (a miss), the circuit breaker, the retry wrapper, parser, output
schema check and ``post_validate``. Logging is off, as in production at INFO (the per-step
``tool_pipeline`` line is DEBUG only). Measurements are interleaved in small batches
(plain, policies, replay, plain, …) so machine noise hits all alike; we report medians and p95s.

"replay" is the same fully-policied tool called again with arguments it has already seen:
the idempotency step answers with the stored result (one SQLite read) before anything runs.
A last part times a call through the process sandbox (``sandbox="process"``; dominated by
starting the child process).

Run: ``.venv/bin/python bench/executor_overhead.py [--calls N] [--sandbox-calls N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import platform
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

# Only names both executor APIs have are imported here: ``ab_executor.py`` imports this module's
# tools and authorizer against a tree with the old executor and one with the pipeline. The
# executor itself is imported where it is called.
from hermes.models.base import ToolCall
from hermes.tools import Tool, ToolRegistry, as_tool, tool
from hermes.tools.builtin.calculator import calculator
from hermes.tools.policies import BreakerPolicy, PolicyState, RetryPolicy

if TYPE_CHECKING:
    from hermes.tools.pipeline import CallContext, ToolExecutor

CallFn = Callable[[int], Awaitable[None]]

OUTPUT_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@tool(name="plain")
async def plain(n: int) -> dict[str, int]:
    """Do nothing."""
    return {"n": n}


@tool(
    name="guarded",
    retry=RetryPolicy(max_attempts=3),
    circuit_breaker=BreakerPolicy(failures=5, reset_after=30),
    idempotency_key=("n",),
    cache_ttl=600,
    permissions=("bench:run",),
    requires_approval=True,
    parser=lambda raw: raw,
    output_schema=OUTPUT_SCHEMA,
    post_validate=lambda output: None,
    max_output_chars=10_000,
)
async def guarded(n: int) -> dict[str, int]:
    """Do nothing, with every policy on."""
    return {"n": n}


class AllowAll:
    """The authorizer duck type: allows every call (the cost of the check itself)."""

    def check(self, user_id: str | None, tool: Tool, *, session_id: str, trace_id: str) -> None:
        return None


def call_fn(executor: ToolExecutor, ctx: CallContext, name: str, *, fresh: bool) -> CallFn:
    """One call of ``name`` through ``executor`` (built once, as an agent builds its own)."""

    async def one(i: int) -> None:
        n = i if fresh else i % 8
        call_ctx = ctx.for_call(f"call-{i}")  # what a turn does for each call
        result = await executor.run(ToolCall(f"call-{i}", name, {"n": n}), call_ctx)
        assert result.ok, result

    return one


async def measure(fns: dict[str, CallFn], calls: int, batch: int = 50) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in fns}
    counters = dict.fromkeys(fns, 0)
    for _ in range(calls // batch):
        for name, fn in fns.items():
            for _ in range(batch):
                counters[name] += 1
                start = time.perf_counter_ns()
                await fn(counters[name])
                samples[name].append((time.perf_counter_ns() - start) / 1000)
    return samples


def report(samples: dict[str, list[float]]) -> None:
    plain_median = statistics.median(samples["plain"])
    print(f"{'path':<30}{'median µs':>12}{'p95 µs':>12}{'vs plain':>12}")
    for name, values in samples.items():
        median = statistics.median(values)
        p95 = statistics.quantiles(values, n=20)[18]
        ratio = f"+{median - plain_median:.1f}" if name != "plain" else "-"
        print(f"{name:<30}{median:>12.1f}{p95:>12.1f}{ratio:>12}")


async def sandboxed(calls: int) -> None:
    from hermes.tools import ToolContext, execute_tool_call

    sandboxed_calculator = dataclasses.replace(
        as_tool(calculator), name="sandboxed_calculator", sandbox="process", timeout=20
    )
    registry = ToolRegistry([sandboxed_calculator, calculator])
    ctx = ToolContext(call_id="c")
    for name in ("sandboxed_calculator", "calculator"):
        times: list[float] = []
        for i in range(calls):
            call = ToolCall(f"c{i}", name, {"expression": f"{i} * 2 + 1"})
            start = time.perf_counter_ns()
            result = await execute_tool_call(registry, call, ctx)
            times.append((time.perf_counter_ns() - start) / 1000)
            assert result.ok, result
        times = times[1:] or times  # the first call also imports the child's modules
        p95 = statistics.quantiles(times, n=20)[18] if len(times) >= 20 else max(times)
        print(f"{name:<30}{statistics.median(times) / 1000:>10.2f} ms{p95 / 1000:>10.2f} ms")


async def main(calls: int, sandbox_calls: int) -> None:
    from hermes.storage.sqlite.idempotency import SQLiteIdempotencyRecords
    from hermes.tools.pipeline import CallContext, ToolExecutor

    print(f"Python {platform.python_version()} on {platform.machine()}, {calls} calls per path")
    with tempfile.TemporaryDirectory() as tmp:
        state = PolicyState()
        registry = ToolRegistry([plain, guarded])
        records = SQLiteIdempotencyRecords(Path(tmp) / "idempotency.db")  # an agent's kind
        policed = ToolExecutor(registry, state=state, authorizer=AllowAll(), idempotency=records)
        ctx = CallContext(session_id="bench-session", user_id="u1", approved=True)
        plain_ctx = CallContext(session_id="bench-session", user_id="u1")
        unpoliced = ToolExecutor(registry, state=state)
        fns = {
            "plain": call_fn(unpoliced, plain_ctx, "plain", fresh=True),
            "all policies (new key)": call_fn(policed, ctx, "guarded", fresh=True),
            "all policies (replay)": call_fn(policed, ctx, "guarded", fresh=False),
        }
        await measure(fns, min(calls, 1000))  # warm up: compiled schemas, the SQLite file
        report(await measure(fns, calls))
        await state.close()
        await records.close()
    if sandbox_calls:
        print(f"\nprocess sandbox vs in-process ({sandbox_calls} calls each): median, p95")
        await sandboxed(sandbox_calls)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--sandbox-calls", type=int, default=40)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.sandbox_calls))
