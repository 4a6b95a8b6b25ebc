"""A conversation harness for the offline brain: it plays the agent loop's part.

Each user message goes to ``RuleBrain.complete`` with the whole chat so far and one ``scratch``
dict that survives between steps as JSON (the loop persists it as JSON). When the brain calls
tools, the harness runs them — the calculator's own evaluation, a fixed clock, small in-memory
stand-ins for memory, notes, to-dos, files and the shell — and sends each
``ToolResult.to_model_text()`` back, exactly as the loop does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hermes.errors import ToolArgumentError
from hermes.memory.tools import memory_tools
from hermes.models.base import ModelRequest, ModelResponse, ToolSpec
from hermes.models.brain import RuleBrain
from hermes.tools.base import ToolResult
from hermes.tools.builtin import BUILTIN_TOOLS
from hermes.tools.builtin.calculator import CalculationError, evaluate
from hermes.tools.registry import ToolRegistry

CALCULATOR = ToolSpec(
    "calculator",
    "Evaluate an arithmetic expression.",
    {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    },
)
CURRENT_TIME = ToolSpec(
    "current_time",
    "The current date and time, optionally in a time zone or city.",
    {"type": "object", "properties": {"timezone": {"type": "string"}}},
)
ALL_TOOLS = [CALCULATOR, CURRENT_TIME]
#: The built-ins and memory's own tools (its schemas are the same whatever memory they serve).
TOOLS_BY_NAME = {**BUILTIN_TOOLS, **{t.name: t for t in memory_tools(None)}}

#: The stand-in clock's places: zone and UTC offset at its fixed instant.
_ZONES = {
    "东京": ("Asia/Tokyo", "+09:00"),
    "tokyo": ("Asia/Tokyo", "+09:00"),
    "london": ("Europe/London", "+01:00"),
    "伦敦": ("Europe/London", "+01:00"),
    "纽约": ("America/New_York", "-04:00"),
    "new york": ("America/New_York", "-04:00"),
    "paris": ("Europe/Paris", "+02:00"),
    "巴黎": ("Europe/Paris", "+02:00"),
    "北京": ("Asia/Shanghai", "+08:00"),
    "上海": ("Asia/Shanghai", "+08:00"),
    "首尔": ("Asia/Seoul", "+09:00"),
    "asia/tokyo": ("Asia/Tokyo", "+09:00"),
    "utc+8": ("UTC+08:00", "+08:00"),
}


def calculator(arguments: dict[str, Any]) -> ToolResult:
    """The built-in calculator's own evaluation (pure and offline), with its output shape."""
    expression = arguments["expression"]
    try:
        value = evaluate(expression)
    except CalculationError as exc:
        return ToolResult.failure("execution_error", exc.message)
    except ToolArgumentError as exc:
        return ToolResult.failure("invalid_arguments", exc.message)
    return ToolResult(
        ok=True,
        output={"expression": expression, "result": value},
        summary=f"{expression} = {value}",
    )


def current_time(arguments: dict[str, Any]) -> ToolResult:
    """A stand-in for the built-in current_time: a fixed instant, a few known places, and —
    without a place — the default zone UTC, said to be this machine's (``zone_source``)."""
    place = arguments.get("timezone")
    found = ("UTC", "+00:00") if place is None else _ZONES.get(str(place).lower())
    if found is None:
        return ToolResult.failure("invalid_arguments", f"unknown time zone or city: {place}")
    zone, offset = found
    output = {
        "iso": "2024-05-01T14:03:00",
        "date": "2024-05-01",
        "time": "14:03:00",
        "weekday": "Wednesday",
        "weekday_zh": "星期三",
        "timezone": zone,
        "utc_offset": offset,
    }
    if place is None:
        output["zone_source"] = "host_utc"
    return ToolResult(ok=True, output=output)


@dataclass
class World:
    """What the stateful stand-ins keep for one conversation: memories, notes, to-dos, files."""

    memories: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    todos: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=lambda: {"README.md": "# Demo\nhello\n"})

    def run(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name == "calculator":
            return calculator(arguments)
        if name == "current_time":
            return current_time(arguments)
        handler: Callable[[dict[str, Any]], ToolResult] = getattr(self, "_" + name)
        return handler(arguments)

    def _remember(self, arguments: dict[str, Any]) -> ToolResult:
        content = arguments["content"]
        for memory in self.memories:
            if memory["content"] == content:
                return ToolResult(ok=True, output={**memory, "summary": "already remembered"})
        memory = {"id": f"m-{len(self.memories) + 1:016x}", "content": content}
        memory["kind"] = arguments.get("kind", "fact")
        self.memories.append(memory)
        return ToolResult(ok=True, output={**memory, "summary": "remembered / 已记住"})

    def _recall_memories(self, arguments: dict[str, Any]) -> ToolResult:
        words = _terms(arguments["query"])
        hits = [m for m in self.memories if words & _terms(m["content"])]
        return ToolResult(ok=True, output={"memories": hits, "summary": f"{len(hits)} memories"})

    def _note_add(self, arguments: dict[str, Any]) -> ToolResult:
        note = {"id": len(self.notes) + 1, "text": arguments["text"]}
        self.notes.append(note)
        return ToolResult(ok=True, output=note)

    def _note_list(self, arguments: dict[str, Any]) -> ToolResult:
        notes = list(reversed(self.notes))
        return ToolResult(ok=True, output={"notes": notes, "total": len(notes)})

    def _todo_add(self, arguments: dict[str, Any]) -> ToolResult:
        todo = {"id": len(self.todos) + 1, "text": arguments["text"], "done": False}
        self.todos.append(todo)
        return ToolResult(ok=True, output=todo)

    def _todo_list(self, arguments: dict[str, Any]) -> ToolResult:
        todos = [t for t in self.todos if not t["done"]]
        return ToolResult(ok=True, output={"todos": todos, "total": len(todos)})

    def _todo_done(self, arguments: dict[str, Any]) -> ToolResult:
        found = next((t for t in self.todos if t["id"] == arguments["todo_id"]), None)
        if found is None:
            return ToolResult.failure("not_found", f"you have no to-do #{arguments['todo_id']}")
        found["done"] = True
        return ToolResult(ok=True, output=found)

    def _list_files(self, arguments: dict[str, Any]) -> ToolResult:
        path = arguments.get("path") or "."
        if path not in (".", "./"):
            return ToolResult.failure("not_found", f"no directory {path}")
        entries = [
            {"name": n, "type": "file", "size": len(c)} for n, c in sorted(self.files.items())
        ]
        return ToolResult(ok=True, output={"path": ".", "entries": entries})

    def _read_file(self, arguments: dict[str, Any]) -> ToolResult:
        path = arguments["path"]
        if path not in self.files:
            return ToolResult.failure("not_found", f"no such file: {path}")
        content = self.files[path]
        return ToolResult(ok=True, output={"path": path, "content": content, "size": len(content)})

    def _shell(self, arguments: dict[str, Any]) -> ToolResult:
        output = {"exit_code": 0, "stdout": f"ran: {arguments['command']}\n", "stderr": ""}
        return ToolResult(ok=True, output=output)


def _terms(text: str) -> set[str]:
    cjk = [text[i : i + 2] for i in range(len(text) - 1) if "\u4e00" <= text[i] <= "\u9fff"]
    return {*cjk, *(w for w in text.lower().split() if len(w) > 2)}


def spec(name: str) -> ToolSpec:
    """The real built-in's spec (name, description, schema), as the agent offers it."""
    (found,) = ToolRegistry([TOOLS_BY_NAME[name]]).specs()
    return found


def hints(response: ModelResponse) -> dict[str, Any]:
    """The response's meta without ``learn`` (every text reply but a memory acknowledgement
    carries ``learn: False``; the tests of that are in test_memory.py)."""
    return {key: value for key, value in response.meta.items() if key != "learn"}


class Conversation:
    """One session with the brain: chat history, persisted scratch, and the tools on offer."""

    def __init__(
        self, brain: RuleBrain, tools: list[ToolSpec], *, user_id: str | None = None
    ) -> None:
        self.brain = brain
        self.tools = tools
        self.user_id = user_id
        self.world = World()
        self.messages: list[dict[str, Any]] = []
        self.scratch: dict[str, Any] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []  # every tool call the brain made
        self.trace = 0

    async def step(self) -> ModelResponse:
        request = ModelRequest(
            messages=list(self.messages),
            tools=self.tools,
            user_id=self.user_id,
            trace_id=f"trace-{self.trace}",
            scratch=self.scratch,
        )
        response = await self.brain.complete(request)
        # The loop stores scratch as JSON between steps: it must survive the round trip.
        self.scratch = json.loads(json.dumps(request.scratch))
        return response

    async def send(self, text: str) -> ModelResponse:
        """One user message → the brain's first response (a reply, a question or a call)."""
        self.trace += 1
        self.messages.append({"role": "user", "content": text})
        response = await self.step()
        if response.content is not None and not response.tool_calls:
            self.messages.append({"role": "assistant", "content": response.content})
        return response

    async def give_result(self, response: ModelResponse, result: ToolResult) -> ModelResponse:
        """Answer the response's one tool call with ``result`` → the brain's reply."""
        (_call,) = response.tool_calls
        return await self.give_results(response, [result])

    async def give_results(
        self, response: ModelResponse, results: list[ToolResult]
    ) -> ModelResponse:
        """Answer the response's tool calls with ``results`` (in order) → the brain's reply."""
        calls = response.tool_calls
        self.calls.extend((call.name, call.arguments) for call in calls)
        self.messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                    for call in calls
                ],
            }
        )
        for call, result in zip(calls, results, strict=True):
            self.messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": result.to_model_text()}
            )
        reply = await self.step()
        self.messages.append({"role": "assistant", "content": reply.content})
        return reply

    async def turn(self, text: str) -> ModelResponse:
        """A whole turn: send, run the stand-in tools it calls, return the final reply."""
        response = await self.send(text)
        if not response.tool_calls:
            return response
        results = [self.world.run(call.name, call.arguments) for call in response.tool_calls]
        return await self.give_results(response, results)
