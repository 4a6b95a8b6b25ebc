"""Multi-call plans: the runner's own cost per node, and a wide plan's wall time against its
critical path (BENCHMARKS.md, "Multi-call plans").

0. **Validation** of a 10,000-node chain (parse + every check), the median.
1. **Overhead per node.** A 1,000-node plan of async no-op tools, run by ``PlanRunner`` on the
   plain tool chain with its record in a real SQLite ``plans.db`` (WAL, two committed writes
   per node: ``running`` and the outcome, each the moment it happens). Two shapes: a chain
   (every node depends on the one before) and a fan (1,000 independent nodes, concurrency 64).
   Beside them, in the same run, the same 1,000 calls made straight through the executor one
   after another: ``plan − calls`` is what the plan adds (scheduling, templates, persistence).
2. **Wide plan vs critical path.** 40 branches of 4 nodes each (a chain per branch) behind
   one start node and before one join node; each node sleeps 20 ms (then 100 ms), so the
   critical path is 6 × 20 ms = 120 ms. Also a fan-out of 200 sleeping nodes between a start
   and a join (critical path 3 × 20 ms). Beside them, the 40 × 4 shape written by hand as
   asyncio tasks over the same executor (no plan, no record): the floor. Concurrency 256, so
   every ready node may run at once (with a bound below the width the path gets longer).
   The ratio wall / critical path is the runner's scheduling cost (target within 1.2×).

Cases are interleaved round by round (A B C A B C …) so a noisy machine slows all alike;
medians are reported. Run: ``.venv/bin/python bench/plan_overhead.py [--rounds 7]``.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hermes.agent.compose import open_plan_runs
from hermes.models.base import ToolCall
from hermes.tools import ToolRegistry, tool
from hermes.tools.pipeline import CallContext, ToolExecutor
from hermes.tools.plan_runs import PlanRuns
from hermes.tools.plans import PlanRunner, PlanSettings, check_plan, parse_plan
from hermes.tools.policies import PolicyState

NODES = 1000


@tool(name="noop", side_effects=False)
async def noop(n: int) -> dict[str, int]:
    """Do nothing."""
    return {"n": n}


@tool(name="nap", side_effects=False)
async def nap(n: int, ms: int = 20) -> dict[str, int]:
    """Sleep ``ms`` milliseconds."""
    await asyncio.sleep(ms / 1000)
    return {"n": n}


def chain_plan(count: int) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = [{"id": "n0", "tool": "noop", "params": {"n": 0}}]
    for i in range(1, count):
        nodes.append(
            {"id": f"n{i}", "tool": "noop", "params": {"n": f"{{{{n{i - 1}.result.n}}}}"},
             "depends_on": [f"n{i - 1}"]}
        )  # fmt: skip
    return {"name": "chain", "nodes": nodes}


def fan_plan(count: int, tool_name: str = "noop") -> dict[str, Any]:
    return {
        "name": "fan",
        "nodes": [{"id": f"n{i}", "tool": tool_name, "params": {"n": i}} for i in range(count)],
    }


def branches_plan(branches: int, depth: int, ms: int = 20) -> dict[str, Any]:
    def nap_node(node_id: str, *deps: str) -> dict[str, Any]:
        return {
            "id": node_id,
            "tool": "nap",
            "params": {"n": 0, "ms": ms},
            "depends_on": list(deps),
        }

    nodes = [nap_node("start")]
    ends = []
    for b in range(branches):
        previous = "start"
        for d in range(depth):
            nodes.append(nap_node(f"b{b}_{d}", previous))
            previous = f"b{b}_{d}"
        ends.append(previous)
    nodes.append(nap_node("join", *ends))
    return {"name": "branches", "nodes": nodes}


def fan_in_out_plan(width: int, ms: int = 20) -> dict[str, Any]:
    return branches_plan(width, 1, ms) | {"name": "fan-in-out"}


async def hand_written_branches(executor: ToolExecutor, branches: int, depth: int) -> None:
    """The 40 × 4 shape as plain asyncio over the same executor: the floor without a plan."""
    ctx = CallContext()

    async def nap_call() -> None:
        await executor.run(ToolCall(id="c", name="nap", arguments={"n": 0, "ms": 20}), ctx)

    async def branch() -> None:
        for _ in range(depth):
            await nap_call()

    await nap_call()
    await asyncio.gather(*(branch() for _ in range(branches)))
    await nap_call()


def _runner(runs: PlanRuns, concurrency: int) -> PlanRunner:
    executor = ToolExecutor(ToolRegistry([noop, nap]), state=PolicyState())
    return PlanRunner(executor, runs, settings=PlanSettings(concurrency=concurrency))


async def _time(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def _calls(executor: ToolExecutor, count: int) -> None:
    ctx = CallContext()
    for i in range(count):
        result = await executor.run(ToolCall(id=f"c{i}", name="noop", arguments={"n": i}), ctx)
        assert result.ok


async def overhead(runs: PlanRuns, rounds: int) -> dict[str, list[float]]:
    chain, fan = parse_plan(chain_plan(NODES)), parse_plan(fan_plan(NODES))
    serial, wide = _runner(runs, 8), _runner(runs, 64)
    executor = ToolExecutor(ToolRegistry([noop]), state=PolicyState())
    cases: dict[str, Callable[[], Awaitable[Any]]] = {
        "chain of 1,000": lambda: serial.start(chain),
        "fan of 1,000 (concurrency 64)": lambda: wide.start(fan),
        "1,000 executor calls, no plan": lambda: _calls(executor, NODES),
    }
    for fn in cases.values():  # warm-up
        await fn()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            times[name].append(await _time(fn))
    return times


async def critical_path(runs: PlanRuns, rounds: int) -> dict[str, tuple[float, list[float]]]:
    runner = _runner(runs, 256)  # at least the width: the bound would lengthen the path
    executor = ToolExecutor(ToolRegistry([nap]), state=PolicyState())
    cases: dict[str, tuple[Callable[[], Awaitable[Any]], float]] = {}
    for ms in (20, 100):
        branches, fan = parse_plan(branches_plan(40, 4, ms)), parse_plan(fan_in_out_plan(200, ms))
        cases[f"40 branches × 4 (+ start, join), {ms} ms nodes"] = (
            lambda spec=branches: runner.start(spec),
            6 * ms / 1000,
        )
        cases[f"fan-out of 200 (+ start, join), {ms} ms nodes"] = (
            lambda spec=fan: runner.start(spec),
            3 * ms / 1000,
        )
    cases["40 × 4 at 20 ms, hand-written asyncio, no plan"] = (
        lambda: hand_written_branches(executor, 40, 4), 6 * 0.020,
    )  # fmt: skip
    for fn, _ in cases.values():
        await fn()
    times: dict[str, tuple[float, list[float]]] = {
        name: (path, []) for name, (_, path) in cases.items()
    }
    for _ in range(rounds):
        for name, (fn, _) in cases.items():
            times[name][1].append(await _time(fn))
    return times


def validation(rounds: int) -> list[float]:
    """Parse and validate a 10,000-node chain whose nodes read their parent's result."""
    plan = chain_plan(10_000)
    registry = ToolRegistry([noop])
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        problems = check_plan(parse_plan(plan), registry)
        times.append(time.perf_counter() - start)
        assert problems == []
    return times


async def main(rounds: int) -> None:
    print(f"{platform.machine()} · {platform.python_implementation()} {platform.python_version()}")
    checked = validation(rounds)
    print(f"\n0. parse + validate a 10,000-node plan: {statistics.median(checked) * 1000:.0f} ms")
    # Not the system's temp directory: creating a file under /tmp costs ~0.4 ms on the
    # development machines (~0.025 ms elsewhere on the same disk), and each node's result is a
    # file of the archive (bench/plan_results.py says more).
    with tempfile.TemporaryDirectory(dir=Path.cwd(), prefix="bench-plans-") as tmp:
        runs = open_plan_runs(Path(tmp) / "plans.db")
        try:
            times = await overhead(runs, rounds)
            print(f"\n1. overhead per node ({rounds} rounds, medians)")
            base = statistics.median(times["1,000 executor calls, no plan"]) / NODES * 1000
            for name, values in times.items():
                per_node = statistics.median(values) / NODES * 1000
                added = "" if "no plan" in name else f"   plan adds {per_node - base:.3f} ms/node"
                print(f"  {name:34} {per_node:.3f} ms/node{added}")
            paths = await critical_path(runs, rounds)
            print(f"\n2. wall time vs critical path ({rounds} rounds, medians)")
            for name, (path, values) in paths.items():
                wall = statistics.median(values)
                print(f"  {name:50} critical path {path * 1000:.0f} ms, wall {wall * 1000:.1f} ms,"
                      f" ratio {wall / path:.3f}")  # fmt: skip
        finally:
            await runs.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    asyncio.run(main(parser.parse_args().rounds))
