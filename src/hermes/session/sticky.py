"""What the user says that stays for the whole session (seed 001 §2.2 level 2, seed 004 §5.1).

Three kinds of user message become *sticky items* of their session: an explicit request to keep
something ("记住…", "请记住我的订单号是…", "remember that…"), an identity statement ("我叫张三",
"my name is Alice", "call me Al") and an identifier the user states as their own ("我的订单号是
ORD-1001", "my account number is 88-1203", "my address is …"). A sticky item is read with every
context slice however old it is (``items.sticky``), so neither the window, the budget nor the
rolling summary can push it out of what the model sees.

Cheap on purpose: it runs on every user message, memory on or off, so it is a handful of
bounded regex searches, no dictionary and no model. It reads only the user's own words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

__all__ = ["STICKY_HEADER", "StickyFact", "owned_identifiers", "sticky_facts", "sticky_line"]

#: The first line of the system message that shows the sticky items older than the window.
STICKY_HEADER: Final = (
    "Notes kept from earlier in this conversation (what the user asked to keep or stated about "
    "themselves; still true unless the user said otherwise):\n"
)

#: Longest text scanned (a pasted document keeps its facts in its first lines, if anywhere).
_SCAN_CHARS: Final = 4000
#: Longest value kept for one fact.
_VALUE_CHARS: Final = 120
#: A sticky user message up to this long is shown whole in the notes; a longer one by its facts.
WHOLE_MESSAGE_CHARS: Final = 300
#: What a secret was replaced by (``hermes.session.secrets``): never a value worth keeping.
_SECRET = re.compile(r"\[(?:secret removed|已隐去的机密)\]")


@dataclass(frozen=True, slots=True)
class StickyFact:
    """One thing that makes a user message sticky: ``label`` (``keep``, ``name``,
    ``order_id``, ``account``, ``ticket_id``, ``address``, ``email``, ``phone``, ``id``) and
    the value as the user wrote it."""

    label: str
    value: str

    def line(self) -> str:
        return f"{self.label}: {self.value}"


# -- explicit requests ------------------------------------------------------------------------

_ZH_KEEP = re.compile(
    r"(?<!不要)(?<!不用)(?<!别)(?:记住|记下来?|记一下|记着|记好|牢记|别忘了|不要忘了|别忘记|不要忘记)"
    r"(?:了|一下|下来|哦|啊)?[：:，,、\s]*(?P<body>[^。！!？?\n]{2,})"
)
_EN_KEEP = re.compile(
    r"\b(?:remember|memori[sz]e|keep\s+in\s+mind|don't\s+forget|do\s+not\s+forget|never\s+forget"
    r"|make\s+a\s+note|note)(?:\s+that\b|\s*[:,])?\s+(?P<body>[^.!?\n]{2,})",
    re.IGNORECASE,
)
# "do you remember…?", "你还记得…吗": a question about memory, not a request to keep anything.
_EN_ASKING = re.compile(r"\b(?:do|did|can't|don't|won't|will)\s+you\s+(?:still\s+)?$", re.I)
_NOT_KEEP = re.compile(r"不要记|别记|不用记|不需要记|\b(?:don't|do\s+not|never)\s+remember\b", re.I)

# -- identity ---------------------------------------------------------------------------------

_ZH_NAME = re.compile(
    r"(?:我的名字(?:是|叫)|我叫|我姓|(?:你)?(?:可以|就)?(?:叫|称呼)我)\s*"
    r"(?P<value>[^\s，,。！!？?、；;]{1,20})"
)
_EN_NAME = re.compile(
    r"\b(?:my\s+name\s+is|call\s+me|i'm|i\s+am)\s+"
    r"(?P<value>(?:Dr\.?\s+|Mr\.?\s+|Ms\.?\s+|Mrs\.?\s+)?[A-Z][\w'-]{1,30}(?:\s+[A-Z][\w'-]{1,30})?)"
)
_EN_NOT_NAMES: Final = frozenset((
    "Sorry", "Fine", "Good", "Okay", "OK", "Not", "Here", "Back", "Done", "Ready", "Sure",
    "Happy", "Glad", "Afraid", "Going", "Looking", "Trying", "Just", "Still", "Also", "Really",
    "Very", "So", "Confused", "Tired", "Busy", "Interested", "Curious",
))  # fmt: skip

# -- identifiers the user states as their own ---------------------------------------------------

_ID_VALUE = r"#?(?P<value>[A-Za-z0-9][A-Za-z0-9_./-]{1,39})(?![A-Za-z0-9_-])"
_ZH_OWN_NOUNS: Final = {
    "订单号": "order_id", "订单编号": "order_id", "订单": "order_id", "单号": "order_id",
    "运单号": "order_id", "快递单号": "order_id", "物流单号": "order_id",
    "工单号": "ticket_id", "工单": "ticket_id", "账号": "account", "帐号": "account",
    "账户": "account", "帐户": "account", "用户名": "account", "会员号": "account",
    "客户号": "account", "客户编号": "account", "编号": "id", "id": "id", "ID": "id",
}  # fmt: skip
_EN_OWN_NOUNS: Final = {
    "order": "order_id", "tracking": "order_id", "shipment": "order_id", "parcel": "order_id",
    "package": "order_id", "booking": "order_id", "reservation": "order_id",
    "confirmation": "order_id", "invoice": "order_id", "ticket": "ticket_id",
    "case": "ticket_id", "issue": "ticket_id", "account": "account", "customer": "account",
    "member": "account", "membership": "account", "user": "account", "username": "account",
}  # fmt: skip


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_ZH_OWN_ID = re.compile(
    r"(?:我的|我们的|我那个|我这个)(?P<noun>" + _alternation(_ZH_OWN_NOUNS) + r")(?:号码|号)?"
    r"\s*(?:是|为|叫|[:：=#])?\s*" + _ID_VALUE
)
_EN_OWN_ID = re.compile(
    r"\b(?:my|our)\s+(?P<noun>" + _alternation(_EN_OWN_NOUNS) + r")"
    r"(?:\s+(?:id|no\.?|number|num|code|name|ref(?:erence)?|#))?"
    r"\s*(?:is|was|=|:|#)?\s*" + _ID_VALUE,
    re.IGNORECASE,
)
_EN_ID_IS_MINE = re.compile(
    r"(?<![\w-])(?P<value>[A-Za-z0-9][A-Za-z0-9_-]{2,39})\s+is\s+(?:my|our)\s+"
    r"(?P<noun>" + _alternation(_EN_OWN_NOUNS) + r")\b",
    re.IGNORECASE,
)
_ZH_ID_IS_MINE = re.compile(
    r"(?<![A-Za-z0-9_-])(?P<value>[A-Za-z0-9][A-Za-z0-9_-]{2,39})\s*是我的(?P<noun>"
    + _alternation(_ZH_OWN_NOUNS)
    + ")"
)
_ZH_CONTACT = re.compile(
    r"我的(?P<noun>地址|住址|收货地址|邮箱|电子邮箱|手机号码?|电话号码?|手机|电话)"
    r"\s*(?:是|为|[:：])\s*(?P<value>[^\n。！!？?；;]{3,80})"
)
_EN_CONTACT = re.compile(
    r"\bmy\s+(?P<noun>(?:home\s+|shipping\s+|delivery\s+)?address|e-?mail(?:\s+address)?"
    r"|(?:phone|mobile|cell)(?:\s+number)?)\s*(?:is|:)\s*(?P<value>[^\n!?;]{3,80})",
    re.IGNORECASE,
)
_CONTACT_LABELS: Final = (("地址", "address"), ("住址", "address"), ("邮", "email"))


def _contact_label(noun: str) -> str:
    lowered = noun.lower()
    if "address" in lowered:
        return "address"
    if "mail" in lowered:
        return "email"
    for word, label in _CONTACT_LABELS:
        if word in noun:
            return label
    return "phone"


def _clip(value: str) -> str:
    value = " ".join(value.split()).strip(" ，,。.、；;")
    return value if len(value) <= _VALUE_CHARS else value[: _VALUE_CHARS - 1] + "…"


def owned_identifiers(text: str) -> list[StickyFact]:
    """Identifiers (order, ticket, account ids) and contact details the user states as their
    own ("我的订单号是ORD-1", "my account number is 88-1203", "ORD-9 is my order"), in order."""
    text = text[:_SCAN_CHARS]
    found: list[tuple[int, StickyFact]] = []
    for pattern, nouns in (
        (_ZH_OWN_ID, _ZH_OWN_NOUNS),
        (_ZH_ID_IS_MINE, _ZH_OWN_NOUNS),
        (_EN_OWN_ID, _EN_OWN_NOUNS),
        (_EN_ID_IS_MINE, _EN_OWN_NOUNS),
    ):
        for m in pattern.finditer(text):
            value = m["value"].rstrip("./")
            if any(ch.isdigit() for ch in value) and not _SECRET.search(value):
                label = nouns.get(m["noun"], nouns.get(m["noun"].lower(), "id"))
                found.append((m.start("value"), StickyFact(label, value)))
    for pattern in (_ZH_CONTACT, _EN_CONTACT):
        for m in pattern.finditer(text):
            value = _clip(m["value"])
            if value and not _SECRET.search(value):
                found.append((m.start("value"), StickyFact(_contact_label(m["noun"]), value)))
    found.sort(key=lambda pair: pair[0])
    unique = dict.fromkeys(fact for _, fact in found)
    return list(unique)


def _explicit(text: str) -> list[StickyFact]:
    if _NOT_KEEP.search(text):
        return []
    facts = []
    for m in _ZH_KEEP.finditer(text):
        facts.append(StickyFact("keep", _clip(m["body"])))
    for m in _EN_KEEP.finditer(text):
        if _EN_ASKING.search(text[: m.start()]):
            continue
        facts.append(StickyFact("keep", _clip(m["body"])))
    return [f for f in facts if not _SECRET.search(f.value)]


def _names(text: str) -> list[StickyFact]:
    facts = [StickyFact("name", _clip(m["value"])) for m in _ZH_NAME.finditer(text)]
    for m in _EN_NAME.finditer(text):
        first = m["value"].split()[0].rstrip(".")
        if first not in _EN_NOT_NAMES:
            facts.append(StickyFact("name", _clip(m["value"])))
    return facts


# A sticky message has one of these words; most messages have none and pay only this search.
_HINT = re.compile(
    r"记|忘|名字|我叫|我姓|叫我|称呼我|我的|我们的|我那个|我这个|是我的"
    r"|\b(?:remember|memori[sz]e|keep\s+in\s+mind|forget|note|my|our|call\s+me|i'm|i\s+am)\b",
    re.IGNORECASE,
)


def sticky_facts(text: str) -> list[StickyFact]:
    """What makes the user's message ``text`` sticky (explicit keep requests, names, owned
    identifiers); ``[]`` for an ordinary message. A part that only holds a removed secret
    gives nothing (a secret is never kept)."""
    if not isinstance(text, str) or not text.strip():
        return []
    text = text[:_SCAN_CHARS]
    if _HINT.search(text) is None:
        return []
    facts = [*_explicit(text), *_names(text), *owned_identifiers(text)]
    return list(dict.fromkeys(facts))


def sticky_line(content: str, facts: list[str] | None) -> str:
    """How a sticky user message is shown in the notes: whole when short, else by its facts
    (``facts``: the lines stored with it, or found again when absent)."""
    flat = " ".join(content.split())
    if len(flat) <= WHOLE_MESSAGE_CHARS:
        return flat
    lines = facts if facts else [f.line() for f in sticky_facts(content)]
    if not lines:
        return flat[: WHOLE_MESSAGE_CHARS - 1] + "…"
    return "; ".join(lines)
