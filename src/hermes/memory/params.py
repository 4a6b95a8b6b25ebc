"""Filling missing tool arguments from memory (seed 001 §6.1–6.2).

A tool call whose *required* argument is missing can often be completed from what the session
or the user's memories already hold: "再查一下那个订单" after a ``query_order(order_id=…)``,
or a weather question from a user who once said "我住在上海". :func:`fill_missing` proposes
those values, each with its provenance (:class:`FilledArgument`), so the agent can say what it
assumed ("用了你之前告诉我的城市：上海").

Rules (seed 001 §6.2, "记忆只用来填空，不允许覆盖"):

- Only *required* top-level properties that are *absent* are filled. An argument present in
  the call is explicit and never replaced — even ``None`` or ``""``: the model or the user
  chose it, the schema check will judge it, and memory silently overriding an explicit choice
  is exactly the failure the seed describes.
- Precedence: explicit > working memory of this session (the same tool's last call, then
  other tools' last calls with an argument of the same name, then facts labelled like the
  argument or of its kind — an order id, a URL, a date…) > recalled long-term memories, in the
  order given (best first).
- A value must fit the property's schema (type, enum, format, pattern…; simple coercions
  such as ``"3"`` → 3 for an integer); one that does not is skipped, never forced.
- Sensitive recalled memories are never used to fill arguments.
- Facts found in tool *results* are never used: a value a fetched page or file contains is
  untrusted data, not something the user chose (only what the user said, the arguments of
  earlier successful calls and recalled memories fill arguments).

Pure functions; nothing is stored. The executor's schema validation still runs afterwards.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from hermes.memory.scan import MAX_VALUE_CHARS, name_key, split_name
from hermes.memory.working import Fact, WorkingMemory
from hermes.observe import get_logger
from hermes.text.lang import Lang

__all__ = [
    "ArgumentSource",
    "FilledArgument",
    "describe_filled",
    "fill_missing",
]

log = get_logger("memory")

ArgumentSource = Literal["working_call", "working_fact", "memory"]


@dataclass(frozen=True, slots=True)
class FilledArgument:
    """Where a filled-in argument came from.

    ``source``: ``working_call`` (``origin`` is the tool whose last call had it),
    ``working_fact`` (``origin`` is the fact's label) or ``memory`` (``origin`` is the
    memory's content, ``memory_id`` its id when known). ``label`` is a short human name of the
    argument (its description up to the first punctuation, else its name).
    """

    name: str
    value: Any
    source: ArgumentSource
    origin: str
    label: str
    memory_id: str | None = None

    def describe(self, lang: Lang = "zh") -> str:
        """One sentence for the user: ``用了你之前告诉我的城市：上海``."""
        value = self.value if isinstance(self.value, str) else json.dumps(self.value)
        if lang == "zh":
            if self.source == "working_call":
                return f"沿用了上次 {self.origin} 的{self.label}：{value}"
            if self.source == "working_fact":
                return f"用了本次对话中提到的{self.label}：{value}"
            return f"用了你之前告诉我的{self.label}：{value}"
        if self.source == "working_call":
            return f"reused {self.label} from the last {self.origin} call: {value}"
        if self.source == "working_fact":
            return f"used the {self.label} mentioned earlier in this conversation: {value}"
        return f"used your {self.label} from what you told me before: {value}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "source": self.source,
            "origin": self.origin,
            "memory_id": self.memory_id,
        }


def describe_filled(filled: Sequence[FilledArgument], lang: Lang = "zh") -> str:
    """All provenance sentences in one line (``""`` when nothing was filled)."""
    return ("；" if lang == "zh" else "; ").join(f.describe(lang) for f in filled)


def fill_missing(
    tool_schema: Mapping[str, Any],
    arguments: Mapping[str, Any],
    *,
    working: WorkingMemory | None = None,
    recalled: Iterable[object] = (),
    tool_name: str | None = None,
) -> tuple[dict[str, Any], list[FilledArgument]]:
    """``arguments`` completed with missing required values from memory, and their provenance.

    ``tool_schema`` is the JSON Schema of the tool's parameters; ``tool_name`` (the tool being
    called) lets its own last call take precedence. ``recalled`` holds memories, best first:
    ``MemoryRecord``/``MemoryHit`` objects, anything with ``content`` and ``kind`` (``id`` and
    ``sensitive`` read when present), or ``(content, kind)`` tuples. Returns a new dict (the
    input is never changed) and one :class:`FilledArgument` per value added, in the order of
    ``required``. Raises ``TypeError`` if ``arguments`` is not a mapping.
    """
    if not isinstance(arguments, Mapping):
        raise TypeError(f"arguments must be a mapping, not {type(arguments).__name__}")
    filled_args = dict(arguments)
    properties = tool_schema.get("properties") if isinstance(tool_schema, Mapping) else None
    required = tool_schema.get("required") if isinstance(tool_schema, Mapping) else None
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return filled_args, []
    memories = [m for m in (_as_memory(item) for item in recalled) if m is not None]
    provenance: list[FilledArgument] = []
    for name in required:
        if not isinstance(name, str) or name in filled_args:
            continue  # present = explicit, even None or "" (see the module docstring)
        prop = properties.get(name)
        prop = prop if isinstance(prop, Mapping) else {}
        found = _from_working(name, prop, working, tool_name) if working is not None else None
        if found is None:
            found = _from_memories(name, prop, memories)
        if found is not None:
            filled_args[name] = found.value
            provenance.append(found)
    if provenance:
        log.info(
            "arguments_from_memory",
            tool=tool_name,
            arguments=[f.name for f in provenance],
            sources=[f.source for f in provenance],
        )
    return filled_args, provenance


# -- fitting a value to a property ---------------------------------------------------------

_NO_FIT = object()


def _fit(value: Any, prop: Mapping[str, Any]) -> Any:
    """``value`` coerced to the property's schema, or ``_NO_FIT``."""
    if value is None or isinstance(value, dict | list):
        return _NO_FIT  # memory fills scalars only; a structure is the model's job
    declared = prop.get("type")
    types = [declared] if isinstance(declared, str) else declared or []
    if not isinstance(types, list):
        return _NO_FIT
    if types:
        value = _coerce(value, [t for t in types if isinstance(t, str)])
        if value is _NO_FIT:
            return _NO_FIT
    if isinstance(value, str) and not value.strip():
        return _NO_FIT
    enum = prop.get("enum")
    if isinstance(enum, list):
        value = _match_enum(value, enum)
        if value is _NO_FIT:
            return _NO_FIT
    return value if _valid(value, prop) else _NO_FIT


def _coerce(value: Any, types: list[str]) -> Any:
    for kind in types:
        if kind == "string":
            if isinstance(value, str):
                return value if len(value) <= MAX_VALUE_CHARS else _NO_FIT
            if isinstance(value, int | float) and not isinstance(value, bool):
                return str(value)
        elif kind == "integer":
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, float) and value.is_integer():
                return int(value)
            if isinstance(value, str) and re.fullmatch(r"\s*-?\d{1,18}\s*", value):
                return int(value)
        elif kind == "number":
            if isinstance(value, int | float) and not isinstance(value, bool):
                return value
            if isinstance(value, str) and re.fullmatch(r"\s*-?\d{1,18}(?:\.\d{1,12})?\s*", value):
                number = float(value)
                return int(number) if number.is_integer() and "." not in value else number
        elif kind == "boolean" and isinstance(value, bool):
            return value
    return _NO_FIT


def _match_enum(value: Any, enum: list[Any]) -> Any:
    if value in enum:
        return value
    if isinstance(value, str):
        folded = value.strip().casefold()
        for option in enum:
            if isinstance(option, str) and option.casefold() == folded:
                return option
    return _NO_FIT


def _valid(value: Any, prop: Mapping[str, Any]) -> bool:
    """The value passes the property's own schema (format, pattern, bounds…).

    A property that refers elsewhere (``$ref``) cannot be checked alone; the executor's full
    validation still runs, so it is accepted here.
    """
    if "$ref" in json.dumps(prop, default=str):
        return True
    try:
        validator = Draft202012Validator(
            dict(prop), format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        return bool(validator.is_valid(value))
    except (SchemaError, TypeError, ValueError) as exc:
        log.warning("memory_fill_schema_unusable", error=type(exc).__name__)
        return False


# -- working memory ------------------------------------------------------------------------

# Kinds of argument and the working-memory fact labels (find_facts) that can fill them. An
# argument is of a kind by its whole name (``order_id``), its last word (``input_file``,
# ``due_date``) or an explicit phrase in its description — never by a substring: ``sort_order``
# is not an order, ``update`` not a date, ``profile`` not a file.
_KINDS: Final[list[tuple[frozenset[str], frozenset[str], re.Pattern[str], str]]] = [
    (frozenset(names.split()), frozenset(last.split()), re.compile(described, re.I), label)
    for names, last, described, label in (
        ("order orderid orderno ordernumber ordercode", "", r"订单号|order\s*(?:id|number)",
         "order_id"),
        ("ticket ticketid ticketno issueid incident incidentid caseid", "", r"工单号|ticket\s*id",
         "ticket_id"),
        ("url uri link href website", "url uri link", r"网址|链接|\burl\b", "url"),
        ("email mail emailaddress", "email", r"邮箱|e-?mail\s*address", "email"),
        ("file filename path filepath", "file path filename filepath",
         r"文件名|文件路径|file\s*(?:name|path)", "file"),
        ("uuid guid", "uuid guid", r"\buuid\b|\bguid\b", "uuid"),
        ("date day", "date", r"日期|\bdate\b", "date"),
    )
]  # fmt: skip
# Facts that may fill an argument: what the user said and the arguments of earlier successful
# calls. A value found in a tool's *result* (a web page, a file, an e-mail body) is untrusted
# text: filling ``send_email(to=…)`` with an address a fetched page contains would let any
# page choose where the user's mail goes.
_TRUSTED_FACT_SOURCES: Final = frozenset(("user", "tool_call"))
# A date argument that is one end of a range must not be filled with "the" date.
_RANGE_WORDS = frozenset(("start", "end", "from", "to", "since", "until", "begin", "finish"))


def _label(name: str, prop: Mapping[str, Any]) -> str:
    description = prop.get("description")
    if isinstance(description, str):
        head = re.split(r"[，,。.；;:：(（\n]", description.strip(), maxsplit=1)[0].strip()
        if 0 < len(head) <= 16:
            return head
    return name


def _from_working(
    name: str, prop: Mapping[str, Any], working: WorkingMemory, tool_name: str | None
) -> FilledArgument | None:
    key = name_key(name)
    label = _label(name, prop)
    calls = working.calls
    if tool_name is not None:
        calls = sorted(calls, key=lambda call: call.tool != tool_name)  # stable: own tool first
    for call in calls:
        if not call.ok or not call.complete:
            continue  # a failed call's arguments may be the very thing that was wrong
        for arg, raw in call.arguments.items():
            if name_key(arg) == key:
                value = _fit(raw, prop)
                if value is not _NO_FIT:
                    return FilledArgument(name, value, "working_call", call.tool, label)
    labels = _fact_labels(name, prop)
    for fact in working.facts:
        if fact.source not in _TRUSTED_FACT_SOURCES:
            continue  # text a tool fetched is data, never the user's choice (see below)
        if name_key(fact.label) == key or fact.label in labels:
            value = _fit(fact.value, prop)
            if value is not _NO_FIT:
                return FilledArgument(name, value, "working_fact", _fact_origin(fact), label)
    return None


def _words(name: str) -> list[str]:
    """``input_file`` / ``inputFile`` / ``input-file`` → ``["input", "file"]``."""
    return [w for w in re.split(r"[\s_\-.]+", split_name(name).casefold()) if w]


def _fact_labels(name: str, prop: Mapping[str, Any]) -> set[str]:
    description = prop.get("description")
    description = description if isinstance(description, str) else ""
    key, words = name_key(name), _words(name)
    labels: set[str] = set()
    for names, last_words, described, label in _KINDS:
        if key in names or (words and words[-1] in last_words) or described.search(description):
            if label == "date" and _RANGE_WORDS.intersection(words):
                continue
            labels.add(label)
    return labels


def _fact_origin(fact: Fact) -> str:
    return fact.label if not fact.origin else f"{fact.origin}.{fact.label}"


# -- recalled long-term memories -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Memory:
    content: str
    kind: str
    id: str | None


def _as_memory(item: object) -> _Memory | None:
    """A recalled item in one shape; None for a sensitive one or anything unreadable."""
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
        return _Memory(item[0], str(item[1]), None)
    record = getattr(item, "record", item)  # a MemoryHit holds the record
    content = getattr(record, "content", None)
    if not isinstance(content, str) or getattr(record, "sensitive", False) is True:
        return None
    memory_id = getattr(record, "id", None)
    return _Memory(content, str(getattr(record, "kind", "")), memory_id if memory_id else None)


# Concepts an argument and a "my X is Y" memory can both name.
_CONCEPTS: Final = {
    "city": "city|town|location|place|城市|所在地|所在城市|地点|位置|居住地",
    "email": "email|e-mail|mail|email address|邮箱|电子邮件|邮件地址",
    "phone": "phone|mobile|tel|telephone|phone number|电话|手机|手机号|电话号码",
    "name": "name|username|fullname|姓名|名字|称呼",
    "language": "language|lang|语言",
    "timezone": "timezone|tz|time zone|时区",
    "company": "company|employer|organization|organisation|公司|单位",
    "address": "address|地址|住址",
}
_CONCEPT_PATTERNS: Final = {
    concept: re.compile(rf"^(?:{words})$", re.IGNORECASE) for concept, words in _CONCEPTS.items()
}
_CONCEPT_WORDS: Final = {
    concept: re.compile(rf"\b(?:{words})\b|(?:{words})(?![a-z])", re.IGNORECASE)
    for concept, words in _CONCEPTS.items()
}
_PERSON = re.compile(r"user|person|people|your|用户|姓名|人名|称呼", re.IGNORECASE)
_KEY_VALUE = [
    re.compile(
        r"^(?:用户|我)的(?P<key>[^，,。是为叫在]{1,12}?)(?:现在|目前)?(?:是|为|叫|在)(?P<value>.+)$"
    ),
    re.compile(
        r"^(?:the\s+user's|my)\s+(?P<key>[\w' -]{1,40}?)\s+(?:is|are)\s+(?:now\s+)?(?P<value>.+)$",
        re.IGNORECASE,
    ),
]
# Statements that name a concept without "my X is Y".
_STATEMENTS: Final[list[tuple[str, re.Pattern[str]]]] = [
    ("city", re.compile(r"^(?:用户|我)(?:现在|目前)?(?:住在|住|家在|生活在)(?P<value>.+)$")),
    ("city", re.compile(r"^(?:the\s+user|i)\s+(?:now\s+)?lives?\s+in\s+(?P<value>.+)$", re.I)),
    ("name", re.compile(r"^(?:用户|我)叫(?P<value>.+)$")),
    ("company", re.compile(r"^(?:用户|我)在(?P<value>.{1,30}?)(?:工作|上班)$")),
    ("company", re.compile(r"^(?:the\s+user|i)\s+works?\s+(?:at|for)\s+(?P<value>.+)$", re.I)),
]


def _concepts(text: str) -> set[str]:
    """Concepts a name or key names: the whole of it, else its words (``home_city`` → city).
    ``name`` counts only when nothing more specific does (``city_name`` is a city)."""
    spaced = split_name(text).replace("_", " ").replace("-", " ")
    folded = " ".join(spaced.split()).casefold()
    found = {c for c, pattern in _CONCEPT_PATTERNS.items() if pattern.match(folded)}
    if not found:
        words = folded.split()
        found = {c for w in words for c, pattern in _CONCEPT_PATTERNS.items() if pattern.match(w)}
    return found - {"name"} if len(found) > 1 else found


def _argument_concepts(name: str, prop: Mapping[str, Any]) -> set[str]:
    """What an argument asks for; a bare ``name`` must be described as a person's name (a
    file's or a project's name must never be filled with the user's)."""
    description = prop.get("description")
    description = description if isinstance(description, str) else ""
    concepts = _concepts(name)
    if concepts == {"name"} and name_key(name) == "name" and not _PERSON.search(description):
        return set()
    if not concepts and description:
        concepts = {c for c, words in _CONCEPT_WORDS.items() if words.search(description)}
        concepts.discard("name")
    return concepts


def _memory_value(content: str) -> list[tuple[str, str]]:
    """``(concept, value)`` pairs a memory's sentence states; a key that names no concept is
    given as ``"key:<name_key>"`` (``我的工号是A12`` → ``("key:工号", "A12")``)."""
    sentence = content.strip().rstrip("。.!！")
    pairs: list[tuple[str, str]] = []
    for pattern in _KEY_VALUE:
        m = pattern.match(sentence)
        if m is not None:
            key = m["key"].strip()
            concepts = _concepts(key)
            pairs.extend((c, m["value"]) for c in concepts or {f"key:{name_key(key)}"})
    for concept, pattern in _STATEMENTS:
        m = pattern.match(sentence)
        if m is not None:
            pairs.append((concept, m["value"]))
    return [(key, _clean_value(value)) for key, value in pairs if _clean_value(value)]


def _clean_value(value: str) -> str:
    value = re.split(r"[，,。;；]|\s+and\s+|\s+but\s+", value.strip(), maxsplit=1)[0]
    return value.strip(" \t\"'“”‘’「」")[:MAX_VALUE_CHARS]


def _from_memories(
    name: str, prop: Mapping[str, Any], memories: list[_Memory]
) -> FilledArgument | None:
    wanted = _argument_concepts(name, prop) | {f"key:{name_key(name)}"}
    label = _label(name, prop)
    for memory in memories:
        for key, raw in _memory_value(memory.content):
            if key not in wanted:
                continue
            value = _fit(raw, prop)
            if value is not _NO_FIT:
                return FilledArgument(name, value, "memory", memory.content, label, memory.id)
    return None
