"""A memory candidate, its confidences and the sensitive-content check (seed 003 §2.1:
personal data stays usable, flagged so that exports mask it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from hermes.memory.records import MemoryDraft, MemoryKind
from hermes.memory.scan import MAX_SCAN_CHARS

#: Candidates below this confidence are dropped (seed 001 §5.2: "高于0.8的写入").
DEFAULT_THRESHOLD: Final = 0.8
#: Longest candidate content; a memory is one statement, not a paragraph.
MAX_CANDIDATE_CHARS: Final = 500
#: At most this many candidates per message.
MAX_CANDIDATES: Final = 10
MAX_BODY_CHARS: Final = 300

EXPLICIT: Final = 0.95
CLEAR: Final = 0.9
PLAIN: Final = 0.85
HEDGE_PENALTY: Final = 0.3


@dataclass(frozen=True, slots=True)
class MemoryCandidate:
    """Something the user said that may deserve a long-term memory.

    ``topic`` is what a "my X is Y" is about, and for ``sensitive`` content also the category
    in English and Chinese plus the word found (``"finance 财务 工资"``). ``supersedes_hint``
    is set when the user changes an earlier preference or fact ("我现在更喜欢…", "I no longer
    like…", "my city is now…"): the old value when named, else what the change is about.
    """

    kind: MemoryKind
    content: str
    confidence: float
    sensitive: bool = False
    topic: str | None = None
    supersedes_hint: str | None = None
    source: Literal["rules", "model"] = "rules"
    #: The user asked for it in so many words ("记住…", "remember that…"): upkeep never
    #: demotes or deletes it for disuse.
    explicit: bool = False

    def to_draft(self, *, source_session: str | None = None) -> MemoryDraft:
        """The draft the long-term store writes (``hermes.memory.records.MemoryDraft``)."""
        return MemoryDraft(
            content=self.content,
            kind=self.kind,
            confidence=self.confidence,
            source_session=source_session,
            sensitive=self.sensitive,
            topic=self.topic,
            explicit=self.explicit,
        )


# -- sensitive content ---------------------------------------------------------------------

# (category, Chinese name, Chinese words, English words — each "|"-separated, a space in an
# English phrase matches any whitespace) plus patterns of numbers that identify a person.
_SENSITIVE_WORDS: Final = (
    ("credentials", "密码 证件", "密码|口令|验证码|身份证|护照号|社保号|卡号",
     "password|passcode|passwd|pin|pin code|ssn|social security|passport number|passport no"
     "|api key|api_key|secret key|access token|credit card|card number|cvv|id number",
     r"(?<!\d)\d{17}[\dXx](?!\d)|(?<!\d)(?:\d[ -]?){15,18}\d(?!\d)"),
    ("health", "健康", "疾病|生病|病史|癌|糖尿病|高血压|抑郁|焦虑症|失眠|怀孕|孕期|过敏"
     "|吃药|服药|药物|医院|诊断|手术|体检|血型|艾滋|残疾|心脏病|哮喘",
     r"health|medical|illness|disease|diagnos\w*|cancer|diabet\w*|asthma|depress\w*|anxiety|adhd"
     r"|autism|hiv|aids|pregnan\w*|allerg\w*|medication|medicine|prescription|surgery|therap\w*"
     r"|hospital|blood type|disab\w*|insulin|symptoms?", ""),
    ("finance", "财务", "工资|薪资|薪水|收入|月薪|年薪|存款|贷款|欠款|负债|债务|房贷|车贷"
     "|信用卡|银行卡|余额|股票|基金|理财|资产|奖金",
     r"salary|income|wages?|debts?|loans?|mortgage|savings|bank account|net worth|paycheck"
     r"|bonus|tax(?:es)?|investments?|stocks?|pension", ""),
    ("phone", "电话", "手机号|电话号", r"(?:phone|mobile|cell) (?:number|no)",
     r"(?<!\d)1[3-9]\d{9}(?!\d)|\+\d[\d\s-]{7,16}\d"),
    ("address", "地址", "地址|门牌|住址|邮编",
     r"address|zip code|postcode|postal code|apartment|apt|suite",
     r"(?<!\d)\d{1,6}\s*(?:号楼|号|弄|室|栋|幢|单元)|[\u4e00-\u9fff]{1,10}(?:路|街|大道|巷)\d"
     r"|\b\d{1,5}\s+(?:[A-Z][a-z]+\s+){1,3}(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr)\b"),
    ("identifier", "编号", "订单号|订单编号|单号|运单号|快递单号|工单号|账号|帐号|账户|帐户|会员号"
     "|会员账号|客户号|客户编号|员工号|工号",
     r"order\s+(?:id|number|no)|tracking\s+(?:number|id|no)|account\s+(?:number|id|no)|account"
     r"|customer\s+(?:number|id)|member(?:ship)?\s+(?:number|id)|ticket\s+(?:number|id)|username"
     r"|employee\s+(?:number|id)",
     r"(?<![A-Za-z0-9_-])(?:ORD|ORDER|SO|PO|INC|TKT|VIP)[-_]?\d{3,}"),
    ("email", "邮箱", "邮箱|电子邮件|邮件地址", r"e-?mail(?:\s+address)?",
     r"(?<![\w.+-])[\w.+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"),
    ("religion", "宗教", "宗教|信仰|信教|基督|耶稣|佛教|信佛|伊斯兰|穆斯林|天主教|道教"
     "|教会|清真|做礼拜",
     r"religio\w*|christian\w*|catholic|protestant|muslim|islam\w*|buddhis\w*|hindu\w*|jewish"
     r"|judaism|atheis\w*|church|mosque|synagogue|bible|quran|koran", ""),
    ("politics", "政治", "政治|党员|入党|政党|共产党|国民党|民主党|共和党|选举|投票|政见|左派|右派",
     r"politic\w*|democrats?|republicans?|liberal|conservative|vot(?:e|ed|es|ing)|elections?"
     r"|left-wing|right-wing|socialist|communist", ""),
)  # fmt: skip
_SENSITIVE: Final = [
    (name, chinese,
     re.compile(zh + r"|\b(?:" + en.replace(" ", r"\s+") + r")\b", re.IGNORECASE),
     re.compile(extra, re.IGNORECASE) if extra else None)
    for name, chinese, zh, en, extra in _SENSITIVE_WORDS
]  # fmt: skip


def detect_sensitive(text: str) -> str | None:
    """The sensitive topic of ``text`` (``"health 健康 过敏"``), or None.

    Categories in order: credentials/id numbers, health, finance, phone numbers, addresses,
    order/account ids, e-mail addresses, religion, politics; the first one found wins, named
    in English and Chinese plus the keyword found. Keyword rules over-flag rather than miss:
    a flagged memory is only held back from recalls about other topics, never lost.
    """
    text = text[:MAX_SCAN_CHARS]
    for category, chinese, words, numbers in _SENSITIVE:
        found = words.search(text)
        if found is not None:
            return _topic(category, chinese, found[0].lower())
        if numbers is not None and numbers.search(text):
            return f"{category} {chinese}"
    return None


def _topic(*parts: str | None) -> str | None:
    """The words of ``parts`` joined once each (``"密码 credentials 密码"`` → one 密码)."""
    words = dict.fromkeys(w for part in parts if part for w in part.split())
    return " ".join(words)[:200] or None


@dataclass(frozen=True, slots=True)
class Found:
    kind: MemoryKind
    content: str
    confidence: float
    topic: str | None = None
    supersedes_hint: str | None = None


Rule = Callable[[re.Match[str]], "Found | None"]


def make_candidate(
    kind: MemoryKind,
    content: str,
    confidence: float,
    topic: str | None,
    supersedes_hint: str | None,
    *,
    source: Literal["rules", "model"] = "rules",
    sensitive: bool = False,
) -> MemoryCandidate:
    """A candidate with the sensitive check applied (a model's flag is kept, never cleared)."""
    content = content[:MAX_CANDIDATE_CHARS]
    sensitive_topic = detect_sensitive(content)
    if sensitive_topic is not None:
        sensitive = True
        topic = _topic(topic, sensitive_topic)
    return MemoryCandidate(
        kind=kind,
        content=content,
        confidence=confidence,
        sensitive=sensitive,
        topic=topic[:200] if topic else None,
        supersedes_hint=supersedes_hint[:200] if supersedes_hint else None,
        source=source,
        # Only the rules know the user's own words asked for it; a model's confidence is not.
        explicit=source == "rules" and confidence >= EXPLICIT,
    )
