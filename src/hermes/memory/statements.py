"""What a memory's statement is about, and how a newer one stands to an older one (seed 001
§5.4 "以新记忆为准，并给旧记忆打上已过期标签").

:func:`read_statement` gives each memory a rule-based *subject* — ``is:<key>`` for one-valued
facts ("my city is …", "用户的生日是…", lives in / 住在, works at / 在…工作, name, hometown, age),
``likes:<head>`` for preferences and things the user regularly consumes (the object's leading
verb — ``likes:喝``, ``likes:drink`` — or the whole object), ``topic:<topic>`` from a
non-sensitive topic otherwise — and :func:`relation` says whether a newer statement of the same
kind replaces an older one. Used where a memory is written (a changed preference supersedes
the old one at once: ``hermes.memory.supersede``) and by the upkeep job (``hermes.memory.upkeep``),
which also finds the cases only an embedder can see.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from hermes.memory.keywords import normalize

__all__ = ["DIGITS", "NEGATION", "Statement", "canonical", "read_statement", "relation", "squash"]


@dataclass(frozen=True, slots=True)
class Statement:
    """What the upkeep job reads in a memory's text.

    ``subject``: ``is:<key>``, ``likes:<head>``, ``topic:<topic>`` or None; ``value``: the
    normalized value or object; ``negative``: a negation or a dislike; ``changed``: it says
    something changed ("now", "现在", "改…"); ``additive``: "also"/"也"; ``old_value``: the
    replaced value when named ("over tea", "而不是茶"); ``choice``: a comparative preference
    ("prefer", "偏好", "更喜欢").
    """

    subject: str | None
    value: str = ""
    negative: bool = False
    changed: bool = False
    additive: bool = False
    old_value: str | None = None
    choice: bool = False


NEGATION = re.compile(
    r"\b(?:not|no|never|nobody|nothing|neither|nor|cannot|no longer)\b|n't\b|[不没别勿未]"
)
DIGITS = re.compile(r"\d+")
_SQUASH = re.compile(r"[\W_]+")
_TRIM = " \t.。!！?？~～…,，;；:：'\"“”"

_EN_FACTS: tuple[tuple[re.Pattern[str], str | None], ...] = tuple(
    (re.compile(pattern), key)
    for pattern, key in (
        (r"^i (?P<now>now |currently |still )?lives? (?:in|at|near|on) (?P<v>.+)$", "residence"),
        (r"^i(?:'ve| have| has)? (?P<now>just |recently )?moved to (?P<v>.+)$", "residence"),
        (r"^i (?P<now>now |currently )?works? (?:at|for|in|as) (?P<v>.+)$", "work"),
        (r"^i(?:'m| am| is) (?P<now>now |originally )?from (?P<v>.+)$", "hometown"),
        (r"^my name is (?P<now>now )?(?P<v>.+)$", "name"),
        (r"^i(?:'m| am| is) (?P<now>now )?(?P<v>\d{1,3}) years? old$", "age"),
        (r"^my (?P<k>[a-z][\w'-]*(?: [a-z][\w'-]*){0,3}?) (?:is|are) (?P<now>now )?(?P<v>.+)$",
         None),
    )
)  # fmt: skip
_ZH_FACTS: tuple[tuple[re.Pattern[str], str | None], ...] = tuple(
    (re.compile(pattern), key)
    for pattern, key in (
        (r"^我(?P<now>现在|目前|已经)?(?:住在|住|家在|生活在)(?P<v>.+)$", "residence"),
        (r"^我(?P<now>现在|目前|已经)?搬(?:家)?(?:到|去)了?(?P<v>.+)$", "residence"),
        (r"^我(?P<now>现在|目前)?在(?P<v>.+?)(?:工作|上班|任职)", "work"),
        (r"^我(?P<now>)(?:来自|老家是|老家在|的老家是)(?P<v>.+)$", "hometown"),
        (r"^我(?P<now>)(?:叫|的名字(?:是|叫))(?P<v>.+)$", "name"),
        (r"^我的(?P<k>[^，,。是为叫在]{1,12}?)(?P<now>现在|目前|已经)?"
         r"(?:是|为|叫|在|改成了?|换成了?|改为)(?P<v>.+)$", None),
    )
)  # fmt: skip

_EN_PREFERENCE = re.compile(
    r"^i (?P<adv>(?:(?:really|now|actually|also|still|totally|absolutely|much|mostly|generally"
    r"|definitely|truly|do|does|don't|doesn't|do not|does not|no longer|never|rather|even"
    r"|currently|kind of|sort of)\s+)*)(?P<verb>likes?|loves?|prefers?|enjoys?|hates?"
    r"|dislikes?|adores?|despises?|can't stand|cannot stand)\s+(?P<obj>.+)$"
)
# What the user regularly drinks, eats, uses …: read as a preference of that activity ("I now
# drink decaf" replaces "I drink green tea": likes:drink), as "用户现在喝…" does in Chinese.
_EN_CONSUMES = re.compile(
    r"^i (?P<adv>(?:(?:now|still|also|usually|mostly|only|currently|always|no longer|never"
    r"|don't|doesn't|do not|does not)\s+)*)(?P<verb>drink|eat|use|wear|play|read|watch|drive)"
    r"(?:s|es)?\s+(?P<obj>.+)$"
)
_ZH_CONSUMES = re.compile(
    r"^我(?P<adv>(?:现在|目前|最近|如今|已经|平时|一般|通常|每天|只|都|也|还|不再|不)*)"
    r"(?P<obj>[喝吃用穿坐开].+)$"
)
_EN_NEGATIVE = re.compile(
    r"\b(?:don't|doesn't|do not|does not|no longer|never)\b|^(?:hate|dislike|despise|can|cannot)"
)
_EN_CHANGED_ADV = re.compile(r"\b(?:now|no longer|currently)\b")
_EN_OLD = re.compile(r"\s+(?:over|rather than|instead of|more than|not)\s+(?P<old>.+)$")
_EN_TAIL = re.compile(
    r"\s+(?P<w>now|anymore|any more|instead|these days|nowadays|too|as well|a lot|very much"
    r"|so much)$"
)
_EN_ACTIVITIES = frozenset((
    "drink", "drinking", "eat", "eating", "use", "using", "play", "playing", "read", "reading",
    "watch", "watching", "listen", "listening", "wear", "wearing", "go", "going", "take",
    "taking", "travel", "traveling", "travelling", "drive", "driving", "ride", "riding", "cook",
    "cooking", "write", "writing", "code", "coding", "sit", "sitting", "fly", "flying",
))  # fmt: skip
_ZH_PREFERENCE = re.compile(
    r"^我(?P<adv>(?:现在|目前|最近|如今|已经|其实|一直|还是|也|都|比较|更|最|真的|很|非常|特别"
    r"|挺|超级|超|蛮|向来|从来|不太|不再|不|没那么|还)*)(?P<verb>喜欢|喜爱|热爱|爱(?!人)|偏好"
    r"|偏爱|讨厌|厌恶|受不了|改喝|改吃|改用|改成|换成)(?P<obj>.+)$"
)
_ZH_CHANGED_ADV = re.compile(r"现在|目前|最近|如今|已经|不再")
_ZH_OLD = re.compile(r"[，,]?(?:而不是|不再是|不是)(?P<old>[^，,。]+)")
_ZH_ACTIVITIES = frozenset("喝吃用看听玩穿去读坐开骑打弹唱写做")
#: Keys of facts a user has several of at once: a new one does not replace the old one.
_MANY_VALUED = re.compile(
    r"订单|单号|工单|运单|快递|包裹|发票|预订|预约|\b(?:order|ticket|tracking|case|invoice|booking"
    r"|reservation|appointment|parcel|package|shipment)\b"
)
_CHANGE_WORDS = re.compile(
    r"\b(?:now|no longer|anymore|instead|these days|nowadays)\b|现在|目前|如今|改成|换成|改为|不再"
)


def canonical(text: str) -> str:
    """``text`` for comparison: NFKC, case-folded, one space, no closing punctuation, and the
    third person of extracted memories read as the first ("the user's" → "my", "用户" → "我")."""
    value = " ".join(normalize(text).replace("’", "'").split())
    value = re.sub(r"^用户", "我", value)
    value = re.sub(r"^the user's\s+", "my ", value)
    value = re.sub(r"^the user\s+", "i ", value)
    return value.strip(_TRIM)


def squash(text: str) -> str:
    return _SQUASH.sub("", text)


def read_statement(content: str, *, topic: str | None = None, sensitive: bool = False) -> Statement:
    """What ``content`` states and about what (see :class:`Statement`); never raises."""
    text = canonical(content)
    found = _fact(text) or _preference(text)
    if found is not None:
        return found
    if topic and not sensitive:  # a sensitive topic is a category ("finance 财务"), not a key
        key = " ".join(normalize(topic).split())
        return Statement(f"topic:{key}", squash(text), changed=bool(_CHANGE_WORDS.search(text)))
    return Statement(None, squash(text))


def _fact(text: str) -> Statement | None:
    for pattern, key in _ZH_FACTS if re.match("我", text) else _EN_FACTS:
        m = pattern.match(text)
        if m is None:
            continue
        name = key or " ".join(m["k"].split())
        value = m["v"].strip(_TRIM)
        changed = bool(m["now"])
        for tail in (" now", "了"):
            if value.endswith(tail):
                value, changed = value[: -len(tail)].strip(_TRIM), True
        value = re.sub(r"^(?:改成|换成|改为)了?", "", value)
        return Statement(f"is:{name}", squash(value), changed=changed)
    return None


def _preference(text: str) -> Statement | None:
    m = _EN_PREFERENCE.match(text)
    if m is not None:
        return _en_preference(m["adv"], m["verb"], m["obj"])
    m = _ZH_PREFERENCE.match(text)
    if m is not None:
        return _zh_preference(m["adv"], m["verb"], m["obj"])
    m = _EN_CONSUMES.match(text)
    if m is not None:
        return _en_preference(m["adv"], "", f"{m['verb']} {m['obj']}")
    m = _ZH_CONSUMES.match(text)
    if m is not None:
        return _zh_preference(m["adv"], "", m["obj"])
    return None


def _en_preference(adv: str, verb: str, obj: str) -> Statement:
    negative = bool(_EN_NEGATIVE.search(adv) or _EN_NEGATIVE.match(verb))
    changed = bool(_EN_CHANGED_ADV.search(adv))
    additive = bool(re.search(r"\balso\b", adv))
    old = _EN_OLD.search(obj)
    old_value = None
    if old is not None:
        old_value, obj, changed = old["old"].strip(_TRIM), obj[: old.start()], True
    while (tail := _EN_TAIL.search(obj)) is not None:
        changed = changed or tail["w"] not in ("too", "as well", "a lot", "very much", "so much")
        additive = additive or tail["w"] in ("too", "as well")
        obj = obj[: tail.start()]
    obj = re.sub(r"^(?:to|the|a|an)\s+", "", obj.strip(_TRIM))
    words = obj.split()
    head = words[0] if words and words[0] in _EN_ACTIVITIES else obj
    choice = verb.startswith("prefer") or re.search(r"\brather\b", adv) is not None
    old_value = old_value and canonical(old_value)
    return Statement(f"likes:{head}", squash(obj), negative, changed, additive, old_value, choice)


def _zh_preference(adv: str, verb: str, obj: str) -> Statement:
    negative = "不" in adv or "没" in adv or verb in ("讨厌", "厌恶", "受不了")
    changed = bool(_ZH_CHANGED_ADV.search(adv)) or verb.startswith(("改", "换"))
    additive = "也" in adv or re.search("还(?!是)", adv) is not None
    old = _ZH_OLD.search(obj)
    old_value = None
    if old is not None:
        old_value, obj, changed = old["old"].strip(_TRIM), obj[: old.start()], True
    obj = obj.strip(_TRIM)
    if obj.endswith(("了", "啦")):
        obj, changed = obj[:-1].strip(_TRIM), True
    if verb in ("改喝", "改吃", "改用"):
        obj = verb[1] + obj
    head = obj[0] if obj and obj[0] in _ZH_ACTIVITIES else obj
    choice = "更" in adv or verb in ("偏好", "偏爱")
    return Statement(f"likes:{head}", squash(obj), negative, changed, additive, old_value, choice)


def relation(older: Statement, newer: Statement) -> Literal["same", "replaces"] | None:
    """How a newer statement stands to an older one of the same kind (None: unrelated)."""
    subject = newer.subject
    if subject is None or older.subject != subject:
        return None
    if subject.startswith("is:"):
        if older.value == newer.value:
            return "same"
        # One city, one name, one birthday — but a user has many orders and tickets.
        return None if _MANY_VALUED.search(subject) else "replaces"
    if older.value == newer.value:  # the same object: restated, or its polarity flipped
        return "same" if older.negative == newer.negative else "replaces"
    if newer.additive or not newer.changed:
        return None
    # "现在更喜欢喝拿铁" replaces "喜欢喝美式", but "不再喜欢喝咖啡" does not replace "喜欢喝茶".
    return "replaces" if older.negative == newer.negative else None
