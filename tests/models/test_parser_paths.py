"""The prompt-mode call parser's fenced and lenient paths, its bounds, and the Hermes-format
conversion's corners (hermes.models.call_parser, hermes.models.hermes_format): what a model
writes without a server-side tool parser, read the one sensible way or reported."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.models.base import ToolSpec
from hermes.models.call_parser import MAX_BLOCKS, MAX_CALLS, MAX_ERRORS, parse_tool_calls
from hermes.models.hermes_format import render_tools_prompt, to_hermes_messages

OFFERED = ["get", "put"]


def calls_of(text: str, names: list[str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, c.arguments) for c in parse_tool_calls(text, tool_names=names).tool_calls]


# -- <tool_call> blocks: the fast (strict, in place) and the slow (lenient) path -------------


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>```json\n{"name": "get", "arguments": {"a": 1}}\n```</tool_call>',
        '<tool_call>\n```\n{"name": "get", "arguments": {"a": 1}}\n```\n</tool_call>',
        '<tool_call>```{"name": "get", "arguments": {"a": 1}}```</tool_call>',
        '<tool_call>{name: "get", arguments: {a: 1,},}</tool_call>',
        "<tool_call>{'name': 'get', 'arguments': {'a': 1}}</tool_call>",
        '<tool_call>{"name": "get", "arguments": {"a": 1}}}</tool_call>',
        '<tool_call>{"name": "get", "arguments": {"a": 1}}]}</tool_call>',
        '<tool_call> {"name": " get ", "arguments": "{\\"a\\": 1}"} </tool_call>',
        '<tool_call>{"name": "get", "parameters": {"a": 1}}</tool_call>',
        '<tool_call>{"function": {"name": "get", "arguments": {"a": 1}}}</tool_call>',
        '<tool_call>{"name": "get", "arguments": {"a": 1}}',
        "<tool_call><function=get><parameter=a>\n1\n</parameter></function></tool_call>",
    ],
)
def test_one_block_one_call(text: str) -> None:
    parsed = parse_tool_calls(text)
    expected_a: Any = "1" if "<parameter" in text else 1
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("get", {"a": expected_a})]
    assert parsed.content is None
    assert parsed.errors == []


def test_several_values_in_one_block_are_several_calls() -> None:
    text = '<tool_call>{"name": "get"}, {"name": "put"} {"name": "get"}</tool_call>'
    assert calls_of(text) == [("get", {}), ("put", {}), ("get", {})]
    listed = (
        '<tool_call>[{"name": "get"}, {"name": "put", "arguments": "{\\"x\\": 2}"}]</tool_call>'
    )
    assert calls_of(listed) == [("get", {}), ("put", {"x": 2})]


def test_an_unclosed_block_ends_at_the_next_block() -> None:
    text = '<tool_call>{"name": "get"}<tool_call>{"name": "put"}</tool_call> done'
    parsed = parse_tool_calls(text)
    assert [c.name for c in parsed.tool_calls] == ["get", "put"]
    assert parsed.content == "done"


def test_an_unclosed_block_ends_where_its_json_ends() -> None:
    parsed = parse_tool_calls('Sure. <tool_call>{"name": "get"} and I will wait')
    assert [c.name for c in parsed.tool_calls] == ["get"]
    assert parsed.content == "Sure. and I will wait"


def test_an_unclosed_lenient_block_keeps_the_text_after_its_value() -> None:
    parsed = parse_tool_calls("<tool_call>{name: 'get', arguments: {a: 1}} then text")
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("get", {"a": 1})]
    assert parsed.content == "then text"


@pytest.mark.parametrize("call", ['{"name": "get"}', "{name: 'get'}"])
def test_an_unclosed_block_with_text_before_the_next_block(call: str) -> None:
    # The closing tag further on is the next block's: this one ends where its value ends.
    text = f'<tool_call>{call} so <tool_call>{{"name": "put"}}</tool_call>'
    parsed = parse_tool_calls(text)
    assert [c.name for c in parsed.tool_calls] == ["get", "put"]
    assert parsed.content == "so"
    assert parsed.errors == []


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("<tool_call>not json at all</tool_call>", "tool call block 1: invalid JSON ("),
        (
            '<tool_call>{"name": "get", "arguments": {"a": 1}</tool_call>',
            "tool call block 1: invalid JSON (",
        ),
        ('<tool_call>{"name": "get"} trailing</tool_call>', "tool call block 1: invalid JSON ("),
        ("<tool_call>```json\n```</tool_call>", "tool call block 1: empty block"),
        ("<tool_call>   </tool_call>", "tool call block 1: empty block"),
        ("<tool_call>5</tool_call>", "tool call block 1: expected a JSON object, got number"),
        ('<tool_call>["x"]</tool_call>', "tool call block 1: expected a JSON object, got string"),
        ('<tool_call>{"arguments": {}}</tool_call>', "tool call block 1: missing tool name"),
        ('<tool_call>{"name": "  "}</tool_call>', "tool call block 1: missing tool name"),
        (
            '<tool_call>{"name": "get", "arguments": "[1]"}</tool_call>',
            "tool call block 1 (get): arguments must be a JSON object, got array",
        ),
        (
            '<tool_call>{"name": "get", "arguments": "{bad"}</tool_call>',
            "tool call block 1 (get): arguments are not valid JSON (",
        ),
        (
            '<tool_call>{"name": "get", "arguments": 5}</tool_call>',
            "tool call block 1 (get): arguments must be a JSON object, got number",
        ),
        (
            "<tool_call><function=get>[1]</function></tool_call>",
            "tool call block 1: arguments must be a JSON object, got array",
        ),
    ],
)
def test_unusable_blocks_are_reported_and_skipped(text: str, error: str) -> None:
    parsed = parse_tool_calls(text)
    assert parsed.tool_calls == []
    assert len(parsed.errors) == 1
    assert parsed.errors[0].startswith(error)


def test_blocks_are_numbered_in_errors() -> None:
    text = '<tool_call>{"name": "get"}</tool_call><tool_call>bad</tool_call>'
    parsed = parse_tool_calls(text)
    assert [c.name for c in parsed.tool_calls] == ["get"]
    assert parsed.errors[0].startswith("tool call block 2: ")


def test_empty_arguments_are_no_arguments() -> None:
    for arguments in ('""', '"  "', "null"):
        text = f'<tool_call>{{"name": "get", "arguments": {arguments}}}</tool_call>'
        assert calls_of(text) == [("get", {})]


def test_a_non_string_answer_is_an_empty_result() -> None:
    parsed = parse_tool_calls(None)  # type: ignore[arg-type]
    assert (parsed.content, parsed.tool_calls) == (None, [])
    assert parsed.errors == ["expected text, got NoneType"]


# -- bounds ----------------------------------------------------------------------------------


def test_calls_beyond_the_limit_are_ignored_and_said_so() -> None:
    text = "".join(f'<tool_call>{{"name": "get", "arguments": {{"n": {n}}}}}</tool_call>'
                   for n in range(MAX_CALLS + 3))  # fmt: skip
    parsed = parse_tool_calls(text)
    assert len(parsed.tool_calls) == MAX_CALLS
    assert parsed.tool_calls[-1].arguments == {"n": MAX_CALLS - 1}
    assert parsed.errors == [f"3 more calls than {MAX_CALLS} were ignored"]


def test_exactly_the_limit_of_calls_is_no_problem() -> None:
    text = '<tool_call>{"name": "get"}</tool_call>' * MAX_CALLS
    parsed = parse_tool_calls(text)
    assert len(parsed.tool_calls) == MAX_CALLS
    assert parsed.errors == []


def test_errors_beyond_the_limit_are_counted() -> None:
    parsed = parse_tool_calls("<tool_call>bad</tool_call>" * (MAX_ERRORS + 5))
    assert len(parsed.errors) == MAX_ERRORS + 1
    assert parsed.errors[-1] == "… and 5 more problems"
    exact = parse_tool_calls("<tool_call>bad</tool_call>" * MAX_ERRORS)
    assert len(exact.errors) == MAX_ERRORS
    assert not exact.errors[-1].startswith("…")


def test_blocks_beyond_the_limit_are_left_as_text() -> None:
    block = '<tool_call>{"name": "get"}</tool_call>'
    text = block * MAX_BLOCKS + ' <tool_call>{"name": "put"}'
    parsed = parse_tool_calls(text)
    assert len(parsed.tool_calls) == min(MAX_BLOCKS, MAX_CALLS)
    assert "put" not in [c.name for c in parsed.tool_calls]
    assert parsed.content == '<tool_call>{"name": "put"}'


# -- the other shapes, with the offered tool names -------------------------------------------


@pytest.mark.parametrize(
    ("text", "calls", "content"),
    [
        ('<tools>{"name": "get", "arguments": {"a": 1}}</tools> ok', [("get", {"a": 1})], "ok"),
        ('<tools>{"name": "nope"}</tools>', [], '<tools>{"name": "nope"}</tools>'),
        ('[TOOL_CALLS] [{"name": "get", "arguments": {"a": 1}}]', [("get", {"a": 1})], None),
        ('<|python_tag|>{"name": "get", "parameters": {"a": 1}}', [("get", {"a": 1})], None),
        ('{name: "get", arguments: {a: 1}}', [("get", {"a": 1})], None),
        ('{"type": "function", "function": {"name": "get", "arguments": "{}"}}', [("get", {})],
         None),
        ('{"tool_calls": [{"function": {"name": "put", "arguments": "{}"}}]}', [("put", {})],
         None),
        ('{"name": "other", "arguments": {}}', [], '{"name": "other", "arguments": {}}'),
        ('{"answer": "<function=get>{}</function>"}', [], None),  # a JSON answer: tags are data
        ('{"name": "get", "description": "Get it."}', [], None),  # an echoed definition
    ],
)  # fmt: skip
def test_whole_message_shapes(
    text: str, calls: list[tuple[str, dict[str, Any]]], content: str | None
) -> None:
    parsed = parse_tool_calls(text, tool_names=OFFERED)
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == calls
    if calls or content is not None:
        assert parsed.content == content
    else:
        assert parsed.content == text.replace("</tool_call>", "").strip()


def test_a_whole_message_list_reports_the_tools_not_offered() -> None:
    parsed = parse_tool_calls('[{"name": "get"}, {"name": "zzz"}]', tool_names=OFFERED)
    assert [c.name for c in parsed.tool_calls] == ["get"]
    assert parsed.errors == ["the answer: tool 'zzz' is not offered; skipped"]


def test_no_offered_tools_means_only_tool_call_tags_count() -> None:
    text = '{"name": "get", "arguments": {}}'
    assert parse_tool_calls(text, tool_names=[]).tool_calls == []
    assert parse_tool_calls(text, tool_names=[]).content == text


@pytest.mark.parametrize(
    ("text", "calls", "content"),
    [
        ('Here:\n```json\n{"name": "get", "arguments": {"a": 1}}\n```\nDone.',
         [("get", {"a": 1})], "Here:\n\nDone."),
        ('Here:\n```tool_code\n{"name": "get"}\n```', [("get", {})], "Here:"),
        ('```\n{"name": "get"}\n```', [("get", {})], None),
        ('```json\r\n[{"name": "get"}, {"name": "put"}]\r\n```', [("get", {}), ("put", {})], None),
        ('Here:\n```json\n{"name": "get", "arguments": {"a": 1}}', [("get", {"a": 1})], "Here:"),
        ("Here:\n```json\n{name: 'get'}\n```", [("get", {})], "Here:"),
        ('Use ```json\n{"name": "get"}\n``` or ```json\n{"name": "put"}\n```',
         [("get", {}), ("put", {})], "Use  or"),
        ("Here:\n```python\nprint(1)\n```", [], "Here:\n```python\nprint(1)\n```"),
        ('Here:\n```json\n{"name": "nope"}\n```', [], 'Here:\n```json\n{"name": "nope"}\n```'),
        ('Here:\n```json\n"get"\n```', [], 'Here:\n```json\n"get"\n```'),
        ("Here: ``` not a fence", [], "Here: ``` not a fence"),
        ('See ```json\n{"name": "get"} and more', [], 'See ```json\n{"name": "get"} and more'),
    ],
)  # fmt: skip
def test_fenced_calls(text: str, calls: list[tuple[str, dict[str, Any]]], content: str) -> None:
    parsed = parse_tool_calls(text, tool_names=OFFERED)
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == calls
    assert parsed.content == content


def test_a_fence_naming_both_an_offered_and_another_tool() -> None:
    text = '```json\n[{"name": "get"}, {"name": "zzz"}]\n```'
    parsed = parse_tool_calls(text, tool_names=OFFERED)
    assert [c.name for c in parsed.tool_calls] == ["get"]
    assert parsed.errors == ["fenced call: tool 'zzz' is not offered; skipped"]


@pytest.mark.parametrize(
    ("text", "calls", "content"),
    [
        ('<function name="get">{"a": 1}</function>', [("get", {"a": 1})], None),
        ("<function name='get'><parameter name='a'>x</parameter></function>",
         [("get", {"a": "x"})], None),
        ('<function=zzz>{"a": 1}</function> tail', [], '<function=zzz>{"a": 1}</function> tail'),
        ('<function=get>{"a": 1} and text', [("get", {"a": 1})], "and text"),
        ("<function=get>{a: 1} and text", [("get", {"a": 1})], "and text"),
        ('<function=get>{"a": 1}<function=put>{"b": 2}', [("get", {"a": 1}), ("put", {"b": 2})],
         None),
        ('<function=get><parameter=a>1<parameter=b>{"c": 2}</parameter></function>',
         [("get", {"a": "1", "b": {"c": 2}})], None),
        ("<function=get><parameter=a>{not json</parameter></function>",
         [("get", {"a": "{not json"})], None),
        ("<function=get><parameter=a>1</parameter>", [("get", {"a": "1"})], None),
        ("<function=get></function>", [("get", {})], None),
        ('<function=get>```json\n{"a": 1}\n```</function>', [("get", {"a": 1})], None),
    ],
)  # fmt: skip
def test_function_tags(text: str, calls: list[tuple[str, dict[str, Any]]], content: str) -> None:
    parsed = parse_tool_calls(text, tool_names=OFFERED)
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == calls
    assert parsed.content == content


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("<function=get>{bad</function>", "function tag (get): arguments are "),
        ("<function=get>[1, 2]</function>", "function tag (get): arguments must be a JSON object, "
         "got array"),
    ],
)  # fmt: skip
def test_unusable_function_tags_are_reported(text: str, error: str) -> None:
    parsed = parse_tool_calls(text, tool_names=OFFERED)
    assert parsed.tool_calls == []
    assert parsed.content is None
    assert parsed.errors[0].startswith(error)


# -- round trips -----------------------------------------------------------------------------

_ARGS = st.dictionaries(
    st.text("abcxyz_", min_size=1, max_size=6),
    st.one_of(st.integers(), st.text(max_size=10), st.booleans(), st.none()),
    max_size=4,
)


@settings(max_examples=80, deadline=None)
@given(args=_ARGS, fence=st.sampled_from(["```json\n", "```\n", "```tool_call\n"]))
def test_a_fenced_call_round_trips(args: dict[str, Any], fence: str) -> None:
    text = f"{fence}{json.dumps({'name': 'get', 'arguments': args})}\n```"
    assert calls_of(text, OFFERED) == [("get", args)]
    block = f"<tool_call>{text}</tool_call>"
    assert calls_of(block) == [("get", args)]


@settings(max_examples=80, deadline=None)
@given(args=_ARGS, tail=st.text("abc .!", min_size=1, max_size=12).filter(str.strip))
def test_an_unclosed_block_followed_by_text_round_trips(args: dict[str, Any], tail: str) -> None:
    text = f"<tool_call>{json.dumps({'name': 'put', 'arguments': args})} {tail}"
    parsed = parse_tool_calls(text)
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("put", args)]
    assert parsed.content == tail.strip()


# -- the Hermes-format conversion ------------------------------------------------------------


def _spec(name: str) -> ToolSpec:
    return ToolSpec(name=name, description=f"{name} it", parameters={"type": "object"})


def test_the_tools_prompt_lists_one_line_per_tool() -> None:
    prompt = render_tools_prompt([_spec("get"), _spec("put")])
    inside = prompt.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    assert [json.loads(line)["function"]["name"] for line in inside.split("\n")] == [
        "get",
        "put",
    ]
    assert prompt.startswith("# Tools\n\n")
    assert prompt.endswith("Do not invent results; wait for them.")


def test_assistant_calls_become_blocks_and_results_responses() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": ""},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Let me "}, {"type": "text", "text": "look."}],
            "tool_calls": [
                {"id": "c1", "function": {"name": "get", "arguments": '{"a": 1}'}},
                {"id": "c2", "function": {"name": "put", "arguments": ""}},
                {"id": "c3", "function": {"name": "put", "arguments": {"b": 2}}},
                {"id": "c4", "function": "not a dict"},
                "not a call",
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'},
        {"role": "tool", "tool_call_id": "c2", "content": "{not json"},
        {"role": "tool", "tool_call_id": "zz", "name": "named", "content": 5},
        {"role": "user", "content": "thanks"},
    ]
    original = json.dumps(messages)
    out = to_hermes_messages(messages, [_spec("get")])
    assert json.dumps(messages) == original
    assert out[0]["role"] == "system"
    assert out[0]["content"] == render_tools_prompt([_spec("get")])  # empty system: the prompt
    assistant = out[1]
    assert assistant["role"] == "assistant"
    blocks = assistant["content"].split("\n<tool_call>\n")
    assert blocks[0] == "Let me look."
    assert [json.loads(b.split("\n</tool_call>")[0]) for b in blocks[1:]] == [
        {"name": "get", "arguments": {"a": 1}},
        {"name": "put", "arguments": {}},
        {"name": "put", "arguments": {"b": 2}},
        {"name": "", "arguments": None},
    ]
    responses = out[2]
    assert responses["role"] == "user"
    parts = [json.loads(p.split("\n</tool_response>")[0]) for p in
             responses["content"].split("<tool_response>\n")[1:]]  # fmt: skip
    assert parts == [
        {"name": "get", "content": {"ok": True}},
        {"name": "put", "content": "{not json"},
        {"name": "named", "content": "5"},
    ]
    assert out[3] == {"role": "user", "content": "thanks"}
    assert len(out) == 4


def test_a_trailing_run_of_results_is_one_user_message() -> None:
    out = to_hermes_messages(
        [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "function": {"name": "get", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "[1, 2]"},
            {"role": "tool", "tool_call_id": "c1", "content": None},
        ]
    )  # fmt: skip
    assert out[0]["content"] == '<tool_call>\n{"name": "get", "arguments": {}}\n</tool_call>'
    assert out[1]["role"] == "user"
    assert out[1]["content"] == (
        '<tool_response>\n{"name": "get", "content": [1, 2]}\n</tool_response>\n'
        '<tool_response>\n{"name": "get", "content": ""}\n</tool_response>'
    )
    assert len(out) == 2


def test_the_tools_prompt_joins_the_first_system_message() -> None:
    out = to_hermes_messages(
        [{"role": "user", "content": "hi"}, {"role": "system", "content": "Be brief."}],
        [_spec("get")],
    )
    assert out[0] == {"role": "user", "content": "hi"}
    assert out[1]["content"] == "Be brief.\n\n" + render_tools_prompt([_spec("get")])
    alone = to_hermes_messages([{"role": "user", "content": "hi"}], [_spec("get")])
    assert alone[0] == {"role": "system", "content": render_tools_prompt([_spec("get")])}
    assert to_hermes_messages([{"role": "user", "content": "hi"}], []) == [
        {"role": "user", "content": "hi"}
    ]


def test_the_conversion_keeps_chinese_as_written_and_skips_odd_calls() -> None:
    out = to_hermes_messages(
        [
            {"role": "assistant", "content": [{"type": "image_url"}, {"text": "查一下"}],
             "tool_calls": [
                 "not a call",
                 {"id": "c1", "function": {"name": "天气", "arguments": '{"城市": "北京"}'}},
             ]},
            {"role": "tool", "tool_call_id": "c1", "content": '{"结果": "晴"}'},
            {"role": "tool", "tool_call_id": "unknown", "content": "雨"},
        ]
    )  # fmt: skip
    assert out[0]["content"] == (
        '查一下\n<tool_call>\n{"name": "天气", "arguments": {"城市": "北京"}}\n</tool_call>'
    )
    assert out[1]["content"] == (
        '<tool_response>\n{"name": "天气", "content": {"结果": "晴"}}\n</tool_response>\n'
        '<tool_response>\n{"name": "", "content": "雨"}\n</tool_response>'
    )


@pytest.mark.parametrize(
    ("body", "arguments"),
    [
        ("<parameter=a>hello", {"a": "hello"}),  # the last parameter left unclosed
        ("<parameter=a>hello<parameter=b>X</parameter>", {"a": "hello", "b": "X"}),
        ("<parameter=a>\n  two spaces  \n</parameter>", {"a": "  two spaces  "}),
        ("<parameter=a>" + "[" * 50_000 + "</parameter>", {"a": "[" * 50_000}),
    ],
)
def test_parameter_tags_read_as_written(body: str, arguments: dict[str, Any]) -> None:
    parsed = parse_tool_calls(f"<function=get>{body}</function>", tool_names=OFFERED)
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("get", arguments)]


def test_at_most_a_thousand_parameters_are_read() -> None:
    body = "".join(f"<parameter=p{n}>{n}</parameter>" for n in range(1005))
    parsed = parse_tool_calls(f"<function=get>{body}</function>", tool_names=OFFERED)
    [call] = parsed.tool_calls
    assert len(call.arguments) == 1000
    assert call.arguments["p999"] == "999"
