"""Missing slots: the brain asks, keeps the question pending, and the next message answers it."""

from __future__ import annotations

import pytest

from hermes.models.base import ModelResponse
from hermes.tools.base import ToolResult

from .harness import Conversation, calculator, hints


async def test_missing_expression_is_asked_for_in_chinese(chat: Conversation) -> None:
    response = await chat.send("帮我算一下")
    assert response.content is not None
    assert response.content.startswith("请问要计算什么？")
    assert response.tool_calls == []
    assert response.finish_reason == "stop"
    assert hints(response) == {"awaiting_slot": "expression", "intent": "calculate"}
    assert chat.scratch["pending"]["intent"] == "calculate"
    assert chat.scratch["pending"]["slot"] == "expression"


async def test_missing_expression_is_asked_for_in_english(chat: Conversation) -> None:
    response = await chat.send("calculate something")
    assert response.content is not None
    assert response.content.startswith("What would you like me to calculate?")
    assert hints(response) == {"awaiting_slot": "expression", "intent": "calculate"}


async def test_the_next_message_fills_the_pending_slot(chat: Conversation) -> None:
    await chat.send("帮我算一下")
    response = await chat.send("3+4")
    assert response.tool_calls[0].name == "calculator"
    assert response.tool_calls[0].arguments == {"expression": "3+4"}
    assert "pending" not in chat.scratch
    reply = await chat.give_result(response, _result_of(response))
    assert reply.content == "3+4 = 7"


async def test_a_chinese_numeral_answer_fills_the_slot(chat: Conversation) -> None:
    await chat.send("calculate something")
    response = await chat.send("十二乘以十二")
    assert response.tool_calls[0].arguments == {"expression": "12*12"}


async def test_an_answer_without_arithmetic_asks_again_and_stays_pending(
    chat: Conversation,
) -> None:
    await chat.send("帮我算一下")
    response = await chat.send("嗯……让我想想")
    assert hints(response) == {"awaiting_slot": "expression", "intent": "calculate"}
    assert chat.scratch["pending"]["slot"] == "expression"
    assert not response.tool_calls


@pytest.mark.parametrize("word", ["算了", "取消", "那算了吧", "cancel", "never mind", "Nevermind!"])
async def test_a_cancel_word_clears_the_pending_slot(chat: Conversation, word: str) -> None:
    await chat.send("帮我算一下")
    response = await chat.send(word)
    assert "pending" not in chat.scratch
    assert hints(response) == {"intent": "cancel"}
    assert response.content in ("好的，已取消。", "OK, cancelled.")
    after = await chat.send("3+4")  # no longer an answer, but still a calculation
    assert after.tool_calls[0].arguments == {"expression": "3+4"}


async def test_cancel_is_acknowledged_in_the_users_language(chat: Conversation) -> None:
    await chat.send("calculate something")
    assert (await chat.send("never mind")).content == "OK, cancelled."
    await chat.send("帮我算一下")
    assert (await chat.send("算了")).content == "好的，已取消。"


async def test_a_message_for_another_intent_abandons_the_pending_slot(
    chat: Conversation,
) -> None:
    await chat.send("帮我算一下")
    response = await chat.send("东京现在几点？")
    assert response.tool_calls[0].name == "current_time"
    assert response.tool_calls[0].arguments == {"timezone": "东京"}
    assert "pending" not in chat.scratch


async def test_a_greeting_while_pending_is_answered_as_a_greeting(chat: Conversation) -> None:
    await chat.send("帮我算一下")
    response = await chat.send("你好")
    assert hints(response) == {"intent": "greeting"}
    assert "pending" not in chat.scratch


async def test_asking_again_for_the_same_intent_keeps_asking(chat: Conversation) -> None:
    await chat.send("帮我算一下")
    response = await chat.send("帮我算算")
    assert hints(response) == {"awaiting_slot": "expression", "intent": "calculate"}


async def test_a_pending_slot_for_an_intent_that_no_longer_exists_is_dropped(
    chat: Conversation,
) -> None:
    chat.scratch["pending"] = {"intent": "vanished", "slot": "x", "slots": {}, "lang": "en"}
    response = await chat.send("blorp")
    assert hints(response) == {"fallback": True}
    assert "pending" not in chat.scratch


async def test_a_malformed_pending_entry_in_scratch_is_ignored(chat: Conversation) -> None:
    chat.scratch["pending"] = "not a dict"
    response = await chat.send("3+4")
    assert response.tool_calls[0].arguments == {"expression": "3+4"}


def _result_of(response: ModelResponse) -> ToolResult:
    (call,) = response.tool_calls
    return calculator(call.arguments)
