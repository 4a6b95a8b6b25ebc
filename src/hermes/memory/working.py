"""Working memory (seed 002 §2.2, issue 5 §4): the current task's key facts, kept per session.

A user who asks on Monday "帮我统计一下上周的退款率" and on Friday says "再跑一下这个数据" is
long out of the context window by then. :class:`WorkingMemory` keeps what such a follow-up
needs, JSON-serialisable so it is saved with the session state and outlives restarts:

- **facts** — ids (orders, tickets, UUIDs), files and paths, URLs, e-mail addresses, dates
  (``明天``/``下周一``/``next Monday`` resolved to ISO dates against a given ``now``), simple
  names, and the scalar arguments of tool calls; at most ``max_facts``, least recent dropped;
- **the last call of each tool** — arguments, outcome, a one-line summary, the user's request.

:meth:`~WorkingMemory.resolve` maps "再跑一下这个数据" / "run that again" / "同一个订单" /
"the same file" to a call to repeat or a fact; :meth:`~WorkingMemory.render` is a bounded block
for the prompt. Pure and synchronous. Tool outputs are data: only short identifiers and a
clipped summary are taken from them.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta
from typing import Any, Final, Literal

from hermes.models.brain.numerals import chinese_to_int
from hermes.models.brain.phrases import Lang
from hermes.observe import REDACTED, get_logger, is_secret_key, redact
from hermes.session.items import Item

__all__ = [
    "EN_WEEKDAYS",
    "DateMention",
    "Fact",
    "FactSource",
    "LastCall",
    "Reference",
    "WorkingMemory",
    "find_dates",
    "find_facts",
    "name_key",
]

log = get_logger("memory")

FactSource = Literal["user", "tool_call", "tool_result"]
DateLabel = Literal["date", "week", "month", "year"]
Scalar = str | int | float | bool

#: Longest text scanned per message or tool output (bounds the regex cost of a pasted file).
MAX_SCAN_CHARS: Final = 4000
#: Longest fact value kept; a longer one is a document, not a key fact.
MAX_VALUE_CHARS: Final = 200
#: Arguments of a call whose JSON is longer are stored clipped (``LastCall.complete`` False).
MAX_ARGUMENTS_CHARS: Final = 4000
_SUMMARY_CHARS: Final = 160
_MAX_FACTS: Final = 50
_MAX_CALLS: Final = 20
_REQUEST_CHARS: Final = 200
_FACTS_PER_SOURCE: Final = 12
_FORMAT_VERSION: Final = 1

# -- dates ---------------------------------------------------------------------------------

_ZH_NUM = "零〇一二两三四五六七八九十"
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_ZH_WEEK_SHIFT = {"上上": -2, "上": -1, "这": 0, "本": 0, "": 0, "下": 1, "下下": 2}
_ZH_DAYS = {"大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "今天": 0, "今日": 0}
_ZH_DAYS |= {"明天": 1, "明日": 1, "后天": 2, "大后天": 3}
_ZH_YEARS = {"前年": -2, "去年": -1, "今年": 0, "明年": 1}
EN_WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = "january february march april may june july august september october november december"
EN_MONTHS: Final = tuple(_MONTHS.split())
_EN_MONTH_ALT = "|".join(f"{m[:3]}(?:{m[3:]})?" if len(m) > 3 else m for m in EN_MONTHS)
_EN_DAY_ALT = "|".join(EN_WEEKDAYS)

_EN_ORDINAL = r"(?:st|nd|rd|th)?"
_DATE_PATTERNS: Final = [(kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in (
    ("iso", r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)"),
    ("zh_abs", rf"(?:(\d{{4}}|[{_ZH_NUM}]{{4}})年)?(\d{{1,2}}|[{_ZH_NUM}]{{1,3}})月"
               rf"(\d{{1,2}}|[{_ZH_NUM}]{{1,3}})[日号]"),
    ("zh_ago", rf"(\d{{1,3}}|[{_ZH_NUM}]{{1,3}})天(前|以前|之前|后|以后|之后)"),
    ("zh_day", "|".join(sorted(_ZH_DAYS, key=len, reverse=True))),
    ("zh_weekday", r"(上上|下下|上|下|这|本)?个?(?:周|星期|礼拜)([一二三四五六日天])"),
    ("zh_week", r"(上上|下下|上|下|这|本)个?(?:周|星期|礼拜)(?![一二三四五六日天])"),
    ("zh_month", r"(上|下|这|本)个?月"),
    ("zh_year", "|".join(_ZH_YEARS)),
    ("en_month_day",
     rf"\b({_EN_MONTH_ALT})\.?\s+(\d{{1,2}}){_EN_ORDINAL}\b(?:,?\s+(\d{{4}})\b)?"),
    ("en_day_month",
     rf"\b(\d{{1,2}}){_EN_ORDINAL}\s+(?:of\s+)?({_EN_MONTH_ALT})\b\.?(?:,?\s+(\d{{4}})\b)?"),
    ("en_rel_day", r"\b(?:the\s+day\s+after\s+tomorrow|the\s+day\s+before\s+yesterday|today"
                   r"|tonight|tomorrow|yesterday)\b"),
    ("en_ago", r"\b(\d{1,3})\s+days?\s+ago\b|\bin\s+(\d{1,3})\s+days?\b"),
    ("en_weekday", rf"\b(?:(last|this|next|coming)\s+)?({_EN_DAY_ALT})\b"),
    ("en_period", r"\b(last|this|next)\s+(week|month|year)\b"),
)]  # fmt: skip


@dataclass(frozen=True, slots=True)
class DateMention:
    """A date expression found in a text.

    ``label`` is ``date`` (``value`` an ISO date), ``week`` (an ISO interval
    ``YYYY-MM-DD/YYYY-MM-DD``, Monday to Sunday), ``month`` (``YYYY-MM``) or ``year``.
    """

    start: int
    end: int
    text: str
    label: DateLabel
    value: str
    #: True for expressions that depend on the day they were said (明天, next Monday, 上周).
    relative: bool = False


def _zh_int(token: str | None) -> int | None:
    if not token:
        return None
    return int(token) if token.isdigit() else chinese_to_int(token)


def _make_date(year: int | None, month: int | None, day: int | None) -> date | None:
    if year is None or month is None or day is None:
        return None
    try:
        return date(year, month, day)
    except ValueError:
        return None  # 2月30日, month 13: not a date, so not a fact


def _week_of(day: date, shift: int) -> tuple[date, date]:
    monday = day - timedelta(days=day.weekday()) + timedelta(weeks=shift)
    return monday, monday + timedelta(days=6)


def _month_of(day: date, shift: int) -> str:
    index = day.year * 12 + day.month - 1 + shift
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def _en_month(name: str) -> int:
    prefix = name.lower()[:3]
    return next(i for i, m in enumerate(EN_MONTHS, 1) if m.startswith(prefix))


def _resolve_date(kind: str, m: re.Match[str], today: date) -> tuple[DateLabel, str] | None:
    """(label, value) of one match of the pattern ``kind``; None when it is not a real date."""
    found: date | None = None
    if kind == "iso":
        found = _make_date(int(m[1]), int(m[2]), int(m[3]))
    elif kind == "zh_abs":
        year = _zh_int(m[1]) if m[1] else today.year
        found = _make_date(year, _zh_int(m[2]), _zh_int(m[3]))
    elif kind == "zh_ago":
        count = _zh_int(m[1])
        if count is None:
            return None
        found = today + timedelta(days=-count if "前" in m[2] else count)
    elif kind == "zh_day":
        found = today + timedelta(days=_ZH_DAYS[m[0]])
    elif kind == "zh_weekday":
        monday, _ = _week_of(today, _ZH_WEEK_SHIFT[m[1] or ""])
        found = monday + timedelta(days=_ZH_WEEKDAY[m[2]])
    elif kind == "zh_week":
        monday, sunday = _week_of(today, _ZH_WEEK_SHIFT[m[1]])
        return "week", f"{monday.isoformat()}/{sunday.isoformat()}"
    elif kind == "zh_month":
        return "month", _month_of(today, {"上": -1, "下": 1}.get(m[1], 0))
    elif kind == "zh_year":
        return "year", f"{today.year + _ZH_YEARS[m[0]]:04d}"
    else:
        return _resolve_english(kind, m, today)
    return None if found is None else ("date", found.isoformat())


def _resolve_english(kind: str, m: re.Match[str], today: date) -> tuple[DateLabel, str] | None:
    found: date | None = None
    if kind == "en_month_day":
        found = _make_date(int(m[3]) if m[3] else today.year, _en_month(m[1]), int(m[2]))
    elif kind == "en_day_month":
        found = _make_date(int(m[3]) if m[3] else today.year, _en_month(m[2]), int(m[1]))
    elif kind == "en_rel_day":
        word = " ".join(m[0].lower().split())
        shift = {"yesterday": -1, "tomorrow": 1, "the day after tomorrow": 2}.get(word, 0)
        found = today + timedelta(days=-2 if word == "the day before yesterday" else shift)
    elif kind == "en_ago":
        found = today + (timedelta(days=-int(m[1])) if m[1] else timedelta(days=int(m[2])))
    elif kind == "en_weekday":
        # "this/next/last Monday" = that day of this/next/last week (like 本周一/下周一/上周一);
        # a bare "Monday" / "coming Monday" = the next one after today.
        target = EN_WEEKDAYS.index(m[2].lower())
        modifier = (m[1] or "").lower()
        if modifier in ("", "coming"):
            found = today + timedelta(days=(target - today.weekday() - 1) % 7 + 1)
        else:
            shift = {"last": -1, "this": 0, "next": 1}[modifier]
            found = _week_of(today, shift)[0] + timedelta(days=target)
    elif kind == "en_period":
        shift = {"last": -1, "this": 0, "next": 1}[m[1].lower()]
        unit = m[2].lower()
        if unit == "week":
            monday, sunday = _week_of(today, shift)
            return "week", f"{monday.isoformat()}/{sunday.isoformat()}"
        if unit == "month":
            return "month", _month_of(today, shift)
        return "year", f"{today.year + shift:04d}"
    return None if found is None else ("date", found.isoformat())


def find_dates(text: str, now: datetime | date) -> list[DateMention]:
    """Date expressions of ``text`` resolved against ``now`` (the user's local date), in order.

    Chinese: ``2025年1月5日``, ``1月5号``, ``今天/明天/后天/昨天…``, ``3天后``, ``周一``
    (this week's), ``下周一``, ``上周`` (a week), ``上个月``, ``去年``. English: ISO dates,
    ``January 5, 2025``, ``5 Jan``, ``today/tomorrow/yesterday``, ``in 3 days``,
    ``next Monday`` (Monday of next week), ``Friday`` (the next Friday), ``last week``.
    Invalid dates (``2月30日``) are skipped. Never raises for any text.
    """
    today = now.date() if isinstance(now, datetime) else now
    text = text[:MAX_SCAN_CHARS]
    taken: list[tuple[int, int]] = []
    found: list[DateMention] = []
    for kind, pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            if _overlaps(taken, m.start(), m.end()):
                continue
            try:
                resolved = _resolve_date(kind, m, today)
            except (ValueError, OverflowError):
                resolved = None  # a year far outside what ``date`` supports
            if resolved is None:
                continue
            taken.append((m.start(), m.end()))
            label, value = resolved
            relative = kind not in ("iso", "zh_abs", "en_month_day", "en_day_month")
            found.append(DateMention(m.start(), m.end(), m[0], label, value, relative))
    return sorted(found, key=lambda d: d.start)


def _overlaps(taken: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(start < t_end and t_start < end for t_start, t_end in taken)


# -- ids, files, urls, names ---------------------------------------------------------------

_URL = re.compile(r"https?://[^\s<>\"'，。！？、；）)】\]}]+", re.IGNORECASE)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_UUID = re.compile(
    r"(?<![0-9A-Fa-f-])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"(?![0-9A-Fa-f-])",
    re.IGNORECASE,
)
_FILE_EXT = (
    "csv|tsv|xlsx|xls|json|jsonl|yaml|yml|txt|md|pdf|docx|doc|pptx|ppt|py|js|ts|log|sql|zip"
    "|gz|tar|png|jpg|jpeg|gif|html|htm|xml|parquet|ipynb|sh|toml|ini|cfg"
)
# Starts only at a token boundary, with bounded repeats: a long run of "a.a.a…" must not
# make the scan quadratic.
_FILE = re.compile(
    rf"(?<![\w.~/\\-])(?:[A-Za-z]:\\|\.{{1,2}}/|~/|/)?(?:[\w.-]{{1,80}}[/\\]){{0,12}}"
    rf"[\w-][\w.-]{{0,80}}"
    rf"\.(?:{_FILE_EXT})(?![A-Za-z0-9_])",
    re.IGNORECASE,
)
_QUOTED_FILE = re.compile(
    rf"[「《“\"']([^「」《》“”\"'\n]{{1,80}}\.(?:{_FILE_EXT}))[」》”\"']", re.I
)
_ABS_PATH = re.compile(r"(?<![\w:/.~])(?:~|\.{1,2})?/(?:[\w.-]{1,80}/){1,12}[\w.-]{1,80}")
_KEYWORD_ID = re.compile(
    r"(?P<key>订单号|订单|单号|工单号|工单|编号|order(?:\s*(?:id|no\.?|number|#))?"
    r"|ticket(?:\s*(?:id|no\.?|number|#))?|issue|case)"
    r"\s*(?:[:：#]|是|为|is)?\s*#?(?P<id>[A-Za-z0-9][A-Za-z0-9_-]{2,39})(?![A-Za-z0-9_-])",
    re.IGNORECASE,
)
_SHAPE_ID = re.compile(r"(?<![A-Za-z0-9_-])(?P<id>[A-Z]{2,8}[-_]?\d{3,}[A-Z0-9]*)(?![A-Za-z0-9_])")
_HASH_ID = re.compile(r"(?<![\w#])#(\d{3,12})(?!\d)")
_ORDER_PREFIXES = frozenset({"ORD", "ORDER", "SO", "PO", "DD"})
_TICKET_PREFIXES = frozenset({"INC", "TKT", "TICKET", "BUG", "ISSUE", "CASE", "REQ", "JIRA", "SR"})
# One surname character (a pronoun or particle before a title is not a name: 我总是…).
_ZH_PERSON = re.compile(
    r"([^\W\d_a-zA-Z我你您他她它的了是在和跟与给把被向从对这那也都就还总])"
    r"(经理|总监|主管|老师|老板|先生|女士|小姐|教授|博士|总(?![是结共之计部算体]))"
)
_ZH_ORG = re.compile(r"([\u4e00-\u9fffA-Za-z0-9]{2,12})(有限公司|公司|集团|银行|大学|医院)")
_ZH_FILLER = re.compile(
    r"^(?:帮我|请|麻烦|给我|我们|我|你|查一下|查询|查|看一下|看看|看|打开|读取|读一下|分析|处理|上传|下载"
    r"|联系|通知|发送给|发给|告诉|问一下|问|和|跟|与|把|给|对|向|从|在|是|为|的|一下|这个|那个|这家|那家)+"
)
_EN_PERSON = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Prof)\.?\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?")
_EN_ORG = re.compile(r"\b(?:[A-Z][\w&-]*\s+){1,3}(?:Inc|Corp|Corporation|Ltd|LLC|GmbH|Co)\b\.?")
_EN_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]{1,20}(?:\s+[A-Z][a-z]{1,20}){1,2})\b")
_EN_NOT_NAMES = frozenset(
    {m.capitalize() for m in EN_MONTHS} | {d.capitalize() for d in EN_WEEKDAYS} | {"I"}
)


def _id_label(key: str | None, value: str) -> str:
    key = (key or "").lower()
    if "工单" in key or key.startswith(("ticket", "issue", "case")):
        return "ticket_id"
    if "订单" in key or "单号" in key or key.startswith("order"):
        return "order_id"
    prefix = re.match(r"[A-Z]+", value)
    head = prefix.group(0) if prefix else ""
    if head in _ORDER_PREFIXES:
        return "order_id"
    if head in _TICKET_PREFIXES:
        return "ticket_id"
    return "id"


def _strip_zh_filler(name: str) -> str:
    previous = None
    while previous != name:
        previous, name = name, _ZH_FILLER.sub("", name)
    return name


def find_facts(text: str, now: datetime | date | None = None) -> list[tuple[str, str, str]]:
    """Key facts of ``text`` as ``(label, value, text as written)``, in order of appearance.

    Labels: ``url``, ``email``, ``uuid``, ``file``, ``order_id``, ``ticket_id``, ``id``,
    ``person`` (张经理, Dr. Smith), ``organization`` (华为公司, Acme Inc), ``name`` (other
    capitalised names), and with ``now`` the date labels of :func:`find_dates`.
    Overlapping matches keep the first kind in that order. Never raises for any text.
    """
    text = text[:MAX_SCAN_CHARS]
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, str, str, str]] = []

    def add(start: int, end: int, label: str, value: str, written: str | None = None) -> None:
        value = value.strip()
        if not value or len(value) > MAX_VALUE_CHARS or _overlaps(taken, start, end):
            return
        taken.append((start, end))
        found.append((start, label, value, written if written is not None else value))

    for m in _URL.finditer(text):
        url = m[0].rstrip(".,;:!?")
        add(m.start(), m.start() + len(url), "url", url)
    for m in _EMAIL.finditer(text):
        add(m.start(), m.end(), "email", m[0])
    for m in _UUID.finditer(text):
        add(m.start(), m.end(), "uuid", m[0].lower())
    for m in _QUOTED_FILE.finditer(text):
        add(m.start(1), m.end(1), "file", m[1].strip())
    for m in _FILE.finditer(text):
        name = m[0]
        if re.search(r"[\u4e00-\u9fff]", name):
            stripped = _strip_zh_filler(name)
            add(m.end() - len(stripped), m.end(), "file", stripped)
        else:
            add(m.start(), m.end(), "file", name)
    for m in _ABS_PATH.finditer(text):
        add(m.start(), m.end(), "file", m[0])
    for m in _KEYWORD_ID.finditer(text):
        if any(ch.isdigit() for ch in m["id"]):
            add(m.start("id"), m.end("id"), _id_label(m["key"], m["id"]), m["id"])
    for m in _SHAPE_ID.finditer(text):
        add(m.start(), m.end(), _id_label(None, m["id"]), m["id"])
    for m in _HASH_ID.finditer(text):
        add(m.start(), m.end(), "id", m[1])
    if now is not None:
        for d in find_dates(text, now):
            add(d.start, d.end, d.label, d.value, d.text)
    _find_names(text, add)
    return [(label, value, written) for _, label, value, written in sorted(found)]


def _find_names(text: str, add: Callable[..., None]) -> None:
    for m in _ZH_PERSON.finditer(text):
        add(m.start(), m.end(), "person", m[0])
    for m in _ZH_ORG.finditer(text):
        name = _strip_zh_filler(m[1])[-8:]
        if len(name) >= 2:
            add(m.end() - len(name) - len(m[2]), m.end(), "organization", name + m[2])
    for m in _EN_PERSON.finditer(text):
        add(m.start(), m.end(), "person", m[0])
    for m in _EN_ORG.finditer(text):
        add(m.start(), m.end(), "organization", m[0].rstrip("."))
    for m in _EN_NAME.finditer(text):
        words = m[1].split()
        if not any(word in _EN_NOT_NAMES for word in words):
            add(m.start(1), m.end(1), "name", m[1])  # a person, product or place: unknown


def name_key(name: str) -> str:
    """A name folded for comparison: ``orderId``, ``order_id`` and ``Order-ID`` → ``orderid``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return "".join(ch for ch in spaced.casefold() if ch.isalnum())


# -- the memory ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fact:
    """One key fact of the session's task.

    ``label`` says what the value is (``order_id``, ``date``, ``file`` … see :func:`find_facts`,
    or the argument name for a tool-call argument); ``origin`` is the tool name for facts from
    a tool call or result, else ``""``; ``text`` is how it was written (``明天`` for a date);
    ``turn`` the working-memory turn it was last seen in; ``seen_at`` an ISO timestamp.
    """

    label: str
    value: Scalar
    source: FactSource
    origin: str
    text: str
    turn: int
    seen_at: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fact:
        """Raises ``ValueError``/``TypeError``/``KeyError`` for malformed data."""
        value = data["value"]
        source = data["source"]
        if not isinstance(value, str | int | float | bool):
            raise TypeError("fact value must be a JSON scalar")
        if source not in ("user", "tool_call", "tool_result"):
            raise ValueError(f"unknown fact source {source!r}")
        return cls(
            label=str(data["label"]),
            value=value,
            source=source,
            origin=str(data.get("origin", "")),
            text=str(data.get("text", value)),
            turn=int(data.get("turn", 0)),
            seen_at=str(data.get("seen_at", "")),
        )


@dataclass(frozen=True, slots=True)
class LastCall:
    """The last call of one tool in this session.

    ``complete`` is False when the arguments were too large to keep and were clipped: such a
    call cannot be repeated as stored. ``request`` is the user's message of the turn that made
    the call (clipped), so "再跑一下这个数据" can be explained ("统计上周的退款率").
    """

    tool: str
    arguments: dict[str, Any]
    ok: bool
    summary: str | None
    error_type: str | None
    request: str | None
    turn: int
    at: str
    complete: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LastCall:
        """Raises ``ValueError``/``TypeError``/``KeyError`` for malformed data."""
        arguments = data["arguments"]
        if not isinstance(arguments, dict):
            raise TypeError("call arguments must be an object")
        return cls(
            tool=str(data["tool"]),
            arguments=arguments,
            ok=bool(data["ok"]),
            summary=_opt_str(data.get("summary")),
            error_type=_opt_str(data.get("error_type")),
            request=_opt_str(data.get("request")),
            turn=int(data.get("turn", 0)),
            at=str(data.get("at", "")),
            complete=bool(data.get("complete", True)),
        )

    def signature(self, max_chars: int = 120) -> str:
        """``tool(a="x", b=2)``, clipped to ``max_chars``; ``tool(…)`` when the arguments read
        like an instruction (the line is shown in a system message: see ``render``)."""
        args = ", ".join(
            f"{key}={json.dumps(value, ensure_ascii=False, default=str)}"
            for key, value in self.arguments.items()
        )
        args = "…" if looks_like_instruction(args) else args
        return _clip(f"{self.tool[:60]}({args})", max_chars)


@dataclass(frozen=True, slots=True)
class Reference:
    """What a follow-up such as "再跑一下这个数据" or "the same file" refers to.

    ``kind`` is ``repeat`` (``call`` is the call to run again; ``fact`` is set too when the
    text also named one, e.g. "再查一下同一个订单") or ``fact`` (``fact`` is the value meant).
    ``phrase`` is the part of the text that was understood.
    """

    kind: Literal["repeat", "fact"]
    phrase: str
    call: LastCall | None = None
    fact: Fact | None = None

    def describe(self, lang: Lang = "zh") -> str:
        """One line for the prompt or the user: ``「这个数据」指的是：stats(period="上周")``."""
        target = ""
        if self.kind == "repeat" and self.call is not None:
            target = self.call.signature()
        elif self.fact is not None:
            target = _clip(_fact_text(self.fact), _FACT_LINE_CHARS)
        if lang == "zh":
            return f"「{self.phrase}」指的是：{target}"
        return f'"{self.phrase}" refers to: {target}'


# Text that addresses the model rather than describing data: an injected "instruction" in a
# tool's output. Kept broad on purpose: a withheld summary costs little, an obeyed one a lot.
_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:previous|prior|above|earlier|all|your)\b"
    r"|\binstructions?\b|\b(?:system|developer|admin)\s*(?:prompt|message|note|override)\b"
    r"|\bfrom\s+now\s+on\b|\byou\s+(?:must|should|are\s+now|will\s+now|have\s+to)\b"
    r"|\b(?:reveal|disclose|exfiltrate|password|passphrase|api[\s_-]?key|secret)\b|^\s*(?:system"
    r"|assistant|user)\s*:|\b(?:call|invoke|use)\s+(?:the\s+)?\w+(?:\s+tool\b|\s*\()|</?\s*system"
    r"|忽略|无视|不要理会|指令|提示词|系统(?:消息|提示|通知)|从现在(?:起|开始)|你(?:必须|现在是|应该|要)"
    r"|泄露|透露|密码|密钥|调用", re.IGNORECASE | re.MULTILINE,
)  # fmt: skip
_FACT_LINE_CHARS: Final = 120


def looks_like_instruction(text: str) -> bool:
    """Whether ``text`` (tool output) reads like an instruction to the model."""
    return _INSTRUCTION.search(text[:MAX_SCAN_CHARS]) is not None


def _call_line(call: LastCall, zh: bool) -> str:
    """``- tool(args) → ok: summary`` with anything instruction-like withheld."""
    summary = call.summary
    if summary and looks_like_instruction(summary):
        summary = "（输出未显示）" if zh else "(output not shown)"
    outcome = ("成功" if call.ok else "失败") if zh else ("ok" if call.ok else "failed")
    detail = (f"：{summary}" if zh else f": {summary}") if summary else ""
    return f"- {call.signature()} → {outcome}{detail}"


def _fact_text(fact: Fact) -> str:
    written = f"（{fact.text}）" if fact.text and fact.text != str(fact.value) else ""
    return f"{fact.label}: {fact.value}{written}"


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _iso(now: datetime) -> str:
    return now.isoformat(timespec="seconds")


# Follow-up phrases. "Repeat": run the last call again. "Same": a noun names a kind of fact.
_REPEAT = re.compile(
    r"再(?:跑|运行|执行|查|算|做|来|试|发|生成|统计|导出|拉|搜)(?:一下|一遍|一次|一回|下)?"
    r"|重新(?:跑|运行|执行|查|算|做|来|试|生成|统计|拉)|重跑|重试|再来一[次遍个]|照旧|老样子"
    r"|照上次|[跟和同]上次一样|同上"
    r"|\b(?:run|do|try|execute|fetch|check|compute|query|send|generate|pull|redo)\s+"
    r"(?:it|that|this|them|the\s+same(?:\s+\w+)?|the\s+last\s+one)\s+again\b"
    r"|\bre-?run\b|\bretry\b|\bagain\b|\bonce\s+more\b|\bone\s+more\s+time\b"
    r"|\bsame\s+as\s+(?:last\s+time|before)\b|\brepeat\s+(?:it|that|the\s+last(?:\s+\w+)?)\b",
    re.IGNORECASE,
)
# noun group → (label keys (name_key) it means, label endings it means: ``tracking_url`` is a
# url, ``sort_order`` is not an order). "call" means the last call and its result.
_NOUNS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "order": (("orderid", "order", "orderno", "ordernumber"), ("orderid", "orderno")),
    "ticket": (("ticketid", "ticket", "issue", "issueid", "caseid"), ("ticketid", "issueid")),
    "file": (("file", "path", "filename", "filepath"), ("file", "path", "filename")),
    "url": (("url", "link", "href"), ("url", "link")),
    "date": (("date", "day"), ("date",)),
    "person": (("person", "name", "customer", "contact"), ("customer", "contact")),
    "organization": (("organization", "company", "org"), ("company",)),
    "email": (("email", "mail"), ("email",)),
    "id": (("id", "uuid"), ()),
    "city": (("city", "location", "place"), ("city",)),
    "call": ((), ()),
}
_NOUN_WORDS: Final[dict[str, str]] = {
    "订单": "order", "单子": "order", "order": "order",
    "工单": "ticket", "ticket": "ticket", "issue": "ticket", "case": "ticket",
    "文件": "file", "表格": "file", "报表": "file", "文档": "file", "file": "file",
    "spreadsheet": "file", "document": "file", "csv": "file", "path": "file",
    "链接": "url", "网址": "url", "网站": "url", "link": "url", "url": "url", "page": "url",
    "日期": "date", "date": "date", "day": "date",
    "人": "person", "客户": "person", "联系人": "person", "person": "person",
    "customer": "person", "client": "person", "contact": "person",
    "公司": "organization", "company": "organization",
    "邮箱": "email", "email": "email", "编号": "id", "id": "id", "uuid": "id",
    "城市": "city", "地方": "city", "city": "city", "place": "city",
    "数据": "call", "结果": "call", "报告": "call", "查询": "call", "data": "call",
    "result": "call", "results": "call", "report": "call", "query": "call",
}  # fmt: skip


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_SAME = re.compile(
    r"(?P<day>同一天|那一?天|当天)"
    r"|(?:同一个?|同样的?|相同的?|这个|那个|刚才的?|刚刚的?|上次的?|之前的?|前面的?|上面的?|原来的?)"
    r"(?:那个|这个)?(?P<zh>" + _alternation(w for w in _NOUN_WORDS if not w.isascii()) + ")"
    r"|\b(?:the\s+same|same|that|this|the\s+previous|the\s+last|the\s+earlier)\s+"
    r"(?P<en>" + _alternation(w for w in _NOUN_WORDS if w.isascii()) + r")\b",
    re.IGNORECASE,
)


class WorkingMemory:
    """The key facts and last tool calls of one session (see the module docstring).

    Not thread-safe; one turn of a session runs at a time (the session lock), which is all the
    agent needs. ``now`` is always passed in, so tests and replays are deterministic.
    """

    def __init__(self, *, max_facts: int = _MAX_FACTS, max_calls: int = _MAX_CALLS) -> None:
        if max_facts < 1 or max_calls < 1:
            raise ValueError("max_facts and max_calls must be at least 1")
        self.max_facts = max_facts
        self.max_calls = max_calls
        self.turn = 0
        self._request: str | None = None
        self._facts: OrderedDict[tuple[str, str], Fact] = OrderedDict()
        self._calls: OrderedDict[str, LastCall] = OrderedDict()

    # -- reading --------------------------------------------------------------------------

    @property
    def facts(self) -> list[Fact]:
        """All facts, most recently seen first."""
        return list(reversed(self._facts.values()))

    @property
    def calls(self) -> list[LastCall]:
        """The last call of each tool, most recent first."""
        return list(reversed(self._calls.values()))

    def __len__(self) -> int:
        return len(self._facts)

    def last_call(self, tool: str | None = None, *, ok_only: bool = False) -> LastCall | None:
        """The most recent call (of ``tool`` when given; successful ones only if ``ok_only``)."""
        for call in self.calls:
            if (tool is None or call.tool == tool) and (call.ok or not ok_only):
                return call
        return None

    def find(self, *labels: str) -> list[Fact]:
        """Facts whose label (compared with :func:`name_key`) is one of ``labels``, newest first."""
        keys = {name_key(label) for label in labels}
        return [fact for fact in self.facts if name_key(fact.label) in keys]

    # -- observing ------------------------------------------------------------------------

    def observe_user(self, text: str, *, now: datetime) -> list[Fact]:
        """Take the key facts of the user's message; starts a new working-memory turn.

        Relative dates are resolved against ``now`` (give it in the user's time zone), so a
        "明天" said on Monday stays Tuesday's date when it is read on Friday.
        """
        self.turn += 1
        self._request = _clip(text, _REQUEST_CHARS) if text.strip() else None
        # Bounded per message: a pasted list of 500 order numbers must not evict everything.
        return [
            self._touch(label, value, "user", "", written, now=now)
            for label, value, written in find_facts(text, now)[:_FACTS_PER_SOURCE]
        ]

    def observe_tool_call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        ok: bool,
        now: datetime,
        output: Any = None,
        summary: str | None = None,
        error_type: str | None = None,
    ) -> LastCall:
        """Record a finished tool call and the key facts of its arguments and result.

        Arguments and result facts are kept only for a successful call (a failed call's
        arguments may be the very thing that was wrong); the call itself is always recorded.
        """
        args, complete = _bounded_arguments(arguments)
        output = redact(output)  # a token in a result must not reach the summary or the facts
        call = LastCall(
            tool=tool,
            arguments=args,
            ok=ok,
            # The tool's own summary only, never its output: fetched text (a page, a mail)
            # is shown in a system message by render, where it must not pass for an instruction.
            summary=(_clip(summary, _SUMMARY_CHARS) or None) if ok and summary else None,
            error_type=error_type,
            request=self._request,
            turn=self.turn,
            at=_iso(now),
            complete=complete,
        )
        self._calls.pop(tool, None)
        self._calls[tool] = call
        while len(self._calls) > self.max_calls:
            self._calls.popitem(last=False)
        if ok:
            for key, value in list(args.items())[:_FACTS_PER_SOURCE]:
                if _is_fact_value(value) and value != REDACTED:
                    self._touch(key, value, "tool_call", tool, str(value), now=now)
            for label, value, written in _result_facts(summary, output, now):
                self._touch(label, value, "tool_result", tool, written, now=now)
        return call

    def observe_items(self, items: Iterable[Item], *, now: datetime) -> None:
        """Feed a turn's conversation items (user text, tool calls, tool results) in order.

        Tool calls are paired with their results by ``tool_call_id``; a result's content is the
        JSON the model read (``{"ok", "summary", "output" | "error"}``). Assistant text is
        ignored: only what the user said and what tools did are facts.
        """
        pending: dict[str, Item] = {}
        for item in items:
            if item.kind == "text" and item.role == "user":
                self.observe_user(item.content, now=now)
            elif item.kind == "tool_call" and item.tool_call_id:
                pending[item.tool_call_id] = item
            elif item.kind == "tool_result" and item.tool_call_id in pending:
                call = pending.pop(item.tool_call_id)
                self._observe_result_item(call, item, now)

    def _observe_result_item(self, call: Item, result: Item, now: datetime) -> None:
        arguments = _json_object(call.content) or {}
        payload = _json_object(result.content)
        if payload is None:
            self.observe_tool_call(
                call.tool_name or "", arguments, ok=True, now=now, output=result.content
            )
            return
        error = payload.get("error")
        error_type = error.get("type") if isinstance(error, dict) else None
        self.observe_tool_call(
            call.tool_name or result.tool_name or "",
            arguments,
            ok=bool(payload.get("ok")),
            now=now,
            output=payload.get("output"),
            summary=_opt_str(payload.get("summary")),
            error_type=_opt_str(error_type),
        )

    def _touch(
        self,
        label: str,
        value: Scalar,
        source: FactSource,
        origin: str,
        text: str,
        *,
        now: datetime,
    ) -> Fact:
        key = (label, json.dumps(value, ensure_ascii=False))
        self._facts.pop(key, None)
        fact = Fact(
            label, value, source, origin, _clip(text, MAX_VALUE_CHARS), self.turn, _iso(now)
        )
        self._facts[key] = fact
        while len(self._facts) > self.max_facts:
            self._facts.popitem(last=False)  # least recently seen first
        return fact

    # -- resolving ------------------------------------------------------------------------

    def resolve(self, text: str) -> Reference | None:
        """What a follow-up refers to, or None when the text has no such phrase or memory
        holds nothing that fits.

        - "再跑一下这个数据" / "run that again" / "老样子" → ``repeat`` with the most recent
          successful call (else the most recent one); a tool named in the text, or a stored
          argument value mentioned in it, picks that tool's last call instead.
        - "同一个订单" / "the same file" / "那个链接" → ``fact`` with the newest fact of that
          kind (an order id, a file …), searched in facts and in the last calls' arguments.
        """
        text = text[:MAX_SCAN_CHARS]
        repeat = _REPEAT.search(text)
        same = _SAME.search(text)
        group: str | None = None
        if same is not None:
            group = "date" if same["day"] else _NOUN_WORDS.get((same["zh"] or same["en"]).lower())
        fact = self._fact_for(group) if group not in (None, "call") else None
        if repeat is not None or group == "call":
            call = self._call_for(text)
            if call is not None:
                phrase = repeat[0] if repeat is not None else same[0] if same else text
                return Reference("repeat", phrase, call=call, fact=fact)
        if fact is not None and same is not None:
            return Reference("fact", same[0], fact=fact)
        return None

    def _fact_for(self, group: str | None) -> Fact | None:
        keys, endings = _NOUNS.get(group or "", ((), ()))
        for fact in self.facts:
            label = name_key(fact.label)
            if label in keys or label.endswith(endings):
                return fact
        return None

    def _call_for(self, text: str) -> LastCall | None:
        lowered = text.casefold()
        for call in self.calls:
            if call.tool and call.tool.casefold() in lowered:
                return call
        for call in self.calls:
            for value in call.arguments.values():
                if isinstance(value, str) and len(value) >= 2 and value.casefold() in lowered:
                    return call
        return self.last_call(ok_only=True) or self.last_call()

    # -- rendering ------------------------------------------------------------------------

    def render(self, *, lang: Lang = "zh", max_chars: int = 800, max_calls: int = 5) -> str:
        """A compact block for the prompt, at most ``max_chars`` long; ``""`` when empty.

        Calls come first (newest first), then facts the user gave or results produced (the
        arguments of the calls shown are not repeated). Lines that do not fit are left out.
        It goes into a system message: a result is shown only as the tool's own summary and
        its identifiers, clipped, and instruction-like text is withheld (tool output is data).
        """
        if not self._facts and not self._calls:
            return ""
        zh = lang == "zh"
        lines = [
            "工作记忆（本会话任务的要点，可能已过时）："
            if zh
            else "Working memory (key facts of this session's task; may be out of date):"
        ]
        calls = self.calls[:max_calls]
        if calls:
            lines.append("最近的工具调用：" if zh else "Recent tool calls:")
        lines.extend(_call_line(call, zh) for call in calls)
        facts = [f for f in self.facts if f.source != "tool_call"]
        if facts:
            lines.append("关键信息：" if zh else "Key facts:")
            lines.extend(f"- {_clip(_fact_text(fact), _FACT_LINE_CHARS)}" for fact in facts)
        out: list[str] = []
        used = 0
        for line in lines:
            cost = len(line) + (1 if out else 0)
            if used + cost > max_chars:
                continue
            out.append(line)
            used += cost
        return "\n".join(out) if len(out) > 1 else ""

    # -- persistence ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe state (store it in ``SessionState.scratch``); read back by ``from_dict``."""
        return {
            "version": _FORMAT_VERSION,
            "turn": self.turn,
            "request": self._request,
            "max_facts": self.max_facts,
            "max_calls": self.max_calls,
            "facts": [fact.to_dict() for fact in self._facts.values()],
            "calls": [call.to_dict() for call in self._calls.values()],
        }

    @classmethod
    def from_dict(cls, data: Any) -> WorkingMemory:
        """The memory saved by :meth:`to_dict`. Never raises: stored data may be old or damaged,
        and a turn must not fail for it, so malformed entries are dropped (and logged) and
        anything that is not such a dict gives an empty memory."""
        if not isinstance(data, Mapping):
            if data is not None:
                log.warning("working_memory_unreadable", got=type(data).__name__)
            return cls()
        # Stored limits are not trusted: 0 would make the constructor raise, 10**9 let a
        # damaged entry grow without bound; they are clamped to [1, default].
        memory = cls(
            max_facts=min(max(_positive_int(data.get("max_facts"), _MAX_FACTS), 1), _MAX_FACTS),
            max_calls=min(max(_positive_int(data.get("max_calls"), _MAX_CALLS), 1), _MAX_CALLS),
        )
        memory.turn = _positive_int(data.get("turn"), 0)
        request = data.get("request")
        memory._request = _clip(request, _REQUEST_CHARS) if isinstance(request, str) else None
        dropped = 0
        for raw in _list(data.get("facts")):
            try:
                fact = Fact.from_dict(raw)
            except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
                dropped += 1
                continue
            memory._facts[(fact.label, json.dumps(fact.value, ensure_ascii=False))] = fact
        for raw in _list(data.get("calls")):
            try:
                call = LastCall.from_dict(raw)
            except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
                dropped += 1
                continue
            memory._calls[call.tool] = call
        while len(memory._facts) > memory.max_facts:
            memory._facts.popitem(last=False)
        while len(memory._calls) > memory.max_calls:
            memory._calls.popitem(last=False)
        if dropped:
            log.warning("working_memory_entries_dropped", count=dropped)
        return memory


def _positive_int(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return default
    return value


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_fact_value(value: Any) -> bool:
    if isinstance(value, bool):
        return False  # a flag is not a fact of the task
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and 0 < len(value.strip()) <= MAX_VALUE_CHARS


def _bounded_arguments(arguments: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """JSON-safe arguments, and whether they are complete (not clipped, nothing redacted).

    Secret-keyed values (``password``, ``api_key``, ``token`` …) are replaced by ``***``:
    working memory is saved with the session and shown to the model, never a secret store.
    """
    try:
        safe: dict[str, Any] = json.loads(json.dumps(dict(arguments), default=str))
    except (TypeError, ValueError, RecursionError):
        return {}, False  # not JSON-like (a cycle, a huge nesting): nothing to repeat
    redacted = redact(safe)
    if redacted is not safe:
        return _clipped(redacted), False
    clipped = _clipped(safe)
    return clipped, clipped is safe


def _clipped(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with long strings cut and structures elided, if over the size limit."""
    if len(json.dumps(values, ensure_ascii=False)) <= MAX_ARGUMENTS_CHARS:
        return values
    kept = (int, float, bool, type(None))
    return {
        k: _clip(v, MAX_VALUE_CHARS) if isinstance(v, str) else v if isinstance(v, kept) else "…"
        for k, v in values.items()
    }


_ID_KEYS = ("id", "no", "number", "url", "link", "href", "path", "file", "filename")


def _result_facts(summary: str | None, output: Any, now: datetime) -> list[tuple[str, Scalar, str]]:
    """Identifiers in a tool result: id-like top-level fields of a dict output, then ids, urls,
    files and dates found in the summary or the output text. Bounded; never the whole output."""
    facts: list[tuple[str, Scalar, str]] = []
    if isinstance(output, Mapping):
        for key, value in list(output.items())[:50]:
            label = name_key(str(key))
            shown = _is_fact_value(value) and not looks_like_instruction(f"{key} {value}")
            if label.endswith(_ID_KEYS) and shown and not is_secret_key(str(key)):
                facts.append((str(key)[:MAX_VALUE_CHARS], value, str(value)))
    texts = [summary or ""]
    if isinstance(output, str):
        texts.append(output)
    elif output is not None and not facts:
        texts.append(json.dumps(output, ensure_ascii=False, default=str))
    for text in texts:
        if looks_like_instruction(text):
            continue  # an output that addresses the model is not a source of task facts
        for label, value, written in find_facts(text[:MAX_SCAN_CHARS], now):
            if label not in ("person", "organization"):  # names in data are too noisy
                facts.append((label, value, written))
    return facts[:_FACTS_PER_SOURCE]


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
