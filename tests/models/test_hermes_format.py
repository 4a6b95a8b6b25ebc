"""The Hermes prompt format: parsing <tool_call> blocks, the tools prompt, message conversion."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.models.base import ToolSpec
from hermes.models.hermes_format import parse_tool_calls, render_tools_prompt, to_hermes_messages

ADD = ToolSpec(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)

# parse_tool_calls -------------------------------------------------------------------------


def test_plain_text_has_no_calls() -> None:
    parsed = parse_tool_calls("  The answer is 5.  ")
    assert parsed.content == "The answer is 5."
    assert parsed.tool_calls == []
    assert parsed.errors == []


def test_one_call_is_parsed() -> None:
    parsed = parse_tool_calls(
        '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'
    )
    assert parsed.content is None
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("add", {"a": 2, "b": 3})]


def test_several_calls_with_text_before_between_and_after() -> None:
    text = (
        "Let me check. "
        '<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>'
        " and "
        '<tool_call>{"name": "b", "arguments": {}}</tool_call>'
        " done"
    )
    parsed = parse_tool_calls(text)
    assert [c.name for c in parsed.tool_calls] == ["a", "b"]
    assert parsed.content == "Let me check.  and  done"


def test_unclosed_last_block_reads_to_the_end() -> None:
    parsed = parse_tool_calls('Sure.\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}')
    assert parsed.content == "Sure."
    assert parsed.tool_calls[0].arguments == {"a": 1, "b": 2}


def test_unclosed_block_followed_by_another_block() -> None:
    parsed = parse_tool_calls(
        '<tool_call>{"name": "a", "arguments": {}}'
        '<tool_call>{"name": "b", "arguments": {}}</tool_call>'
    )
    assert [c.name for c in parsed.tool_calls] == ["a", "b"]


def test_lenient_json_inside_the_block() -> None:
    text = (
        "<tool_call>{'name': 'add', 'arguments': {'a': 1, 'b': 2, 'ok': True, 'n': None,},}"
        "</tool_call>"
    )
    parsed = parse_tool_calls(text)
    assert parsed.tool_calls[0].arguments == {"a": 1, "b": 2, "ok": True, "n": None}


def test_unquoted_keys_inside_the_block() -> None:
    parsed = parse_tool_calls('<tool_call>{name: "add", arguments: {a: 1}}</tool_call>')
    assert parsed.tool_calls[0].arguments == {"a": 1}


def test_code_fence_inside_the_block() -> None:
    parsed = parse_tool_calls(
        '<tool_call>\n```json\n{"name": "add", "arguments": {"a": 1}}\n```\n</tool_call>'
    )
    assert parsed.tool_calls[0].name == "add"


def test_arguments_given_as_a_json_string_are_decoded() -> None:
    parsed = parse_tool_calls('<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call>')
    assert parsed.tool_calls[0].arguments == {"a": 1}


def test_arguments_under_the_key_parameters() -> None:
    parsed = parse_tool_calls('<tool_call>{"name": "add", "parameters": {"a": 1}}</tool_call>')
    assert parsed.tool_calls[0].arguments == {"a": 1}


def test_missing_arguments_mean_no_arguments() -> None:
    parsed = parse_tool_calls('<tool_call>{"name": "current_time"}</tool_call>')
    assert parsed.tool_calls[0].arguments == {}


def test_closing_tag_inside_a_string_argument_does_not_end_the_block() -> None:
    parsed = parse_tool_calls(
        '<tool_call>{"name": "echo", "arguments": {"t": "</tool_call>"}}</tool_call>'
    )
    assert parsed.tool_calls[0].arguments == {"t": "</tool_call>"}
    assert parsed.content is None


def test_one_closing_brace_too_many_is_tolerated() -> None:
    parsed = parse_tool_calls('<tool_call>{"name": "add", "arguments": {"a": 1}}}</tool_call>')
    assert parsed.tool_calls[0].arguments == {"a": 1}


def test_a_list_of_calls_in_one_block() -> None:
    parsed = parse_tool_calls('<tool_call>[{"name": "a"}, {"name": "b"}]</tool_call>')
    assert [c.name for c in parsed.tool_calls] == ["a", "b"]


def test_openai_function_wrapper_is_unwrapped() -> None:
    text = (
        '<tool_call>{"type": "function", "function": {"name": "f", "arguments": "{}"}}</tool_call>'
    )
    assert parse_tool_calls(text).tool_calls[0].name == "f"


@pytest.mark.parametrize("call", ['{"name": "", "arguments": {}}', '{"arguments": {"a": 1}}'])
def test_call_without_a_name_is_skipped_with_an_error(call: str) -> None:
    parsed = parse_tool_calls(f"<tool_call>{call}</tool_call>")
    assert parsed.tool_calls == []
    assert "missing tool name" in parsed.errors[0]


@pytest.mark.parametrize("arguments", ["[1, 2]", '"just text"', "3"])
def test_arguments_that_are_not_an_object_are_skipped_with_an_error(arguments: str) -> None:
    parsed = parse_tool_calls(f'<tool_call>{{"name": "add", "arguments": {arguments}}}</tool_call>')
    assert parsed.tool_calls == []
    assert "add" in parsed.errors[0]


def test_invalid_json_is_skipped_and_valid_neighbours_are_kept() -> None:
    text = (
        '<tool_call>{"name": "a", "arguments": {"x": </tool_call>'
        '<tool_call>{"name": "b"}</tool_call>'
    )
    parsed = parse_tool_calls(text)
    assert [c.name for c in parsed.tool_calls] == ["b"]
    assert "invalid JSON" in parsed.errors[0]


def test_empty_block_is_an_error() -> None:
    parsed = parse_tool_calls("<tool_call></tool_call>")
    assert parsed.tool_calls == []
    assert parsed.errors == ["tool call block 1: empty block"]


def test_stray_closing_tag_is_not_content() -> None:
    assert parse_tool_calls("</tool_call> hello").content == "hello"


@pytest.mark.parametrize("value", [None, 42, b"<tool_call>", ["x"]])
def test_non_text_input_gives_an_empty_result(value: Any) -> None:
    parsed = parse_tool_calls(value)
    assert parsed.content is None
    assert parsed.tool_calls == []


tag_soup = st.lists(
    st.sampled_from(
        [
            "<tool_call>",
            "</tool_call>",
            "{",
            "}",
            "[",
            "]",
            '"',
            "'",
            ",",
            ":",
            "\\",
            "```",
            "name",
            "arguments",
            "parameters",
            "True",
            "None",
            " ",
            "\n",
            '{"name": "x"',
            '"arguments": ',
            "1",
        ]
    )
    | st.text(max_size=8),
    max_size=40,
).map("".join)


@given(st.text())
def test_parse_never_raises_on_arbitrary_text(text: str) -> None:
    parsed = parse_tool_calls(text)
    assert parsed.content is None or parsed.content == parsed.content.strip()


@given(tag_soup)
def test_parse_never_raises_on_tag_soup(text: str) -> None:
    parsed = parse_tool_calls(text)
    for call in parsed.tool_calls:
        assert call.name
        assert isinstance(call.arguments, dict)


json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3)
    ),
    max_leaves=8,
)
tool_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,40}", fullmatch=True)
outside_text = st.text().filter(lambda t: "<tool_call>" not in t and "</tool_call>" not in t)


@given(
    st.lists(
        st.tuples(tool_names, st.dictionaries(st.text(), json_values, max_size=4), st.booleans()),
        min_size=1,
        max_size=4,
    ),
    st.data(),
)
def test_valid_calls_round_trip(
    calls: list[tuple[str, dict[str, Any], bool]], data: st.DataObject
) -> None:
    texts = [data.draw(outside_text) for _ in range(len(calls) + 1)]
    pieces = [texts[0]]
    for (name, arguments, ascii_only), after in zip(calls, texts[1:], strict=True):
        payload = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=ascii_only)
        pieces.append(f"<tool_call>{payload}</tool_call>{after}")
    parsed = parse_tool_calls("".join(pieces))
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [(n, a) for n, a, _ in calls]
    assert parsed.content == ("".join(texts).strip() or None)
    assert parsed.errors == []


# render_tools_prompt ----------------------------------------------------------------------


def test_tools_prompt_lists_each_tool_in_openai_function_format() -> None:
    prompt = render_tools_prompt([ADD])
    inside = prompt.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    assert json.loads(inside) == ADD.to_openai()
    assert "<tool_call>" in prompt
    assert '"arguments"' in prompt


# to_hermes_messages -----------------------------------------------------------------------

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "what is 2+3 and 4+5?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 4, "b": 5}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true, "output": 5}'},
    {"role": "tool", "tool_call_id": "c2", "content": "plain 9"},
    {"role": "assistant", "content": "5 and 9."},
]


def test_assistant_tool_calls_become_tool_call_blocks() -> None:
    converted = to_hermes_messages(CONVERSATION)
    assistant = converted[2]
    assert set(assistant) == {"role", "content"}
    parsed = parse_tool_calls(assistant["content"])
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [
        ("add", {"a": 2, "b": 3}),
        ("add", {"a": 4, "b": 5}),
    ]


def test_consecutive_tool_results_become_one_user_message_of_tool_responses() -> None:
    converted = to_hermes_messages(CONVERSATION)
    assert [m["role"] for m in converted] == ["system", "user", "assistant", "user", "assistant"]
    blocks = converted[3]["content"].split("</tool_response>")[:-1]
    payloads = [json.loads(block.split("<tool_response>", 1)[1]) for block in blocks]
    assert payloads == [
        {"name": "add", "content": {"ok": True, "output": 5}},
        {"name": "add", "content": "plain 9"},
    ]


def test_tools_prompt_is_merged_into_the_first_system_message() -> None:
    converted = to_hermes_messages(CONVERSATION, [ADD])
    system = converted[0]["content"]
    assert system.startswith("You are helpful.")
    assert "<tools>" in system
    assert '"name": "add"' in system
    assert sum(m["role"] == "system" for m in converted) == 1


def test_tools_prompt_gets_its_own_system_message_when_there_is_none() -> None:
    converted = to_hermes_messages([{"role": "user", "content": "hi"}], [ADD])
    assert converted[0]["role"] == "system"
    assert "<tools>" in converted[0]["content"]
    assert converted[1] == {"role": "user", "content": "hi"}


def test_no_tools_means_no_tools_prompt() -> None:
    converted = to_hermes_messages([{"role": "system", "content": "Be brief."}])
    assert converted == [{"role": "system", "content": "Be brief."}]


def test_conversion_does_not_modify_the_input() -> None:
    before = json.dumps(CONVERSATION)
    to_hermes_messages(CONVERSATION, [ADD])
    assert json.dumps(CONVERSATION) == before


def test_unparseable_recorded_arguments_are_shown_as_written() -> None:
    messages = [
        {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "function": {"name": "add", "arguments": "{a: oops"}}],
        }
    ]
    content = to_hermes_messages(messages)[0]["content"]
    assert "{a: oops" in content
