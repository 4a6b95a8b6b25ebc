"""Properties: the brain answers anything without raising and keeps its scratch JSON-ready."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.models.base import ModelRequest, ModelResponse
from hermes.models.brain import RuleBrain

from .harness import ALL_TOOLS

BRAIN = RuleBrain()

_PHRASES = st.sampled_from(
    [
        "15乘以27等于多少？",
        "再加",
        "帮我算一下",
        "算了",
        "几点",
        "東京",
        "plus",
        "help",
        "(",
        "万",
        "的平方",
    ]
)
_USER_TEXT = st.lists(_PHRASES | st.text(max_size=60), max_size=4).map("".join)
_SCRATCHES = st.sampled_from(
    [
        {},
        {"last_result": 405},
        {"last_result": -2.5, "brain_calls": 7},
        {"pending": {"intent": "calculate", "slot": "expression", "slots": {}, "lang": "zh"}},
        {"pending": {"intent": "calculate", "slot": "nope", "slots": {"x": 1}}},
        {"pending": [1, 2], "inflight": "junk", "brain_calls": "x", "last_result": "abc"},
    ]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_TOOL_CONTENT = (
    st.text(max_size=80)
    | _JSON.map(json.dumps)
    | st.builds(
        lambda ok, output, error: json.dumps({"ok": ok, "output": output, "error": error}),
        st.booleans() | _JSON,
        _JSON,
        _JSON,
    )
)


def _complete(messages: list[Any], scratch: dict[str, Any]) -> ModelResponse:
    request = ModelRequest(messages=messages, tools=ALL_TOOLS, scratch=scratch)
    return asyncio.run(BRAIN.complete(request))


def _assert_well_formed(response: ModelResponse, scratch: dict[str, Any]) -> None:
    assert response.content or response.tool_calls
    assert response.finish_reason == ("tool_calls" if response.tool_calls else "stop")
    json.dumps(scratch)  # persisted as JSON by the loop
    json.dumps(response.meta)
    for call in response.tool_calls:
        json.dumps(call.arguments)


@settings(max_examples=300)
@given(_USER_TEXT, _SCRATCHES)
def test_any_user_text_gets_a_well_formed_answer(text: str, scratch: dict[str, Any]) -> None:
    scratch = json.loads(json.dumps(scratch))
    response = _complete([{"role": "user", "content": text}], scratch)
    _assert_well_formed(response, scratch)


@settings(max_examples=300)
@given(_TOOL_CONTENT, st.sampled_from(["brain-1", "other", ""]), _SCRATCHES)
def test_any_tool_result_gets_a_reply(content: str, call_id: str, scratch: dict[str, Any]) -> None:
    scratch = json.loads(json.dumps(scratch))
    scratch["inflight"] = {
        "id": "brain-1",
        "intent": "calculate",
        "tool": "calculator",
        "slots": {},
    }
    messages = [
        {"role": "user", "content": "15*27"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "function": {}}]},
        {"role": "tool", "tool_call_id": call_id, "content": content},
    ]
    response = _complete(messages, scratch)
    _assert_well_formed(response, scratch)
    assert not response.tool_calls
    assert "inflight" not in scratch


@given(st.lists(_JSON, max_size=4))
def test_odd_message_lists_do_not_break_the_brain(messages: list[Any]) -> None:
    scratch: dict[str, Any] = {}
    response = _complete(messages, scratch)
    _assert_well_formed(response, scratch)


def test_the_same_request_gives_the_same_answer() -> None:
    first = _complete([{"role": "user", "content": "一百加二十"}], {})
    second = _complete([{"role": "user", "content": "一百加二十"}], {})
    assert first == second
