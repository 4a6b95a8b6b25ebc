"""The model contract: what the agent loop sends to a model and what it gets back.

Every model — an OpenAI-compatible server, the offline rule brain, a scripted test model —
implements :class:`Model`. Messages are OpenAI chat-format dicts, the lingua franca of servers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "error"]


@dataclass(slots=True)
class ToolSpec:
    """A tool as offered to a model: name, description and JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        """The ``tools=[...]`` entry of the chat-completions API."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(slots=True)
class ToolCall:
    """One tool call proposed by a model.

    ``arguments_error`` is set when the model's arguments could not be parsed as a JSON object;
    the loop then answers the call with an ``invalid_arguments`` result instead of running it.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    arguments_error: str | None = None


@dataclass(slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class TurnDirective:
    """How a channel asks the turn of one message to be handled (``webhooks.routes`` handlers,
    seed 002 §3.3): ``intent`` names an intent of the offline rule brain to run with the
    message's text (other models do not read it); ``prompt`` is an instruction the loop adds to
    the system message of that turn only. It travels as JSON in ``Message.meta["directive"]``.
    """

    intent: str | None = None
    prompt: str | None = None

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> TurnDirective | None:
        """The directive of a message's ``meta`` (``None`` when it has none)."""
        found = meta.get("directive")
        if not isinstance(found, Mapping):
            return None
        intent, prompt = found.get("intent"), found.get("prompt")
        directive = cls(
            intent if isinstance(intent, str) and intent else None,
            prompt if isinstance(prompt, str) and prompt else None,
        )
        return directive if directive.intent or directive.prompt else None

    def to_meta(self) -> dict[str, str]:
        """The JSON of ``Message.meta["directive"]``."""
        return {k: v for k, v in (("intent", self.intent), ("prompt", self.prompt)) if v}


@dataclass(slots=True)
class ModelRequest:
    """Everything a model needs for one step of a turn.

    ``scratch`` is a per-session dict the model may read and change; the loop persists it with
    the session state (the offline brain keeps its pending slot and last result there).
    ``on_text`` receives text deltas when the model streams.
    """

    messages: list[dict[str, Any]]
    tools: list[ToolSpec] = field(default_factory=list)
    session_id: str = ""
    user_id: str | None = None
    trace_id: str = ""
    scratch: dict[str, Any] = field(default_factory=dict)
    on_text: Callable[[str], None] | None = None
    #: How the channel asked this turn to be handled (``None``: as any message).
    directive: TurnDirective | None = None


@dataclass(slots=True)
class ModelResponse:
    """A model's answer to one request: text, tool calls, or both.

    ``meta`` carries optional hints for the loop, e.g. ``{"awaiting_slot": "expression"}`` when
    the model asked the user for a missing parameter (the session then enters
    ``collecting_parameters``), or ``{"learn": False}`` when memory must not learn from the
    user's message (the reply did not acknowledge anything to remember).
    """

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: FinishReason = "stop"
    usage: Usage | None = None
    model_name: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Model(Protocol):
    """A chat model the agent loop can drive."""

    @property
    def name(self) -> str:
        """A short name for logs and results (``openai:gpt-4o``, ``offline-brain``)."""
        ...

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request. Raises :class:`hermes.errors.ModelError` on failure."""
        ...
