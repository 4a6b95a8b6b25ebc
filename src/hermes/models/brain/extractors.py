"""Slot extractors: how a slot's value is taken from the user's text.

A slot's ``from`` in the intent YAML is either a built-in extractor name or a regular expression
with a named group:

- ``rest``: the text left after removing what the intent's pattern matched (``翻译 hello`` with
  pattern ``^翻译`` → ``hello``); when the user answers a question, the whole answer.
- ``text``: the whole message.
- ``expression``: arithmetic for the calculator (:mod:`hermes.models.brain.expression`); a
  continuation ("再加100") is applied to the session's last result.
- ``timezone``: a city or zone name as the user wrote it ("东京", "London", "Asia/Tokyo",
  "UTC+8"); the ``current_time`` tool resolves it. Several places ("纽约和伦敦", "New York and
  London") give a list: the brain then makes one call per place.
- ``number``: the first number, digits or Chinese numerals (``三十`` → 30).
- ``memory`` / ``memory_kind``: what an explicit "请记住…" / "remember that…" asks to keep (the
  memory rules' sentence, e.g. "用户住在上海。") and its kind (fact, preference …).
- a regex: the group named like the slot, else the first named group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hermes.models.brain.expression import parse_expression, resolve_expression
from hermes.text.numerals import NUMERAL_CHARS, chinese_to_int

BUILTIN_SOURCES = frozenset(
    {"rest", "text", "expression", "timezone", "number", "memory", "memory_kind"}
)

_EDGE_PUNCTUATION = " \t\r\n:：,，.。!！?？;；\"'“”‘’「」()（）"
_ZONE_LITERAL = re.compile(
    r"\b(?:[A-Za-z]+/[A-Za-z_]+(?:/[A-Za-z_]+)?|(?:UTC|GMT)(?:\s*[+-]\s*\d{1,2}(?::?\d{2})?)?)"
    r"(?![A-Za-z])"
)
_EN_PLACE = re.compile(
    r"\b(?:in|at|for)\s+([A-Za-z][A-Za-z .'-]*?)"
    r"(?:\s+(?:right\s+now|now|today|currently|at\s+the\s+moment))?\s*[?.!]*\s*$",
    re.IGNORECASE,
)
_EN_NOT_PLACES = frozenset({"the moment", "a moment", "a minute", "general", "short"})
# Everything in a Chinese time/date question that is not the place ("东京现在几点？" → 东京).
_ZH_FILLER = re.compile(
    r"你好|您好|嗨|哈喽|喂|麻烦|请问|请告诉我|告诉我|帮我查一?下|帮我看一?下|查一?下|看一?下"
    r"|我想问一?下|问一?下|我想知道|想知道|你知道|知道|请|然后|接着|另外|还有|顺便"
    r"|现在|当前|目前|此刻|此时|今天|今日|那边|那里|这边|这里|我这边|我这里|当地|时区"
    r"|时间|日期|日子|几点钟?|几时|几号|几月几[日号]|星期几|周几|礼拜几|多少|什么|几"
    r"|的|是|在|呢|吗|嘛|啊|呀|了|吧|[?？!！。，,.、:：]"
)
_ZH_PLACE_LIMIT = 20
# What joins several places in one question: 纽约和伦敦, 东京、首尔, New York and London.
_ZH_JOINER = re.compile(r"\s*(?:以及|和|与|跟|及|、|&)\s*")
_EN_JOINER = re.compile(r"\s*(?:,|&|\band\b)\s*", re.IGNORECASE)
_JOINED = "\x00"
_ARITHMETIC = re.compile(rf"[\d\s.+\-*/×÷{NUMERAL_CHARS}点加减乘以除的\x00]+")
_NUMBER = re.compile(rf"-?\d+(?:\.\d+)?|[{NUMERAL_CHARS}]+")


@dataclass(frozen=True, slots=True)
class SlotInput:
    """What an extractor may look at.

    ``match`` is the intent pattern's match (``None`` when the user is answering a question);
    ``answering`` is true when the whole message is the answer to the slot's question.
    """

    text: str
    match: re.Match[str] | None
    last_result: Any
    answering: bool


def extract_builtin(source: str, given: SlotInput) -> Any | None:
    """The value of a built-in extractor, or ``None`` if the text does not contain one."""
    if source == "expression":
        parsed = parse_expression(given.text)
        return None if parsed is None else resolve_expression(parsed, given.last_result)
    if source == "timezone":
        return extract_timezone(given.text, answering=given.answering)
    if source in ("memory", "memory_kind"):
        return extract_memory(given.text, kind=source == "memory_kind")
    if source == "number":
        return extract_number(given.text)
    if source == "text":
        return _nonblank(given.text)
    # "rest"
    if given.match is None or given.answering:
        return _nonblank(given.text)
    start, end = given.match.span()
    return _nonblank(given.text[:start] + " " + given.text[end:])


def extract_by_pattern(pattern: re.Pattern[str], group: str, text: str) -> str | None:
    """The named ``group`` of the first match of ``pattern`` in ``text`` — or, when that group
    took no part in the match, the first named group that did (alternatives may each have
    their own: ``(?P<place>…)|in (?P<place_en>…)``)."""
    match = pattern.search(text)
    if match is None:
        return None
    value = match.group(group)
    if value is None:
        value = next((v for v in match.groupdict().values() if v is not None), None)
    return None if value is None else _nonblank(value)


def extract_timezone(text: str, *, answering: bool = False) -> str | list[str] | None:
    """A city or zone name in a time question, as written; ``None`` for "现在几点" alone; a
    list for several places ("纽约和伦敦现在几点" → ["纽约", "伦敦"]).

    When ``answering`` (the user replies to "which city?"), a short reply is the name itself.
    """
    literals = [m.group(0) for m in _ZONE_LITERAL.finditer(text)]
    if literals:
        return _one_or_many(literals)
    english = _EN_PLACE.search(text)
    if english is not None:
        place = english.group(1).strip()
        if place and place.lower() not in _EN_NOT_PLACES:
            return _one_or_many(_EN_JOINER.split(place))
    if any("\u4e00" <= ch <= "\u9fff" for ch in text):
        # The place is the last piece between filler words: 麻烦告诉我东京几点 → 东京; places
        # joined by 和/、 stay together (纽约和伦敦 → 纽约, 伦敦).
        joined = _ZH_JOINER.sub(_JOINED, text)
        pieces = [" ".join(piece.split()) for piece in _ZH_FILLER.split(joined)]
        place = next((piece for piece in reversed(pieces) if piece.strip(_JOINED)), None)
        if place is None or len(place) > _ZH_PLACE_LIMIT or _ARITHMETIC.fullmatch(place):
            return None  # "一加零": arithmetic, not a place
        return _one_or_many(place.split(_JOINED))
    if answering:
        answer = _nonblank(text)
        if answer is not None and len(answer) <= 40:
            return _one_or_many(_EN_JOINER.split(answer))
    return None


def _one_or_many(places: list[str]) -> str | list[str] | None:
    kept: list[str] = []
    for place in places:
        cleaned = _nonblank(place)
        if cleaned is not None and cleaned not in kept:
            kept.append(cleaned)
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else kept


def extract_memory(text: str, *, kind: bool = False) -> str | None:
    """What an explicit "请记住…" asks to keep, as the memory rules write it ("用户住在上海。"),
    or its kind with ``kind``; ``None`` when the text asks nothing to be kept."""
    # Imported here: the memory rules load only when a message asks for a memory.
    from hermes.memory.extract import extract_candidates

    try:
        found = [c for c in extract_candidates(text) if c.explicit]
    except Exception:  # noqa: BLE001 - a rule failing is "nothing to keep", never a crash
        return None
    if not found:
        return None
    return found[0].kind if kind else found[0].content


def extract_number(text: str) -> int | float | None:
    """The first number in the text, digits or Chinese numerals."""
    for match in _NUMBER.finditer(text):
        token = match.group(0)
        if token[-1].isdigit():
            return float(token) if "." in token else int(token)
        value = chinese_to_int(token)
        if value is not None:
            return value
    return None


def _nonblank(text: str) -> str | None:
    stripped = text.strip(_EDGE_PUNCTUATION)
    return stripped or None
