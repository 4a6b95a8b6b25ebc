"""Working memory keeps what the user said apart from what tools showed (seed 001 §2.2 level 2,
seed 004 §5.1): the user's own ids survive a busy session, and a reference is resolved by what
the user's words point at — never silently to the last id a tool returned."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from hermes.memory.working import WorkingMemory

SHANGHAI = timezone(timedelta(hours=8))
NOW = datetime(2025, 1, 10, 9, 0, tzinfo=SHANGHAI)


def busy(memory: WorkingMemory, lookups: int = 40) -> None:
    """``lookups`` turns of order lookups, each result listing a dozen other orders."""
    for n in range(lookups):
        memory.observe_user(f"查一下第 {n} 批的物流", now=NOW)
        memory.observe_tool_call(
            "get_order",
            {"order_id": f"ORD-{5000 + n}"},
            ok=True,
            now=NOW,
            output={
                "order_id": f"ORD-{5000 + n}",
                "related": [f"ORD-{9000 + n * 12 + k}" for k in range(12)],
            },
            summary=f"ORD-{5000 + n} 已发货",
        )


def own_order(memory: WorkingMemory) -> None:
    memory.observe_user("记住我的订单号是 ORD-1001", now=NOW)


def test_the_users_own_order_id_survives_a_busy_run_of_lookups() -> None:
    memory = WorkingMemory()
    own_order(memory)
    busy(memory)
    ref = memory.resolve("我的订单到哪了？")
    assert ref is not None
    assert ref.kind == "fact"
    assert ref.fact is not None
    assert (ref.fact.value, ref.fact.own) == ("ORD-1001", True)
    assert "ORD-1001" in ref.describe("zh")
    assert "用户自己的" in ref.describe("zh")


def test_my_order_in_english_is_the_users_own() -> None:
    memory = WorkingMemory()
    memory.observe_user("my order number is A-77120", now=NOW)
    busy(memory, 5)
    ref = memory.resolve("where is my order now?")
    assert ref is not None
    assert ref.fact is not None
    assert ref.fact.value == "A-77120"
    assert "the user's own" in ref.describe("en")


def test_that_order_is_ambiguous_when_the_users_own_and_the_last_looked_up_differ() -> None:
    memory = WorkingMemory()
    own_order(memory)
    busy(memory, 3)
    ref = memory.resolve("那个订单到哪了")
    assert ref is not None
    assert ref.kind == "ambiguous"
    assert [f.value for f in ref.candidates] == ["ORD-1001", "ORD-5002"]
    line = ref.describe("zh")
    assert "指的是" not in line
    assert "先问用户" in line
    assert "could mean" in ref.describe("en")


def test_that_order_is_the_users_own_when_it_is_the_one_acted_on() -> None:
    memory = WorkingMemory()
    own_order(memory)
    memory.observe_tool_call("get_order", {"order_id": "ORD-1001"}, ok=True, now=NOW,
                             output={"order_id": "ORD-1001", "status": "shipped"})  # fmt: skip
    ref = memory.resolve("那个订单什么时候到？")
    assert ref is not None
    assert ref.fact is not None
    assert ref.fact.value == "ORD-1001"


@pytest.mark.parametrize("text", ["刚才查到的那个订单", "the order you just found"])
def test_the_one_a_tool_found_is_what_the_words_point_at(text: str) -> None:
    memory = WorkingMemory()
    own_order(memory)
    memory.observe_tool_call("search_orders", {"query": "latest"}, ok=True, now=NOW,
                             output={"order_id": "ORD-8888"})  # fmt: skip
    ref = memory.resolve(text)
    assert ref is not None
    assert ref.fact is not None
    assert (ref.fact.value, ref.fact.source) == ("ORD-8888", "tool_result")


def test_the_same_order_is_the_one_last_acted_on() -> None:
    memory = WorkingMemory()
    own_order(memory)
    memory.observe_tool_call("get_order", {"order_id": "ORD-3003"}, ok=True, now=NOW)
    ref = memory.resolve("再查一下同一个订单")
    assert ref is not None
    assert ref.fact is not None
    assert ref.fact.value == "ORD-3003"


def test_without_a_users_order_that_order_is_the_last_one_acted_on() -> None:
    memory = WorkingMemory()
    memory.observe_tool_call("get_order", {"order_id": "ORD-3003"}, ok=True, now=NOW,
                             output={"order_id": "ORD-3003", "parent_order": "ORD-4"})  # fmt: skip
    ref = memory.resolve("那个订单到哪了")
    assert ref is not None
    assert ref.fact is not None
    assert ref.fact.value == "ORD-3003"


def test_ids_a_tool_showed_never_take_the_users_place() -> None:
    memory = WorkingMemory()
    memory.observe_user("我的账号是 88-1203", now=NOW)
    busy(memory)
    said = [f for f in memory.facts if f.source == "user"]
    assert ("88-1203", True) in {(f.value, f.own) for f in said}
    assert len([f for f in memory.facts if f.source != "user"]) <= memory.max_facts


def test_the_users_own_facts_come_first_in_the_rendered_block() -> None:
    memory = WorkingMemory()
    own_order(memory)
    busy(memory)
    text = memory.render(max_chars=300)
    assert "ORD-1001（用户自己的）" in text
    assert text.index("ORD-1001") < text.index("get_order")


def test_a_later_mention_keeps_an_id_the_users_own() -> None:
    memory = WorkingMemory()
    own_order(memory)
    memory.observe_user("ORD-1001 发货了吗", now=NOW)
    (fact,) = [f for f in memory.facts if f.value == "ORD-1001"]
    assert fact.own


def test_own_facts_survive_a_restart() -> None:
    memory = WorkingMemory()
    own_order(memory)
    again = WorkingMemory.from_dict(json.loads(json.dumps(memory.to_dict())))
    assert [(f.value, f.own) for f in again.facts] == [("ORD-1001", True)]


def test_working_memory_saved_by_the_previous_version_still_opens() -> None:
    saved = {
        "version": 1, "turn": 3, "request": "查一下订单ORD1234", "max_facts": 50, "max_calls": 20,
        "facts": [
            {"label": "order_id", "value": "ORD1234", "source": "user", "origin": "",
             "text": "ORD1234", "turn": 3, "seen_at": "2025-01-10T09:00:00+08:00"},
            {"label": "order_id", "value": "ORD1234", "source": "tool_call", "origin": "q",
             "text": "ORD1234", "turn": 3, "seen_at": "2025-01-10T09:00:00+08:00"},
        ],
        "calls": [{"tool": "q", "arguments": {"order_id": "ORD1234"}, "ok": True, "summary": None,
                   "error_type": None, "request": "查一下订单ORD1234", "turn": 3,
                   "at": "2025-01-10T09:00:00+08:00", "complete": True}],
    }  # fmt: skip
    memory = WorkingMemory.from_dict(saved)
    assert len(memory.facts) == 2
    ref = memory.resolve("同一个订单再查一次")
    assert ref is not None
    assert ref.call is not None
    assert ref.call.tool == "q"


def test_a_removed_secret_is_never_a_fact() -> None:
    memory = WorkingMemory()
    memory.observe_user("我的订单号是 ORD-1001，密码是[已隐去的机密]", now=NOW)
    memory.observe_tool_call(
        "login", {"password": "[secret removed]", "user": "bob"}, ok=True, now=NOW
    )
    facts = json.dumps([f.to_dict() for f in memory.facts], ensure_ascii=False)
    assert "已隐去" not in facts
    assert "secret removed" not in facts
    assert [f.value for f in memory.facts if f.source == "user"] == ["ORD-1001"]
