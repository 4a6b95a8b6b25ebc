"""The offline extractor: explicit requests ("记住…", "remember that…"), standing instructions
("以后…", "from now on…") and the statement rules of each language, over the user's sentences."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any, Protocol

from hermes.memory.extract.candidate import (
    CLEAR,
    DEFAULT_THRESHOLD,
    EXPLICIT,
    HEDGE_PENALTY,
    MAX_BODY_CHARS,
    MAX_CANDIDATES,
    Found,
    MemoryCandidate,
    make_candidate,
)
from hermes.memory.extract.en import EN_LEAD, EN_RULES, en_rest, en_sentence, en_third_person
from hermes.memory.extract.shape import (
    EMPTY_OBJECT,
    HEDGE,
    HYPOTHETICAL,
    META_NEGATION,
    REPORTED,
    clauses,
    clean,
    is_chinese,
    is_question,
    sentences,
    strip_tag_question,
    unhedged,
)
from hermes.memory.extract.zh import ZH_LEAD, ZH_RULES, zh_sentence, zh_third_person
from hermes.memory.records import MemoryKind
from hermes.memory.scan import MAX_SCAN_CHARS, find_dates

# Explicit requests and standing instructions, matched on whole sentences.
_ZH_EXPLICIT = re.compile(
    ZH_LEAD
    + r"(?P<polite>请你?|麻烦你?|你要?|帮我|给我|一定要|要|我要你|我希望你|我想让你|你能|你可以"
    r"|能不能|可以)*(?:记住|记下来?|记一下|记着|记好|牢记|别忘了|不要忘了|别忘记|不要忘记)"
    r"(?:了|一下|下来|哦|啊)?[：:，,、\s]*(?P<body>.+)$"
)
_EN_EXPLICIT = re.compile(
    EN_LEAD + r"(?P<polite>(?:please|pls|can\s+you|could\s+you|would\s+you)\s+)?"
    r"(?:remember|memori[sz]e|note|keep\s+in\s+mind|don't\s+forget|do\s+not\s+forget"
    r"|never\s+forget|make\s+a\s+note)\b(?P<that>\s+that\b|\s*:|\s*,)?\s*(?P<body>.+)$",
    re.IGNORECASE,
)
_ZH_STANDING = re.compile(
    ZH_LEAD + r"(?:请|你)?(?:以后|今后|从现在开始|从现在起|从今以后|从今天起|往后)(?:你)?"
    r"[，,、：:\s]*(?P<body>.+)$"
)
_EN_STANDING = re.compile(
    EN_LEAD + r"(?:please\s+)?(?P<lead>from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future"
    r"|henceforth|from\s+today|always|never)\s*,?\s*(?P<body>.+)$",
    re.IGNORECASE,
)
_EN_IMPERATIVE = re.compile(
    r"^(?:please\s+)?(?:answer|reply|respond|write|use|call|speak|talk|give|keep|be|show|include"
    r"|send|make|remind|tell|ask|put|format|say|don't|do\s+not)\b",
    re.IGNORECASE,
)
_BIRTHDAY = re.compile(r"生日|纪念日|birthday|anniversary", re.IGNORECASE)
_PREFERENCE_WORDS = re.compile(
    r"喜欢|爱|偏好|讨厌|习惯|希望|想要|要求|以后|\b(?:prefer|like|love|hate|want|always|never)\b",
    re.IGNORECASE,
)


def _match_rules(clause: str) -> Found | None:
    rules = ZH_RULES if is_chinese(clause) else EN_RULES
    for pattern, rule in rules:
        m = pattern.search(clause)
        if m is not None:
            found = rule(m)
            if found is not None:
                return found
    return None


def _pin_dates(content: str, now: datetime | date | None) -> tuple[str, bool]:
    """Relative days in ``content`` ("明天", "tomorrow") replaced by ISO dates, so the memory
    still means the same day when read later; and whether the content names a day."""
    if now is None:
        return content, False
    mentions = [d for d in find_dates(content, now) if d.label == "date"]
    for d in reversed(mentions):
        if d.relative:
            english = d.text.isascii() and not content[: d.start].rstrip().lower().endswith("on")
            value = f"on {d.value}" if english and not d.text[0].isdigit() else d.value
            content = content[: d.start] + value + content[d.end :]
    return content, bool(mentions)


def _explicit(sentence: str, terminator: str) -> Found | None:
    """A "记住…" / "remember that…" request, or None (also when it is a question)."""
    zh = is_chinese(sentence)
    m = (_ZH_EXPLICIT if zh else _EN_EXPLICIT).search(sentence)
    if m is None:
        return None
    if HYPOTHETICAL.search(sentence[: m.start("body")]):
        return None  # "如果我让你记住…": only a hypothetical *inside* the request is kept
    body, tagged = strip_tag_question(m["body"])
    if (not tagged and not m["polite"]) and ("?" in terminator or "？" in terminator):
        return None
    if m["polite"]:
        body = re.sub(r"[吗呢]\s*$", "", body)  # "你能记住…吗？" is a request, not a question
    body = clean(body)
    if (
        EMPTY_OBJECT.match(body)
        or len(body) > MAX_BODY_CHARS
        or META_NEGATION.search(body)
        or (not zh and re.match(r"^to\b", body, re.IGNORECASE))  # "remember to…": a reminder
        or is_question(body, "")
    ):
        return None
    inner = _match_rules(body) or _standing(body)
    if inner is not None:
        return Found(inner.kind, inner.content, EXPLICIT, inner.topic, inner.supersedes_hint)
    content = zh_sentence(zh_third_person(body)) if zh else en_third_person(body)
    kind: MemoryKind = "preference" if _PREFERENCE_WORDS.search(body) else "fact"
    return Found(kind, content, EXPLICIT)


def _standing(sentence: str) -> Found | None:
    """ "以后回答简短一点" / "from now on, answer in English": a standing instruction."""
    zh = is_chinese(sentence)
    m = (_ZH_STANDING if zh else _EN_STANDING).search(sentence)
    if m is None:
        return None
    body = clean(strip_tag_question(m["body"])[0])
    if EMPTY_OBJECT.match(body) or len(body) > MAX_BODY_CHARS:
        return None
    if zh:
        if re.match(r"^(?:再|会|有空|有机会|的事|就|可能|还|也许)", body):
            return None  # "以后再说": not an instruction
        named = re.match(r"^(?:叫|称呼)我(?P<name>.{1,12}?)(?:就行|就好|吧)?$", body)
        if named is not None:
            content = zh_sentence(f"用户希望被称呼为{named['name']}")
            return Found("preference", content, CLEAR, "name 称呼")
        return Found("preference", zh_sentence("用户要求：以后" + zh_third_person(body)), CLEAR)
    if not _EN_IMPERATIVE.match(body):
        return None  # "always tired", "in the future I might…": not an instruction
    lead = " ".join(m["lead"].lower().split())
    content = en_sentence(f"The user asked: {lead}, {en_rest(body)}")
    return Found("preference", content, CLEAR)


def _sentence_candidates(sentence: str, terminator: str) -> list[Found]:
    found = _explicit(sentence, terminator)
    if found is not None:
        return [found]
    if META_NEGATION.search(sentence) or REPORTED.search(sentence):
        return []
    if HYPOTHETICAL.search(sentence):
        return []  # "如果我喜欢…", "要是下雨，我喜欢…": nothing here is a plain statement
    hedged = HEDGE.search(sentence) is not None
    found = _standing(sentence)
    if found is not None:
        return [] if is_question(sentence, terminator) else [found]
    results: list[Found] = []
    for clause, clause_end in clauses(sentence, terminator):
        if is_question(clause, clause_end):
            continue
        # "I think I like jazz" / "我可能喜欢…" are read without the hedge, with less confidence.
        found = _match_rules(unhedged(clause) if hedged else clause)
        if found is None:
            continue
        if hedged:
            confidence = round(found.confidence - HEDGE_PENALTY, 2)
            found = Found(found.kind, found.content, confidence, found.topic, found.supersedes_hint)
        results.append(found)
    return results


def extract_candidates(
    user_text: str,
    *,
    now: datetime | date | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> list[MemoryCandidate]:
    """Memory candidates in the user's own message, by the offline rules.

    ``user_text`` must be what the user wrote — never a tool result or an assistant reply.
    ``now`` (the user's local time) pins relative days such as "明天" to ISO dates; without it
    they are kept as written. Only candidates with ``confidence >= threshold`` are returned,
    at most :data:`MAX_CANDIDATES`, duplicates removed. Never raises for any text.
    """
    if not isinstance(user_text, str) or not user_text.strip():
        return []
    candidates: dict[str, MemoryCandidate] = {}
    text = user_text
    if len(text) > MAX_SCAN_CHARS:  # cut at the last whole sentence, not mid-word
        text = text[:MAX_SCAN_CHARS]
        end = max(text.rfind(mark) for mark in "。！!？?；;\n")
        text = text[: end + 1] if end > 0 else text
    for sentence, terminator in sentences(text):
        for found in _sentence_candidates(sentence, terminator):
            if found.confidence < threshold:
                continue
            content, has_day = _pin_dates(found.content, now)
            kind = found.kind
            if kind == "fact" and has_day and not _BIRTHDAY.search(content):
                kind = "event"  # "记住我明天下午三点开会": something that happens on a day
                if is_chinese(content) and not content.startswith("用户"):
                    content = "用户" + content
            candidates.setdefault(
                content,
                make_candidate(kind, content, found.confidence, found.topic, found.supersedes_hint),
            )
    return list(candidates.values())[:MAX_CANDIDATES]


class Extractor(Protocol):
    """What the agent calls after a turn: candidates from the user's message text only. The
    turn's ids come along for logging and tracing (an extractor may ignore them)."""

    async def extract(
        self,
        user_text: str,
        *,
        now: datetime | None = None,
        user_id: str | None = None,
        session_id: str = "",
        trace_id: str = "",
    ) -> list[MemoryCandidate]: ...


class RuleExtractor:
    """The offline extractor: :func:`extract_candidates` behind the :class:`Extractor` API."""

    def __init__(self, *, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.threshold = threshold

    async def extract(
        self, user_text: str, *, now: datetime | None = None, **_context: Any
    ) -> list[MemoryCandidate]:
        """Candidates in ``user_text`` (the user's message; never a tool result)."""
        return extract_candidates(user_text, now=now, threshold=self.threshold)
