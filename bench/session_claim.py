"""What claiming a session costs: OS file locks vs in-process locks vs no lock, side by side.

Part 1, the claim alone: ``async with locks.claim(session, wait=0)`` on
:class:`~hermes.storage.sqlite.session_locks.FileSessionLocks` — byte ranges of one open file
(Linux, the default there: lock and unlock one byte) and ``flock`` on a file per session (the
fallback: open, ``flock``, read and write the token, close) —,
:class:`~hermes.session.locks.LocalSessionLocks`
(an asyncio lock and a token) and an empty ``async with`` (the floor).

Part 2, a whole turn (the turn of ``bench/turn_overhead.py``: the model calls ``add(2, 3)``, the
tool answers, the model replies; zero-cost in-process model, SQLite file in a temp dir), in a new
session per turn and in one continued session, with the agent's file locks (the default), with
in-process locks, and with no lock at all (a claim that takes nothing). The store's fence (one
more column compared and set in the UPDATE every write already makes) is in all three.

Measurements are interleaved in small batches (A B C A B C …) so machine noise hits all alike;
medians, p95s and ratios come from one run.

Run: ``.venv/bin/python bench/session_claim.py [--rounds N --batch M]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from hermes import Agent
from hermes.session.locks import LocalSessionLocks, SessionClaim
from hermes.storage.sqlite.session_locks import FileSessionLocks
from hermes.testing import FunctionModel
from turn_overhead import _script, add  # the same turn (bench/ is the script's path)

StepFn = Callable[[int], Awaitable[None]]


class NoLocks:
    """A claim that takes nothing (the baseline: what a turn costs without any lock)."""

    cross_process = True

    def __init__(self) -> None:
        self._token = 0

    @contextlib.asynccontextmanager
    async def claim(self, session_id: str, *, wait: float) -> AsyncIterator[SessionClaim]:
        self._token += 1
        yield SessionClaim(session_id, self._token, True)

    def busy(self, session_id: str) -> bool:
        return False

    def close(self) -> None:
        pass


async def measure(fns: dict[str, StepFn], rounds: int, batch: int) -> dict[str, list[float]]:
    """Interleaved batches, the order rotated every round (the first of a round meets colder
    caches); returns per-step times in microseconds."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            fn = fns[name]
            for i in range(batch):
                started = time.perf_counter()
                await fn(r * batch + i)
                times[name].append((time.perf_counter() - started) * 1e6)
    return times


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def report(title: str, times: dict[str, list[float]], baseline: str) -> None:
    base = statistics.median(times[baseline])
    print(f"\n{title}")
    print(f"{'variant':<34} {'median µs':>10} {'p95 µs':>9} {'ratio':>7} {'+µs':>7}")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"{name:<34} {median:>10.1f} {p95(values):>9.1f} {median / base:>7.3f} "
            f"{median - base:>7.1f}"
        )


async def claim_alone(directory: Path, rounds: int, batch: int) -> dict[str, list[float]]:
    kinds = {"file lock, flock per session": False}
    if sys.platform == "linux":
        kinds = {"file lock, byte range (default)": True, **kinds}
    local = LocalSessionLocks()

    def claiming(locks: FileSessionLocks | LocalSessionLocks | NoLocks) -> StepFn:
        async def step(i: int) -> None:
            async with locks.claim(f"bench-session-{i % 64}", wait=0):
                pass

        return step

    made = [FileSessionLocks(directory / "claims.db", ranges=r) for r in kinds.values()]
    fns = {name: claiming(locks) for name, locks in zip(kinds, made, strict=True)}
    fns |= {"in-process lock": claiming(local), "no lock": claiming(NoLocks())}
    try:
        for fn in fns.values():  # warm-up: lock files exist, code paths are hot
            for i in range(64):
                await fn(i)
        return await measure(fns, rounds, batch)
    finally:
        for locks in made:
            locks.close()


async def whole_turn(
    directory: Path, rounds: int, batch: int, *, fresh: bool
) -> dict[str, list[float]]:
    """``fresh``: a new session per turn (its first claim creates its lock file); else one
    session continued turn after turn (its lock file exists; a 12-round window per turn)."""
    tag = "new" if fresh else "long"
    agents: dict[str, Agent] = {}
    for name in ("file", "local", "none"):
        agents[name] = Agent(
            model=FunctionModel(_script), tools=[add], store=directory / f"{name}-{tag}.db"
        )
    agents["local"]._locks = LocalSessionLocks(cross_process=True)
    agents["none"]._locks = NoLocks()

    def turning(agent: Agent) -> StepFn:
        async def turn(i: int) -> None:
            session = f"bench-session-{i:07d}" if fresh else "bench-session-long"
            result = await agent.run("what is 2+3?", session_id=session, user_id="u1")
            assert result.reply == "The answer is 5.", result

        return turn

    fns = {
        "turn, file lock (default)": turning(agents["file"]),
        "turn, in-process lock": turning(agents["local"]),
        "turn, no lock": turning(agents["none"]),
    }
    try:
        for fn in fns.values():  # warm-up
            for i in range(20):
                await fn(9_000_000 + i)
        return await measure(fns, rounds, batch)
    finally:
        for agent in agents.values():
            await agent.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--batch", type=int, default=20)
    args = parser.parse_args()
    print(f"Python {platform.python_version()} on {platform.machine()} ({platform.system()})")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        alone = await claim_alone(directory, args.rounds, args.batch * 5)
        report("Claim alone (enter + exit), per claim", alone, "no lock")
        turns = await whole_turn(directory, args.rounds, args.batch, fresh=True)
        report("Whole turn, a new session each turn (SQLite file)", turns, "turn, no lock")
        turns = await whole_turn(directory, args.rounds, args.batch, fresh=False)
        report("Whole turn, one 12-round session (SQLite file)", turns, "turn, no lock")


if __name__ == "__main__":
    asyncio.run(main())
