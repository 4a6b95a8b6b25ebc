"""The turns of ``turn_overhead.py``, one source tree against another, side by side.

Two worker processes, one per tree (``--a`` and ``--b``: directories holding the ``hermes``
package, e.g. ``src`` of this checkout and of ``git archive main``), each with the same turns
as ``turn_overhead.py`` — a new session per turn, one 12-round session, turns rotating over
100 live sessions with full 12-round windows, and the sessions of 100 and 100,000 imported
messages. The driver alternates small batches between them (A B A B
…), so a shared, noisy machine slows both alike, and reports each side's medians and the B/A
ratio per case. ``--sdk`` adds a third worker running ``turn_overhead.py``'s OpenAI Agents SDK
turn (the peer of the new-session turn; it keeps no history), so one run gives before, after
and the SDK, and the ratios A/SDK and B/SDK. Run:

    git archive main src | tar -x -C /tmp/main
    .venv/bin/python bench/ab_turn.py --a /tmp/main/src --b src [--rounds 40 --batch 10] [--sdk]

(``--sdk`` needs the ``bench`` extra: ``pip install -e .[bench]``, as ``make bench`` does.)

The scripted model of both Hermes sides keeps no record of its requests, like the SDK's script
model: ``hermes.testing.FunctionModel`` appends every request to ``.requests`` (a test reads
them), which over a run keeps two requests a turn alive — each with its own list of ~50 message
dicts on the rotating turn — and the growing heap cost the rotating turn ~5–9% of its median.
``--retain-requests`` measures with that record kept, as runs before 2026-12-03 did.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from ab_workers import ab_parser, alternate, print_medians, start

#: Turns round-robin over this many sessions, each with a full 12-round window.
LIVE_SESSIONS = 100
LIVE_CASE = f"{LIVE_SESSIONS} live sessions"

CASES = (
    "new session",
    "12-round session",
    LIVE_CASE,
    "100 messages",
    "100,000 messages",
)
#: The cases the OpenAI Agents SDK's turn is measured against (it starts every run with no
#: history): the turn of a new session, and the ongoing-session turn users mostly take.
SDK_CASES = ("new session", LIVE_CASE)


async def _serve(turn: Callable[[str, int], Awaitable[None]]) -> None:
    """One side: read a case name and a count per line, answer with the turn times (µs)."""
    print(json.dumps({"ready": True}), flush=True)
    counter = 0
    for line in sys.stdin:
        command = json.loads(line)
        times = []
        for _ in range(command["count"]):
            counter += 1
            t0 = time.perf_counter()
            await turn(command["case"], counter)
            times.append((time.perf_counter() - t0) * 1e6)
        print(json.dumps(times), flush=True)


async def _worker(retain_requests: bool) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from turn_overhead import FunctionModel, _script, add, history, live_sessions  # noqa: I001

    from hermes import Agent
    from hermes.models.base import ModelRequest, ModelResponse

    class ForgetfulModel(FunctionModel):
        """``FunctionModel`` that keeps no record of its requests (a real adapter keeps none)."""

        async def complete(self, request: ModelRequest) -> ModelResponse:
            answer = await super().complete(request)
            self.requests.clear()
            return answer

    model = FunctionModel(_script) if retain_requests else ForgetfulModel(_script)
    with tempfile.TemporaryDirectory() as tmp:
        agent = Agent(model=model, tools=[add], store=Path(tmp) / "ab.db")
        agent.import_history("hist-small-1", history(100), user_id="u1")
        agent.import_history("hist-large-1", history(100_000), user_id="u1")
        live = live_sessions(agent, LIVE_SESSIONS)
        sessions = {
            "12-round session": "bench-long-1",
            "100 messages": "hist-small-1",
            "100,000 messages": "hist-large-1",
        }

        async def turn(case: str, i: int) -> None:
            if case == LIVE_CASE:
                session = live[i % LIVE_SESSIONS]
            else:
                session = sessions.get(case, f"bench-new-{i}")
            result = await agent.run("what is 2+3?", session_id=session, user_id="u1")
            assert result.reply == "The answer is 5.", result

        import hermes as package

        print("ready", package.__file__, file=sys.stderr, flush=True)
        await _serve(turn)
        await agent.aclose()


async def _sdk_worker() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from turn_overhead import openai_agents_turn_fn

    sdk_turn = await openai_agents_turn_fn()
    assert sdk_turn is not None, "the OpenAI Agents SDK is not installed"

    async def turn(case: str, i: int) -> None:
        await sdk_turn(i)

    await _serve(turn)


def main() -> None:
    parser = ab_parser(__doc__.splitlines()[0], rounds=40, batch=10)
    parser.add_argument("--sdk", action="store_true", help="add the OpenAI Agents SDK's turn")
    parser.add_argument(
        "--retain-requests",
        action="store_true",
        help="the Hermes sides' scripted model keeps every request (runs before 2026-12-03)",
    )
    args = parser.parse_args()
    if args.worker:
        asyncio.run(_sdk_worker() if args.sdk else _worker(args.retain_requests))
        return
    if args.sdk and importlib.util.find_spec("agents") is None:
        sys.exit("--sdk: the OpenAI Agents SDK is not installed (pip install -e .[bench])")
    retain = ("--retain-requests",) if args.retain_requests else ()
    sides = {"A": start(__file__, args.a, *retain), "B": start(__file__, args.b, *retain)}
    cases: dict[str, tuple[str, ...]] = dict.fromkeys(CASES, ("A", "B"))
    if args.sdk:
        sides["SDK"] = start(__file__, args.b, "--sdk")
        for case in SDK_CASES:
            cases[case] = ("A", "B", "SDK")
    times = alternate(sides, cases, args)
    medians = print_medians(times, cases, "µs")
    if args.sdk:
        for case in SDK_CASES:
            sdk = medians[case]
            print(
                f"{case} vs the OpenAI Agents SDK: A/SDK {sdk['A'] / sdk['SDK']:.3f}, "
                f"B/SDK {sdk['B'] / sdk['SDK']:.3f}"
            )
    print(json.dumps(medians))


if __name__ == "__main__":
    main()
