"""``current_time(timezone=None)``: the current date and time in a time zone.

Accepts IANA names (``Asia/Tokyo``, any letter case), UTC/GMT offsets (``UTC+8``, ``GMT-5``,
``UTC+05:30``, ``东八区``) and common city/country names in Chinese and English (``北京``,
``New York``, ``日本``). Countries spanning several zones map to their capital's or largest
city's zone, and the answer always names the zone used. Zone data comes from the system or,
where the system has none, from the ``tzdata`` package.

Without a ``timezone`` the default zone is used: ``agent.timezone`` (DESIGN "Public contracts",
passed to the tool as ``ToolContext.extras["timezone"]``), else the zone this machine is
configured with, else UTC. The output then says where that zone came from in
``zone_source``: ``configured`` (agent.timezone), ``host``, ``host_utc`` (the machine's zone is
UTC, which is rarely what a person asking "what time is it" has in mind) or ``utc_fallback``
(the machine names no zone at all).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from hermes.errors import FieldProblem, ToolArgumentError
from hermes.tools.base import ToolContext
from hermes.tools.decorator import tool

__all__ = [
    "DEFAULT_TIMEZONE_KEY",
    "current_time",
    "default_timezone",
    "resolve_timezone",
    "time_in",
]

#: The ``ToolContext.extras`` key of the default zone (``agent.timezone``), an IANA name.
DEFAULT_TIMEZONE_KEY = "timezone"
#: Zone names that are UTC under another spelling.
_UTC_NAMES = frozenset(
    name.casefold()
    for name in (
        "UTC", "Etc/UTC", "Etc/UCT", "UCT", "Zulu", "Etc/Zulu", "Universal", "Etc/Universal",
        "GMT", "Etc/GMT", "Etc/GMT+0", "Etc/GMT-0", "Etc/GMT0", "GMT0", "Etc/Greenwich",
        "Greenwich",
    )
)  # fmt: skip

_WEEKDAYS_ZH = ("星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日")

# IANA zone → city, region and country names (Chinese and English), matched after
# normalization (letter case, spaces, "_", "-", "." and suffixes like 市/时间 ignored).
_ALIASES: dict[str, tuple[str, ...]] = {
    "Asia/Shanghai": (
        "北京",
        "上海",
        "广州",
        "深圳",
        "杭州",
        "成都",
        "重庆",
        "武汉",
        "南京",
        "西安",
        "天津",
        "中国",
        "beijing",
        "peking",
        "shanghai",
        "guangzhou",
        "shenzhen",
        "hangzhou",
        "chengdu",
        "chongqing",
        "wuhan",
        "nanjing",
        "xian",
        "tianjin",
        "china",
        "prc",
    ),
    "Asia/Hong_Kong": ("香港", "hongkong", "hk"),
    "Asia/Macau": ("澳门", "macau", "macao"),
    "Asia/Taipei": ("台北", "台湾", "taipei", "taiwan"),
    "Asia/Tokyo": ("东京", "大阪", "日本", "tokyo", "osaka", "japan"),
    "Asia/Seoul": ("首尔", "汉城", "韩国", "seoul", "korea", "southkorea"),
    "Asia/Singapore": ("新加坡", "singapore"),
    "Asia/Kuala_Lumpur": ("吉隆坡", "马来西亚", "kualalumpur", "malaysia"),
    "Asia/Bangkok": ("曼谷", "泰国", "bangkok", "thailand"),
    "Asia/Jakarta": ("雅加达", "印尼", "印度尼西亚", "jakarta", "indonesia"),
    "Asia/Manila": ("马尼拉", "菲律宾", "manila", "philippines"),
    "Asia/Ho_Chi_Minh": ("胡志明", "河内", "越南", "hochiminh", "hanoi", "vietnam"),
    "Asia/Kolkata": (
        "孟买",
        "新德里",
        "德里",
        "班加罗尔",
        "加尔各答",
        "印度",
        "mumbai",
        "bombay",
        "newdelhi",
        "delhi",
        "bangalore",
        "kolkata",
        "calcutta",
        "india",
    ),
    "Asia/Karachi": ("卡拉奇", "巴基斯坦", "karachi", "pakistan"),
    "Asia/Dubai": ("迪拜", "阿布扎比", "阿联酋", "dubai", "abudhabi", "uae"),
    "Asia/Riyadh": ("利雅得", "沙特", "沙特阿拉伯", "riyadh", "saudiarabia"),
    "Europe/Istanbul": ("伊斯坦布尔", "土耳其", "istanbul", "turkey"),
    "Europe/Moscow": ("莫斯科", "俄罗斯", "moscow", "russia"),
    "Europe/London": ("伦敦", "英国", "london", "uk", "unitedkingdom", "britain", "england"),
    "Europe/Paris": ("巴黎", "法国", "paris", "france"),
    "Europe/Berlin": (
        "柏林",
        "法兰克福",
        "慕尼黑",
        "德国",
        "berlin",
        "frankfurt",
        "munich",
        "germany",
    ),
    "Europe/Madrid": ("马德里", "巴塞罗那", "西班牙", "madrid", "barcelona", "spain"),
    "Europe/Rome": ("罗马", "米兰", "意大利", "rome", "milan", "italy"),
    "Europe/Amsterdam": ("阿姆斯特丹", "荷兰", "amsterdam", "netherlands"),
    "Europe/Zurich": ("苏黎世", "日内瓦", "瑞士", "zurich", "geneva", "switzerland"),
    "Africa/Cairo": ("开罗", "埃及", "cairo", "egypt"),
    "Africa/Johannesburg": ("约翰内斯堡", "南非", "johannesburg", "southafrica"),
    "Africa/Lagos": ("拉各斯", "尼日利亚", "lagos", "nigeria"),
    "America/New_York": (
        "纽约",
        "华盛顿",
        "波士顿",
        "美国东部",
        "美国",
        "newyork",
        "nyc",
        "washington",
        "washingtondc",
        "boston",
        "usa",
        "us",
        "unitedstates",
        "america",
    ),
    "America/Chicago": ("芝加哥", "休斯顿", "美国中部", "chicago", "houston"),
    "America/Denver": ("丹佛", "denver"),
    "America/Los_Angeles": (
        "洛杉矶",
        "旧金山",
        "西雅图",
        "硅谷",
        "美国西部",
        "losangeles",
        "la",
        "sanfrancisco",
        "sf",
        "seattle",
        "siliconvalley",
    ),
    "America/Toronto": (
        "多伦多",
        "蒙特利尔",
        "渥太华",
        "加拿大",
        "toronto",
        "montreal",
        "ottawa",
        "canada",
    ),
    "America/Vancouver": ("温哥华", "vancouver"),
    "America/Mexico_City": ("墨西哥城", "墨西哥", "mexicocity", "mexico"),
    "America/Sao_Paulo": ("圣保罗", "里约热内卢", "巴西", "saopaulo", "riodejaneiro", "brazil"),
    "America/Argentina/Buenos_Aires": ("布宜诺斯艾利斯", "阿根廷", "buenosaires", "argentina"),
    "Australia/Sydney": ("悉尼", "堪培拉", "澳大利亚", "澳洲", "sydney", "canberra", "australia"),
    "Australia/Melbourne": ("墨尔本", "melbourne"),
    "Pacific/Auckland": ("奥克兰", "新西兰", "auckland", "newzealand"),
    "Pacific/Honolulu": ("檀香山", "夏威夷", "honolulu", "hawaii"),
}
_SUFFIXES = ("时间", "时区", "市", "time")
_IANA_SHAPE = re.compile(r"[A-Za-z0-9_+\-]+(?:/[A-Za-z0-9_+\-]+)*")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_OFFSET = re.compile(r"(?:utc|gmt)?([+-])(\d{1,2})(?::?(\d{2}))?")
_CN_NUMERALS = {n: i for i, n in enumerate("零一二三四五六七八九十", start=0)}
_CN_ZONE = re.compile(r"(东|西)(十[一二]?|[一二三四五六七八九十]|\d{1,2})区")


def _key(name: str) -> str:
    text = re.sub(r"[\s_.\-]+", "", name.casefold())
    for suffix in _SUFFIXES:
        if text.endswith(suffix) and len(text) > len(suffix):
            text = text[: -len(suffix)]
    return text


_BY_ALIAS: dict[str, str] = {
    _key(alias): zone for zone, aliases in _ALIASES.items() for alias in aliases
}


@functools.cache
def _iana_by_key() -> dict[str, str]:
    # Built once, on the first lookup that is not an exact IANA name (listing zones reads disk).
    return {name.casefold(): name for name in available_timezones()}


def resolve_timezone(name: str) -> tuple[tzinfo, str]:
    """The zone for an IANA name, a UTC/GMT offset or a known city/country, and its display
    name. Raises ``ToolArgumentError`` (field ``timezone``) for anything else."""
    text = name.strip()
    if text.casefold() in ("utc", "gmt", "z", "utc+0", "gmt+0", "utc0"):
        return UTC, "UTC"
    offset = _parse_offset(text)
    if offset is not None:
        return offset
    # Our aliases first: "Japan" is also a legacy IANA link, but "Asia/Tokyo" is the answer.
    alias = _BY_ALIAS.get(_key(text))
    if alias is not None:
        return ZoneInfo(alias), alias
    zone = _iana(text)
    if zone is not None:
        return zone
    raise ToolArgumentError(
        [
            FieldProblem(
                "timezone",
                f"unknown time zone {text[:40]!r}; use an IANA name such as 'Asia/Shanghai' or "
                "'America/New_York', or an offset such as 'UTC+8' "
                "(未知时区，请使用 IANA 名称如 Asia/Shanghai，或 UTC+8 这样的偏移)",
            )
        ]
    )


def _iana(text: str) -> tuple[tzinfo, str] | None:
    if not _IANA_SHAPE.fullmatch(text):
        return None
    try:
        return ZoneInfo(text), text  # exact spelling: no need to list every zone
    except (ZoneInfoNotFoundError, ValueError):
        pass  # maybe only the letter case differs; the case-insensitive index is next
    canonical = _iana_by_key().get(text.casefold())
    if canonical is None:
        return None
    try:
        return ZoneInfo(canonical), canonical
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _parse_offset(text: str) -> tuple[tzinfo, str] | None:
    compact = re.sub(r"\s+", "", text.casefold())
    match = _OFFSET.fullmatch(compact)
    if match:
        sign, hours, minutes = match.group(1), int(match.group(2)), int(match.group(3) or 0)
    else:
        cn = _CN_ZONE.fullmatch(compact)
        if not cn:
            return None
        sign, hours, minutes = ("+" if cn.group(1) == "东" else "-"), _cn_int(cn.group(2)), 0
    if hours > 14 or minutes >= 60 or (hours == 14 and minutes):
        return None
    delta = timedelta(hours=hours, minutes=minutes) * (1 if sign == "+" else -1)
    if not delta:
        return UTC, "UTC"
    return timezone(delta), f"UTC{_format_offset(delta)}"


def _cn_int(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text.startswith("十"):
        return 10 + (_CN_NUMERALS[text[1]] if len(text) > 1 else 0)
    return _CN_NUMERALS[text]


def _format_offset(delta: timedelta | None) -> str:
    seconds = int(delta.total_seconds()) if delta is not None else 0
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    return f"{sign}{hours:02d}:{rest // 60:02d}"


@functools.cache
def local_timezone() -> tuple[tzinfo, str]:
    """This machine's zone and its name (IANA when it can be found, else the abbreviation)."""
    zone, name, _configured = _host_timezone()
    return zone, name


@functools.cache
def _host_timezone() -> tuple[tzinfo, str, bool]:
    """This machine's zone, its name, and whether the machine names one at all."""
    configured = os.environ.get("TZ", "").lstrip(":")
    candidates = [configured] if configured else []
    # Not every system has /etc/timezone; /etc/localtime is tried next.
    with contextlib.suppress(OSError):
        candidates.append(Path("/etc/timezone").read_text(encoding="utf-8").strip())
    localtime = Path("/etc/localtime")
    if localtime.is_symlink():
        target = str(localtime.resolve())
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    for candidate in candidates:
        try:
            return ZoneInfo(candidate), candidate, True
        except (ZoneInfoNotFoundError, ValueError):
            continue
    zone = datetime.now().astimezone().tzinfo or UTC
    return zone, datetime.now(zone).tzname() or "local", localtime.exists()


def default_timezone(configured: str | None = None) -> tuple[tzinfo, str, str]:
    """The zone used when a question names none: ``configured`` (``agent.timezone``), else
    this machine's, else UTC — with where it came from (see the module docstring)."""
    if configured is not None and configured.strip():
        zone, name = resolve_timezone(configured)
        return zone, name, "configured"
    zone, name, named = _host_timezone()
    if not named:
        return UTC, "UTC", "utc_fallback"
    return zone, name, "host_utc" if name.casefold() in _UTC_NAMES else "host"


def time_in(
    timezone_name: str | None = None,
    *,
    now: datetime | None = None,
    default: str | None = None,
) -> dict[str, Any]:
    """The fields of :func:`current_time` for a zone (``None`` or blank: the default zone —
    ``default``, else this machine's — with ``zone_source``) at ``now`` (default: the current
    instant; an aware datetime, used by tests)."""
    # A blank name is what a model sends for "no preference": the default zone, like None.
    blank = timezone_name is None or not timezone_name.strip()
    source = None
    if blank:
        zone, name, source = default_timezone(default)
    else:
        zone, name = resolve_timezone(timezone_name or "")
    moment = (now or datetime.now(UTC)).astimezone(zone)
    offset = _format_offset(moment.utcoffset())
    fields = {
        "timezone": name,
        "iso": moment.isoformat(timespec="seconds"),
        "date": moment.date().isoformat(),
        "time": moment.strftime("%H:%M:%S"),
        "weekday": _WEEKDAYS[moment.weekday()],  # not %A: that follows the C locale
        "weekday_zh": _WEEKDAYS_ZH[moment.weekday()],
        "utc_offset": offset,
    }
    if source is not None:
        fields["zone_source"] = source
    return fields


def _summary(out: dict[str, Any]) -> str:
    return (
        f"{out['timezone']}: {out['date']} {out['time']} {out['weekday']} / "
        f"{out['weekday_zh']} (UTC{out['utc_offset']})"
    )


@tool(summary=_summary, timeout=5.0, side_effects=False)
async def current_time(timezone: str | None = None, *, ctx: ToolContext) -> dict[str, Any]:
    """Get the current date, time and weekday in a time zone.

    Args:
        timezone: An IANA zone ("Asia/Shanghai"), a UTC offset ("UTC+8") or a city or country
            name ("北京", "New York", "Tokyo"). Omit it for the configured default zone
            (agent.timezone, else the server's own).
    """
    # Async on purpose: zone files are cached by zoneinfo after the first load, so this is a
    # few microseconds of work that does not need a worker thread.
    configured = ctx.extras.get(DEFAULT_TIMEZONE_KEY)
    return time_in(timezone, default=configured if isinstance(configured, str) else None)
