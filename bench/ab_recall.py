"""Keyword recall at 100,000 memories, one source tree against another, side by side.

The memories and queries of ``memory_recall.py`` (its templates and generator). Tree A writes
the stores (one heavy user with 100,000 memories; 1,000 users with 100 each); each tree then
opens its own copy of the files — tree B's opening migrates them when its schema is newer, and
that time is reported — and the driver alternates batches of the same queries between the two
worker processes (A B A B …), so a shared, noisy machine slows both alike. Reports p50/p95 per
side and the B/A ratio of the medians. Run:

    git archive main src | tar -x -C /tmp/main
    .venv/bin/python bench/ab_recall.py --a /tmp/main/src --b src [--memories 100000]
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ab_workers import ab_parser, ask, start, stop

SCENARIOS = ("one user of 1,000", "100k memories of one user")


async def _worker() -> None:
    """One side: JSON commands on stdin (build, open, query), JSON answers on stdout."""
    sys.path.insert(0, str(Path(__file__).parent))
    from memory_recall import QUERIES, fill, fill_store  # noqa: I001 - after the path

    from hermes.agent.compose import load_lexicon
    from hermes.memory.longterm import MemoryStore

    stores: dict[str, tuple[MemoryStore, list[str]]] = {}
    load_lexicon()  # built or opened before any timing
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command: dict[str, Any] = json.loads(line)
        if command["do"] == "build":
            store = MemoryStore(command["path"], embedder=None)
            users = [f"user-{i:04d}" for i in range(command["users"])]
            await fill_store(store, users, command["per_user"], seed=command["seed"])
            await store.close()
            answer: Any = {"built": True}
        elif command["do"] == "open":
            started = time.perf_counter()
            store = MemoryStore(command["path"], embedder=None)
            users = [f"user-{i:04d}" for i in range(command["users"])]
            stores[command["name"]] = (store, users)
            answer = {"open_s": time.perf_counter() - started}
        else:
            store, users = stores[command["name"]]
            rng = random.Random(command["seed"])
            times = []
            for _ in range(command["count"]):
                user = rng.choice(users)
                text = fill(rng.choice(QUERIES), rng)
                started = time.perf_counter()
                await store.search(user, text, limit=20, mode="keyword")
                times.append((time.perf_counter() - started) * 1000)
            answer = times
        print(json.dumps(answer), flush=True)
    for store, _ in stores.values():
        await store.close()


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = ab_parser(__doc__.splitlines()[0], rounds=30, batch=10)
    parser.add_argument("--memories", type=int, default=100_000)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(_worker())
        return
    sides = {"A": start(__file__, args.a), "B": start(__file__, args.b)}
    shapes = {SCENARIOS[0]: (1000, args.memories // 1000), SCENARIOS[1]: (1, args.memories)}
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, (scenario, (users, per_user)) in enumerate(shapes.items()):
            built = Path(tmp) / f"s{n}-a.db"
            ask(sides["A"], do="build", path=str(built), users=users, per_user=per_user, seed=n)
            shutil.copy(built, Path(tmp) / f"s{n}-b.db")
            for name, side in sides.items():
                path = Path(tmp) / f"s{n}-{name.lower()}.db"
                opened = ask(side, do="open", name=scenario, path=str(path), users=users)
                print(f"{scenario}: {name} opened its copy in {opened['open_s']:.2f} s")
        for round_ in range(args.rounds):
            for scenario in SCENARIOS:
                for name, side in sides.items():
                    batch = ask(side, do="query", name=scenario, count=args.batch, seed=round_)
                    times.setdefault((name, scenario), []).extend(batch)
        for side in sides.values():
            stop(side)
    print(f"A = {args.a}\nB = {args.b}\n{args.rounds} rounds x {args.batch} queries per case")
    print(f"{'case':28} {'A p50':>8} {'A p95':>8} {'B p50':>8} {'B p95':>8} {'B/A p50':>8}")
    for scenario in SCENARIOS:
        a, b = times[("A", scenario)], times[("B", scenario)]
        ratio = statistics.median(b) / statistics.median(a)
        print(
            f"{scenario:28} {statistics.median(a):8.2f} {_p95(a):8.2f} "
            f"{statistics.median(b):8.2f} {_p95(b):8.2f} {ratio:8.3f}"
        )


if __name__ == "__main__":
    main()
