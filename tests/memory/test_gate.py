"""The recall gate: which messages may need the user's long-term memories (seed 003 §2.4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.memory.recall import needs_memory


@pytest.mark.parametrize(
    "text",
    [
        "我上次提到的那家川菜馆，帮我订个明天晚上7点两个人的位置",
        "我喜欢什么咖啡？",
        "我的商家ID是多少",
        "还记得我的猫叫什么吗",
        "我们周会几点开",
        "老样子，来一杯",
        "照旧",
        "之前那个数据再跑一下",
        "平时几点提醒比较好",
        "What do I usually order?",
        "Book the same restaurant as last time",
        "Remember that my sister lives in Toronto",
        "my dog is called Biscuit",
        "I prefer window seats",
        "Do you know who I am?",
        "what's my favourite colour",
        "i like tea",
        "Which hotel did we stay at?",
    ],
)
def test_first_person_and_memory_cues_open_the_gate(text: str):
    assert needs_memory(text)


@pytest.mark.parametrize(
    "text",
    [
        "15乘以27等于多少？",
        "再加100呢？",
        "现在几点了",
        "帮忙算一下 3+5",
        "what is 2+3?",
        "Weather in Paris tomorrow?",
        "translate good morning into French",
        "How do vaccines work?",
        "The US election results",
        "",
        "   ",
    ],
)
def test_messages_not_about_the_user_skip_recall(text: str):
    assert not needs_memory(text)


def test_first_person_with_a_named_tool_is_an_instruction_not_a_question():
    assert not needs_memory("I want to run calculator on 3+5", tool_names=["calculator"])
    assert not needs_memory("我要用 Calculator 算一下", tool_names=["calculator"])


def test_a_memory_cue_opens_the_gate_even_with_a_named_tool():
    assert needs_memory("run calculator like last time", tool_names=["calculator"])
    assert needs_memory("用 calculator 算一下上次的结果", tool_names=["calculator"])


def test_non_text_never_opens_the_gate():
    assert not needs_memory(None)  # type: ignore[arg-type]


@given(st.text(max_size=200), st.lists(st.text(max_size=10), max_size=3))
def test_the_gate_never_raises(text: str, tools: list[str]):
    assert needs_memory(text, tool_names=tools) in (True, False)
