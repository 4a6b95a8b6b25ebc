"""The context builder: message order, grouping, tool pairing repair (seed 001 §2.3), budget."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.session.context import (
    MISSING_RESULT,
    STICKY_HEADER,
    SUMMARY_HEADER,
    BuiltContext,
    build_messages,
)
from hermes.session.items import ContextSlice, Item
from hermes.session.tokens import messages_tokens
from tests.session.helpers import a_round, call, result, rounds, say, summary, user

BIG = 1_000_000


def _numbered(items: list[Item]) -> list[Item]:
    for seq, item in enumerate(items, start=1):
        item.seq = seq
    return items


def _build(items: list[Item], budget: int = BIG, **kwargs: Any) -> BuiltContext:
    window = _numbered(items)
    return build_messages(
        ContextSlice(sticky=kwargs.pop("sticky", []), summary=kwargs.pop("summary", None),
                     window=window),
        system_prompt=kwargs.pop("system_prompt", None),
        budget_tokens=budget,
        **kwargs,
    )  # fmt: skip


def _roles(built: BuiltContext) -> list[str]:
    return [m["role"] for m in built.messages]


# -- order and conversion ---------------------------------------------------------------------


def test_messages_come_in_the_documented_order():
    built = _build(
        [user("hi"), say("hello")],
        system_prompt="You are Hermes.",
        summary=summary("earlier: the user asked about weather", 10),
        sticky=[user("我叫张三", sticky=True)],
        extra_system=["Recalled memory: likes tea", ""],
    )
    contents = [m["content"] for m in built.messages]
    assert contents == [
        "You are Hermes.",
        SUMMARY_HEADER + "earlier: the user asked about weather",
        STICKY_HEADER + "- user: 我叫张三",
        "Recalled memory: likes tea",
        "hi",
        "hello",
    ]
    assert _roles(built) == ["system"] * 4 + ["user", "assistant"]


def test_consecutive_assistant_items_become_one_message():
    built = _build([user("2+3 and 4+5?"), say("Let me compute."), call("c1"), call("c2"),
                    result("c1"), result("c2"), say("5 and 9.")])  # fmt: skip
    assistant = built.messages[1]
    assert assistant["content"] == "Let me compute."
    assert [c["id"] for c in assistant["tool_calls"]] == ["c1", "c2"]
    assert assistant["tool_calls"][0] == {
        "id": "c1",
        "type": "function",
        "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
    }
    assert _roles(built) == ["user", "assistant", "tool", "tool", "assistant"]
    assert built.repaired == 0


def test_an_assistant_message_with_only_tool_calls_has_empty_content():
    # "" and never null: llama-cpp-python and llama.cpp's server refuse a null content.
    built = _build([user("q"), call("c1"), result("c1")])
    assert built.messages[1]["content"] == ""


def test_tool_results_are_tool_messages_with_their_call_id():
    built = _build(a_round(1))
    assert built.messages[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": '{"ok": true, "output": 3}',
    }


def test_summary_and_state_items_in_the_window_are_not_conversation():
    state = Item(role="system", kind="state", content="approved")
    built = _build([user("q"), summary("s", 0), state, say("a")])
    assert _roles(built) == ["user", "assistant"]


def test_system_text_items_in_the_window_stay_in_place():
    built = _build([user("q"), Item(role="system", kind="text", content="note"), say("a")])
    assert _roles(built) == ["user", "system", "assistant"]


def test_tokens_are_the_estimate_of_the_returned_messages():
    built = _build(rounds(3), system_prompt="sys", extra_system=["x"])
    assert built.tokens == messages_tokens(built.messages)


# -- repair (seed 001 §2.3) ---------------------------------------------------------------------


def test_a_call_without_its_result_gets_a_synthetic_missing_result():
    built = _build([user("q"), call("c1"), user("next")])
    assert built.messages[2] == {"role": "tool", "tool_call_id": "c1", "content": MISSING_RESULT}
    assert json.loads(MISSING_RESULT)["error"]["type"] == "missing_result"
    assert _roles(built) == ["user", "assistant", "tool", "user"]
    assert built.repaired == 1


def test_a_result_whose_call_was_trimmed_is_dropped():
    built = _build([result("gone"), user("q"), say("a")])
    assert _roles(built) == ["user", "assistant"]
    assert built.repaired == 1


def test_results_follow_their_calls_in_call_order():
    built = _build([user("q"), call("c1"), call("c2"), result("c2", "two"), result("c1", "one")])
    assert [(m.get("tool_call_id"), m["content"]) for m in built.messages[2:]] == [
        ("c1", "one"),
        ("c2", "two"),
    ]


def test_a_result_stored_after_a_later_message_moves_back_to_its_call():
    built = _build([user("q"), call("c1"), user("interrupt"), result("c1", "late")])
    assert _roles(built) == ["user", "assistant", "tool", "user"]
    assert built.messages[2]["content"] == "late"


def test_a_second_result_for_the_same_call_is_dropped():
    built = _build([user("q"), call("c1"), result("c1", "first"), result("c1", "again")])
    assert [m["content"] for m in built.messages if m["role"] == "tool"] == ["first"]
    assert built.repaired == 1


def test_a_duplicated_call_id_is_dropped():
    built = _build([user("q"), call("c1"), result("c1"), call("c1"), result("c1")])
    assert _roles(built) == ["user", "assistant", "tool"]


# -- budget -------------------------------------------------------------------------------------


def test_over_budget_the_oldest_whole_rounds_are_dropped():
    items = rounds(10)
    full = _build(list(items))
    per_round = (full.tokens - 3) // 10
    built = _build(rounds(10), budget=3 + per_round * 3 + 1)
    assert built.dropped_rounds == 7
    assert built.messages[0]["content"] == "question 7"
    assert built.tokens <= 3 + per_round * 3 + 1


def test_the_last_round_is_never_dropped():
    built = _build(rounds(5), budget=1)
    assert built.dropped_rounds == 4
    assert built.messages[0]["content"] == "question 4"


def test_the_fixed_part_is_kept_even_when_it_exceeds_the_budget():
    built = _build(rounds(2), budget=10, system_prompt="S" * 400)
    assert built.messages[0]["content"] == "S" * 400
    assert built.tokens > 10


def test_a_last_round_still_over_budget_gets_its_newest_tool_result_shortened_to_its_floor():
    huge = "数据" * 5_000
    items = [user("q"), call("c1"), result("c1", "small"), call("c2"), result("c2", huge)]
    built = _build(items, budget=800)
    contents = {m["tool_call_id"]: m["content"] for m in built.messages if m["role"] == "tool"}
    assert contents["c1"] == "small"
    assert contents["c2"].startswith("数据" * 250)  # its first 500 tokens …
    assert contents["c2"].endswith("数据" * 250)  # … and its last 500
    assert "characters left out to fit the context" in contents["c2"]
    assert len(contents["c2"]) < len(huge)
    assert built.truncated == 1
    assert built.tokens == messages_tokens(built.messages)


def test_truncation_stops_at_the_floor_of_the_newest_result():
    items = [user("q" * 4_000), call("c1"), result("c1", "r" * 5_000)]
    built = _build(items, budget=50)
    (tool,) = [m for m in built.messages if m["role"] == "tool"]
    assert tool["content"].startswith("r" * 2_000)
    assert tool["content"].endswith("r" * 2_000)
    assert "[… 1000 of 5000 characters left out to fit the context …]" in tool["content"]


# -- the property -----------------------------------------------------------------------------

_CALL_IDS = st.sampled_from(["c1", "c2", "c3", "c4", None])
_LONG_TEXT = st.builds(str.__mul__, st.sampled_from(["r", "数", "ab "]), st.integers(0, 3_000))
_RESULT_TEXT = st.one_of(st.text(max_size=30), _LONG_TEXT)
_item = st.one_of(
    st.builds(user, st.text(max_size=30)),
    st.builds(say, st.text(max_size=30)),
    st.builds(
        lambda cid, name: Item(role="assistant", kind="tool_call", content="{}",
                               tool_call_id=cid, tool_name=name),
        _CALL_IDS, st.sampled_from(["add", "search"]),
    ),
    st.builds(
        lambda cid, text: Item(role="tool", kind="tool_result", content=text, tool_call_id=cid),
        _CALL_IDS, _RESULT_TEXT,
    ),
    st.builds(lambda: summary("s", 0)),
    st.builds(lambda: Item(role="system", kind="state", content="x")),
    st.builds(lambda: Item(role="tool", kind="text", content="stray")),
)  # fmt: skip


def _assert_well_paired(messages: list[dict[str, Any]]) -> None:
    expected: list[str] = []  # ids of the last assistant message's calls still to be answered
    for message in messages:
        if message["role"] == "tool":
            assert expected, f"orphan tool message {message}"
            assert message["tool_call_id"] == expected.pop(0)
            continue
        assert not expected, f"calls {expected} not answered before {message}"
        if message["role"] == "assistant":
            calls = message.get("tool_calls") or []
            ids = [c["id"] for c in calls]
            assert len(set(ids)) == len(ids)
            assert message["content"] is not None or calls
            expected = ids
    assert not expected, f"calls {expected} not answered at the end"


@settings(max_examples=400, deadline=None)
@given(st.lists(_item, max_size=40), st.integers(min_value=0, max_value=2_000))
def test_every_call_is_answered_right_after_it_and_no_result_is_orphaned(
    items: list[Item], budget: int
):
    built = _build(items, budget=budget, system_prompt="sys")
    _assert_well_paired(built.messages)
    assert built.tokens == messages_tokens(built.messages)
    call_ids = [c["id"] for m in built.messages for c in m.get("tool_calls") or []]
    assert len(set(call_ids)) == len(call_ids)  # ids are unique across the whole request
    if built.tokens > budget:  # then only the last round is left
        window = built.messages[1:]  # after the system prompt
        assert [i for i, m in enumerate(window) if m["role"] == "user"] in ([], [0])


@settings(max_examples=200, deadline=None)
@given(st.lists(_item, max_size=40), st.integers(min_value=0, max_value=2_000))
def test_the_last_user_message_is_always_kept(items: list[Item], budget: int):
    built = _build(items, budget=budget)
    users = [i.content for i in items if i.kind == "text" and i.role == "user"]
    sent = [m["content"] for m in built.messages if m["role"] == "user"]
    if users:
        assert sent[-1] == users[-1]


@settings(max_examples=200, deadline=None)
@given(st.lists(_item, max_size=40))
def test_the_counts_kept_on_items_are_exactly_what_the_messages_cost(items: list[Item]):
    """The builder counts each item once and keeps the count on it (``Item.tokens``): a window
    the store serves again from memory costs the same as one read afresh, to the token."""
    first = _build(items, system_prompt="sys")
    assert first.tokens == messages_tokens(first.messages)
    again = _build(items, system_prompt="sys")  # the same items, their counts kept
    assert again.tokens == first.tokens == messages_tokens(again.messages)
    fresh = [Item(i.role, i.kind, i.content, i.tool_call_id, i.tool_name, i.sticky) for i in items]
    assert all(i.tokens == -1 for i in fresh)
    assert _build(fresh, system_prompt="sys").tokens == first.tokens
