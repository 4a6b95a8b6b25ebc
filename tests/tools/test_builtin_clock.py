"""The current_time built-in: zones by IANA name, offset, city or country; clear errors."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from hermes.errors import ToolArgumentError
from hermes.models.base import ToolCall
from hermes.tools import BUILTIN_TOOLS, ToolContext, ToolRegistry, execute_tool_call
from hermes.tools.builtin import clock
from hermes.tools.builtin.clock import (
    DEFAULT_TIMEZONE_KEY,
    default_timezone,
    local_timezone,
    resolve_timezone,
    time_in,
)

# 2024-05-01 06:30:00 UTC, a Wednesday.
NOON_ISH = datetime(2024, 5, 1, 6, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("name", "zone"),
    [
        ("Asia/Tokyo", "Asia/Tokyo"),
        ("asia/tokyo", "Asia/Tokyo"),
        ("America/New_York", "America/New_York"),
        ("北京", "Asia/Shanghai"),
        ("北京市", "Asia/Shanghai"),
        ("北京时间", "Asia/Shanghai"),
        ("上海", "Asia/Shanghai"),
        ("Beijing", "Asia/Shanghai"),
        ("shanghai", "Asia/Shanghai"),
        ("中国", "Asia/Shanghai"),
        ("China", "Asia/Shanghai"),
        ("东京", "Asia/Tokyo"),
        ("Tokyo", "Asia/Tokyo"),
        ("日本", "Asia/Tokyo"),
        ("Japan", "Asia/Tokyo"),
        ("首尔", "Asia/Seoul"),
        ("Seoul", "Asia/Seoul"),
        ("新加坡", "Asia/Singapore"),
        ("香港", "Asia/Hong_Kong"),
        ("台北", "Asia/Taipei"),
        ("悉尼", "Australia/Sydney"),
        ("伦敦", "Europe/London"),
        ("London", "Europe/London"),
        ("巴黎", "Europe/Paris"),
        ("柏林", "Europe/Berlin"),
        ("莫斯科", "Europe/Moscow"),
        ("纽约", "America/New_York"),
        ("New York", "America/New_York"),
        ("new_york", "America/New_York"),
        ("  NEW   YORK ", "America/New_York"),
        ("洛杉矶", "America/Los_Angeles"),
        ("Los Angeles", "America/Los_Angeles"),
        ("旧金山", "America/Los_Angeles"),
        ("San Francisco", "America/Los_Angeles"),
        ("芝加哥", "America/Chicago"),
        ("多伦多", "America/Toronto"),
        ("迪拜", "Asia/Dubai"),
        ("孟买", "Asia/Kolkata"),
        ("新德里", "Asia/Kolkata"),
        ("曼谷", "Asia/Bangkok"),
        ("雅加达", "Asia/Jakarta"),
    ],
)
def test_names_resolve_to_iana_zones(name: str, zone: str) -> None:
    assert resolve_timezone(name)[1] == zone


@pytest.mark.parametrize(
    ("name", "label", "offset"),
    [
        ("UTC", "UTC", "+00:00"),
        ("gmt", "UTC", "+00:00"),
        ("UTC+8", "UTC+08:00", "+08:00"),
        ("GMT-5", "UTC-05:00", "-05:00"),
        ("UTC+05:30", "UTC+05:30", "+05:30"),
        ("utc +0545", "UTC+05:45", "+05:45"),
        ("+09:00", "UTC+09:00", "+09:00"),
        ("UTC-0", "UTC", "+00:00"),
        ("东八区", "UTC+08:00", "+08:00"),
        ("西五区", "UTC-05:00", "-05:00"),
        ("东十二区", "UTC+12:00", "+12:00"),
    ],
)
def test_offsets(name: str, label: str, offset: str) -> None:
    out = time_in(name, now=NOON_ISH)
    assert (out["timezone"], out["utc_offset"]) == (label, offset)


def test_output_fields_for_a_known_instant() -> None:
    assert time_in("Asia/Shanghai", now=NOON_ISH) == {
        "timezone": "Asia/Shanghai",
        "iso": "2024-05-01T14:30:00+08:00",
        "date": "2024-05-01",
        "time": "14:30:00",
        "weekday": "Wednesday",
        "weekday_zh": "星期三",
        "utc_offset": "+08:00",
    }


def test_date_line_and_daylight_saving_are_respected() -> None:
    assert time_in("Pacific/Auckland", now=NOON_ISH)["date"] == "2024-05-01"
    assert time_in("America/Los_Angeles", now=NOON_ISH)["weekday_zh"] == "星期二"
    assert time_in("纽约", now=NOON_ISH)["utc_offset"] == "-04:00"  # EDT in May
    winter = datetime(2024, 1, 15, 12, tzinfo=UTC)
    assert time_in("纽约", now=winter)["utc_offset"] == "-05:00"


@pytest.mark.parametrize(
    "name", ["Atlantis", "Mars/Olympus", "UTC+15", "UTC+8:75", "../etc", "/etc/passwd"]
)
def test_unknown_zones_are_clear_argument_errors(name: str) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        resolve_timezone(name)
    problem = caught.value.problems[0]
    assert problem.path == "timezone"
    assert "IANA" in problem.message
    assert "Asia/Shanghai" in problem.message


@pytest.mark.parametrize("name", [None, "", "  "])
def test_none_or_blank_is_the_named_local_zone(name: str | None) -> None:
    zone, label = local_timezone()
    out = time_in(name, now=NOON_ISH)
    assert out["timezone"] == label
    assert label
    assert out["iso"] == NOON_ISH.astimezone(zone).isoformat(timespec="seconds")


async def test_through_the_executor_with_summary() -> None:
    registry = ToolRegistry([BUILTIN_TOOLS["current_time"]])
    call = ToolCall("c1", "current_time", {"timezone": "东京"})
    result = await execute_tool_call(registry, call, ToolContext())
    assert result.ok is True
    assert result.output["timezone"] == "Asia/Tokyo"
    assert result.summary is not None
    assert result.summary.startswith("Asia/Tokyo: ")
    assert "(UTC+09:00)" in result.summary


async def test_without_arguments_uses_local_time() -> None:
    registry = ToolRegistry([BUILTIN_TOOLS["current_time"]])
    result = await execute_tool_call(registry, ToolCall("c1", "current_time", {}), ToolContext())
    assert result.ok is True
    assert result.output["timezone"] == local_timezone()[1]


async def test_unknown_zone_through_the_executor_is_invalid_arguments() -> None:
    registry = ToolRegistry([BUILTIN_TOOLS["current_time"]])
    call = ToolCall("c1", "current_time", {"timezone": "Gotham"})
    result = await execute_tool_call(registry, call, ToolContext())
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert "unknown time zone 'Gotham'" in result.error.message


async def test_without_a_zone_the_configured_default_zone_is_used_and_named() -> None:
    registry = ToolRegistry([BUILTIN_TOOLS["current_time"]])
    ctx = ToolContext(extras={DEFAULT_TIMEZONE_KEY: "Asia/Kolkata"})
    result = await execute_tool_call(registry, ToolCall("c1", "current_time", {}), ctx)
    assert result.ok is True
    assert result.output["timezone"] == "Asia/Kolkata"
    assert result.output["zone_source"] == "configured"
    named = await execute_tool_call(
        registry, ToolCall("c2", "current_time", {"timezone": "东京"}), ctx
    )
    assert named.output["timezone"] == "Asia/Tokyo"  # a named place wins over the default
    assert "zone_source" not in named.output


@pytest.mark.parametrize(
    ("host", "source", "zone"),
    [
        ((ZoneInfo("Asia/Shanghai"), "Asia/Shanghai", True), "host", "Asia/Shanghai"),
        ((ZoneInfo("Etc/UTC"), "Etc/UTC", True), "host_utc", "Etc/UTC"),
        ((ZoneInfo("Asia/Shanghai"), "CST", False), "utc_fallback", "UTC"),
    ],
)
def test_the_default_zone_says_where_it_came_from(
    monkeypatch: pytest.MonkeyPatch, host: tuple[object, str, bool], source: str, zone: str
) -> None:
    monkeypatch.setattr(clock, "_host_timezone", lambda: host)
    out = time_in(None, now=NOON_ISH)
    assert (out["timezone"], out["zone_source"]) == (zone, source)
    assert default_timezone("Europe/Paris")[1:] == ("Europe/Paris", "configured")
