"""Secrets are not memories; personal data is flagged (seed 003 §2.1 ``sensitive_flag``, §4.4).

**Secrets** — passwords, PINs, CVVs, one-time codes, full bank-card numbers, national ID numbers,
API keys, tokens and private keys — are replaced by a marker in the user's message before
anything else sees it (:func:`redact_secrets`): the session log stores the message with the
marker (the message itself is never lost), and so the model, the summary, working memory, the
long-term memories, the tool-call tiers and every log or export only ever carry the marker.
The reply says that Hermes does not keep secrets (:func:`secret_notice`), whatever the model.

**Personal data** — addresses, phone numbers, e-mail addresses, order and account ids — stays
usable: :func:`personal_kinds` names what a text holds so its item and session are flagged
sensitive, and :func:`mask_personal` is what logs and exports show of such a text.

Pure functions with bounded regex work; nothing here is a model or a dictionary. They err on the
side of hiding: a removed value costs the user a retype, a kept secret costs a lot more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Final, Literal

__all__ = [
    "MARKER_EN",
    "MARKER_ZH",
    "SECRET_MARKERS",
    "PersonalKind",
    "Redaction",
    "SecretKind",
    "asks_for_secret",
    "contains_secret",
    "has_secret_marker",
    "mask_personal",
    "may_hold_secret",
    "only_secrets",
    "personal_kinds",
    "redact_secrets",
    "secret_notice",
    "without_secret_clauses",
]

SecretKind = Literal[
    "password", "pin", "cvv", "otp", "card_number", "id_number", "api_key", "private_key"
]
#: What a removed secret becomes, by the language of the message (zh, en).
MARKER_ZH: Final = "[已隐去的机密]"
MARKER_EN: Final = "[secret removed]"
SECRET_MARKERS: Final = (MARKER_ZH, MARKER_EN)
_MARKER = re.compile(r"\[(?:secret removed|已隐去的机密)\]")
_SCAN_CHARS: Final = 20_000
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")

_NAMES: Final[dict[str, tuple[str, str]]] = {
    "password": ("密码", "password"),
    "pin": ("PIN 码", "PIN"),
    "cvv": ("安全码（CVV）", "CVV"),
    "otp": ("验证码", "one-time code"),
    "card_number": ("银行卡号", "card number"),
    "id_number": ("身份证号", "ID number"),
    "api_key": ("API 密钥 / 令牌", "API key or token"),
    "private_key": ("私钥", "private key"),
}


@dataclass(frozen=True, slots=True)
class Redaction:
    """A text with its secrets replaced by the marker, and what kinds were removed."""

    text: str
    kinds: tuple[SecretKind, ...] = ()

    @property
    def removed(self) -> bool:
        return bool(self.kinds)


# -- secrets led by a keyword ("密码是…", "my PIN is…", "api_key=…") ---------------------------

_IS = (
    r"\s*(?:(?:is|was|are|=|:|：|是|为|：是)\s*)?[「『\"'“‘]?\s*"
    r"(?!\[(?:secret removed|已隐去的机密)\])"  # a marker is what is left of a secret, not one
)
_END = r"(?=[\s，,。；;！!？?」』\"'”’)）\]]|$)"
_KEYWORDS: Final[tuple[tuple[SecretKind, str, str], ...]] = (
    ("password", r"(?:支付|取款|登录|登陆|开机|银行卡|卡|邮箱|账号|帐号|wifi|WiFi|Wi-Fi)?"
     r"(?:密码|口令)|\b(?:pass(?:word|wd|code|phrase)|pwd)\b",
     r"[^\s:：=，,。；;！？」』\"'”’\[][^\s，,。；;！？」』\"'”’]{2,127}"),
    ("pin", r"\bpin(?:\s*(?:code|number|码))?\b|PIN码|pin码", r"\d{4,8}"),
    ("cvv", r"\b(?:cvv2?|cvc2?|csc|security\s+code)\b|安全码|CVV码", r"\d{3,4}"),
    ("otp", r"验证码|校验码|动态码|\b(?:otp|one[-\s]time\s+(?:code|password)|verification\s+code"
     r"|2fa\s+code)\b", r"[A-Za-z0-9]{4,8}"),
    ("card_number", r"(?:银行卡|信用卡|借记卡|储蓄卡)(?:卡号|号码|号)?|卡号"
     r"|\b(?:credit|debit|bank)?\s*card\s*(?:number|no\.?|#)", r"\d(?:[ -]?\d){11,18}"),
    ("id_number", r"身份证(?:号码|号)?|\b(?:ssn|social\s+security(?:\s+number)?|national\s+id"
     r"(?:\s+number)?|id\s+(?:card\s+)?number)\b", r"[0-9Xx-]{9,18}"),
    ("api_key", r"\b(?:api[\s_-]?key|api[\s_-]?secret|secret(?:[\s_-]?key)?|access[\s_-]?token"
     r"|auth(?:orization)?[\s_-]?token|bearer[\s_-]?token|refresh[\s_-]?token|token"
     r"|client[\s_-]?secret)\b|密钥|秘钥|令牌", r"[A-Za-z0-9_\-.~+/=]{8,256}"),
)  # fmt: skip
_KEYWORD_PATTERNS: Final = [
    (kind, re.compile(f"(?:{word}){_IS}(?P<value>{value}){_END}", re.IGNORECASE))
    for kind, word, value in _KEYWORDS
]
# A word after "password is" that describes the password instead of being it.
_NOT_A_VALUE = re.compile(
    r"^(?:多少|什么|啥|几位|几个|哪个|怎么|如何|错误|错了|不对|过期|忘了|忘记了|正确|重置|修改|找回"
    r"|what|which|how|wrong|incorrect|invalid|expired|correct|right|reset|changed|blocked|locked"
    r"|forgotten|required|missing|weak|strong|fine|ok|okay|same|different|long|short|too|not|empty"
    r"|set|saved|needed|here|there|below|above|attached|the|a|an|my|your|it|this|that|new|old"
    r"|still|already|also|please|\*+|x+|\.+)$",
    re.IGNORECASE,
)


def _credential_like(kind: SecretKind, value: str) -> bool:
    """Whether what follows a keyword is a secret value rather than talk about one."""
    if _NOT_A_VALUE.match(value) or _MARKER.search(value):
        return False
    if kind == "api_key":  # "secret recipe is grandmothers": no key looks like a word
        has_digit = re.search(r"\d", value) is not None
        return (has_digit and re.search(r"[A-Za-z]", value) is not None) or len(value) >= 24
    if kind != "password":
        return True
    has_alnum = re.search(r"[A-Za-z0-9]", value) is not None
    if not has_alnum:  # "密码是我生日": a hint, not the password
        return False
    mixed = re.search(r"\d", value) is not None or re.search(r"[^A-Za-z]", value) is not None
    return mixed or len(value) >= 6


# -- secrets by their shape alone ---------------------------------------------------------------

_SHAPE_SOURCES: Final[tuple[tuple[SecretKind, str], ...]] = (
    ("private_key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]{0,8000}?-----END [A-Z ]*PRIVATE"
                    r" KEY-----|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]{0,8000}"),
    ("api_key", r"(?<![\w-])(?:sk|rk)-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{20,}"
                r"|(?<![\w-])(?:sk|rk|pk)_live_[A-Za-z0-9]{16,}"
                r"|(?<![\w-])gh[pousr]_[A-Za-z0-9]{30,}|(?<![\w-])github_pat_[A-Za-z0-9_]{40,}"
                r"|(?<![\w-])xox[abposr]-[A-Za-z0-9-]{10,}|(?<![A-Z0-9])AKIA[0-9A-Z]{16}"
                r"|(?<![\w-])AIza[0-9A-Za-z_-]{35}|(?<![\w-])glpat-[A-Za-z0-9_-]{20,}"
                r"|(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
                r"|(?i:\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*)"),
)  # fmt: skip
_SHAPES: Final = tuple((kind, re.compile(pattern)) for kind, pattern in _SHAPE_SOURCES)
_DIGIT_RUN = re.compile(r"(?<![\dA-Za-z-])\d(?:[ -]?\d){14,18}(?![\dA-Za-z-])")
_CN_ID = re.compile(r"(?<![\dA-Za-z])\d{17}[\dXx](?![\dA-Za-z])")
_CN_ID_WEIGHTS: Final = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2 == 1:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _cn_id(value: str) -> bool:
    """A mainland resident ID: a real birth date and the ISO 7064 MOD 11-2 check character."""
    try:
        date(int(value[6:10]), int(value[10:12]), int(value[12:14]))
    except ValueError:
        return False
    total = sum(int(ch) * w for ch, w in zip(value[:17], _CN_ID_WEIGHTS, strict=True))
    return "10X98765432"[total % 11] == value[17].upper()


# Whether a text can hold a secret at all, in one search of literals (Python's ``re`` is far
# faster on those than on the patterns above, and most messages hold no secret): a keyword of
# one — every keyword pattern above contains one of these —, the start of a key's shape, or
# six digits in a row (a card or ID number). It must never say no where a pattern would match.
_MAY_HOLD_SECRET = re.compile(
    r"pass|pwd|api|secret|token|auth|_live_|gh[pousr]_|github_pat_|xox|akia|aiza|glpat|eyj|bearer"
    r"|-----begin|ssn|cvv|cvc|csc|otp|2fa|card|social|national|verification|security|one.time|pin"
    r"|\bid\b|\b[sr]k-|密码|口令|验证码|校验码|动态码|卡|身份证|密钥|秘钥|令牌|安全码"
    r"|\d[ -]?\d[ -]?\d[ -]?\d[ -]?\d[ -]?\d"
)


def may_hold_secret(text: str) -> bool:
    """Whether ``text`` can hold a secret at all (a cheap first look; False is certain)."""
    return _MAY_HOLD_SECRET.search(text.lower()) is not None


def _spans(text: str) -> list[tuple[int, int, SecretKind]]:
    """The secrets of ``text`` as (start, end, kind), in order, overlaps merged."""
    return _find(text) if may_hold_secret(text) else []


def _find(text: str) -> list[tuple[int, int, SecretKind]]:
    found: list[tuple[int, int, SecretKind]] = []
    for kind, pattern in _KEYWORD_PATTERNS:
        for m in pattern.finditer(text):
            if _credential_like(kind, m["value"]):
                found.append((m.start("value"), m.end("value"), kind))
    for kind, pattern in _SHAPES:
        found.extend((m.start(), m.end(), kind) for m in pattern.finditer(text))
    for m in _CN_ID.finditer(text):
        if _cn_id(m[0]):
            found.append((m.start(), m.end(), "id_number"))
    for m in _DIGIT_RUN.finditer(text):
        if _luhn(re.sub(r"\D", "", m[0])):
            found.append((m.start(), m.end(), "card_number"))
    found.sort()
    merged: list[tuple[int, int, SecretKind]] = []
    for start, end, kind in found:  # overlapping finds become one span (the first kind)
        if merged and start < merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2])
        else:
            merged.append((start, end, kind))
    return merged


def redact_secrets(text: str) -> Redaction:
    """``text`` with every secret replaced by the marker of its language; never raises.

    The whole text is read, however long (a secret pasted after a long document is still a
    secret). A replacement can make a neighbour read as a secret of its own ("…1111" before a
    removed key): the text is read again until nothing more is found (a few passes at most).
    """
    if not isinstance(text, str) or not text:
        return Redaction(text if isinstance(text, str) else "")
    marker = MARKER_ZH if _CJK.search(text[:_SCAN_CHARS]) else MARKER_EN
    kinds: dict[SecretKind, None] = {}
    for _ in range(_PASSES):
        spans = _spans(text)
        if not spans:
            break
        parts: list[str] = []
        cursor = 0
        for start, end, kind in spans:
            parts.append(text[cursor:start])
            parts.append(marker)
            cursor = end
            kinds[kind] = None
        parts.append(text[cursor:])
        text = "".join(parts)
    return Redaction(text, tuple(kinds))


#: Readings of a text at most (each one only when the one before replaced something).
_PASSES = 4


def has_secret_marker(text: str) -> bool:
    """Whether ``text`` holds a removed secret's marker (it is never worth keeping)."""
    return _MARKER.search(text) is not None


def contains_secret(text: str) -> bool:
    """Whether ``text`` holds a secret (or the marker of one)."""
    return has_secret_marker(text) or bool(_spans(text))


_CLAUSES = re.compile(r"[^，,。；;！!？?\n]+")
_CLAUSE_WITH_END = re.compile(r"[^，,。；;！!？?\n]+[，,。；;！!？?\n]*")
_FILLER = re.compile(
    r"^(?:请|请你|麻烦|帮我|帮忙|你|好的|好|嗯|哦|谢谢|thanks?|thank\s+you|please|ok|okay|also|and"
    r"|then|btw|hi|hello|hey|一下|吧|啊|呀|哈|了)*$",
    re.IGNORECASE,
)


def without_secret_clauses(redacted: str) -> str:
    """A redacted text without the clauses that held a secret: "记住我的订单号是ORD-1，密码是
    [已隐去的机密]" → "记住我的订单号是ORD-1" (what is left may still be worth remembering)."""
    if not has_secret_marker(redacted):
        return redacted
    kept = [m[0] for m in _CLAUSE_WITH_END.finditer(redacted) if not has_secret_marker(m[0])]
    return "".join(kept).strip(" ，,；;")


def only_secrets(redacted: str) -> bool:
    """Whether a redacted message says nothing but its secrets: every clause with content holds
    a marker ("记住我的银行卡密码是[已隐去的机密]"). Such a message gets the notice alone."""
    if not has_secret_marker(redacted):
        return False
    for clause in _CLAUSES.findall(redacted):
        words = re.sub(r"\s+", "", clause)
        if words and not has_secret_marker(clause) and not _FILLER.match(words):
            return False
    return True


# -- asking for a secret ------------------------------------------------------------------------

_SECRET_NOUNS: Final[tuple[tuple[SecretKind, str], ...]] = (
    ("password", r"(?:支付|取款|登录|银行卡|卡|邮箱|账号|帐号)?(?:密码|口令)|pass(?:word|code)"),
    ("pin", r"pin(?:\s+code)?|PIN\s*码"),
    ("cvv", r"cvv|cvc|安全码"),
    ("card_number", r"(?:银行卡|信用卡)(?:卡号|号码|号)?|卡号|(?:credit\s+|bank\s+)?card\s+number"),
    ("id_number", r"身份证(?:号码|号)?|ssn|social\s+security\s+number|id\s+number"),
    ("api_key", r"api\s*key|密钥|access\s+token|token"),
)
_ASK_PATTERNS: Final = [
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, noun in _SECRET_NOUNS
    for pattern in (
        rf"我的(?:{noun})(?:是)?(?:多少|什么|啥)(?!位|个字|种)",
        rf"(?:告诉我|提醒我|说一下|报一下)我的(?:{noun})",
        rf"\bwhat(?:'s|\s+is|\s+was)\s+my\s+(?:{noun})\b",
        rf"\b(?:tell|remind|give|show)\s+me\s+(?:of\s+)?my\s+(?:{noun})\b",
        rf"\bdo\s+you\s+(?:know|remember|have)\s+my\s+(?:{noun})\b",
        rf"(?:记得|知道)我的(?:{noun})",
    )
]


def asks_for_secret(text: str) -> SecretKind | None:
    """The kind of secret the user asks Hermes to recite ("我的密码是多少？", "what's my PIN?"),
    or None. Questions about a secret's rules ("密码是多少位？") are not such requests."""
    head = text[:_SCAN_CHARS] if isinstance(text, str) else ""
    if not may_hold_secret(head):
        return None
    for kind, pattern in _ASK_PATTERNS:
        if pattern.search(head):
            return kind
    return None


def secret_notice(kinds: tuple[SecretKind, ...], chinese: bool, *, asked: bool = False) -> str:
    """The sentence that tells the person Hermes does not keep secrets (zh or en). ``asked``:
    they asked for one (it cannot be told); else their message held ``kinds`` (removed)."""
    lang = 0 if chinese else 1
    names = [_NAMES[k][lang] for k in kinds] or [_NAMES["password"][lang]]
    shown = "、".join(names) if chinese else " and ".join(names)
    if asked:
        if chinese:
            return (
                "Hermes 不保存密码、银行卡号、身份证号、API 密钥等机密信息，"
                f"所以无法告诉你{shown}。"
            )
        return (
            "Hermes does not keep secrets such as passwords, card numbers, ID numbers or API "
            f"keys, so it cannot tell you your {shown}."
        )
    if chinese:
        return (
            f"为了安全，Hermes 不保存密码、银行卡号、身份证号、API 密钥等机密信息：消息里的{shown}"
            "已从记录中隐去，不会被记住，也不会被复述。"
        )
    return (
        "For your safety, Hermes does not keep secrets such as passwords, card numbers, ID "
        f"numbers or API keys: the {shown} in your message was removed from the record; it is "
        "not remembered and will not be repeated."
    )


# -- personal data ------------------------------------------------------------------------------

PersonalKind = Literal["phone", "email", "address", "order_id", "account"]
_PERSONAL_SOURCES: Final[tuple[tuple[PersonalKind, str], ...]] = (
    ("email", r"(?<![\w.+-])[\w.+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"),
    ("phone", r"(?<!\d)1[3-9]\d{9}(?!\d)"
              r"|(?<![\w+])\+\d{1,3}[\s-]?\(?\d{1,4}\)?(?:[\s-]?\d{2,4}){2,4}(?!\d)"),
    ("address", r"[\u4e00-\u9fff]{2,12}(?:省|市|区|县|镇|乡)[\u4e00-\u9fff\d]{0,20}"
                r"(?:路|街|大道|巷|弄|胡同)[\u4e00-\u9fff\d-]{0,12}(?:号|号楼|栋|幢|单元|室)?"
                r"|[\u4e00-\u9fff]{2,12}(?:路|街|大道|巷|弄)\d{1,5}(?:号|弄)"
                r"[\u4e00-\u9fff\d-]{0,12}"
                r"|\b\d{1,5}\s+(?:[A-Z][a-z]+\s+){1,3}(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln"
                r"|Drive|Dr|Boulevard|Blvd|Way|Court|Ct|Straße|Strasse)\b\.?(?:,?\s*(?:Apt|Suite"
                r"|Unit)\.?\s*\w+)?"),
    ("order_id", r"(?<![A-Za-z0-9_-])(?:ORD|ORDER|SO|PO)[-_]?\d{3,}[A-Z0-9]*(?![A-Za-z0-9_])"
                 r"|(?:订单号?|单号|运单号|(?i:order)\s*(?i:id|no\.?|number|#))\s*(?:[:：#]|是|为|is)?\s*"
                 r"#?(?P<v>[A-Za-z0-9][A-Za-z0-9_-]{2,39})"),
    ("account", r"(?:账号|帐号|账户|会员号|客户号|(?i:account)\s*(?i:id|no\.?|number|#)?)"
                r"\s*(?:[:：#]|是|为|is)\s*#?(?P<v>[A-Za-z0-9][A-Za-z0-9_.@-]{2,39})"),
)  # fmt: skip
_PERSONAL: Final = tuple((kind, re.compile(pattern)) for kind, pattern in _PERSONAL_SOURCES)


#: Every kind of personal data in one pattern (one pass for :func:`personal_kinds`).
_ANY_PERSONAL: Final = re.compile(
    "|".join(
        f"(?P<{kind}>{pattern.replace('(?P<v>', '(?:')})" for kind, pattern in _PERSONAL_SOURCES
    )
)


#: What every pattern above needs somewhere (one cheap search first: most texts have none).
_PERSONAL_HINT = re.compile(
    r"\d{7}|\+\d[\d\s()-]{6}|@|路|街|大道|巷|弄|胡同|订单|单号|账号|帐号|账户|会员号|客户号"
    r"|(?:ORD|SO|PO)[-_]?\d"
    r"|\d\s+[A-Z]|(?i:order|account)"
)


def personal_kinds(text: str) -> tuple[PersonalKind, ...]:
    """The kinds of personal data ``text`` holds (phone, email, address, order_id, account)."""
    head = text[:_SCAN_CHARS] if isinstance(text, str) else ""
    if _PERSONAL_HINT.search(head) is None:
        return ()
    found = {m.lastgroup for m in _ANY_PERSONAL.finditer(head)}
    return tuple(kind for kind, _ in _PERSONAL_SOURCES if kind in found)


def _mask(value: str) -> str:
    """A value with all but its edges hidden: ``138****5678``, ``OR****01``."""
    keep = 2 if len(value) <= 8 else 3
    if len(value) <= 4:
        return "*" * len(value)
    return value[:keep] + "*" * max(4, len(value) - 2 * keep) + value[-keep:]


def _masked_match(m: re.Match[str]) -> str:
    """The match with its value (the ``v`` group when the pattern has a label) masked."""
    value = m.groupdict().get("v")
    if not value:
        return _mask(m[0])
    start, end = m.start("v") - m.start(), m.end("v") - m.start()
    return m[0][:start] + _mask(value) + m[0][end:]


def mask_personal(text: str) -> str:
    """``text`` with its personal data (and any secret) masked: what a log or an export shows
    of a text flagged sensitive. Secrets are replaced by the marker, personal data keeps its
    edges so a person can still tell two values apart."""
    if not isinstance(text, str) or not text:
        return text
    masked = redact_secrets(text).text
    for _, pattern in _PERSONAL:
        masked = pattern.sub(_masked_match, masked)
    return masked
