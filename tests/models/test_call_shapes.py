"""parse_tool_calls(text, tool_names=...): the call shapes real models emit without a tool parser.

DESIGN "Public contracts": with the offered tools, ``<function=…>``, ``<function name="…">``,
fenced or bare JSON and ``<tools>`` blocks naming one of them are calls too; bare JSON only when
it is the whole message (or in a fence or a tag); prose that merely contains JSON, and JSON
naming no offered tool, is never a call.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.models.hermes_format import parse_tool_calls

TOOLS = ("get_weather", "book_hotel")
PARIS = {"city": "Paris"}
CALL = json.dumps({"name": "get_weather", "arguments": PARIS})


def _calls(text: str, names: Any = TOOLS) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, c.arguments) for c in parse_tool_calls(text, tool_names=names).tool_calls]


# <function=…> and <function name="…"> ---------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        '<function=get_weather>{"city": "Paris"}</function>',
        '<function=get_weather>\n{"city": "Paris"}\n</function>',
        "<function=get_weather>{'city': 'Paris',}</function>",
        '<function name="get_weather">{"city": "Paris"}</function>',
        '<function name=\'get_weather\'>{"city": "Paris"}</function>',
        '<function=get_weather>{"city": "Paris"}',  # unclosed: read to the end
        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>",
        '<function name="get_weather"><parameter name="city">Paris</parameter></function>',
    ],
)
def test_function_tags_naming_an_offered_tool_are_calls(text: str) -> None:
    assert _calls(text) == [("get_weather", PARIS)]


def test_parameter_values_stay_text_unless_they_are_json_objects_or_arrays() -> None:
    text = (
        "<function=book_hotel>\n<parameter=nights>\n3\n</parameter>\n"
        '<parameter=guests>\n["Ann", "Bo"]\n</parameter>\n<parameter=zip>\n01234\n</parameter>\n'
        "</function>"
    )
    # The tool's schema decides what "3" is: validation coerces it (seed 002 §3.2).
    assert _calls(text) == [
        ("book_hotel", {"nights": "3", "guests": ["Ann", "Bo"], "zip": "01234"})
    ]


def test_text_around_function_tags_is_the_content() -> None:
    parsed = parse_tool_calls(
        'Let me look.\n<function=get_weather>{"city": "Paris"}</function>\nOne moment.',
        tool_names=TOOLS,
    )
    assert parsed.content == "Let me look.\n\nOne moment."
    assert [c.name for c in parsed.tool_calls] == ["get_weather"]


def test_an_unclosed_function_tag_followed_by_text_keeps_the_text() -> None:
    parsed = parse_tool_calls(
        '<function=get_weather>{"city": "Paris"} and I will report back.', tool_names=TOOLS
    )
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("get_weather", PARIS)]
    assert parsed.content == "and I will report back."


def test_an_unclosed_lenient_tool_call_followed_by_text_keeps_the_text() -> None:
    parsed = parse_tool_calls(
        "<tool_call>{'name': 'get_weather', 'arguments': {'city': 'Paris'}} ok"
    )
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("get_weather", PARIS)]
    assert parsed.content == "ok"


def test_two_function_tags_are_two_calls() -> None:
    text = '<function=get_weather>{"city": "Paris"}</function><function=book_hotel>{}</function>'
    assert _calls(text) == [("get_weather", PARIS), ("book_hotel", {})]


def test_qwen_coder_style_call_inside_tool_call_tags() -> None:
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    assert _calls(text) == [("get_weather", PARIS)]
    assert _calls(text, names=None) == [("get_weather", PARIS)]  # the tag says it is a call


# fences, <tools>, bare JSON -----------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        f"```json\n{CALL}\n```",
        f"```\n{CALL}\n```",
        f"Checking the weather:\n```json\n{CALL}\n```",
        f"<tools>{CALL}</tools>",
        f"<tools>\n{CALL}\n</tools>",
        CALL,
        f"  \n{CALL}\n ",
        json.dumps({"name": "get_weather", "parameters": PARIS}),  # Llama 3 JSON calling
        json.dumps({"type": "function", "function": {"name": "get_weather", "arguments": PARIS}}),
        json.dumps([{"name": "get_weather", "arguments": json.dumps(PARIS)}]),
        f"[TOOL_CALLS][{CALL}]",  # Mistral
        f"<|python_tag|>{CALL}",  # Llama 3.1
        "{'name': 'get_weather', 'arguments': {'city': 'Paris'}}",  # almost-JSON, whole message
    ],
)
def test_json_shapes_naming_an_offered_tool_are_calls(text: str) -> None:
    assert _calls(text) == [("get_weather", PARIS)]


def test_a_fence_holding_a_list_of_calls() -> None:
    calls = [{"name": "get_weather", "arguments": PARIS}, {"name": "book_hotel", "arguments": {}}]
    text = f"```json\n{json.dumps(calls)}\n```"
    assert _calls(text) == [("get_weather", PARIS), ("book_hotel", {})]


def test_text_outside_a_call_fence_is_the_content() -> None:
    parsed = parse_tool_calls(f"Checking.\n```json\n{CALL}\n```\nDone soon.", tool_names=TOOLS)
    assert parsed.content == "Checking.\n\nDone soon."


@pytest.mark.parametrize(
    "text",
    [
        f"You could call it like this: {CALL} and see.",
        f"The request was {CALL}.",
        f"{CALL} is what a call looks like",
        f"Example:\n{CALL}\nThat is the format.",
    ],
)
def test_prose_that_contains_call_json_is_never_a_call(text: str) -> None:
    parsed = parse_tool_calls(text, tool_names=TOOLS)
    assert parsed.tool_calls == []
    assert parsed.content == text.strip()


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"name": "delete_everything", "arguments": {}}),
        f"```json\n{json.dumps({'name': 'delete_everything', 'arguments': {}})}\n```",
        '<function=delete_everything>{"all": true}</function>',
        "<tools>" + json.dumps({"name": "delete_everything", "arguments": {}}) + "</tools>",
        json.dumps({"name": "Paris", "population": 2_100_000}),  # an answer that has a name
        json.dumps({"city": "Paris", "temperature": 21}),
        "```json\n" + json.dumps({"temperature": 21}) + "\n```",
    ],
)
def test_json_naming_no_offered_tool_is_never_a_call(text: str) -> None:
    parsed = parse_tool_calls(text, tool_names=TOOLS)
    assert parsed.tool_calls == []
    assert parsed.content == text.strip()


def test_an_echoed_tool_definition_is_not_a_call() -> None:
    definition = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    assert _calls(f"<tools>\n{json.dumps(definition)}\n</tools>") == []
    assert _calls(json.dumps(definition)) == []


@pytest.mark.parametrize(
    "text",
    [CALL, f"```json\n{CALL}\n```", '<function=get_weather>{"city": "Paris"}</function>'],
)
def test_without_the_offered_tools_only_tool_call_tags_are_calls(text: str) -> None:
    parsed = parse_tool_calls(text)
    assert parsed.tool_calls == []
    assert parsed.content == text


def test_tool_call_tags_keep_working_with_the_offered_tools() -> None:
    assert _calls(f"<tool_call>{CALL}</tool_call>") == [("get_weather", PARIS)]


def test_a_named_shape_whose_arguments_are_not_an_object_is_reported() -> None:
    parsed = parse_tool_calls('<function=get_weather>"Paris"</function>', tool_names=TOOLS)
    assert parsed.tool_calls == []
    assert parsed.errors


# bounded work ------------------------------------------------------------------------------
MEGABYTE = 1_000_000


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "echo", "arguments": {"text": "' + "a" * MEGABYTE + '"}}',
        "<tool_call>{'name': 'echo', 'arguments': {'text': '"
        + "a" * 100_000
        + "'}}"
        + " more words" * 80_000,
        '<tool_call>\n{"name": "echo", "arguments": {"text": "hi"}}\n' + "and then " * 110_000,
        '<function=echo>{"text": "' + "a" * MEGABYTE + '"}',
        "```json\n" + json.dumps({"name": "echo", "arguments": {"text": "a" * MEGABYTE}}),
    ],
)
def test_a_megabyte_unclosed_call_still_yields_its_call_quickly(text: str) -> None:
    started = time.perf_counter()
    parsed = parse_tool_calls(text, tool_names=("echo",))
    elapsed = time.perf_counter() - started
    assert [c.name for c in parsed.tool_calls] == ["echo"]
    assert elapsed < 5.0  # typically a few ms; a quadratic scan would take minutes


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "echo", "arguments": {"text": "' + 'a\\"b,' * 200_000,
        "<tool_call>" + "x{y'z: " * 140_000,
        "<tool_call>" * 90_000,
        "<tool_call>" + '{"a":1},' * 125_000,
        "<function=echo>" * 60_000,
        "```json\n" * 120_000,
        "{" * MEGABYTE,
    ],
)
def test_a_megabyte_of_broken_call_text_is_refused_quickly(text: str) -> None:
    started = time.perf_counter()
    parsed = parse_tool_calls(text, tool_names=("echo",))
    assert time.perf_counter() - started < 5.0  # a few ms; generous for a loaded machine
    assert len(parsed.errors) <= 25  # the first problems and how many more, not 100,000 lines


# properties --------------------------------------------------------------------------------
names = st.sampled_from(TOOLS)
plain_values = st.one_of(st.integers(), st.text(max_size=20), st.booleans(), st.none())
arguments = st.dictionaries(st.text(min_size=1, max_size=10), plain_values, max_size=4)


def _shapes(name: str, args: dict[str, Any]) -> list[str]:
    call = json.dumps({"name": name, "arguments": args})
    return [
        f"<tool_call>{call}</tool_call>",
        f"<function={name}>{json.dumps(args)}</function>",
        f'<function name="{name}">{json.dumps(args)}</function>',
        f"```json\n{call}\n```",
        f"<tools>{call}</tools>",
        call,
    ]


@settings(max_examples=80, deadline=None)
@given(names, arguments)
def test_every_shape_round_trips_its_call(name: str, args: dict[str, Any]) -> None:
    for text in _shapes(name, args):
        assert _calls(text) == [(name, args)], text


@settings(max_examples=80, deadline=None)
@given(
    names,
    arguments,
    st.text(alphabet=st.characters(categories=["L", "N", "Zs"]), min_size=1, max_size=30),
    st.text(alphabet=st.characters(categories=["L", "N", "Zs"]), min_size=1, max_size=30),
)
def test_call_json_inside_prose_is_never_a_call(
    name: str, args: dict[str, Any], before: str, after: str
) -> None:
    if not before.strip() or not after.strip():
        return  # then it is not prose around the JSON
    call = json.dumps({"name": name, "arguments": args})
    parsed = parse_tool_calls(f"{before} {call} {after}", tool_names=TOOLS)
    assert parsed.tool_calls == []


@settings(max_examples=80, deadline=None)
@given(st.text(min_size=1, max_size=12).filter(lambda n: n not in TOOLS), arguments)
def test_no_shape_naming_an_unoffered_tool_is_a_call(name: str, args: dict[str, Any]) -> None:
    for text in _shapes(name, args)[1:]:  # all but <tool_call>, which is explicit
        assert _calls(text) == [], text


fragments = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "<tools>",
        "</tools>",
        "<function=",
        "<function name=",
        "</function>",
        "<parameter=",
        "</parameter>",
        "```json\n",
        "```",
        "{",
        "}",
        "[",
        "]",
        '"name"',
        '"arguments"',
        ":",
        ",",
        '"get_weather"',
        "'",
        '"',
        ">",
        "\n",
        "text ",
        "[TOOL_CALLS]",
        "<|python_tag|>",
        "null",
        "1",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(fragments, max_size=40).map("".join))
def test_parsing_never_raises_on_tag_and_json_soup(text: str) -> None:
    parsed = parse_tool_calls(text, tool_names=TOOLS)
    assert all(c.name in TOOLS or "<tool_call>" in text for c in parsed.tool_calls)
    assert all(isinstance(c.arguments, dict) for c in parsed.tool_calls)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="<`{[")))
def test_text_without_any_marker_is_all_content(text: str) -> None:
    parsed = parse_tool_calls(text, tool_names=TOOLS)
    assert parsed.tool_calls == []
    assert parsed.content == (text.strip() or None)
