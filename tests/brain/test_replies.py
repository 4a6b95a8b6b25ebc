"""Replies without tools, and honesty: capabilities, small talk, services the brain lacks,
tools that are not offered, failed or unreadable results."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from hermes.models.base import ModelRequest
from hermes.models.brain import RuleBrain
from hermes.tools.base import ToolResult

from .harness import CALCULATOR, Conversation, hints


@pytest.mark.parametrize("text", ["你能做什么", "你会什么？", "help", "What can you do?"])
async def test_capabilities_list_the_offered_tools_with_descriptions(
    chat: Conversation, text: str
) -> None:
    reply = await chat.send(text)
    assert hints(reply) == {"intent": "capabilities"}
    assert reply.content is not None
    assert "- calculator: Evaluate an arithmetic expression." in reply.content
    assert "- current_time: The current date and time" in reply.content


async def test_capabilities_list_only_the_tools_actually_offered(
    make_chat: Callable[..., Conversation],
) -> None:
    chat = make_chat(tools=[CALCULATOR])
    reply = await chat.send("你能做什么")
    assert reply.content is not None
    assert "calculator" in reply.content
    assert "current_time" not in reply.content
    assert "15乘以27等于多少？" in reply.content  # an example for the offered tool
    assert "几点" not in reply.content  # no example for a tool that is not offered


async def test_capabilities_without_any_tool_say_so(make_chat: Callable[..., Conversation]) -> None:
    reply = await make_chat(tools=[]).send("what can you do")
    assert reply.content is not None
    assert "(no tools are available right now)" in reply.content


@pytest.mark.parametrize(
    ("text", "intent", "expected"),
    [
        ("你好", "greeting", "你能做什么"),
        ("hi", "greeting", "what can you do"),
        ("Hello there!", "greeting", "what can you do"),
        ("谢谢", "thanks", "不客气"),
        ("thanks!", "thanks", "You're welcome"),
    ],
)
async def test_small_talk_gets_a_short_reply(
    chat: Conversation, text: str, intent: str, expected: str
) -> None:
    reply = await chat.send(text)
    assert hints(reply) == {"intent": intent}
    assert reply.content is not None
    assert expected in reply.content
    assert reply.finish_reason == "stop"


@pytest.mark.parametrize(
    ("text", "intent", "service"),
    [
        ("明天北京天气怎么样？", "weather", "天气服务"),
        ("what's the weather in Paris", "weather", "weather service"),
        ("茅台股价多少", "stock", "行情服务"),
        ("AAPL stock price", "stock", "market-data service"),
        ("今天有什么新闻", "news", "新闻服务"),
        ("latest news please", "news", "news service"),
        ("帮我搜索一下 Hermes", "web_search", "搜索服务"),
    ],
)
async def test_services_the_brain_lacks_get_an_honest_reply_without_data(
    chat: Conversation, text: str, intent: str, service: str
) -> None:
    reply = await chat.send(text)
    assert hints(reply) == {"intent": intent}
    assert not reply.tool_calls
    assert reply.content is not None
    assert service in reply.content
    assert "hermes.yaml" in reply.content  # how to add a model or a tool
    assert not re.search(r"\d", reply.content.replace("hermes.yaml", ""))  # no invented numbers


async def test_an_intents_tool_that_is_not_offered_is_reported_unavailable(
    make_chat: Callable[..., Conversation],
) -> None:
    chat = make_chat(tools=[CALCULATOR])
    reply = await chat.send("现在几点")
    assert not reply.tool_calls
    assert reply.content is not None
    assert "current_time" in reply.content
    assert "没有可用" in reply.content
    assert hints(reply) == {"intent": "time", "tool_unavailable": "current_time"}


async def test_no_question_is_asked_for_a_tool_that_is_not_offered(
    make_chat: Callable[..., Conversation],
) -> None:
    chat = make_chat(tools=[])
    reply = await chat.send("帮我算一下")
    assert hints(reply) == {"intent": "calculate", "tool_unavailable": "calculator"}
    assert "pending" not in chat.scratch


@pytest.mark.parametrize(
    ("text", "opening"),
    [("asdfgh qwerty", "Sorry, I didn't understand that."), ("随便聊聊吧", "抱歉，我没听懂。")],
)
async def test_unrecognised_text_gets_an_honest_fallback_listing_capabilities(
    chat: Conversation, text: str, opening: str
) -> None:
    reply = await chat.send(text)
    assert reply.finish_reason == "stop"
    assert hints(reply) == {"fallback": True}
    assert reply.content is not None
    assert reply.content.startswith(opening)
    assert "calculator" in reply.content
    assert "current_time" in reply.content


async def test_a_failed_result_is_reported_with_its_error_and_no_invented_answer(
    chat: Conversation,
) -> None:
    reply = await chat.turn("1除以0等于多少")
    assert reply.content == "抱歉，没能算出 1/0：division by zero (除数不能为零)"
    assert "last_result" not in chat.scratch


async def test_a_failed_result_of_a_tool_without_error_reply_uses_the_generic_wording(
    chat: Conversation,
) -> None:
    response = await chat.send("what time is it")
    failure = ToolResult.failure("timeout", "the tool did not finish within 10s")
    reply = await chat.give_result(response, failure)
    assert reply.content == "Sorry, 'current_time' failed: the tool did not finish within 10s"


async def test_a_result_that_is_not_json_is_quoted_not_interpreted(chat: Conversation) -> None:
    response = await chat.send("3+4")
    chat.messages.append({"role": "assistant", "content": None, "tool_calls": []})
    call_id = response.tool_calls[0].id
    chat.messages.append({"role": "tool", "tool_call_id": call_id, "content": "<html>502</html>"})
    reply = await chat.step()
    assert reply.content == "'calculator' returned a result I could not read: <html>502</html>"
    assert "last_result" not in chat.scratch


async def test_a_result_is_phrased_even_when_the_scratch_was_lost(brain: RuleBrain) -> None:
    # Another model (or a lost scratch) made the call: the brain finds the tool by call id.
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "15*27"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call-9",
                    "type": "function",
                    "function": {"name": "calculator", "arguments": '{"expression": "15*27"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call-9",
            "content": json.dumps({"ok": True, "output": {"expression": "15*27", "result": 405}}),
        },
    ]
    scratch: dict[str, object] = {}
    reply = await brain.complete(
        ModelRequest(messages=messages, tools=[CALCULATOR], scratch=scratch)
    )
    assert reply.content == "15*27 = 405"
    assert scratch["last_result"] == 405


async def test_a_result_whose_fields_do_not_fit_the_template_shows_the_summary(
    chat: Conversation,
) -> None:
    response = await chat.send("现在几点")
    odd = ToolResult(ok=True, output={"now": "noon"}, summary="it is noon")
    reply = await chat.give_result(response, odd)
    assert reply.content == "「current_time」的结果：it is noon"


async def test_the_reply_is_streamed_to_on_text_when_a_callback_is_given(brain: RuleBrain) -> None:
    deltas: list[str] = []
    request = ModelRequest(messages=[{"role": "user", "content": "hi"}], on_text=deltas.append)
    reply = await brain.complete(request)
    assert deltas == [reply.content]


async def test_content_given_as_parts_is_read(brain: RuleBrain) -> None:
    message = {"role": "user", "content": [{"type": "text", "text": "15*27"}]}
    reply = await brain.complete(ModelRequest(messages=[message], tools=[CALCULATOR]))
    assert reply.tool_calls[0].arguments == {"expression": "15*27"}


def test_the_brain_is_a_model_named_offline_brain(brain: RuleBrain) -> None:
    from hermes.models.base import Model

    assert isinstance(brain, Model)
    assert brain.name == "offline-brain"
