"""The offline rule brain's cost per turn, on the brain's own dialogue set.

Part 1 — the brain alone: every turn of ``tests/brain/dialogues.yaml`` (zh and en: numbers in
words, compound and multi-part requests, follow-ups, time and place, declines, memory) through
``RuleBrain.complete`` — the user step, then, when it calls tools, the step that phrases their
results (real calculator and clock; small stand-ins for memory, notes, files and the shell).
Reported: median, p95 and max of the brain's own time per turn.

Part 2 — whole agent turns, side by side: the same messages (the dialogues that use the
default tools, each in a fresh session) through ``Agent.run`` with the rule brain and,
interleaved turn by turn, with a zero-cost scripted model that makes the same tool calls and
gives the same reply (``FunctionModel``), both on a SQLite store in a temp dir. The difference
is what the brain adds to a turn; the ratio is the one figure that survives this noisy machine.

Run: ``.venv/bin/python bench/brain_turn.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from hermes import Agent
from hermes.memory.tools import memory_tools
from hermes.models.base import ModelRequest, ModelResponse, ToolCall, ToolSpec
from hermes.models.brain import RuleBrain
from hermes.testing import FunctionModel, say
from hermes.tools.base import ToolResult
from hermes.tools.builtin import BUILTIN_TOOLS
from hermes.tools.builtin.calculator import evaluate
from hermes.tools.builtin.clock import time_in
from hermes.tools.registry import ToolRegistry

DIALOGUES = Path(__file__).resolve().parent.parent / "tests" / "brain" / "dialogues.yaml"
ALL = (
    "calculator", "current_time", "remember", "recall_memories", "list_files", "read_file",
    "note_add", "note_list", "todo_add", "todo_list", "todo_done", "shell",
)  # fmt: skip


#: The built-ins and memory's own tools (its schemas are the same whatever memory they serve).
TOOLS_BY_NAME = {**BUILTIN_TOOLS, **{t.name: t for t in memory_tools(None)}}


def _specs(wanted: Any) -> list[ToolSpec]:
    names = ["calculator", "current_time"] if wanted in (None, "default") else wanted
    names = list(ALL) if names == "all" else names
    return ToolRegistry([TOOLS_BY_NAME[name] for name in names]).specs()


def _stand_in(call: ToolCall) -> ToolResult:
    """The real calculator and clock; fixed, plausible outputs for the other tools."""
    args = call.arguments
    try:
        if call.name == "calculator":
            value = evaluate(args["expression"])
            return ToolResult(ok=True, output={"expression": args["expression"], "result": value})
        if call.name == "current_time":
            return ToolResult(ok=True, output=time_in(args.get("timezone")))
    except Exception as exc:
        return ToolResult.failure("invalid_arguments", str(exc))
    outputs: dict[str, Any] = {
        "remember": {"id": "m-1", "content": args.get("content"), "kind": "fact"},
        "recall_memories": {"memories": [{"content": "用户住在上海。"}]},
        "list_files": {"path": ".", "entries": [{"name": "README.md", "type": "file", "size": 9}]},
        "read_file": {"path": args.get("path"), "content": "# Demo\n", "size": 7},
        "note_add": {"id": 1, "text": args.get("text")},
        "note_list": {"notes": [{"id": 1, "text": "x"}], "total": 1},
        "todo_add": {"id": 1, "text": args.get("text")},
        "todo_list": {"todos": [], "total": 0},
        "todo_done": {"id": 1, "text": "x", "done": True},
        "shell": {"exit_code": 0, "stdout": "ok\n", "stderr": ""},
    }
    return ToolResult(ok=True, output=outputs[call.name])


async def _brain_turns(brain: RuleBrain, dialogue: dict[str, Any]) -> list[float]:
    """The brain's own time for each turn of one dialogue (seconds)."""
    tools = _specs(dialogue.get("tools"))
    messages: list[dict[str, Any]] = []
    scratch: dict[str, Any] = {}
    times = []
    for number, turn in enumerate(dialogue["turns"]):
        messages.append({"role": "user", "content": turn["say"]})
        request = ModelRequest(list(messages), tools, user_id=dialogue.get("user", "alice"))
        request.scratch, request.trace_id = scratch, f"t{number}"
        started = time.perf_counter()
        response = await brain.complete(request)
        spent = time.perf_counter() - started
        if response.tool_calls:
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in response.tool_calls
            ]})  # fmt: skip
            for call in response.tool_calls:
                content = _stand_in(call).to_model_text()
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
            request = ModelRequest(list(messages), tools, user_id=dialogue.get("user", "alice"))
            request.scratch, request.trace_id = scratch, f"t{number}"
            started = time.perf_counter()
            response = await brain.complete(request)
            spent += time.perf_counter() - started
        messages.append({"role": "assistant", "content": response.content})
        times.append(spent)
    return times


def _replay_model(calls: dict[str, tuple[list[ToolCall], str]]) -> FunctionModel:
    """A zero-cost model that makes, for each message, the calls the brain made for it and
    then gives the brain's reply (so both agents store and carry the same history)."""

    def script(request: ModelRequest) -> ModelResponse:
        last_user = next(m for m in reversed(request.messages) if m["role"] == "user")
        made, reply = calls.get(last_user["content"], ([], "ok"))
        if request.messages[-1]["role"] == "tool" or not made:
            return say(reply)
        return ModelResponse(tool_calls=list(made), finish_reason="tool_calls")

    return FunctionModel(script)


def _recorded(brain: RuleBrain, text: str) -> tuple[list[ToolCall], str]:
    """The calls the brain makes for ``text`` in a fresh session, and its reply."""
    tools = _specs(None)
    messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
    scratch: dict[str, Any] = {}
    response = brain.respond(ModelRequest(list(messages), tools, user_id="alice", scratch=scratch))
    made = list(response.tool_calls)
    if not made:
        return made, response.content or ""
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
        }
        for c in made
    ]
    messages.append({"role": "assistant", "content": None, "tool_calls": calls})
    for call in made:
        content = _stand_in(call).to_model_text()
        messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    reply = brain.respond(ModelRequest(messages, tools, user_id="alice", scratch=scratch))
    return made, reply.content or ""


async def _agent_round(
    brain: Agent, replay: Agent, texts: list[str], round_no: int
) -> tuple[list[float], list[float]]:
    brain_times, replay_times = [], []
    for index, text in enumerate(texts):
        pair = [(brain, brain_times), (replay, replay_times)]
        for agent, sink in pair if index % 2 == 0 else pair[::-1]:  # neither always goes first
            # A fresh session per message: both agents then make exactly the same calls.
            session = f"bench-brain-{round_no}-{index}"
            started = time.perf_counter()
            await agent.run(text, session_id=session, user_id="alice")
            sink.append(time.perf_counter() - started)
    return brain_times, replay_times


def _stats(values: list[float], scale: float) -> tuple[float, float, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return statistics.median(ordered) * scale, p95 * scale, ordered[-1] * scale


async def main(rounds: int) -> None:
    dialogues = yaml.safe_load(DIALOGUES.read_text(encoding="utf-8"))["dialogues"]
    brain = RuleBrain()
    await _brain_turns(brain, dialogues[0])  # warm-up: regexes, zone data
    alone: list[float] = []
    for _ in range(rounds):
        for dialogue in dialogues:
            alone.extend(await _brain_turns(brain, dialogue))
    median, p95, worst = _stats(alone, 1e6)
    print(f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}")
    print(f"part 1 - the brain alone, {len(alone)} turns ({rounds} x the dialogue set):")
    print(f"  median {median:.0f} µs   p95 {p95:.0f} µs   max {worst:.0f} µs")

    default = [d for d in dialogues if d.get("tools", "default") == "default" and "user" not in d]
    texts = [turn["say"] for d in default for turn in d["turns"]]
    calls = {text: _recorded(brain, text) for text in texts}  # for the replaying model
    with tempfile.TemporaryDirectory() as tmp:
        with_brain = Agent(store=Path(tmp) / "brain.db")
        replaying = Agent(model=_replay_model(calls), store=Path(tmp) / "replay.db")
        try:
            await _agent_round(with_brain, replaying, texts[:20], -1)  # warm-up
            brain_times, replay_times = [], []
            for round_no in range(rounds):
                b, r = await _agent_round(with_brain, replaying, texts, round_no)
                brain_times += b
                replay_times += r
        finally:
            await with_brain.aclose()
            await replaying.aclose()
    bm, bp, bw = _stats(brain_times, 1e3)
    rm, rp, rw = _stats(replay_times, 1e3)
    print(f"part 2 - whole agent turns, {len(brain_times)} each, interleaved:")
    print(f"  rule brain        median {bm:.2f} ms   p95 {bp:.2f} ms   max {bw:.2f} ms")
    print(f"  scripted replay   median {rm:.2f} ms   p95 {rp:.2f} ms   max {rw:.2f} ms")
    print(f"  ratio of medians  {bm / rm:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args().rounds))
