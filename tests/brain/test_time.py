"""Time and date questions become current_time calls; the reply is phrased from its output."""

from __future__ import annotations

import pytest

from .harness import Conversation, hints


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        ("现在几点", {}),
        ("现在几点了？", {}),
        ("东京现在几点？", {"timezone": "东京"}),
        ("现在纽约几点", {"timezone": "纽约"}),
        ("请问现在北京时间是几点？", {"timezone": "北京"}),
        ("what time is it", {}),
        ("what time is it in London", {"timezone": "London"}),
        ("What's the time in New York right now?", {"timezone": "New York"}),
        ("what time is it in Asia/Tokyo", {"timezone": "Asia/Tokyo"}),
        ("UTC+8现在几点", {"timezone": "UTC+8"}),
    ],
)
async def test_time_questions_call_current_time_with_the_place_as_said(
    chat: Conversation, text: str, arguments: dict[str, str]
) -> None:
    response = await chat.send(text)
    assert response.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("current_time", arguments)]
    assert hints(response) == {"intent": "time"}


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        ("今天几号", {}),
        ("今天星期几？", {}),
        ("纽约今天星期几", {"timezone": "纽约"}),
        ("what's the date", {}),
        ("What is the date today?", {}),
        ("what's the date in London", {"timezone": "London"}),
    ],
)
async def test_date_questions_call_current_time(
    chat: Conversation, text: str, arguments: dict[str, str]
) -> None:
    response = await chat.send(text)
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("current_time", arguments)]
    assert hints(response) == {"intent": "date"}


async def test_time_in_a_city_is_answered_from_the_tool_output_in_chinese(
    chat: Conversation,
) -> None:
    reply = await chat.turn("东京现在几点？")
    assert reply.content == "东京现在是 2024-05-01 星期三 14:03:00（Asia/Tokyo）。"


async def test_time_in_a_city_is_answered_from_the_tool_output_in_english(
    chat: Conversation,
) -> None:
    reply = await chat.turn("what time is it in London")
    assert reply.content == "It is 14:03:00 on Wednesday, 2024-05-01 in London (Europe/London)."


async def test_date_is_answered_with_the_weekday_and_says_the_zone_is_the_machines(
    chat: Conversation,
) -> None:
    assert (await chat.turn("今天星期几")).content == (
        "今天是 2024-05-01，星期三（UTC，本机时区；"
        "要用其他时区，请在 hermes.yaml 中设置 agent.timezone）。"
    )
    assert (await chat.turn("what's the date")).content == (
        "Today is Wednesday, 2024-05-01 (UTC, this machine's time zone; set agent.timezone in "
        "hermes.yaml for another)."
    )


async def test_an_unknown_city_gets_the_tools_error_not_a_made_up_time(
    chat: Conversation,
) -> None:
    reply = await chat.turn("what time is it in Atlantis")
    assert reply.content is not None
    assert reply.content.startswith('I don\'t know which time zone "Atlantis" is in')
    assert "14:03" not in reply.content
