"""The shape of ``hermes.yaml``: one pydantic model per section, every key typed and bounded.

Every model forbids unknown keys, so a typo (``temprature``) is reported by name instead of being
silently ignored. An empty file gives the embedded defaults: the offline rule brain (``model`` is
``None``), SQLite under ``./.hermes/`` and a JSON log file beside it (DESIGN "Public contracts").
Models are frozen: a loaded configuration is a value; derive a variant with ``model_copy``.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(_Section):
    """An OpenAI-compatible chat completions endpoint (seed 002 §3.1: swap vendors by URL)."""

    provider: Literal["openai_compatible"] = "openai_compatible"
    #: Root of the API, e.g. ``http://127.0.0.1:8000/v1``.
    base_url: str
    #: Sent as a bearer token; ``None`` (or an empty string) for servers that need none.
    #: Kept out of ``repr`` and out of every error message.
    api_key: str | None = Field(default=None, repr=False)
    model: str = Field(min_length=1)
    temperature: float = Field(default=0.2, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    #: Seconds to wait for each read/write of a request (``connect_timeout`` for connecting).
    timeout: float = Field(default=60, gt=0)
    connect_timeout: float = Field(default=10, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    #: ``native``: the server's ``tools`` parameter; ``hermes``: ``<tool_call>`` tags in the prompt
    #: for servers without function calling.
    tool_mode: Literal["native", "hermes"] = "native"
    stream: bool = False
    #: Often carries credentials (``Authorization``), so it is kept out of ``repr`` too.
    extra_headers: dict[str, str] = Field(default_factory=dict, repr=False)

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str) -> str:
        # The message never echoes the value: a URL may carry a key in its query string.
        value = value.strip()
        try:
            parts = urlsplit(value)
        except ValueError as exc:
            raise ValueError("must be an http:// or https:// URL") from exc
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")
        return value

    @field_validator("api_key")
    @classmethod
    def _empty_key_is_none(cls, value: str | None) -> str | None:
        # ``api_key: ${LLM_API_KEY:-}`` yields "" when the variable is unset: that means "no key".
        return value or None


class AgentConfig(_Section):
    """The agent loop's limits (seed 001 §2.2: 12 rounds, ~6000 tokens of context)."""

    #: The system prompt; ``None``: Hermes's built-in one when a model is configured
    #: (``hermes.agent.factory.DEFAULT_INSTRUCTIONS``), none for the offline brain.
    instructions: str | None = None
    #: Model calls per turn before the loop gives up with an honest failure.
    max_iterations: int = Field(default=8, ge=1, le=100)
    #: Seconds a whole turn may take.
    turn_timeout: float = Field(default=120, gt=0)
    #: Most recent rounds kept verbatim; older ones are summarised.
    context_rounds: int = Field(default=12, ge=1, le=1000)
    context_budget_tokens: int = Field(default=6000, ge=256)
    #: A longer inbound message is rejected (``InvalidInputError``).
    max_message_chars: int = Field(default=100_000, ge=1)
    #: Items beyond the window before a summary is written.
    summary_min_backlog: int = Field(default=8, ge=1)
    #: Hallucinated tool names in one turn before it stops (seed 002 §4.2: three).
    max_unknown_tools: int = Field(default=3, ge=1)


class StoreConfig(_Section):
    """Where sessions and memory live."""

    #: SQLite file; a relative path is relative to the directory Hermes runs in.
    path: str = Field(default=".hermes/hermes.db", min_length=1)


class LoggingConfig(_Section):
    """Structured JSON logs (seed 002 §4.3)."""

    #: JSON-lines file; ``None`` (``file: null``) disables logging. Relative to the run directory.
    file: str | None = ".hermes/logs/hermes.log"
    level: LogLevel = "INFO"

    @field_validator("level", mode="before")
    @classmethod
    def _upper_level(cls, value: Any) -> Any:
        # ``level: debug`` is what people type; accept any case.
        return value.upper() if isinstance(value, str) else value


class BrainConfig(_Section):
    """The offline rule brain."""

    #: Extra intent YAML files (zh/en patterns and slots), added to the built-in intents.
    intents: list[str] = Field(default_factory=list)


class ToolsConfig(_Section):
    """Which built-in tools are enabled and where file tools may work."""

    builtins: list[str] = Field(default_factory=lambda: ["calculator", "current_time"])
    #: The directory tools get as ``ToolContext.workspace``; relative to the run directory.
    workspace: str = Field(default=".", min_length=1)


_SECTIONS = ("agent", "store", "logging", "brain", "tools")


class HermesConfig(_Section):
    """The whole configuration; ``HermesConfig()`` is the embedded default."""

    #: ``None`` selects the offline rule brain.
    model: ModelConfig | None = None
    agent: AgentConfig = Field(default_factory=AgentConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    brain: BrainConfig = Field(default_factory=BrainConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)

    @field_validator(*_SECTIONS, mode="before")
    @classmethod
    def _empty_section_is_default(cls, value: Any) -> Any:
        # A section whose keys are all commented out parses as null; treat it as "all defaults".
        return {} if value is None else value
