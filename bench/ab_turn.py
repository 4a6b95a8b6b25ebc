"""The turns of ``turn_overhead.py``, one source tree against another, side by side.

Two worker processes, one per tree (``--a`` and ``--b``: directories holding the ``hermes``
package, e.g. ``src`` of this checkout and of ``git archive main``), each with the same turns
as ``turn_overhead.py`` — a new session per turn, one 12-round session, and the sessions of
100 and 100,000 imported messages. The driver alternates small batches between them (A B A B
…), so a shared, noisy machine slows both alike, and reports each side's medians and the B/A
ratio per case. Run:

    git archive main src | tar -x -C /tmp/main
    .venv/bin/python bench/ab_turn.py --a /tmp/main/src --b src [--rounds 40 --batch 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ab_workers import ask, start, stop

CASES = ("new session", "12-round session", "100 messages", "100,000 messages")


async def _worker() -> None:
    """One side: read a case name and a count per line, answer with the turn times (µs)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from turn_overhead import FunctionModel, _script, add, history  # noqa: I001 - after the path

    from hermes import Agent

    with tempfile.TemporaryDirectory() as tmp:
        agent = Agent(model=FunctionModel(_script), tools=[add], store=Path(tmp) / "ab.db")
        agent.import_history("hist-small-1", history(100), user_id="u1")
        agent.import_history("hist-large-1", history(100_000), user_id="u1")
        sessions = {
            "12-round session": "bench-long-1",
            "100 messages": "hist-small-1",
            "100,000 messages": "hist-large-1",
        }
        counter = 0
        import hermes as package

        print("ready", package.__file__, file=sys.stderr, flush=True)
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            command = json.loads(line)
            case = command["case"]
            times = []
            for _ in range(command["count"]):
                counter += 1
                session = sessions.get(case, f"bench-new-{counter}")
                t0 = time.perf_counter()
                result = await agent.run("what is 2+3?", session_id=session, user_id="u1")
                times.append((time.perf_counter() - t0) * 1e6)
                assert result.reply == "The answer is 5.", result
            print(json.dumps(times), flush=True)
        await agent.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--a", help="the tree to compare against (e.g. main's src)")
    parser.add_argument("--b", help="the tree measured (e.g. this checkout's src)")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(_worker())
        return
    sides = {"A": start(__file__, args.a), "B": start(__file__, args.b)}
    times: dict[tuple[str, str], list[float]] = {}
    try:
        for case in CASES:  # warm-up
            for side in sides.values():
                ask(side, case=case, count=args.batch)
        for _ in range(args.rounds):
            for case in CASES:
                for name, side in sides.items():
                    batch = ask(side, case=case, count=args.batch)
                    times.setdefault((name, case), []).extend(batch)
    finally:
        for side in sides.values():
            stop(side)
    print(f"A = {args.a}\nB = {args.b}\n{args.rounds} rounds x {args.batch} turns per case")
    print(f"{'case':22} {'A median µs':>12} {'B median µs':>12} {'B/A':>7}")
    for case in CASES:
        a = statistics.median(times[("A", case)])
        b = statistics.median(times[("B", case)])
        print(f"{case:22} {a:12.0f} {b:12.0f} {b / a:7.3f}")
    report: dict[str, Any] = {
        case: {side: statistics.median(times[(side.upper(), case)]) for side in ("a", "b")}
        for case in CASES
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
