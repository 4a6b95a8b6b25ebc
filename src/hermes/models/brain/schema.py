"""The intent file format, as pydantic models (every level forbids unknown keys).

An intent file is YAML::

    version: 1                      # optional, only 1 exists
    intents:
      - name: calculate             # unique; a user intent replaces a default of the same name
        description: {zh: 计算算式, en: Calculate an arithmetic expression}
        priority: 50                # higher is tried first (user files before defaults)
        patterns:                   # regexes, searched case-insensitively; any match selects
          - '\\d\\s*[-+*/]\\s*\\d'
        tool: calculator            # optional: without a tool the intent just replies
        # plan: book-meeting        # or a plan template: run_plan(template, params=args)
        slots:                      # values taken from the message before calling the tool
          - name: expression
            required: true          # missing → ask, keep it pending, fill from the next message
            from: expression        # rest | text | expression | timezone | number | a regex
            ask: {zh: 请问要计算什么？, en: What would you like me to calculate?}
        args:                       # tool arguments: "{slot}" passes the slot value; other
          expression: "{expression}"  # strings are templates; non-strings are constants
        reply:                      # with a tool: formatted with the result's output fields
          zh: "{expression} = {result}"   # (+ slots, {summary}, {output}, {tool});
          en: "{expression} = {result}"   # without: with slots, {capabilities}, {examples}
        error_reply: {zh: ..., en: ...}   # optional; fields {tool}, {error}, {error_type}
        error_replies:              # optional: by error type, tried before error_reply; also
          invalid_arguments: {...}  # tool_unavailable (the tool is not offered) and
                                    # user_required (needs_user and no user id)
        empty_reply: {zh: ..., en: ...}   # optional: the output lists nothing
        examples: {zh: [15乘以27等于多少？], en: [what is 15 times 27]}  # shown in help
        cancel: false               # true: this intent clears a pending question
        whole: false                # true: the message is one request (a command, a note)
        needs_user: false           # true: refused (user_required) without a user id

``description``, ``reply``, ``ask`` and ``error_reply`` take ``zh`` and/or ``en``; a missing
language falls back to the other one.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from hermes.models.brain.extractors import BUILTIN_SOURCES
from hermes.text.lang import Lang


def _compiles(pattern: str) -> str:
    try:
        re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"invalid regular expression: {exc}") from exc
    return pattern


def _slot_source(source: str) -> str:
    if source in BUILTIN_SOURCES:
        return source
    _compiles(source)
    if not re.compile(source).groupindex:
        builtins = ", ".join(sorted(BUILTIN_SOURCES))
        raise ValueError(f"must be one of {builtins} or a regex with a named group (?P<name>...)")
    return source


Regex = Annotated[str, AfterValidator(_compiles)]
Identifier = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=64)]
IntentName = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$", max_length=64)]
ToolName = Annotated[str, Field(pattern=r"^[^\s]+$", max_length=128)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LocalizedText(_Strict):
    """A text in Chinese and/or English."""

    zh: str | None = None
    en: str | None = None

    @model_validator(mode="after")
    def _one_language_at_least(self) -> LocalizedText:
        if not (self.zh or self.en):
            raise ValueError("needs a non-empty 'zh' or 'en' text")
        return self

    def get(self, lang: Lang) -> str:
        """The text in ``lang``, else in the other language."""
        return (self.zh or self.en or "") if lang == "zh" else (self.en or self.zh or "")


class LocalizedExamples(_Strict):
    zh: list[str] = Field(default_factory=list)
    en: list[str] = Field(default_factory=list)


class SlotSpec(_Strict):
    name: Identifier
    required: bool = False
    source: Annotated[str, AfterValidator(_slot_source)] = Field(alias="from")
    ask: LocalizedText | None = None


class IntentSpec(_Strict):
    name: IntentName
    description: LocalizedText
    patterns: list[Regex] = Field(min_length=1)
    priority: int = 0
    tool: ToolName | None = None
    #: A plan template (``plans/*.yaml``) to start instead of a tool: the call is
    #: ``run_plan(template=plan, params=<args, or the slots>)``.
    plan: ToolName | None = None
    slots: list[SlotSpec] = Field(default_factory=list)
    args: dict[str, Any] | None = None
    reply: LocalizedText | None = None
    error_reply: LocalizedText | None = None
    error_replies: dict[Identifier, LocalizedText] = Field(default_factory=dict)
    empty_reply: LocalizedText | None = None
    examples: LocalizedExamples | None = None
    cancel: bool = False
    whole: bool = False
    needs_user: bool = False


class IntentFileSpec(_Strict):
    version: Literal[1] = 1
    intents: list[IntentSpec]
