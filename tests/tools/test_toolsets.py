"""Toolset selection: past the limit, only the toolsets relevant to the message are offered."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.tools import Tool
from hermes.tools.decorator import make_tool
from hermes.tools.toolsets import ToolsetIndex, message_terms, select_toolsets


def _noop() -> None:
    """Do nothing."""


def _tool(name: str, description: str, toolset: str) -> Tool:
    return make_tool(_noop, name=name, description=description, toolset=toolset)


CATALOG = [
    ("calculator", "Evaluate an arithmetic expression. 计算数学表达式", "core"),
    ("current_time", "The current date and time in a timezone. 当前时间", "core"),
    ("get_weather", "Weather forecast for a city. 查询城市天气预报", "weather"),
    ("get_air_quality", "Air quality index of a city. 城市空气质量", "weather"),
    ("weather_alerts", "Severe weather alerts. 天气预警", "weather"),
    ("send_email", "Send an email message to a recipient. 发送邮件", "mail"),
    ("list_inbox", "List the emails in the inbox. 收件箱邮件列表", "mail"),
    ("read_email", "Read one email message. 阅读邮件", "mail"),
    ("search_email", "Search emails by keyword. 搜索邮件", "mail"),
    ("create_order", "Create a purchase order. 创建订单", "orders"),
    ("cancel_order", "Cancel an order. 取消订单", "orders"),
    ("order_status", "Status of an order and its shipment. 订单状态与物流", "orders"),
    ("refund_order", "Refund an order payment. 订单退款", "orders"),
    ("book_room", "Book a meeting room. 预订会议室", "calendar"),
    ("list_events", "List calendar events. 日程列表", "calendar"),
    ("create_event", "Create a calendar event or meeting. 创建日程会议", "calendar"),
    ("read_file", "Read a file in the workspace. 读取文件", "files"),
    ("write_file", "Write a file in the workspace. 写入文件", "files"),
    ("list_files", "List files in a directory. 列出文件", "files"),
    ("search_files", "Search text in files. 搜索文件内容", "files"),
    ("salary_report", "Salary report of an employee. 员工薪资报表", "hr"),
    ("leave_balance", "Remaining leave days of an employee. 员工假期余额", "hr"),
]
TOOLS = [_tool(*row) for row in CATALOG]
INDEX = ToolsetIndex(TOOLS)


def _sets(tools: list[Tool]) -> set[str]:
    return {t.toolset for t in tools}


def test_at_most_the_limit_returns_every_tool_in_order():
    assert INDEX.select("anything at all", limit=len(TOOLS)) == TOOLS
    assert INDEX.select("anything", limit=100) == TOOLS


def test_an_english_message_selects_its_toolset_and_keeps_core():
    chosen = INDEX.select("Please send an email to Bob", limit=8)
    assert _sets(chosen) == {"core", "mail"}


def test_a_chinese_message_selects_its_toolset():
    chosen = INDEX.select("明天北京的天气怎么样？", limit=8)
    assert _sets(chosen) == {"core", "weather"}


def test_a_chinese_order_question_selects_orders():
    chosen = INDEX.select("我的订单什么时候发货，物流到哪了", limit=8)
    assert "orders" in _sets(chosen)
    assert "mail" not in _sets(chosen)


def test_several_relevant_toolsets_fill_the_room_best_first():
    chosen = INDEX.select("email me the weather forecast for Beijing", limit=9)
    assert _sets(chosen) == {"core", "mail", "weather"}


def test_the_chosen_tools_keep_their_original_order():
    chosen = INDEX.select("email me the weather forecast", limit=9)
    positions = [TOOLS.index(t) for t in chosen]
    assert positions == sorted(positions)


def test_a_message_matching_nothing_offers_only_the_always_kept_toolsets():
    assert _sets(INDEX.select("hello there", limit=8)) == {"core"}


def test_an_oversized_relevant_toolset_contributes_its_most_relevant_tools():
    chosen = INDEX.select("refund my order", limit=4)
    names = [t.name for t in chosen]
    assert len(chosen) == 4
    assert names[:2] == ["calculator", "current_time"]  # core fits whole first
    assert "refund_order" in names


def test_a_single_oversized_default_toolset_yields_its_best_tools():
    flat = [_tool(name, description, "default") for name, description, _ in CATALOG]
    chosen = ToolsetIndex(flat).select("发送邮件给老板", limit=3)
    assert len(chosen) == 3
    assert "send_email" in [t.name for t in chosen]


def test_keep_retains_a_toolset_for_a_follow_up_message():
    assert "weather" not in _sets(INDEX.select("好的", limit=8))
    assert "weather" in _sets(INDEX.select("好的", limit=8, keep=["weather"]))


def test_keywords_point_to_a_toolset():
    index = ToolsetIndex(TOOLS, keywords={"hr": ["工资", "payroll"]})
    assert "hr" in _sets(index.select("这个月工资发了吗", limit=8))
    assert "hr" in _sets(index.select("PAYROLL question", limit=8))
    assert "hr" not in _sets(INDEX.select("这个月工资发了吗", limit=8))


def test_allowed_filters_before_counting():
    no_mail = INDEX.select(
        "send an email", limit=len(TOOLS) - 4, allowed=lambda t: t.toolset != "mail"
    )
    assert len(no_mail) == len(TOOLS) - 4  # the rest fits: everything allowed is offered
    assert "mail" not in _sets(no_mail)


def test_the_limit_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        INDEX.select("x", limit=0)


def test_select_toolsets_is_the_one_off_form():
    assert select_toolsets("weather in Paris", TOOLS, limit=8) == INDEX.select(
        "weather in Paris", limit=8
    )


def test_scores_rank_the_relevant_toolset_first():
    scores = INDEX.scores("cancel the order")
    assert max(scores, key=lambda name: scores[name]) == "orders"
    assert scores["files"] == 0


def test_toolsets_groups_in_order_of_first_appearance():
    assert list(INDEX.toolsets) == [
        "core",
        "weather",
        "mail",
        "orders",
        "calendar",
        "files",
        "hr",
    ]


def test_message_terms_cut_english_words_and_chinese_bigrams():
    assert message_terms("Send the Emails, please!") == {"send", "email"}
    assert message_terms("getWeather get_air_quality") == {"weather", "air", "quality"}
    assert message_terms("查询天气") == {"查询", "询天", "天气"}
    assert message_terms("帮我查一下") == {"我查", "查一"}  # 帮我 / 一下 are stop bigrams


def test_a_huge_message_is_read_only_at_its_start():
    message = "天气" + "啊" * 100_000 + "邮件"
    assert "邮件" not in message_terms(message)


def test_the_result_is_the_same_in_processes_with_different_hash_seeds():
    script = textwrap.dedent(
        """
        from tests.tools.test_toolsets import INDEX
        for message in ("email me the weather", "订单 文件 会议", "list", "员工 邮件 天气 订单"):
            print([t.name for t in INDEX.select(message, limit=7)])
        """
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
            cwd=Path(__file__).resolve().parents[2],
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1
    assert outputs.pop().count("[") == 4


@settings(max_examples=60, deadline=None)
@given(
    message=st.text(alphabet="订单天气邮件文件 abcdeorfilsmw", max_size=40),
    limit=st.integers(min_value=1, max_value=len(TOOLS) + 2),
    keep=st.lists(st.sampled_from(["mail", "hr", "nope"]), max_size=2),
)
def test_selection_is_a_bounded_ordered_subset(message, limit, keep):
    chosen = INDEX.select(message, limit=limit, keep=keep)
    assert len(chosen) <= limit
    positions = [TOOLS.index(t) for t in chosen]
    assert positions == sorted(set(positions))
    assert chosen == INDEX.select(message, limit=limit, keep=keep)
