"""Framework overhead per turn: Hermes vs the OpenAI Agents SDK vs pydantic-ai, side by side.

Each framework runs the same turn — the model calls ``add(2, 3)``, the tool answers, the model
replies — on a zero-cost in-process model, so the whole turn time is framework overhead.
Hermes also persists every step to its default SQLite store (WAL file in a temp dir); the
peers keep everything in memory. Measurements are interleaved in small batches (A B C A B C …)
so machine noise hits all three alike; we report medians, p95s and ratios from one run.

Second part: the per-turn time in a session of 100 vs 100,000 imported messages.

Run: ``make bench`` (installs the peers from the ``bench`` extra), or
``.venv/bin/python bench/turn_overhead.py [--turns N]``.
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

from hermes import Agent, tool
from hermes.models.base import ModelRequest, ModelResponse
from hermes.testing import FunctionModel, call, say

TurnFn = Callable[[int], Awaitable[None]]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _script(request: ModelRequest) -> ModelResponse:
    if request.messages[-1]["role"] == "tool":
        return say("The answer is 5.")
    return call("add", {"a": 2, "b": 3})


async def hermes_turn_fn(store: Path, *, fresh: bool) -> tuple[TurnFn, Agent]:
    """``fresh``: every turn opens a new session (like the peers' runs, which have no
    history); else all turns continue one session, so the context holds 12 rounds."""
    agent = Agent(model=FunctionModel(_script), tools=[add], store=store)

    async def turn(i: int) -> None:
        session = f"bench-session-{i}" if fresh else "bench-session-long"
        result = await agent.run("what is 2+3?", session_id=session, user_id="u1")
        assert result.reply == "The answer is 5.", result

    return turn, agent


def live_sessions(agent: Agent, count: int, rounds: int = 12) -> list[str]:
    """``count`` sessions, each holding a full window of ``rounds`` rounds (4 items a round:
    question, call, result, answer), for turns that rotate over them."""
    ids = [f"bench-live-{n}" for n in range(count)]
    for session in ids:
        agent.import_history(session, history(4 * rounds), user_id="u1")
    return ids


async def hermes_live_turn_fn(store: Path, count: int = 100) -> tuple[TurnFn, Agent]:
    """Turns round-robin over ``count`` live sessions with full 12-round windows: the
    ongoing-session turn most users take."""
    agent = Agent(model=FunctionModel(_script), tools=[add], store=store)
    ids = live_sessions(agent, count)

    async def turn(i: int) -> None:
        result = await agent.run("what is 2+3?", session_id=ids[i % count], user_id="u1")
        assert result.reply == "The answer is 5.", result

    return turn, agent


async def openai_agents_turn_fn() -> TurnFn | None:
    try:
        from agents import Agent as OAAgent
        from agents import ModelSettings, Runner, function_tool, set_tracing_disabled
        from agents.items import ModelResponse as OAResponse
        from agents.models.interface import Model as OAModel
        from agents.usage import Usage
        from openai.types.responses import (
            ResponseFunctionToolCall,
            ResponseOutputMessage,
            ResponseOutputText,
        )
    except ImportError:
        return None
    set_tracing_disabled(True)  # no trace export: the peer must not touch the network

    class ScriptModel(OAModel):  # type: ignore[misc]
        async def get_response(
            self, system_instructions: Any, input: Any, *a: Any, **k: Any
        ) -> Any:
            last = input[-1] if isinstance(input, list) else {}
            if isinstance(last, dict) and last.get("type") == "function_call_output":
                text = ResponseOutputText(
                    text="The answer is 5.", annotations=[], type="output_text"
                )
                msg = ResponseOutputMessage(
                    id="m1", content=[text], role="assistant", status="completed", type="message"
                )
                return OAResponse(output=[msg], usage=Usage(), response_id=None)
            fc = ResponseFunctionToolCall(
                call_id="c1", name="add", arguments='{"a":2,"b":3}', type="function_call", id="f1"
            )
            return OAResponse(output=[fc], usage=Usage(), response_id=None)

        def stream_response(self, *a: Any, **k: Any) -> Any:
            raise NotImplementedError

    @function_tool
    def add_tool(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    add_tool.name = "add"
    agent = OAAgent(
        name="bench", model=ScriptModel(), tools=[add_tool], model_settings=ModelSettings()
    )

    async def turn(i: int) -> None:
        result = await Runner.run(agent, "what is 2+3?")
        assert result.final_output == "The answer is 5.", result.final_output

    return turn


async def pydantic_ai_turn_fn() -> TurnFn | None:
    try:
        from pydantic_ai import Agent as PAgent
        from pydantic_ai.messages import ModelMessage, TextPart, ToolCallPart, ToolReturnPart
        from pydantic_ai.messages import ModelResponse as PResponse
        from pydantic_ai.models.function import AgentInfo
        from pydantic_ai.models.function import FunctionModel as PFunctionModel
    except ImportError:
        return None

    def script(messages: list[ModelMessage], info: AgentInfo) -> PResponse:
        last = messages[-1]
        if any(isinstance(p, ToolReturnPart) for p in last.parts):
            return PResponse(parts=[TextPart("The answer is 5.")])
        return PResponse(parts=[ToolCallPart("add", {"a": 2, "b": 3})])

    agent = PAgent(PFunctionModel(script))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def turn(i: int) -> None:
        result = await agent.run("what is 2+3?")
        assert result.output == "The answer is 5.", result.output

    return turn


async def measure(fns: dict[str, TurnFn], rounds: int, batch: int) -> dict[str, list[float]]:
    """Interleaved batches; returns per-turn times in microseconds."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():  # warm-up: imports, caches, first-use costs
        for i in range(20):
            await fn(i)
    for r in range(rounds):
        for name, fn in fns.items():
            for i in range(batch):
                t0 = time.perf_counter()
                await fn(r * batch + i)
                times[name].append((time.perf_counter() - t0) * 1e6)
    return times


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def history(n: int) -> list[dict[str, Any]]:
    """A realistic chat log of n messages: questions, tool calls, results, answers."""
    out: list[dict[str, Any]] = []
    i = 0
    while len(out) < n:
        out.append({"role": "user", "content": f"第{i}个问题：帮我算一下 {i} 加 {i + 1}"})
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"h{i}",
                        "type": "function",
                        "function": {"name": "add", "arguments": f'{{"a": {i}, "b": {i + 1}}}'},
                    }
                ],
            }
        )
        out.append({"role": "tool", "tool_call_id": f"h{i}", "content": str(2 * i + 1)})
        out.append({"role": "assistant", "content": f"结果是 {2 * i + 1}。"})
        i += 1
    return out[:n]


async def history_bench(store: Path, rounds: int, batch: int) -> dict[str, Any]:
    agent = Agent(model=FunctionModel(_script), tools=[add], store=store)
    t0 = time.perf_counter()
    agent.import_history("hist-small-1", history(100), user_id="u1")
    t_small = time.perf_counter() - t0
    t0 = time.perf_counter()
    agent.import_history("hist-large-1", history(100_000), user_id="u1")
    t_large = time.perf_counter() - t0

    def turn_in(session: str) -> TurnFn:
        async def turn(i: int) -> None:
            await agent.run("what is 2+3?", session_id=session, user_id="u1")

        return turn

    times = await measure(
        {"100 messages": turn_in("hist-small-1"), "100,000 messages": turn_in("hist-large-1")},
        rounds,
        batch,
    )
    await agent.aclose()
    return {"times": times, "import_100_s": t_small, "import_100k_s": t_large}


def report(times: dict[str, list[float]], base: str | None) -> None:
    base_median = statistics.median(times[base]) if base and base in times else None
    print(f"{'':22} {'median µs':>10} {'p95 µs':>10} {'turns':>6} {'ratio':>8}")
    for name, values in times.items():
        med = statistics.median(values)
        ratio = f"{med / base_median:.3f}" if base_median else "-"
        print(f"{name:26} {med:10.0f} {p95(values):10.0f} {len(values):6d} {ratio:>8}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--batch", type=int, default=20)
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()} · {platform.python_implementation()} "
        f"{platform.python_version()} · {platform.platform()}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        fresh_fn, fresh_agent = await hermes_turn_fn(Path(tmp) / "fresh.db", fresh=True)
        long_fn, long_agent = await hermes_turn_fn(Path(tmp) / "long.db", fresh=False)
        live_fn, live_agent = await hermes_live_turn_fn(Path(tmp) / "live.db")
        fns: dict[str, TurnFn] = {
            "hermes, new session": fresh_fn,
            "hermes, 12-round session": long_fn,
            "hermes, 100 live sessions": live_fn,
        }
        oa = await openai_agents_turn_fn()
        pa = await pydantic_ai_turn_fn()
        if oa is not None:
            fns["openai-agents (memory)"] = oa
        if pa is not None:
            fns["pydantic-ai (memory)"] = pa
        if oa is None or pa is None:
            print("note: install the peers with `pip install -e .[bench]` for the comparison")
        print(
            "\n1. framework overhead per turn (one tool call, zero-cost model); "
            "ratio vs openai-agents"
        )
        times = await measure(fns, args.rounds, args.batch)
        report(times, "openai-agents (memory)")
        await fresh_agent.aclose()
        await long_agent.aclose()
        await live_agent.aclose()

        print("\n2. per-turn time vs session length (imported history); ratio vs 100 messages")
        hist = await history_bench(Path(tmp) / "history.db", args.rounds // 2 or 1, args.batch)
        report(hist["times"], "100 messages")
        print(
            f"import: 100 messages {hist['import_100_s'] * 1000:.1f} ms · "
            f"100,000 messages {hist['import_100k_s']:.2f} s"
        )


if __name__ == "__main__":
    asyncio.run(main())
