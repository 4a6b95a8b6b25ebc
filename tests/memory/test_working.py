"""Working memory: key facts and last calls of a session, resolving follow-ups (seed 002 §2.2)."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.memory.scan import find_dates, find_facts, name_key
from hermes.memory.working import WorkingMemory
from hermes.session.summary import clip

SHANGHAI = timezone(timedelta(hours=8))
FRIDAY = datetime(2025, 1, 10, 9, 0, tzinfo=SHANGHAI)  # a Friday
MONDAY = datetime(2025, 1, 6, 10, 0, tzinfo=SHANGHAI)


# -- dates ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label", "value"),
    [
        ("今天", "date", "2025-01-10"),
        ("明天下午", "date", "2025-01-11"),
        ("后天", "date", "2025-01-12"),
        ("大后天", "date", "2025-01-13"),
        ("昨天的数据", "date", "2025-01-09"),
        ("前天", "date", "2025-01-08"),
        ("3天后", "date", "2025-01-13"),
        ("三天前", "date", "2025-01-07"),
        ("周一", "date", "2025-01-06"),
        ("星期天", "date", "2025-01-12"),
        ("下周一开会", "date", "2025-01-13"),
        ("下个礼拜三", "date", "2025-01-15"),
        ("上周五", "date", "2025-01-03"),
        ("上周的退款率", "week", "2024-12-30/2025-01-05"),
        ("这周", "week", "2025-01-06/2025-01-12"),
        ("上个月", "month", "2024-12"),
        ("下个月", "month", "2025-02"),
        ("去年", "year", "2024"),
        ("2025年1月5日", "date", "2025-01-05"),
        ("1月5号", "date", "2025-01-05"),
        ("二〇二四年十二月二十五日", "date", "2024-12-25"),
        ("2025-01-05", "date", "2025-01-05"),
        ("2025/1/5", "date", "2025-01-05"),
        ("today", "date", "2025-01-10"),
        ("tomorrow morning", "date", "2025-01-11"),
        ("the day after tomorrow", "date", "2025-01-12"),
        ("yesterday", "date", "2025-01-09"),
        ("in 3 days", "date", "2025-01-13"),
        ("2 days ago", "date", "2025-01-08"),
        ("next Monday", "date", "2025-01-13"),
        ("this Friday", "date", "2025-01-10"),
        ("last Friday", "date", "2025-01-03"),
        ("on Friday", "date", "2025-01-17"),
        ("Monday", "date", "2025-01-13"),
        ("last week", "week", "2024-12-30/2025-01-05"),
        ("next month", "month", "2025-02"),
        ("January 5, 2025", "date", "2025-01-05"),
        ("March 3rd", "date", "2025-03-03"),
        ("5 Jan 2024", "date", "2024-01-05"),
    ],
)
def test_dates_are_resolved_against_now(text: str, label: str, value: str) -> None:
    (found,) = find_dates(text, FRIDAY)
    assert (found.label, found.value) == (label, value)


@pytest.mark.parametrize("text", ["2月30日", "2025-13-01", "13月5日", "no dates here", "我们周末"])
def test_non_dates_are_skipped(text: str) -> None:
    assert find_dates(text, FRIDAY) == []


def test_relative_and_absolute_dates_are_told_apart() -> None:
    relative, absolute = find_dates("明天和2025年3月1日", FRIDAY)
    assert relative.relative
    assert not absolute.relative


# -- facts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label", "value"),
    [
        ("查一下订单ORD20250101的状态", "order_id", "ORD20250101"),
        ("订单号：883920", "order_id", "883920"),
        ("order #55123 is late", "order_id", "55123"),
        ("工单号：INC-2048 还没处理", "ticket_id", "INC-2048"),
        ("ticket 4567", "ticket_id", "4567"),
        ("see JIRA-1234", "ticket_id", "JIRA-1234"),
        ("id 123e4567-E89B-12d3-a456-426614174000", "uuid", "123e4567-e89b-12d3-a456-426614174000"),
        ("打开销售数据.xlsx看看", "file", "销售数据.xlsx"),
        ("读一下「季度 报告.pdf」", "file", "季度 报告.pdf"),
        ("read ./data/report_2024.csv please", "file", "./data/report_2024.csv"),
        ("tail /var/log/app", "file", "/var/log/app"),
        ("看看 https://example.com/a?b=1。", "url", "https://example.com/a?b=1"),
        ("mail bob.smith@example.co.uk", "email", "bob.smith@example.co.uk"),
        ("联系张经理", "person", "张经理"),
        ("ask Dr. Watson", "person", "Dr. Watson"),
        ("华为公司的合同", "organization", "华为公司"),
        ("a quote from Acme Corp", "organization", "Acme Corp"),
    ],
)  # fmt: skip
def test_key_facts_are_found(text: str, label: str, value: str) -> None:
    assert (label, value) in [(f[0], f[1]) for f in find_facts(text, FRIDAY)]


def test_a_file_inside_a_url_is_part_of_the_url() -> None:
    assert find_facts("https://example.com/files/report.csv") == [
        ("url", "https://example.com/files/report.csv", "https://example.com/files/report.csv")
    ]


def test_pronouns_and_particles_are_not_names() -> None:
    assert find_facts("我总是忘记，你总结一下") == []


def test_name_key_folds_spellings() -> None:
    assert name_key("orderId") == name_key("order_id") == name_key("Order-ID") == "orderid"


# -- the seed scenario ---------------------------------------------------------------------


def stats_week(memory: WorkingMemory) -> None:
    memory.observe_user("帮我统计一下上周的退款率", now=MONDAY)
    memory.observe_tool_call(
        "stats_query",
        {"metric": "退款率", "period": "上周"},
        ok=True,
        now=MONDAY,
        output={"rate": 0.032},
        summary="上周退款率 3.2%",
    )


def test_run_this_data_again_resolves_days_later_after_a_restart() -> None:
    monday = WorkingMemory()
    stats_week(monday)
    saved = json.loads(json.dumps(monday.to_dict(), ensure_ascii=False))

    friday = WorkingMemory.from_dict(saved)
    friday.observe_user("你好", now=FRIDAY)
    ref = friday.resolve("再跑一下这个数据")

    assert ref is not None
    assert ref.kind == "repeat"
    assert ref.call is not None
    assert (ref.call.tool, ref.call.arguments) == (
        "stats_query",
        {"metric": "退款率", "period": "上周"},
    )
    assert ref.call.request == "帮我统计一下上周的退款率"
    assert ref.describe("zh") == '「再跑一下」指的是：stats_query(metric="退款率", period="上周")'


@pytest.mark.parametrize(
    "text", ["run that again", "Do it again please", "老样子", "重新跑一遍", "rerun"]
)
def test_repeat_phrases_pick_the_last_successful_call(text: str) -> None:
    memory = WorkingMemory()
    stats_week(memory)
    memory.observe_tool_call("send_report", {"to": "ops"}, ok=False, now=MONDAY)
    ref = memory.resolve(text)
    assert ref is not None
    assert ref.call is not None
    assert ref.call.tool == "stats_query"


def test_a_tool_or_value_named_in_the_text_picks_that_call() -> None:
    memory = WorkingMemory()
    stats_week(memory)
    memory.observe_tool_call("get_weather", {"city": "上海"}, ok=True, now=MONDAY)
    by_value = memory.resolve("再查一下退款率")
    by_name = memory.resolve("run stats_query again")
    assert by_value is not None
    assert by_value.call is not None
    assert by_value.call.tool == "stats_query"
    assert by_name is not None
    assert by_name.call is not None
    assert by_name.call.tool == "stats_query"
    latest = memory.resolve("再来一次")
    assert latest is not None
    assert latest.call is not None
    assert latest.call.tool == "get_weather"


@pytest.mark.parametrize(
    ("text", "label", "value"),
    [
        ("同一个订单", "order_id", "ORD20250101"),
        ("the same order, please", "order_id", "ORD20250101"),
        ("那个文件再发一次给我", "file", "sales.xlsx"),
        ("use the same file", "file", "sales.xlsx"),
        ("刚才那个链接打不开", "tracking_url", "https://t.example/x1"),
        ("同一天", "date", "2025-01-11"),
    ],
)
def test_same_thing_phrases_resolve_to_the_newest_fact_of_that_kind(
    text: str, label: str, value: str
) -> None:
    memory = WorkingMemory()
    memory.observe_user("查一下订单ORD20250101，明天要用 sales.xlsx", now=FRIDAY)
    memory.observe_tool_call(
        "query_order",
        {"order_id": "ORD20250101"},
        ok=True,
        now=FRIDAY,
        output={"status": "shipped", "tracking_url": "https://t.example/x1"},
    )
    ref = memory.resolve(text)
    assert ref is not None, text
    assert ref.fact is not None, text
    assert (ref.fact.label, ref.fact.value) == (label, value)


def test_repeat_with_a_named_fact_carries_both() -> None:
    memory = WorkingMemory()
    memory.observe_user("查一下订单ORD1234", now=FRIDAY)
    memory.observe_tool_call("query_order", {"order_id": "ORD1234"}, ok=True, now=FRIDAY)
    ref = memory.resolve("同一个订单再查一次")
    assert ref is not None
    assert ref.kind == "repeat"
    assert ref.call is not None
    assert ref.call.tool == "query_order"
    assert ref.fact is not None
    assert ref.fact.value == "ORD1234"


@pytest.mark.parametrize("text", ["hello", "今天天气怎么样", "the same", "同一个"])
def test_text_without_a_reference_resolves_to_nothing(text: str) -> None:
    memory = WorkingMemory()
    stats_week(memory)
    assert memory.resolve(text) is None


def test_an_empty_memory_resolves_nothing() -> None:
    assert WorkingMemory().resolve("再跑一下这个数据") is None
    assert WorkingMemory().resolve("the same file") is None


# -- what is recorded ----------------------------------------------------------------------


def test_a_failed_call_is_recorded_but_its_arguments_are_not_facts() -> None:
    memory = WorkingMemory()
    memory.observe_tool_call("query_order", {"order_id": "BAD-1"}, ok=False, now=FRIDAY,
                             error_type="invalid_arguments")  # fmt: skip
    call = memory.last_call("query_order")
    assert call is not None
    assert not call.ok
    assert call.error_type == "invalid_arguments"
    assert memory.facts == []
    assert memory.last_call(ok_only=True) is None


def test_the_last_call_of_each_tool_replaces_the_previous_one() -> None:
    memory = WorkingMemory()
    memory.observe_tool_call("get_weather", {"city": "北京"}, ok=True, now=FRIDAY)
    memory.observe_tool_call("get_weather", {"city": "上海"}, ok=True, now=FRIDAY)
    assert [c.arguments for c in memory.calls] == [{"city": "上海"}]


def test_huge_arguments_are_clipped_and_marked_incomplete() -> None:
    memory = WorkingMemory()
    call = memory.observe_tool_call("write_file", {"path": "a.txt", "content": "x" * 50_000},
                                    ok=True, now=FRIDAY)  # fmt: skip
    assert not call.complete
    assert len(json.dumps(memory.to_dict())) < 5_000


def test_result_identifiers_become_facts_but_not_the_whole_output() -> None:
    memory = WorkingMemory()
    memory.observe_tool_call(
        "create_ticket",
        {"title": "printer"},
        ok=True,
        now=FRIDAY,
        output={"ticket_id": "INC-9001", "body": "long text " * 500, "url": "https://x.test/9001"},
        summary="已创建工单 INC-9001",
    )
    values = {(f.label, f.value) for f in memory.facts}
    assert ("ticket_id", "INC-9001") in values
    assert ("url", "https://x.test/9001") in values
    assert all(len(str(f.value)) <= 200 for f in memory.facts)
    call = memory.last_call()
    assert call is not None
    assert call.summary == "已创建工单 INC-9001"


def test_facts_are_bounded_and_the_least_recently_seen_go_first() -> None:
    memory = WorkingMemory(max_facts=50)
    memory.observe_user("订单 ORD0000", now=FRIDAY)
    for i in range(1, 60):
        if i == 30:
            memory.observe_user("还是订单 ORD0000", now=FRIDAY)  # seen again: kept
        memory.observe_user(f"订单 ORD{i:04d}", now=FRIDAY)
    values = [f.value for f in memory.facts]
    assert len(values) == 50
    assert "ORD0000" in values
    assert "ORD0001" not in values
    assert values[0] == "ORD0059"


def test_calls_are_bounded() -> None:
    memory = WorkingMemory(max_calls=3)
    for i in range(5):
        memory.observe_tool_call(f"tool_{i}", {}, ok=True, now=FRIDAY)
    assert [c.tool for c in memory.calls] == ["tool_4", "tool_3", "tool_2"]


# -- render and persistence ----------------------------------------------------------------


def test_render_lists_calls_and_facts_within_the_budget() -> None:
    memory = WorkingMemory()
    stats_week(memory)
    memory.observe_user("明天发给张经理", now=FRIDAY)
    text = memory.render()
    assert text.startswith("工作记忆")
    assert 'stats_query(metric="退款率", period="上周") → 成功：上周退款率 3.2%' in text
    assert "date: 2025-01-11（明天）" in text
    assert "person: 张经理" in text
    english = memory.render(lang="en")
    assert english.startswith("Working memory")
    assert "→ ok: 上周退款率 3.2%" in english
    assert len(memory.render(max_chars=120)) <= 120


def test_render_of_an_empty_memory_is_empty() -> None:
    assert WorkingMemory().render() == ""


def test_render_stays_bounded_however_much_is_stored() -> None:
    memory = WorkingMemory()
    for i in range(40):
        memory.observe_tool_call(f"tool_{i}", {"q": "x" * 300}, ok=True, now=FRIDAY,
                                 summary="y" * 500)  # fmt: skip
        memory.observe_user(f"https://example.com/{i}/" + "z" * 150, now=FRIDAY)
    assert 0 < len(memory.render(max_chars=800)) <= 800


def test_to_dict_round_trips_through_json() -> None:
    memory = WorkingMemory(max_facts=10, max_calls=5)
    stats_week(memory)
    memory.observe_user("订单ORD1 和 https://a.test/x", now=FRIDAY)
    data = json.loads(json.dumps(memory.to_dict(), ensure_ascii=False))
    again = WorkingMemory.from_dict(data)
    assert again.to_dict() == memory.to_dict()
    assert (again.max_facts, again.max_calls, again.turn) == (10, 5, 2)


@pytest.mark.parametrize("data", [None, 42, "text", [], {"facts": "nope", "calls": 3}])
def test_unreadable_saved_state_gives_an_empty_memory(data: object) -> None:
    memory = WorkingMemory.from_dict(data)
    assert memory.facts == []
    assert memory.calls == []


def test_damaged_entries_are_dropped_and_the_rest_kept() -> None:
    memory = WorkingMemory()
    stats_week(memory)
    data = memory.to_dict()
    data["facts"].append({"label": "x"})
    data["facts"].append({"label": "x", "value": {"nested": 1}, "source": "user"})
    data["calls"].append({"tool": "t", "arguments": "not a dict", "ok": True})
    again = WorkingMemory.from_dict(data)
    assert len(again.facts) == len(memory.facts)
    assert [c.tool for c in again.calls] == ["stats_query"]


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        WorkingMemory(max_facts=0)


# -- properties ----------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    memory = WorkingMemory()
    memory.observe_user(text, now=FRIDAY)
    memory.observe_tool_call("t", {"a": text}, ok=True, now=FRIDAY, output=text, summary=text)
    memory.resolve(text)
    assert len(memory.render(max_chars=300)) <= 300
    assert WorkingMemory.from_dict(json.loads(json.dumps(memory.to_dict()))).to_dict() == (
        memory.to_dict()
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["下周", "一", "明天", "上个", "月", "2025", "年", "13", "月", "32", "日", "号", "天前",
             "next ", "Monday", "May ", "31", "st", ", ", "2024", "ORD", "123", "/", ".csv", "http://",
             "@", "经理", "公司", "同一个", "订单", "again"]
        ),
        max_size=12,
    ).map("".join)
)  # fmt: skip
def test_date_like_fragments_never_raise(text: str) -> None:
    find_dates(text, FRIDAY)
    find_facts(text, FRIDAY)
    WorkingMemory().resolve(text)


@pytest.mark.parametrize(
    "text",
    ["a." * 2000, "1" * 4000, "a/" * 2000, "订单" * 2000, "ORD" * 1000, "http://" + "a" * 4000,
     "I " * 2000, "a@" * 2000],
)  # fmt: skip
def test_pathological_input_finishes(text: str) -> None:
    # A catastrophic regex would never return; a daemon thread lets the test fail instead.
    done = threading.Event()

    def work() -> None:
        find_facts(text, FRIDAY)
        WorkingMemory().resolve(text)
        done.set()

    threading.Thread(target=work, daemon=True).start()
    assert done.wait(timeout=20), "scanning did not finish: catastrophic backtracking?"


def test_a_label_that_only_contains_a_kind_word_is_not_that_kind() -> None:
    memory = WorkingMemory()
    memory.observe_tool_call("search", {"sort_order": "desc"}, ok=True, now=FRIDAY)
    assert memory.resolve("同一个订单") is None


def test_secret_arguments_are_never_kept() -> None:
    memory = WorkingMemory()
    call = memory.observe_tool_call(
        "login", {"user": "bob", "password": "hunter2", "api_key": "sk-1"}, ok=True, now=FRIDAY,
        output={"session_token": "tok-9", "account_id": "A-77"},
    )  # fmt: skip
    saved = json.dumps(memory.to_dict())
    assert "hunter2" not in saved
    assert "sk-1" not in saved
    assert "tok-9" not in saved
    assert call.arguments == {"user": "bob", "password": "***", "api_key": "***"}
    assert not call.complete  # cannot be repeated as stored
    assert ("account_id", "A-77") in {(f.label, f.value) for f in memory.facts}


def test_clip_folds_whitespace_and_shows_a_cut_past_a_long_blank_run() -> None:
    assert clip("  a \n b\t c  ", 10) == "a b c"
    assert clip("一二三四五六", 4) == "一二三…"
    assert clip("x " * 10_000, 7) == "x x x …"
    # The bounded head it reads first folds to exactly 10 characters; the "b" after the blanks
    # still makes this a cut (the session summary's old clip returned "aaaaaaaaaa").
    assert clip("a" * 10 + " " * 40 + "b", 10) == "a" * 9 + "…"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab 一\n\t\u3000"), max_size=200), st.integers(0, 30))
def test_clip_gives_what_folding_the_whole_text_gives(text: str, limit: int) -> None:
    flat = " ".join(text.split())
    assert clip(text, limit) == (flat if len(flat) <= limit else flat[: max(0, limit - 1)] + "…")
