"""Multi-call plans: what keeping each node's result in the archive costs (BENCHMARKS.md,
"Multi-call plans", "Results by archive hash").

The 1,000-node plans of ``bench/plan_overhead.py`` (a chain, and a fan at concurrency 64, of
async no-op tools on the plain tool chain), each run on two records side by side:

- **archive**: ``plans.db`` + ``plan-results/`` as ``hermes.agent.compose.open_plan_runs``
  opens them — every succeeded node's result a blob of the L3 archive (``LocalArchive``),
  written before the commit that names its hash;
- **inline**: ``plans.db`` keeping results in the rows (``SQLitePlanRuns(archive=None)``: the
  write path of before, as a ``:memory:`` database still does), on a file all the same.

Also the read of a finished 1,000-node run by a fresh handle (``get``: every blob read and
verified, nothing cached) against the same read of the inline record. Cases are interleaved
round by round; medians. Run: ``.venv/bin/python bench/plan_results.py [--rounds 7]``.
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
from hermes.storage.sqlite.plan_runs import SQLitePlanRuns
from hermes.tools import ToolRegistry
from hermes.tools.pipeline import ToolExecutor
from hermes.tools.plan_runs import PlanRuns
from hermes.tools.plans import parse_plan
from hermes.tools.policies import PolicyState
from plan_overhead import NODES, _calls, _runner, chain_plan, fan_plan, noop  # bench/


async def _time(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def main(rounds: int) -> None:
    print(f"{platform.machine()} · {platform.python_implementation()} {platform.python_version()}")
    chain, fan = parse_plan(chain_plan(NODES)), parse_plan(fan_plan(NODES))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "a").mkdir()
        (root / "b").mkdir()
        stores: dict[str, PlanRuns] = {
            "archive": open_plan_runs(root / "a" / "plans.db"),
            "inline": SQLitePlanRuns(root / "b" / "plans.db", archive=None),
        }
        executor = ToolExecutor(ToolRegistry([noop]), state=PolicyState())
        cases: dict[str, Callable[[], Awaitable[Any]]] = {}
        for name, runs in stores.items():
            serial, wide = _runner(runs, 8), _runner(runs, 64)
            cases[f"chain of 1,000, results {name}"] = lambda r=serial: r.start(chain)
            cases[f"fan of 1,000 (concurrency 64), results {name}"] = lambda r=wide: r.start(fan)
        cases["1,000 executor calls, no plan"] = lambda: _calls(executor, NODES)
        finished = {
            name: (await _runner(runs, 64).start(fan)).run_id for name, runs in stores.items()
        }
        for fn in cases.values():  # warm-up
            await fn()
        times: dict[str, list[float]] = {name: [] for name in cases}
        reads: dict[str, list[float]] = {name: [] for name in stores}
        for _ in range(rounds):
            for name, fn in cases.items():
                times[name].append(await _time(fn))
            for name, run_id in finished.items():
                fresh = (
                    open_plan_runs(root / "a" / "plans.db")
                    if name == "archive"
                    else SQLitePlanRuns(root / "b" / "plans.db", archive=None)
                )
                try:
                    reads[name].append(await _time(lambda f=fresh, r=run_id: f.get(r)))
                finally:
                    await fresh.close()
        for runs in stores.values():
            await runs.close()
        blobs = sum(1 for p in (root / "a" / "plan-results").rglob("*") if p.is_file())
    print(f"\noverhead per node ({rounds} rounds, medians; {blobs} blobs written)")
    base = statistics.median(times["1,000 executor calls, no plan"]) / NODES * 1000
    for name, values in times.items():
        per_node = statistics.median(values) / NODES * 1000
        added = "" if "no plan" in name else f"   plan adds {per_node - base:.3f} ms/node"
        print(f"  {name:46} {per_node:.3f} ms/node{added}")
    print("\nreading a finished 1,000-node run with a fresh handle (get)")
    for name, values in reads.items():
        print(f"  results {name:8} {statistics.median(values) * 1000:.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    asyncio.run(main(parser.parse_args().rounds))
