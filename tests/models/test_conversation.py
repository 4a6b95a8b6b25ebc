"""wire_messages / with_notes: one system message at the start, never a null content."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from hermes.models.conversation import wire_messages, with_notes

CALL = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}


def test_system_parts_are_joined_into_one_message_at_the_start() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "Summary: x"},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "late note"},
        {"role": "assistant", "content": "hello"},
    ]
    assert wire_messages(messages) == [
        {"role": "system", "content": "Be brief.\n\nSummary: x\n\nlate note"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]


def test_notes_end_the_system_message_or_make_one() -> None:
    user = {"role": "user", "content": "hi"}
    assert with_notes([{"role": "system", "content": "Be brief."}, user], ["remembered"]) == [
        {"role": "system", "content": "Be brief.\n\nremembered"},
        user,
    ]
    assert with_notes([user], ["remembered", ""]) == [
        {"role": "system", "content": "remembered"},
        user,
    ]
    assert with_notes([user], []) == [user]


def test_null_content_becomes_an_empty_string() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": None},
    ]
    out = wire_messages(messages)
    assert [m["content"] for m in out] == ["2+3?", "", ""]
    assert out[1]["tool_calls"] == [CALL]
    assert messages[1]["content"] is None  # the input is not modified


roles = st.sampled_from(["system", "user", "assistant", "tool"])
contents = st.one_of(st.none(), st.text(max_size=8))


@given(st.lists(st.fixed_dictionaries({"role": roles, "content": contents}), max_size=12))
def test_any_conversation_goes_out_with_at_most_one_system_message_first(
    messages: list[dict[str, Any]],
) -> None:
    out = wire_messages(messages)
    assert [m["role"] for m in out[1:]].count("system") == 0
    assert all(m["content"] is not None for m in out if m["role"] != "user")
    assert [m for m in out if m["role"] != "system"] == [
        {**m, "content": "" if m["content"] is None and m["role"] != "user" else m["content"]}
        for m in messages
        if m["role"] != "system"
    ]
