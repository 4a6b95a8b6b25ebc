"""Calculation conversations: the brain turns arithmetic into calculator calls and follows up."""

from __future__ import annotations

import pytest

from hermes.models.base import ModelResponse, ToolCall
from hermes.tools.base import ToolResult

from .harness import Conversation, calculator, hints


async def test_seed_example_15_times_27_then_plus_100_gives_505(chat: Conversation) -> None:
    # seed 003 §3.1: "15乘以27等于多少？" then "再加100呢？" → 405 + 100 = 505
    first = await chat.send("15乘以27等于多少？")
    assert first.finish_reason == "tool_calls"
    assert first.tool_calls == [ToolCall("brain-1", "calculator", {"expression": "15*27"})]
    assert first.content is None

    reply = await chat.give_result(first, _calc(first))
    assert reply.content == "15*27 = 405"
    assert reply.finish_reason == "stop"
    assert chat.scratch["last_result"] == 405
    assert chat.scratch["last_expression"] == "15*27"
    assert chat.scratch["last_intent"] == "calculate"

    follow_up = await chat.send("再加100呢？")
    assert follow_up.tool_calls[0].arguments == {"expression": "405+100"}
    reply = await chat.give_result(follow_up, _calc(follow_up))
    assert reply.content is not None
    assert "505" in reply.content
    assert chat.scratch["last_result"] == 505


@pytest.mark.parametrize(
    ("text", "expression"),
    [
        ("15乘以27等于多少？", "15*27"),
        ("15 * 27", "15*27"),
        ("15 × 27", "15*27"),
        ("what is 15 times 27", "15*27"),
        ("What is 15 TIMES 27?", "15*27"),
        ("计算 (3+4)*5", "(3+4)*5"),
        ("一百加二十", "100+20"),
        ("两千三减去三百", "2300-300"),
        ("一万除以八", "10000/8"),
        ("三万五千乘以二", "35000*2"),
        ("5的平方是多少", "5**2"),
        ("2的10次方", "2**10"),
        ("how much is 7 minus 10", "7-10"),
        ("100 divided by 4", "100/4"),
        ("９９－１", "99-1"),
    ],
)
async def test_arithmetic_in_chinese_or_english_becomes_a_calculator_call(
    chat: Conversation, text: str, expression: str
) -> None:
    response = await chat.send(text)
    assert response.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("calculator", {"expression": expression})
    ]


@pytest.mark.parametrize(
    ("follow_up", "expression"),
    [
        ("再加100呢？", "405+100"),
        ("再乘以2", "405*2"),
        ("减去5呢", "405-5"),
        ("除以3", "405/3"),
        ("的平方呢", "405**2"),
        ("plus 10", "405+10"),
        ("times 2", "405*2"),
        ("and divided by 4?", "405/4"),
        ("minus 5", "405-5"),
    ],
)
async def test_follow_up_applies_to_the_last_result(
    chat: Conversation, follow_up: str, expression: str
) -> None:
    await chat.turn("15乘以27等于多少？")
    response = await chat.send(follow_up)
    assert response.tool_calls[0].arguments == {"expression": expression}


async def test_follow_ups_chain_in_english(chat: Conversation) -> None:
    await chat.turn("what is 15 times 27")
    await chat.turn("plus 10")
    await chat.turn("times 2")
    reply = await chat.turn("and divided by 4?")
    assert chat.calls[-1] == ("calculator", {"expression": "830/4"})
    assert reply.content == "830/4 = 207.5"


async def test_follow_up_on_a_negative_result_keeps_the_sign_inside_the_power(
    chat: Conversation,
) -> None:
    await chat.turn("3 - 8")
    response = await chat.send("的平方呢")
    assert response.tool_calls[0].arguments == {"expression": "(-5)**2"}


async def test_follow_up_without_a_last_result_asks_what_to_compute(chat: Conversation) -> None:
    response = await chat.send("再加100呢？")
    assert not response.tool_calls
    assert response.content is not None
    assert "计算什么" in response.content
    assert hints(response) == {"awaiting_slot": "expression", "intent": "calculate"}


async def test_reply_is_in_english_for_an_english_question(chat: Conversation) -> None:
    reply = await chat.turn("what is 6 times 7")
    assert reply.content == "6*7 = 42"
    ask = await chat.send("calculate something")
    assert ask.content is not None
    assert ask.content.startswith("What would you like me to calculate?")


async def test_tool_call_ids_are_deterministic_and_unique_across_the_session(
    chat: Conversation,
) -> None:
    ids = []
    for text in ("1+1", "再加1", "再加1"):
        response = await chat.send(text)
        ids.append(response.tool_calls[0].id)
        await chat.give_result(response, _calc(response))
    assert ids == ["brain-1", "brain-2", "brain-3"]


async def test_a_time_result_does_not_replace_the_last_number(chat: Conversation) -> None:
    await chat.turn("15乘以27等于多少？")
    await chat.turn("现在几点")
    response = await chat.send("再加100呢？")
    assert response.tool_calls[0].arguments == {"expression": "405+100"}


async def test_a_bare_number_is_not_a_calculation(chat: Conversation) -> None:
    response = await chat.send("计算 42")
    assert not response.tool_calls
    assert response.meta.get("awaiting_slot") == "expression"


def _calc(response: ModelResponse) -> ToolResult:
    (call,) = response.tool_calls
    return calculator(call.arguments)
