"""How far the ongoing-session turn could fall if its history cost nothing: a bound, not a product.

The rotating turn of ``ab_turn.py`` (100 live sessions, full 12-round windows) costs more than
the new-session turn because it turns its window into messages for the model and folds the
rounds that leave the window into the rolling summary. This script measures, in one process
and alternating batches of 10 (so the machine's noise hits every case alike):

- ``rotating`` — the real turn;
- ``rotating, history free`` — the same turn with both history steps replaced by nothing: the
  model gets only the system prompt and the new message, and nothing is folded. The replies are
  the same (the scripted model reads only the last message), the context is wrong: it bounds
  what any cache of converted messages or any cheaper or deferred fold could ever buy;
- ``new session`` — a turn that opens a new session (no history at all);
- ``SDK`` — the OpenAI Agents SDK's in-memory turn (``turn_overhead.py``), the peer.

If ``rotating, history free`` is still above a target ratio, the target cannot be met by work
on the history steps alone: the rest is the common path every turn shares (its durable writes,
the tool's thread hop, the tool chain). Run (needs the ``bench`` extra):

    .venv/bin/python bench/turn_bound.py [--rounds 40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import hermes.agent.turn as turn_module
from ab_turn import LIVE_SESSIONS
from hermes import Agent
from hermes.models.base import ModelRequest, ModelResponse
from hermes.session.context import BuiltContext
from hermes.session.items import ContextSlice
from turn_overhead import FunctionModel, _script, add, live_sessions, openai_agents_turn_fn

CASES = ("rotating", "rotating, history free", "new session", "SDK")
_free = {"on": False}
_build = turn_module.build_messages
_close_gap = turn_module._close_gap


def _bounded_build(slice_: ContextSlice, **options: Any) -> BuiltContext:
    if not _free["on"]:
        return _build(slice_, **options)
    system = {"role": "system", "content": options.get("system_prompt") or ""}
    return BuiltContext([system, {"role": "user", "content": slice_.window[-1].content}], 64)


async def _bounded_gap(rt: Any, turn: Any, slice_: ContextSlice) -> ContextSlice:
    return slice_ if _free["on"] else await _close_gap(rt, turn, slice_)


class _ForgetfulModel(FunctionModel):
    """Keeps no record of its requests (as in ``ab_turn.py``: a real adapter keeps none)."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        answer = await super().complete(request)
        self.requests.clear()
        return answer


async def main(rounds: int, batch: int) -> None:
    turn_module.build_messages = _bounded_build  # type: ignore[assignment]
    turn_module._close_gap = _bounded_gap  # type: ignore[assignment]
    sdk = await openai_agents_turn_fn()
    assert sdk is not None, "the OpenAI Agents SDK is not installed (pip install -e .[bench])"
    with tempfile.TemporaryDirectory() as tmp:
        agent = Agent(model=_ForgetfulModel(_script), tools=[add], store=Path(tmp) / "b.db")
        live = live_sessions(agent, LIVE_SESSIONS)
        times: dict[str, list[float]] = {case: [] for case in CASES}
        count = 0
        for warm_up in (True, *([False] * rounds)):
            for case in CASES:
                for _ in range(batch):
                    count += 1
                    _free["on"] = case == "rotating, history free"
                    started = time.perf_counter()
                    if case == "SDK":
                        await sdk(count)
                    else:
                        session = (
                            f"bench-new-{count}" if case == "new session" else live[count % 100]
                        )
                        result = await agent.run("what is 2+3?", session_id=session, user_id="u1")
                        assert result.reply == "The answer is 5.", result
                    if not warm_up:
                        times[case].append((time.perf_counter() - started) * 1e6)
        await agent.aclose()
    medians = {case: statistics.median(values) for case, values in times.items()}
    print(f"{rounds} rounds x {batch} turns per case, alternating")
    for case, median in medians.items():
        print(f"{case:24s} {median:8.1f} µs   / SDK {median / medians['SDK']:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--batch", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.batch))
