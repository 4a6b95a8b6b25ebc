"""The CJK-aware token estimate."""

from __future__ import annotations

from hermes.session.tokens import (
    MESSAGE_OVERHEAD,
    REPLY_PRIMING,
    count_tokens,
    message_tokens,
    messages_tokens,
)


def test_empty_text_costs_nothing():
    assert count_tokens("") == 0


def test_any_non_empty_text_costs_at_least_one_token():
    assert count_tokens("a") == 1
    assert count_tokens(" ") == 1
    assert count_tokens("é") == 1


def test_english_costs_about_one_token_per_four_characters():
    text = "The quick brown fox jumps over the lazy dog. " * 10  # 450 characters
    assert count_tokens(text) == 113


def test_chinese_costs_about_one_token_per_character():
    assert count_tokens("北京明天天气怎么样") == 9
    assert count_tokens("你好，世界！") == 6  # full-width punctuation counts like CJK


def test_japanese_and_korean_count_like_chinese():
    assert count_tokens("こんにちは") == 5
    assert count_tokens("カタカナ") == 4
    assert count_tokens("안녕하세요") == 5


def test_mixed_text_adds_both_estimates():
    # 4 CJK characters + 12 other characters ("call  please")
    assert count_tokens("call 天气预报 please") == 4 + 3


def test_chinese_costs_more_than_english_of_the_same_length():
    assert count_tokens("我" * 400) > 3 * count_tokens("w" * 400)


def test_rare_ideographs_outside_the_basic_plane_count_as_cjk():
    assert count_tokens("𠀀𠀁𠀂") == 3


def test_a_long_text_is_counted():
    assert count_tokens("数据" * 500_000 + "x" * 4_000_000) == 1_000_000 + 1_000_000


def test_a_message_costs_its_text_plus_overhead():
    assert message_tokens({"role": "user", "content": "你好"}) == MESSAGE_OVERHEAD + 2
    assert message_tokens({"role": "assistant", "content": None}) == MESSAGE_OVERHEAD


def test_tool_call_names_and_arguments_are_counted():
    bare = message_tokens({"role": "assistant", "content": None})
    with_call = message_tokens(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "北京"}'},
                }
            ],
        }
    )
    assert with_call > bare + count_tokens('{"city": "北京"}') + count_tokens("get_weather")


def test_content_parts_are_counted():
    parts = [{"type": "text", "text": "描述这张图片"}, {"type": "image_url", "image_url": {}}]
    assert message_tokens({"role": "user", "content": parts}) > MESSAGE_OVERHEAD + 6


def test_a_tool_message_counts_its_call_id():
    plain = message_tokens({"role": "tool", "content": "ok"})
    assert message_tokens({"role": "tool", "content": "ok", "tool_call_id": "call_1234"}) > plain


def test_a_request_adds_reply_priming():
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert messages_tokens(messages) == REPLY_PRIMING + sum(message_tokens(m) for m in messages)
