"""Context priority: how often the result the model just asked for reaches it shortened.

A 40-turn, tool-heavy session driven by a scripted model, with memory on (keyword-only): every
turn the user asks about two records, the model calls ``get_record`` twice in a row (one call,
its result, the next call), then answers. Each record is ~2,000 tokens (``--record-tokens``),
so a 6,000-token budget holds two or three of them: older rounds must give way. The script
looks at every request that follows a tool result and compares the newest tool message with
what the tool returned: is it complete, and if not, how much of it is left — and could the
request have dropped an older round (or an older result's detail) instead?

Target (seed 001 §2.2–2.3): the fresh result is never shortened while older rounds could be
dropped instead; when it alone is over the budget, it keeps its summary (or its first and last
500 tokens).

Run: ``.venv/bin/python bench/context_priority.py [--turns 40] [--record-tokens 2000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes import Agent, tool
from hermes.memory.facade import Memory
from hermes.models.base import ModelRequest, ModelResponse
from hermes.session.tokens import count_tokens, messages_tokens
from hermes.testing import FunctionModel, call, say

_WORDS = (
    "shipment", "warehouse", "carrier", "物流", "仓库", "status", "pending", "delivered",
    "已发货", "customer", "address", "invoice", "发票", "amount", "currency", "EUR", "refund",
    "退款", "note", "priority",
)  # fmt: skip


def record_text(record_id: int, tokens: int) -> dict[str, Any]:
    """A deterministic record of about ``tokens`` tokens (a list of event lines)."""
    lines: list[str] = []
    n = 0
    while count_tokens(json.dumps(lines, ensure_ascii=False)) < tokens:
        word = _WORDS[(record_id * 7 + n) % len(_WORDS)]
        lines.append(f"event {n}: {word} #{record_id}-{n} at 2026-03-{n % 28 + 1:02d}")
        n += 1
    return {"record_id": f"REC-{record_id:04d}", "events": lines}


@dataclass
class Tally:
    """What the fresh results looked like when the model saw them."""

    fresh: int = 0
    shortened: int = 0
    shortened_while_droppable: int = 0
    kept_shares: list[float] = field(default_factory=list)
    request_tokens: list[int] = field(default_factory=list)


def make_script(tally: Tally, tokens: int) -> Any:
    full: dict[str, str] = {}

    def script(request: ModelRequest) -> ModelResponse:
        messages = request.messages
        tally.request_tokens.append(messages_tokens(messages))
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        turn = messages[last_user:]
        results = [m for m in turn if m["role"] == "tool"]
        if results:
            fresh = results[-1]
            wanted = full.get(fresh["tool_call_id"], "")
            tally.fresh += 1
            if fresh["content"] != wanted:
                tally.shortened += 1
                tally.kept_shares.append(len(fresh["content"]) / max(1, len(wanted)))
                older = [m for m in messages[:last_user] if m["role"] in ("user", "assistant")]
                if older:
                    tally.shortened_while_droppable += 1
        text = str(messages[last_user]["content"])
        asked = [int(part) for part in text.split() if part.isdigit()]
        if len(results) < len(asked):
            record_id = asked[len(results)]
            call_id = f"get-{record_id}"
            payload = {"ok": True, "output": record_text(record_id, tokens)}
            full[call_id] = json.dumps(payload, ensure_ascii=False)
            return call("get_record", {"record_id": record_id}, id=call_id)
        return say(f"Records {' and '.join(map(str, asked))} look fine.")

    return script


async def run(turns: int, tokens: int, budget: int) -> Tally:
    tally = Tally()

    @tool
    def get_record(record_id: int) -> dict[str, Any]:
        """One record by id."""
        return record_text(record_id, tokens)

    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory.open(Path(tmp) / "mem", semantic=False)
        agent = Agent(
            model=FunctionModel(make_script(tally, tokens)),
            tools=[get_record],
            store=Path(tmp) / "hermes.db",
            memory=memory,
            context_budget_tokens=budget,
        )
        try:
            for turn in range(turns):
                text = f"please check records {2 * turn + 1} and {2 * turn + 2}"
                await agent.run(text, session_id="bench-context-1", user_id="u1")
        finally:
            await agent.aclose()
            await memory.aclose()
    return tally


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--record-tokens", type=int, default=2000)
    parser.add_argument("--budget", type=int, default=6000)
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()} · {platform.python_implementation()} "
        f"{platform.python_version()} · {platform.platform()}"
    )
    tally = await run(args.turns, args.record_tokens, args.budget)
    print(
        f"{args.turns} turns, records of ~{args.record_tokens} tokens, budget {args.budget} tokens"
    )
    print(f"fresh results seen by the model: {tally.fresh}")
    print(f"  shortened: {tally.shortened}")
    print(f"  shortened while older rounds were in the request: {tally.shortened_while_droppable}")
    if tally.kept_shares:
        print(f"  median share kept when shortened: {statistics.median(tally.kept_shares):.0%}")
    print(
        f"request tokens: median {statistics.median(tally.request_tokens):.0f}, "
        f"max {max(tally.request_tokens)}"
    )


if __name__ == "__main__":
    asyncio.run(main())
