"""Test doubles for code built on Hermes: scripted models and a guard against real requests.

Use it as a pytest plugin (``pytest_plugins = ["hermes.testing"]`` in a ``conftest.py``, or
``pytest -p hermes.testing``) and every real model request inside the suite fails loudly.

    from hermes.testing import FunctionModel, ScriptedModel, call, say

    model = ScriptedModel([call("add", {"a": 2, "b": 3}), say("The answer is 5.")])
    result = await Agent(model=model, tools=[add]).run("2+3?")
    model.assert_complete()
"""

from __future__ import annotations

import inspect
import itertools
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from hermes.models.base import ModelRequest, ModelResponse, ToolCall
from hermes.models.guard import allow_model_requests, block_model_requests

__all__ = [
    "FunctionModel",
    "ScriptExhaustedError",
    "ScriptedModel",
    "allow_model_requests",
    "block_model_requests",
    "call",
    "calls",
    "say",
]

_call_ids = itertools.count(1)

Step = ModelResponse | Exception | Callable[[ModelRequest], ModelResponse]
ScriptFn = Callable[[ModelRequest], ModelResponse | Awaitable[ModelResponse]]


def say(text: str) -> ModelResponse:
    """A model step that answers with text and ends the turn."""
    return ModelResponse(content=text, finish_reason="stop", model_name="scripted")


def call(
    name: str, arguments: dict[str, Any] | None = None, *, id: str | None = None, text: str = ""
) -> ModelResponse:
    """A model step that calls one tool (``text`` is optional content beside the call)."""
    return calls((name, arguments or {}), ids=[id] if id else None, text=text)


def calls(
    *specs: tuple[str, dict[str, Any]], ids: list[str] | None = None, text: str = ""
) -> ModelResponse:
    """A model step that calls several tools at once (they run concurrently)."""
    tool_calls = [
        ToolCall(
            id=(ids[i] if ids and i < len(ids) else f"call_{next(_call_ids)}"),
            name=name,
            arguments=dict(arguments),
        )
        for i, (name, arguments) in enumerate(specs)
    ]
    return ModelResponse(
        content=text or None,
        tool_calls=tool_calls,
        finish_reason="tool_calls",
        model_name="scripted",
    )


class ScriptExhaustedError(AssertionError):
    """The agent asked a ScriptedModel for more steps than the test scripted."""


class ScriptedModel:
    """A model that replays a queue of steps and records every request it receives.

    A step is a ``ModelResponse`` (use :func:`call`/:func:`say`), an exception to raise (e.g. a
    ``ModelError`` to simulate a failing server), or a callable taking the request.
    """

    def __init__(self, steps: Iterable[Step] = (), *, name: str = "scripted") -> None:
        self._steps: deque[Step] = deque(steps)
        self._name = name
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self._name

    def add(self, *steps: Step) -> None:
        """Queue more steps."""
        self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self._steps)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if not self._steps:
            raise ScriptExhaustedError(
                f"ScriptedModel '{self._name}' has no step left for request "
                f"#{len(self.requests)} (last message: {request.messages[-1:]!r})"
            )
        step = self._steps.popleft()
        if isinstance(step, Exception):
            raise step
        if isinstance(step, ModelResponse):
            return step
        return step(request)

    def assert_complete(self) -> None:
        """Fail if scripted steps were left unused."""
        if self._steps:
            raise AssertionError(
                f"ScriptedModel '{self._name}' has {len(self._steps)} unused step(s)"
            )


class FunctionModel:
    """A model whose every answer comes from a function of the request (sync or async)."""

    def __init__(self, fn: ScriptFn, *, name: str = "function") -> None:
        self._fn = fn
        self._name = name
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self._name

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        answer = self._fn(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if not isinstance(answer, ModelResponse):
            raise TypeError(
                f"FunctionModel function returned {type(answer).__name__}; "
                "return say(...), call(...) or a ModelResponse"
            )
        return answer


def pytest_configure(config: Any) -> None:
    """As a pytest plugin: forbid real model requests for the whole test session."""
    block_model_requests(True)
