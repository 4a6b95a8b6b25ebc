"""English statement rules: "I prefer…", "my X is Y", "I live in…", "I usually…", and their
wording as one third-person sentence ("The user lives in Berlin.")."""

from __future__ import annotations

import re
from typing import Final

from hermes.memory.extract.candidate import CLEAR, PLAIN, Found, Rule
from hermes.memory.extract.shape import EMPTY_OBJECT, clean
from hermes.memory.records import MemoryKind

EN_LEAD = (
    r"^(?:(?:actually|also|btw|by\s+the\s+way|oh|well|ok|okay|so|and|but|however|just\s+so\s+you\s+know|fyi"
    r"|for\s+the\s+record|hey|hi|hello)[,\s]+)*"
)


_EN_CHANGE = re.compile(
    r"\b(?:now|no\s+longer|anymore|any\s+more|these\s+days|nowadays|instead)\b", re.I
)


_EN_OLD = re.compile(r"\b(?:over|rather\s+than|instead\s+of|not)\s+(?P<old>[^,.;]+)", re.I)


_EN_BAD_KEYS = re.compile(
    r"^(?:question|point|problem|bad|guess|idea|thought|concern|issue|request|task|pleasure|opinion"
    r"|answer|fault|mistake|goodness|god|gosh|dear|bad\s+luck)$",
    re.IGNORECASE,
)


def _en(pattern: str, rule: Rule) -> tuple[re.Pattern[str], Rule]:
    return re.compile(EN_LEAD + pattern, re.IGNORECASE), rule


_EN_IRREGULAR: Final = {
    "am": "is", "'m": "is", "have": "has", "'ve": "has", "do": "does", "go": "goes",
    "don't": "doesn't", "was": "was", "can": "can", "can't": "can't", "will": "will",
    "'ll": "will", "would": "would", "'d": "would", "should": "should", "could": "could",
    "must": "must", "may": "may", "might": "might", "won't": "won't", "never": "never",
}  # fmt: skip
_EN_PAST = re.compile(
    r"^(?:\w+ed|went|was|were|had|did|got|made|bought|saw|met|took|gave|came|left|began|wrote"
    r"|told|said|found|thought|felt|kept|lost|paid|sold|sent|spent|grew|knew|ran|won)$",
    re.IGNORECASE,
)
_EN_ADVERBS = re.compile(
    r"^(?:really|now|actually|also|still|totally|absolutely|much|mostly|usually|generally|always"
    r"|often|never|definitely|truly|currently|normally|typically|regularly|sometimes)$",
    re.IGNORECASE,
)
_EN_PRONOUNS: Final = [(re.compile(rf"\b(?:{p})\b", re.I), r) for p, r in (
    ("myself", "themselves"), ("mine", "theirs"), ("my", "their"), ("me", "them"),
    (r"I'm|I\s+am", "they are"), ("I", "they"), ("your", "the assistant's"),
    ("you", "the assistant"),
)]  # fmt: skip


def _conjugate(verb: str) -> str:
    """Third person singular of ``verb`` (good enough for what follows "I" in a memory)."""
    lower = verb.lower()
    if lower in _EN_IRREGULAR:
        return _EN_IRREGULAR[lower]
    if _EN_PAST.match(verb) or lower.endswith("n't") or lower == "not":
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", lower):
        return verb + "es"
    if re.search(r"[^aeiou]y$", lower):
        return verb[:-1] + "ies"
    return verb + "s"


def en_rest(text: str) -> str:
    for pattern, replacement in _EN_PRONOUNS:
        text = pattern.sub(replacement, text)
    return text


def en_third_person(text: str) -> str:
    """``I like my tea`` → ``The user likes their tea``; ``my X`` → ``The user's X``."""
    text = " ".join(clean(text).split())
    lead = re.match(r"^(?:I'm|I\s+am)\b\s*", text, re.IGNORECASE)
    if lead is not None:
        return en_sentence("The user is " + en_rest(text[lead.end() :]))
    lead = re.match(r"^I('ve|'ll|'d)\b\s*", text, re.IGNORECASE)
    if lead is not None:
        verb = _EN_IRREGULAR[lead[1].lower()]
        return en_sentence(f"The user {verb} " + en_rest(text[lead.end() :]))
    lead = re.match(r"^my\s+", text, re.IGNORECASE)
    if lead is not None:
        return en_sentence("The user's " + en_rest(text[lead.end() :]))
    if not re.match(r"^I\s+", text):
        return en_sentence(en_rest(text))
    words = text[2:].split(" ")
    verb_at = next((i for i, w in enumerate(words) if not _EN_ADVERBS.match(w)), len(words))
    if verb_at < len(words):
        verb = words[verb_at]
        last = verb_at == len(words) - 1
        words[verb_at] = "does" if verb.lower() == "do" and not last else _conjugate(verb)
    out = words
    return en_sentence("The user " + en_rest(" ".join(out)))


def en_sentence(text: str) -> str:
    text = clean(text)
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def _en_preference(m: re.Match[str]) -> Found | None:
    adv, verb, obj = " ".join((m["adv"] or "").split()), " ".join(m["verb"].split()), m["obj"]
    if EMPTY_OBJECT.match(obj):
        return None
    negative = re.search(r"\b(?:don't|do\s+not)\b", adv, re.I) is not None
    adv = re.sub(r"\b(?:don't|do\s+not|do)\b\s*", "", adv, flags=re.I).strip()
    if negative:
        phrase = f"doesn't {adv + ' ' if adv else ''}{verb}"
    elif verb.lower().startswith(("can't", "cannot")):
        phrase = f"{adv + ' ' if adv else ''}{verb}"
    else:
        phrase = f"{adv + ' ' if adv else ''}{_conjugate(verb)}"
    changed = _EN_CHANGE.search(f"{adv} {obj}") is not None
    hint = None
    if changed:
        old = _EN_OLD.search(obj)
        hint = clean(old["old"]) if old is not None else clean(obj)
        if "no longer" in adv.lower():
            hint = clean(obj)
    strong = re.search(r"\b(?:really|absolutely|totally|definitely|truly|love|adore)\b", adv + verb)
    content = en_sentence(f"The user {phrase} " + en_rest(obj))
    return Found("preference", content, CLEAR if strong else PLAIN, None, hint)


def _en_key_value(m: re.Match[str]) -> Found | None:
    key, value = " ".join(m["key"].split()), m["value"]
    if _EN_BAD_KEYS.match(key) or EMPTY_OBJECT.match(value):
        return None
    kind: MemoryKind = "preference" if re.search(r"favou?rite|preferred", key, re.I) else "fact"
    changed = m["now"] is not None
    content = en_sentence(f"The user's {en_rest(key)} {m['cop']} {en_rest(value)}")
    return Found(kind, content, CLEAR, key.lower(), key.lower() if changed else None)


def _en_simple(kind: MemoryKind, template: str, topic: str | None = None) -> Rule:
    def rule(m: re.Match[str]) -> Found | None:
        value = clean(m["value"])
        if EMPTY_OBJECT.match(value):
            return None
        changed = "now" in m.groupdict() and m["now"] is not None
        content = en_sentence(template.format(value=en_rest(value)))
        return Found(kind, content, CLEAR, topic, topic if changed else None)

    return rule


def _en_identity(m: re.Match[str]) -> Found | None:
    value = clean(m["value"])
    if EMPTY_OBJECT.match(value) or len(value) > 60:
        return None
    kind: MemoryKind = "preference" if re.match(r"(?:big\s+|huge\s+)?fan\s+of", value) else "fact"
    return Found(kind, en_sentence(f"The user is {m['article']} {en_rest(value)}"), PLAIN)


def _en_habit(m: re.Match[str]) -> Found | None:
    if EMPTY_OBJECT.match(m["rest"]) or len(clean(m["rest"])) < 3:
        return None
    return Found("habit", en_third_person(f"I {m['adv']} {m['rest']}"), PLAIN)


_I_AM = r"(?:i'm|i\s+am)\s+"
EN_RULES: Final = [
    _en(r"my\s+name\s+is\s+(?P<value>[\w' .-]{1,40})$",
        _en_simple("fact", "The user's name is {value}", "name 姓名")),
    _en(r"(?:you\s+can\s+|please\s+)?call\s+me\s+(?P<value>[\w' .-]{1,30})$",
        _en_simple("preference", "The user wants to be called {value}", "name 称呼")),
    _en(_I_AM + r"(?P<value>\d{1,3})\s+years?\s+old$",
        _en_simple("fact", "The user is {value} years old", "age 年龄")),
    _en(_I_AM + r"(?P<now>now\s+)?from\s+(?P<value>.{1,60})$",
        _en_simple("fact", "The user is from {value}", "hometown 家乡")),
    _en(_I_AM + r"(?P<value>vegetarian|vegan|left-handed|right-handed|married|single|divorced"
        r"|retired|pregnant|diabetic|lactose\s+intolerant|allergic\s+to\s+.{1,40})$",
        _en_simple("fact", "The user is {value}")),
    _en(r"i\s+(?P<now>now\s+|currently\s+)?live\s+(?P<value>(?:in|at|near|on)\s+.{1,60})$",
        _en_simple("fact", "The user lives {value}", "residence 居住地")),
    _en(r"i(?:'ve|\s+have)?\s+(?P<now>just\s+)?moved\s+to\s+(?P<value>.{1,60})$",
        _en_simple("fact", "The user lives in {value}", "residence 居住地")),
    _en(r"i\s+(?P<now>now\s+|currently\s+)?work\s+(?P<value>(?:at|for|in|as)\s+.{1,60})$",
        _en_simple("fact", "The user works {value}", "work 工作")),
    _en(r"i\s+was\s+born\s+(?P<value>(?:in|on)\s+.{1,40})$",
        _en_simple("fact", "The user was born {value}", "birth 出生")),
    _en(r"my\s+(?P<key>[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,3}?)\s+(?P<cop>is|are)\s+"
        r"(?P<now>now\s+)?(?P<value>.{1,100})$", _en_key_value),
    _en(r"i\s+(?P<adv>(?:(?:really|now|actually|also|still|totally|absolutely|much|mostly"
        r"|generally|definitely|truly|do|don't|do\s+not|no\s+longer)\s+)*)(?P<verb>like|love"
        r"|prefer|enjoy|hate|dislike|adore|despise|can't\s+stand|cannot\s+stand)\s+"
        r"(?P<obj>.{1,100})$", _en_preference),
    _en(r"i\s+(?P<adv>usually|always|often|normally|generally|typically|regularly)\s+"
        r"(?P<rest>.{1,100})$", _en_habit),
    _en(_I_AM + r"(?P<article>an?)\s+(?P<value>.{1,60})$", _en_identity),
]  # fmt: skip
