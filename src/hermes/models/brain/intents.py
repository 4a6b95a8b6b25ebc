"""Loading intent files into compiled, immutable :class:`Intent` objects.

The file format is documented in :mod:`hermes.models.brain.schema` and at the top of the
packaged ``intents.yaml``. Everything that can be checked is checked at load time — YAML syntax,
unknown keys, regexes, template fields, args that name unknown slots — and reported as a
:class:`hermes.errors.ConfigError` naming the file and the key (``intents[2].patterns[0]``),
so a bad file fails when Hermes starts, not in the middle of a conversation.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from hermes.errors import ConfigError
from hermes.models.brain.extractors import (
    BUILTIN_SOURCES,
    SlotInput,
    extract_builtin,
    extract_by_pattern,
)
from hermes.models.brain.phrases import render, template_fields
from hermes.models.brain.schema import IntentFileSpec, IntentSpec, LocalizedText, SlotSpec
from hermes.text.lang import Lang

DEFAULTS_NAME = "<default intents.yaml>"
#: Reply fields every tool-less intent may use besides its slots.
REPLY_BUILTIN_FIELDS = frozenset({"capabilities", "examples", "abilities"})
#: Suffixes of a slot's name a tool-less reply may also use: ``{place_de}`` is "上海的" and
#: ``{place_in}`` is " in Paris" when ``place`` is filled, and empty when it is not.
SLOT_PHRASE_SUFFIXES = ("_de", "_in")
ERROR_REPLY_FIELDS = frozenset({"tool", "error", "error_type"})
CALCULATION_FIELDS = frozenset({"shown"})


@dataclass(frozen=True, slots=True)
class Slot:
    """A compiled slot: where its value comes from and the question asked when it is missing."""

    name: str
    required: bool
    source: str  # a built-in extractor name, or "regex"
    pattern: re.Pattern[str] | None
    group: str
    ask: LocalizedText | None

    def extract(self, given: SlotInput) -> Any | None:
        """The slot's value in the user's text, or ``None``."""
        if self.pattern is None:
            return extract_builtin(self.source, given)
        return extract_by_pattern(self.pattern, self.group, given.text)

    def phrases(self, value: Any, lang: Lang) -> dict[str, str]:
        """``{<name>_de}`` / ``{<name>_in}`` for a reply (see SLOT_PHRASE_SUFFIXES)."""
        text = "" if value is None else str(value).strip()
        if not text:
            return {f"{self.name}_de": "", f"{self.name}_in": ""}
        return {f"{self.name}_de": f"{text}的", f"{self.name}_in": f" in {text}"}


#: The tool a plan intent calls (``hermes.agent.plan_tool``).
PLAN_TOOL = "run_plan"


@dataclass(frozen=True, slots=True)
class _ArgRule:
    name: str
    kind: Literal["slot", "template", "constant"]
    value: Any


@dataclass(frozen=True, slots=True)
class Intent:
    """A compiled intent. ``origin`` is the file it came from (for logs and errors)."""

    name: str
    description: LocalizedText
    patterns: tuple[re.Pattern[str], ...]
    priority: int
    tool: str | None
    slots: tuple[Slot, ...]
    arg_rules: tuple[_ArgRule, ...] | None
    reply: LocalizedText | None
    error_reply: LocalizedText | None
    examples: Mapping[Lang, tuple[str, ...]]
    cancel: bool
    origin: str
    #: By error type, tried before ``error_reply`` (also ``tool_unavailable``, ``user_required``).
    error_replies: Mapping[str, LocalizedText] = dataclasses.field(default_factory=dict)
    #: The reply when the tool's output lists nothing (no files, no notes, no memories).
    empty_reply: LocalizedText | None = None
    #: The whole message is one request (a shell command, a note's text): it is not split.
    whole: bool = False
    #: Without a user id the brain refuses (``user_required``) instead of calling the tool.
    needs_user: bool = False
    #: The plan template this intent starts (its tool is then ``run_plan``; seed 003 §4.3).
    plan: str | None = None

    def match(self, text: str) -> re.Match[str] | None:
        """The first pattern match in ``text``, or ``None``."""
        for pattern in self.patterns:
            found = pattern.search(text)
            if found is not None:
                return found
        return None

    def slot(self, name: str) -> Slot | None:
        return next((slot for slot in self.slots if slot.name == name), None)

    @property
    def calculates(self) -> bool:
        """Whether a slot reads arithmetic (``from: expression``): the brain then reads the
        whole message as calculations (several, follow-ups, exact values)."""
        return any(slot.source == "expression" for slot in self.slots)

    def error_text(self, error_type: str) -> LocalizedText | None:
        """The reply for a failure of ``error_type``: by type, else ``error_reply``."""
        return self.error_replies.get(error_type) or self.error_reply

    def arguments(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Tool arguments from slot values; an argument whose slot is unfilled is left out.
        A plan intent's are ``{"template": plan, "params": <those arguments>}``."""
        if self.plan is not None:
            return {"template": self.plan, "params": self._tool_arguments(values)}
        return self._tool_arguments(values)

    def _tool_arguments(self, values: Mapping[str, Any]) -> dict[str, Any]:
        if self.arg_rules is None:
            return {slot.name: values[slot.name] for slot in self.slots if slot.name in values}
        arguments: dict[str, Any] = {}
        for rule in self.arg_rules:
            if rule.kind == "constant":
                arguments[rule.name] = rule.value
            elif rule.kind == "slot":
                if values.get(rule.value) is not None:
                    arguments[rule.name] = values[rule.value]
            else:
                text = render(str(rule.value), values)
                if text is not None:  # None: a slot of the template is unfilled, leave it out
                    arguments[rule.name] = text
        return arguments


def load_intent_file(path: str | Path) -> list[Intent]:
    """Read and compile one intent file; raises :class:`ConfigError` naming file and key."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read intent file: {exc}", file=file) from exc
    return parse_intents(text, origin=file)


def parse_intents(text: str, *, origin: str) -> list[Intent]:
    """Compile intents from YAML text; ``origin`` names the source in errors."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {_yaml_problem(exc)}", file=origin) from exc
    try:
        spec = IntentFileSpec.model_validate(data)
    except ValidationError as exc:
        raise _config_error(exc, origin) from exc
    seen: set[str] = set()
    intents: list[Intent] = []
    for index, intent_spec in enumerate(spec.intents):
        if intent_spec.name in seen:
            raise ConfigError(
                f"duplicate intent name '{intent_spec.name}'",
                key=f"intents[{index}].name",
                file=origin,
            )
        seen.add(intent_spec.name)
        intents.append(_compile_intent(intent_spec, f"intents[{index}]", origin))
    return intents


@functools.cache
def default_intents() -> tuple[Intent, ...]:
    """The packaged intents (parsed once per process)."""
    text = resources.files("hermes.models.brain").joinpath("intents.yaml").read_text("utf-8")
    return tuple(parse_intents(text, origin=DEFAULTS_NAME))


def order_intents(
    defaults: Iterable[Intent], user_files: Sequence[Sequence[Intent]]
) -> tuple[Intent, ...]:
    """The matching order: user intents first, then defaults; each group by priority (highest
    first), ties in file order. A user intent replaces any earlier intent of the same name;
    putting user intents first makes them win over defaults whose patterns overlap."""
    user: dict[str, Intent] = {}
    for intents in user_files:
        for intent in intents:
            user.pop(intent.name, None)
            user[intent.name] = intent
    kept_defaults = [intent for intent in defaults if intent.name not in user]

    def by_priority(group: Iterable[Intent]) -> list[Intent]:
        return sorted(group, key=lambda intent: -intent.priority)

    return tuple(by_priority(user.values()) + by_priority(kept_defaults))


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None or problem is None:
        return " ".join(str(exc).split())
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"


def _config_error(exc: ValidationError, origin: str) -> ConfigError:
    """The first problem names the key; up to three more are listed in the message."""
    first, *others = exc.errors()
    message = first["msg"]
    if others:
        listed = "; ".join(f"{_key(p['loc'])}: {p['msg']}" for p in others[:3])
        message += f" (also {listed}{'; …' if len(others) > 3 else ''})"
    return ConfigError(message, key=_key(first["loc"]), file=origin)


def _key(loc: Sequence[int | str]) -> str:
    key = ""
    for part in loc:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    return key or "<root>"


def _compile_intent(spec: IntentSpec, key: str, origin: str) -> Intent:
    slots = tuple(
        _compile_slot(slot, f"{key}.slots[{i}]", origin) for i, slot in enumerate(spec.slots)
    )
    slot_names = [slot.name for slot in slots]
    for i, name in enumerate(slot_names):
        if name in slot_names[:i]:
            raise ConfigError(f"duplicate slot '{name}'", key=f"{key}.slots[{i}].name", file=origin)
    if spec.plan is not None:
        if spec.tool is not None:
            raise ConfigError(
                "give an intent a tool or a plan, not both", key=f"{key}.plan", file=origin
            )
        spec = spec.model_copy(update={"tool": PLAN_TOOL})
    if spec.tool is None and spec.reply is None:
        raise ConfigError("an intent without a tool needs a reply", key=f"{key}.reply", file=origin)
    if spec.tool is None and spec.args is not None:
        raise ConfigError("args need a tool to pass them to", key=f"{key}.args", file=origin)
    known = set(slot_names)
    phrase_fields = {name + suffix for name in slot_names for suffix in SLOT_PHRASE_SUFFIXES}
    # None: any output field
    reply_fields = None if spec.tool else known | phrase_fields | REPLY_BUILTIN_FIELDS
    _check_text(spec.reply, reply_fields, f"{key}.reply", origin)
    # A calculation's replies may also show the arithmetic as the user wrote it ({shown}).
    error_fields = known | ERROR_REPLY_FIELDS
    if any(slot.source == "expression" for slot in slots):
        error_fields |= CALCULATION_FIELDS
    _check_text(spec.error_reply, error_fields, f"{key}.error_reply", origin)
    for error_type, text in spec.error_replies.items():
        _check_text(text, error_fields, f"{key}.error_replies.{error_type}", origin)
    if spec.empty_reply is not None and spec.tool is None:
        raise ConfigError("empty_reply needs a tool", key=f"{key}.empty_reply", file=origin)
    for i, slot_spec in enumerate(spec.slots):
        _check_text(slot_spec.ask, known, f"{key}.slots[{i}].ask", origin)
    examples = spec.examples
    return Intent(
        name=spec.name,
        description=spec.description,
        patterns=tuple(re.compile(pattern, re.IGNORECASE) for pattern in spec.patterns),
        priority=spec.priority,
        tool=spec.tool,
        slots=slots,
        arg_rules=_compile_args(spec.args, known, f"{key}.args", origin),
        reply=spec.reply,
        error_reply=spec.error_reply,
        examples={
            "zh": tuple(examples.zh) if examples else (),
            "en": tuple(examples.en) if examples else (),
        },
        cancel=spec.cancel,
        origin=origin,
        error_replies=dict(spec.error_replies),
        empty_reply=spec.empty_reply,
        whole=spec.whole,
        needs_user=spec.needs_user,
        plan=spec.plan,
    )


def _compile_slot(spec: SlotSpec, key: str, origin: str) -> Slot:
    if spec.required and spec.ask is None:
        raise ConfigError("a required slot needs an 'ask' question", key=f"{key}.ask", file=origin)
    if spec.source in BUILTIN_SOURCES:
        return Slot(spec.name, spec.required, spec.source, None, "", spec.ask)
    pattern = re.compile(spec.source, re.IGNORECASE)
    group = spec.name if spec.name in pattern.groupindex else next(iter(pattern.groupindex))
    return Slot(spec.name, spec.required, "regex", pattern, group, spec.ask)


def _compile_args(
    args: dict[str, Any] | None, known: set[str], key: str, origin: str
) -> tuple[_ArgRule, ...] | None:
    if args is None:
        return None
    rules: list[_ArgRule] = []
    for name, value in args.items():
        if not isinstance(value, str):
            rules.append(_ArgRule(name, "constant", value))
            continue
        fields = _fields(value, f"{key}.{name}", origin)
        unknown = sorted(set(fields) - known)
        if unknown:
            raise ConfigError(
                f"unknown slot '{unknown[0]}' (slots: {', '.join(sorted(known)) or 'none'})",
                key=f"{key}.{name}",
                file=origin,
            )
        if not fields:
            rules.append(_ArgRule(name, "constant", value.replace("{{", "{").replace("}}", "}")))
        elif value == "{" + fields[0] + "}":
            rules.append(_ArgRule(name, "slot", fields[0]))
        else:
            rules.append(_ArgRule(name, "template", value))
    return tuple(rules)


def _check_text(
    text: LocalizedText | None, allowed: set[str] | frozenset[str] | None, key: str, origin: str
) -> None:
    if text is None:
        return
    for lang in ("zh", "en"):
        template = getattr(text, lang)
        if template is None:
            continue
        for field_name in _fields(template, f"{key}.{lang}", origin):
            if allowed is not None and field_name not in allowed:
                raise ConfigError(
                    f"unknown template field '{{{field_name}}}'", key=f"{key}.{lang}", file=origin
                )


def _fields(template: str, key: str, origin: str) -> list[str]:
    try:
        return template_fields(template)
    except ValueError as exc:
        raise ConfigError(f"bad template: {exc}", key=key, file=origin) from exc
