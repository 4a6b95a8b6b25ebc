"""Finding the key facts of a text (working memory, seed 002 §2.2): dates (Chinese and
English, relative ones pinned to ISO with a given ``now``), ids, files, URLs, e-mails and names.

Split from :mod:`hermes.memory.working`, which keeps what it finds; everything here is a pure
function of the text (and ``now``) with bounded regex work.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Final, Literal

from hermes.text.numerals import chinese_to_int

__all__ = [
    "EN_MONTHS",
    "EN_WEEKDAYS",
    "MAX_SCAN_CHARS",
    "MAX_VALUE_CHARS",
    "DateMention",
    "find_dates",
    "find_facts",
    "name_key",
    "split_name",
]

DateLabel = Literal["date", "week", "month", "year"]

#: Longest text scanned per message or tool output (bounds the regex cost of a pasted file).
MAX_SCAN_CHARS: Final = 4000
#: Longest fact value kept; a longer one is a document, not a key fact.
MAX_VALUE_CHARS: Final = 200


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


_CAMEL_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def split_name(name: str) -> str:
    """``name`` with a space at each camelCase break: ``inputFile`` → ``input File``."""
    return _CAMEL_BREAK.sub(" ", name)


def name_key(name: str) -> str:
    """A name folded for comparison: ``orderId``, ``order_id`` and ``Order-ID`` → ``orderid``."""
    return "".join(ch for ch in split_name(name).casefold() if ch.isalnum())
