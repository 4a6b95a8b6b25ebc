"""Slot extractors: how a slot's value is taken from the user's text.

A slot's ``from`` in the intent YAML is either a built-in extractor name or a regular expression
with a named group:

- ``rest``: the text left after removing what the intent's pattern matched (``翻译 hello`` with
  pattern ``^翻译`` → ``hello``); when the user answers a question, the whole answer.
- ``text``: the whole message.
- ``expression``: arithmetic for the calculator (:mod:`hermes.models.brain.expression`); a
  continuation ("再加100") is applied to the session's last result.
- ``timezone``: a city or zone name as the user wrote it ("东京", "London", "Asia/Tokyo",
  "UTC+8"); the ``current_time`` tool resolves it.
- ``number``: the first number, digits or Chinese numerals (``三十`` → 30).
- a regex: the group named like the slot, else the first named group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hermes.models.brain.expression import parse_expression, resolve_expression
from hermes.models.brain.numerals import NUMERAL_CHARS, chinese_to_int

BUILTIN_SOURCES = frozenset({"rest", "text", "expression", "timezone", "number"})

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
    r"|我想问一?下|问一?下|我想知道|想知道|你知道|知道|请"
    r"|现在|当前|目前|此刻|此时|今天|今日|那边|那里|这边|这里|我这边|我这里|当地|时区"
    r"|时间|日期|日子|几点钟?|几时|几号|几月几[日号]|星期几|周几|礼拜几|多少|什么|几"
    r"|的|是|在|呢|吗|嘛|啊|呀|了|吧|[?？!！。，,.、:：]"
)
_ZH_PLACE_LIMIT = 20
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
    """The named ``group`` of the first match of ``pattern`` in ``text``."""
    match = pattern.search(text)
    if match is None:
        return None
    value = match.group(group)
    return None if value is None else _nonblank(value)


def extract_timezone(text: str, *, answering: bool = False) -> str | None:
    """A city or zone name in a time question, as written; ``None`` for "现在几点" alone.

    When ``answering`` (the user replies to "which city?"), a short reply is the name itself.
    """
    literal = _ZONE_LITERAL.search(text)
    if literal is not None:
        return literal.group(0)
    english = _EN_PLACE.search(text)
    if english is not None:
        place = english.group(1).strip()
        if place and place.lower() not in _EN_NOT_PLACES:
            return place
    if any("\u4e00" <= ch <= "\u9fff" for ch in text):
        # The place is the last piece between filler words: 麻烦告诉我东京几点 → 东京.
        pieces = [" ".join(piece.split()) for piece in _ZH_FILLER.split(text)]
        place = next((piece for piece in reversed(pieces) if piece), None)
        return place if place is not None and len(place) <= _ZH_PLACE_LIMIT else None
    if answering:
        answer = _nonblank(text)
        if answer is not None and len(answer) <= 40:
            return answer
    return None


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
