"""Several requests in one message: where one ends and the next begins.

"上海今天多少度？另外帮我算一下 (25+17)*3" is two requests; "15乘以27，再加100" is one (the
second clause continues the calculation); "纽约和伦敦现在几点？" is one question about two
places. :func:`split_requests` cuts a message in three passes:

1. **Always**: at ？ ! ； 。 ? ; and line breaks (a ``.`` only where it ends a sentence, never
   inside 3.5), and before a conjunction that opens a new request — 另外, 此外, 还有, 以及, 顺便,
   同时, "also", "and also", "besides", "by the way". The conjunction itself is dropped.
2. **When the next part stands on its own**: at ，/, and " and " — only if the text after it is
   a request by itself (``is_request``: it matches an intent) or a follow-up on a place
   ("纽约呢？", "and Paris?"), and not a continuation of a calculation ("，再加100"). So
   "what's the weather in Paris and what's 7*8?" splits, "three and a half" and "1,000" do not.
3. **When both parts stand on their own**: at 和/与/跟/以及 ("3加4和5加6"). Otherwise they join
   the things one request is about: "纽约和伦敦现在几点？" is one question.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from hermes.models.brain.numbers import EN_NUMBER_WORDS

__all__ = ["place_follow_up", "split_requests"]

#: More requests than this in one message are not answered one by one (the rest is one part).
MAX_REQUESTS = 8
#: Commas and "and"s tried as a cut between two requests, per sentence.
MAX_SEPARATORS = 24

_STRONG = re.compile(r"[？?！!；;。\n]+|(?<![\d.])\.(?=\s|$)")
_CONJUNCTION = re.compile(
    r"(?:^|[，,、\s]+)(?:另外|此外|还有就是|还有|以及|顺便(?:问一下|问问|说一下)?|同时|再帮我|再问一下"
    r"|(?:and\s+also|also|besides|by\s+the\s+way|btw|additionally)\b)[，,:：\s]*",
    re.IGNORECASE,
)
_OPENING = re.compile(
    r"^\s*(?:然后|接着|之后|再|那么|那|(?:and\s+then|then|and)\b)\s*[，,]?\s*", re.IGNORECASE
)
_WEAK = re.compile(r"\s*(?:，|(?<!\d),|,(?!\d))\s*(?:and\s+)?|\s+and\s+", re.IGNORECASE)
# Joins the things one request is about (纽约和伦敦); two requests only when both sides are.
_JOIN = re.compile(r"\s*(?:以及|和|与|跟)\s*")
# A clause that continues a calculation: an operator or a stage word first.
_CONTINUATION = re.compile(
    r"^\W*(?:再|然后|接着|那么|那)?\s*(?:加上?|减去?|减掉|乘以?|乘上|除以|的?平方|的?立方|的\d+次方"
    r"|[-+*/×÷^]|(?i:then\b|plus\b|minus\b|times\b|multiplied\s+by|divided\s+by|squared\b|cubed\b))"
)
_ZH_FOLLOW = re.compile(
    r"^\W*(?:那|那么|还有|那边)?\s*(?P<place>[^\s，,。？?！!\d]{1,20}?)\s*(?:那边|那里)?\s*"
    r"(?:呢|怎么样|如何|的呢)\W*$"
)
_EN_FOLLOW = re.compile(
    r"^\W*(?:and|what\s+about|how\s+about)\s+(?:in\s+|at\s+|for\s+)?"
    r"(?P<place>[A-Za-z][A-Za-z .'/-]{0,40}?)\s*(?:now|then)?\W*$",
    re.IGNORECASE,
)


def split_requests(text: str, is_request: Callable[[str], bool]) -> list[str]:
    """The requests of ``text`` in order (module docstring); never empty for non-blank text."""
    pieces: list[str] = []
    for sentence in _STRONG.split(text):
        for part in _CONJUNCTION.split(sentence):
            if part.strip():
                pieces.extend(_weak_split(part.strip(), is_request))
    pieces = [_strip_opening(piece, is_request) for piece in pieces]
    if len(pieces) > MAX_REQUESTS:
        pieces = [*pieces[: MAX_REQUESTS - 1], " ".join(pieces[MAX_REQUESTS - 1 :])]
    return pieces or ([text.strip()] if text.strip() else [])


def _strip_opening(piece: str, is_request: Callable[[str], bool]) -> str:
    """A request without the word that joined it to the one before ("然后告诉我现在几点" →
    "告诉我现在几点"), unless that word is part of it ("然后加5" continues a calculation)."""
    found = _OPENING.match(piece)
    if found is None or _CONTINUATION.match(piece):
        return piece
    rest = piece[found.end() :]
    return rest if rest.strip() and is_request(rest) else piece


def _weak_split(text: str, is_request: Callable[[str], bool]) -> list[str]:
    pieces: list[str] = []
    for piece in _split_at(_WEAK, text, is_request, both=False):
        pieces.extend(_split_at(_JOIN, piece, is_request, both=True))
    return pieces


def _split_at(
    separators: re.Pattern[str], text: str, is_request: Callable[[str], bool], *, both: bool
) -> list[str]:
    """``text`` cut at the separators after which a request stands on its own (and, with
    ``both``, before which one does too)."""
    pieces: list[str] = []
    start = 0
    found = list(itertools.islice(separators.finditer(text), MAX_SEPARATORS + 1))
    for index, separator in enumerate(found[:MAX_SEPARATORS]):
        # What follows, up to the next separator: each check reads one piece, so a long
        # message costs linear time, and at most MAX_SEPARATORS places are tried.
        end = found[index + 1].start() if index + 1 < len(found) else len(text)
        rest = text[separator.end() : end]
        if not rest.strip() or _CONTINUATION.match(rest) or _inside_a_number(text, separator):
            continue
        head = text[start : separator.start()].strip()
        if not head or ((both or _has_number(head)) and not is_request(head)):
            # A head with a number that is no request of its own may be the start of the
            # arithmetic that follows ("one hundred apples and one plus zero"): never cut.
            continue
        if is_request(rest) or (not both and place_follow_up(rest) is not None):
            pieces.append(head)
            start = separator.end()
    pieces.append(text[start:].strip())
    return [piece for piece in pieces if piece]


_LAST_WORD = re.compile(r"[A-Za-z]+$")
_DIGIT = re.compile(r"[\d零〇一二两三四五六七八九十百千万亿]")
_FIRST_WORD = re.compile(r"[A-Za-z]+")
_NOT_PLACES = frozenset(
    [
        "你",
        "我",
        "他",
        "她",
        "它",
        "您",
        "你们",
        "我们",
        "他们",
        "这",
        "那",
        "这个",
        "那个",
        "这里",
        "那里",
        "结果",
        "然后",
        "it",
        "that",
        "this",
        "you",
        "me",
        "them",
        "then",
        "now",
        "today",
        "tomorrow",
    ]
)


def _has_number(text: str) -> bool:
    return bool(_DIGIT.search(text)) or any(
        word.lower() in EN_NUMBER_WORDS - {"a", "an", "and"} for word in _FIRST_WORD.findall(text)
    )


def _inside_a_number(text: str, separator: re.Match[str]) -> bool:
    """ "three and a half", "one hundred and five": an "and" between number words."""
    if "and" not in separator.group(0).lower():
        return False
    before = _LAST_WORD.search(text[: separator.start()])
    after = _FIRST_WORD.match(text[separator.end() :])
    return (
        before is not None
        and after is not None
        and before.group(0).lower() in EN_NUMBER_WORDS
        and after.group(0).lower() in EN_NUMBER_WORDS
    )


def place_follow_up(text: str) -> str | None:
    """The place of a follow-up that only names a place: "纽约呢？" → "纽约", "and Paris?" →
    "Paris"; ``None`` for anything else."""
    for pattern in (_ZH_FOLLOW, _EN_FOLLOW):
        found = pattern.match(text.strip())
        if found is not None:
            place = found.group("place").strip()
            if place and place.lower() not in _NOT_PLACES and not _CONTINUATION.match(place):
                return place
    return None
