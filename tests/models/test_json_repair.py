"""loads_lenient: strict JSON as is, the usual model mistakes repaired, the rest a ValueError."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.models.json_repair import lenient_value_end, loads_lenient, strip_code_fence

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children),
    max_leaves=12,
)


@given(json_values)
def test_strict_json_loads_unchanged(value: Any) -> None:
    assert loads_lenient(json.dumps(value)) == value


@given(st.text())
def test_arbitrary_text_either_parses_or_raises_value_error(text: str) -> None:
    with contextlib.suppress(ValueError):
        loads_lenient(text)


def test_trailing_commas_are_dropped() -> None:
    assert loads_lenient('{"a": [1, 2,], "b": 3,}') == {"a": [1, 2], "b": 3}


def test_single_quoted_strings_become_double_quoted() -> None:
    assert loads_lenient("{'a': 'it\\'s \"quoted\"'}") == {"a": 'it\'s "quoted"'}


def test_python_literals_become_json_literals() -> None:
    assert loads_lenient("{'t': True, 'f': False, 'n': None}") == {"t": True, "f": False, "n": None}


def test_unquoted_keys_are_quoted() -> None:
    assert loads_lenient("{city: 'Paris', days_ahead: 2}") == {"city": "Paris", "days_ahead": 2}


def test_literal_words_inside_strings_are_left_alone() -> None:
    assert loads_lenient("{'text': 'True or None, x: y'}") == {"text": "True or None, x: y"}


def test_code_fence_around_the_value_is_removed() -> None:
    assert loads_lenient('```json\n{"a": 1}\n```') == {"a": 1}


def test_comments_are_removed() -> None:
    assert loads_lenient('{"a": 1, // one\n /* two */ "b": 2}') == {"a": 1, "b": 2}


def test_raw_newline_inside_a_string_is_escaped() -> None:
    assert loads_lenient("{'a': 'line one\nline two'}") == {"a": "line one\nline two"}


def test_unknown_escape_keeps_its_backslash() -> None:
    assert loads_lenient("{'path': 'C:\\data'}") == {"path": "C:\\data"}


@pytest.mark.parametrize(
    "text",
    ['{"a": 1', '{"a": "unterminated', "", "   ", "nonsense", "[" * 50_000, "{'a': /* open"],
    ids=["truncated", "open-string", "empty", "blank", "word", "deep", "open-comment"],
)
def test_broken_or_truncated_json_raises_value_error(text: str) -> None:
    with pytest.raises(ValueError, match="JSON"):
        loads_lenient(text)


def test_non_string_input_raises_value_error() -> None:
    with pytest.raises(ValueError, match="expected a JSON string"):
        loads_lenient(42)  # type: ignore[arg-type]


def test_strip_code_fence_leaves_unfenced_text_alone() -> None:
    assert strip_code_fence('  {"a": 1} ') == '{"a": 1}'
    assert strip_code_fence("```\n[1]\n```") == "[1]"


@pytest.mark.parametrize(
    ("text", "end"),
    [
        ('{"a": 1} tail', 8),
        ("{'a': '}'} tail", 10),
        ('[{"a": "]"}, 2]x', 15),
        ('{"a": "\\"}"} ', 12),
        ('{"a": 1', None),
        ("{'a: 1}", None),
        ("plain", None),
        ("[" * 300 + "]" * 300, None),  # nested beyond any tool call
    ],
)
def test_lenient_value_end_finds_where_the_leading_value_closes(text: str, end: int | None) -> None:
    assert lenient_value_end(text, 0) == end
