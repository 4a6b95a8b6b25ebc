"""Shared pieces of the OpenAI-compatible façade tests: a scripted agent whose model says what
it saw, with one Hermes tool (``add``), and clients of a live server."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import openai

from hermes import Agent, tool
from hermes.channels.http.app import create_app
from hermes.config.server import ServerConfig
from hermes.models.base import ModelRequest, ModelResponse, Usage
from hermes.testing import FunctionModel, call, say
from tests.channels.http.chat_support import live_server

ADD = re.compile(r"add (\d+) and (\d+)")
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city (the client looks it up).",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _users(request: ModelRequest) -> int:
    return sum(1 for m in request.messages if m["role"] == "user")


def script(request: ModelRequest) -> ModelResponse:
    """``add A and B`` calls Hermes's ``add``; ``weather`` calls the client's ``get_weather``
    when it is offered; a tool result is reported; anything else is echoed with the number of
    user messages the model saw. Text is streamed in two pieces when the loop streams."""
    last = request.messages[-1]
    offered = {spec.name for spec in request.tools}
    if last["role"] == "tool":
        answer = say(f"the tool said: {last['content']}")
    else:
        text = str(last.get("content") or "")
        found = ADD.search(text)
        if found is not None:
            return call("add", {"a": int(found.group(1)), "b": int(found.group(2))})
        if "weather" in text and "get_weather" in offered:
            return call("get_weather", {"city": "Paris"}, text="Let me look.")
        answer = say(f"echo: {text} (users seen: {_users(request)})")
    if request.on_text is not None and answer.content:
        half = len(answer.content) // 2
        request.on_text(answer.content[:half])
        request.on_text(answer.content[half:])
    answer.usage = Usage(input_tokens=11, output_tokens=7)
    return answer


def make_agent(db: Path) -> tuple[Agent, FunctionModel]:
    model = FunctionModel(script)
    return Agent(model=model, tools=[add], store=db), model


@asynccontextmanager
async def served(
    agent: Agent, settings: ServerConfig | None = None, *, api_key: str = "unused"
) -> AsyncIterator[tuple[str, openai.AsyncOpenAI]]:
    """The agent's service on 127.0.0.1 and an ``openai`` client of it (no retries)."""
    app = create_app(agent, settings or ServerConfig())
    async with live_server(app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=api_key, max_retries=0)
        try:
            yield url, client
        finally:
            await client.close()


def sse_chunks(text: str) -> list[dict[str, Any]]:
    """The JSON ``data:`` lines of a stream up to ``[DONE]`` (which must end it)."""
    lines = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]
