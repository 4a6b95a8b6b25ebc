"""Multi-call plans: what keeping nodes' results in the archive costs (BENCHMARKS.md,
"Multi-call plans", "Results by archive hash").

The 1,000-node plans of ``bench/plan_overhead.py`` (a chain, and a fan at concurrency 64, of
async no-op tools on the plain tool chain), each run on three records side by side:

- **as opened** (``hermes.agent.compose.open_plan_runs``): ``plans.db`` + ``plan-results/``,
  a result over 1,000 bytes of JSON a blob of the L3 archive (``LocalArchive``) written before
  the commit that names its hash, a smaller one in its row;
- **archive all**: the same with ``inline_max=0``, every result a blob;
- **inline**: every result in its row (``SQLitePlanRuns(archive=None)``: the write path of
  before, as a ``:memory:`` database still does), on a file all the same.

And a chain of 1,000 nodes whose results are 4 KiB of JSON (archived as opened) against the
same chain inline; and the read of a finished 1,000-node fan with 4 KiB results by a fresh
handle (``get``: every blob read and verified, nothing cached) against the inline record.
Cases are interleaved round by round; medians.
Run: ``.venv/bin/python bench/plan_results.py [--rounds 7] [--dir D]``.

The files go in a temporary directory under ``--dir``, by default the current one — where a
``.hermes/`` lives —, not the system's temp directory: on the development machines creating a
file under ``/tmp`` costs ~0.4 ms against ~0.025 ms elsewhere on the same disk (renames and
SQLite commits cost the same in both), which measures ``/tmp``, not the archive.
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
from hermes.storage.files.archive import LocalArchive
from hermes.storage.open import PLAN_RESULTS_DIR
from hermes.storage.sqlite.plan_runs import SQLitePlanRuns
from hermes.tools import ToolRegistry, tool
from hermes.tools.pipeline import ToolExecutor
from hermes.tools.plan_runs import PlanRuns
from hermes.tools.plans import PlanRunner, PlanSettings, PlanSpec, parse_plan
from hermes.tools.policies import PolicyState
from plan_overhead import NODES, _calls, chain_plan, fan_plan, noop  # bench/


@tool(name="big", side_effects=False)
async def big(n: int) -> dict[str, Any]:
    """A 4 KiB result."""
    return {"n": n, "text": "x" * 4096}


def _big_plan(shape: dict[str, Any]) -> PlanSpec:
    return parse_plan({**shape, "nodes": [{**node, "tool": "big"} for node in shape["nodes"]]})


async def _time(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


def _stores(root: Path) -> dict[str, Callable[[], PlanRuns]]:
    """How to open each record (each under its own directory of ``root``)."""
    for name in ("opened", "all", "inline"):
        (root / name).mkdir()
    return {
        "as opened": lambda: open_plan_runs(root / "opened" / "plans.db"),
        "archive all": lambda: SQLitePlanRuns(
            root / "all" / "plans.db", archive=LocalArchive(root / "all" / PLAN_RESULTS_DIR)
        ),
        "inline": lambda: SQLitePlanRuns(root / "inline" / "plans.db", archive=None),
    }


def _runner_of(runs: PlanRuns, concurrency: int) -> PlanRunner:
    executor = ToolExecutor(ToolRegistry([noop, big]), state=PolicyState())
    return PlanRunner(executor, runs, settings=PlanSettings(concurrency=concurrency))


async def main(rounds: int, where: Path) -> None:
    print(f"{platform.machine()} · {platform.python_implementation()} {platform.python_version()}")
    chain, fan = parse_plan(chain_plan(NODES)), parse_plan(fan_plan(NODES))
    big_chain, big_fan = _big_plan(chain_plan(NODES)), _big_plan(fan_plan(NODES))
    with tempfile.TemporaryDirectory(dir=where, prefix="bench-plan-results-") as tmp:
        print(f"files under {Path(tmp).parent.resolve()}")
        openers = _stores(Path(tmp))
        stores = {name: open_() for name, open_ in openers.items()}
        executor = ToolExecutor(ToolRegistry([noop]), state=PolicyState())
        cases: dict[str, Callable[[], Awaitable[Any]]] = {}
        for name, runs in stores.items():
            serial, wide = _runner_of(runs, 8), _runner_of(runs, 64)
            cases[f"chain, results {name}"] = lambda r=serial: r.start(chain)
            cases[f"fan (concurrency 64), results {name}"] = lambda r=wide: r.start(fan)
        for name in ("as opened", "inline"):
            serial = _runner_of(stores[name], 8)
            cases[f"chain of 4 KiB results, {name}"] = lambda r=serial: r.start(big_chain)
        cases["1,000 executor calls, no plan"] = lambda: _calls(executor, NODES)
        finished = {
            name: (await _runner_of(stores[name], 64).start(big_fan)).run_id
            for name in ("as opened", "inline")
        }
        for fn in cases.values():  # warm-up
            await fn()
        times: dict[str, list[float]] = {name: [] for name in cases}
        reads: dict[str, list[float]] = {name: [] for name in finished}
        for _ in range(rounds):
            for name, fn in cases.items():
                times[name].append(await _time(fn))
            for name, run_id in finished.items():
                fresh = openers[name]()
                try:
                    reads[name].append(await _time(lambda f=fresh, r=run_id: f.get(r)))
                finally:
                    await fresh.close()
        for runs in stores.values():
            await runs.close()
    print(f"\nper node, plans of 1,000 nodes ({rounds} rounds, medians)")
    base = statistics.median(times["1,000 executor calls, no plan"]) / NODES * 1000
    for name, values in times.items():
        per_node = statistics.median(values) / NODES * 1000
        added = "" if "no plan" in name else f"   plan adds {per_node - base:.3f} ms/node"
        print(f"  {name:40} {per_node:.3f} ms/node{added}")
    print("\nreading a finished fan of 1,000 4 KiB results with a fresh handle (get)")
    for name, values in reads.items():
        print(f"  results {name:10} {statistics.median(values) * 1000:.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--dir", type=Path, default=Path.cwd(), help="where the files go")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.rounds, arguments.dir))
