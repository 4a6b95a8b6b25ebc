"""Canonical JSON and content hashes: one value, one text, one hash (seed 000 §4.4)."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.memory.hashing import (
    NotJSONSafeError,
    canonical_bytes,
    canonical_json,
    content_hash,
    hash_bytes,
    is_content_hash,
)

# Text over every plane JSON can carry: CJK, emoji, combining marks, control characters.
TEXT = st.text(
    alphabet=st.characters(codec="utf-8", categories=["L", "M", "N", "P", "S", "Z", "Cc"]),
    max_size=12,
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(TEXT, children, max_size=4)
    ),
    max_leaves=20,
)
OBJECTS = st.dictionaries(TEXT, JSON, max_size=6)


def reordered(value: Any, rng: random.Random) -> Any:
    """The same value with every object's keys inserted in another order."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {key: reordered(value[key], rng) for key in keys}
    if isinstance(value, list):
        return [reordered(item, rng) for item in value]
    return value


def test_key_order_does_not_change_the_hash() -> None:
    assert canonical_json({"a": 1, "b": 2}) == canonical_json({"b": 2, "a": 1}) == '{"a":1,"b":2}'
    assert content_hash({"a": 1, "b": 2}) == content_hash({"b": 2, "a": 1})


@settings(max_examples=200, deadline=None)
@given(OBJECTS, st.integers(min_value=0, max_value=2**32))
def test_any_key_order_at_any_depth_gives_the_same_text_and_hash(
    value: dict[str, Any], seed: int
) -> None:
    shuffled = reordered(value, random.Random(seed))
    assert canonical_json(shuffled) == canonical_json(value)
    assert content_hash(shuffled) == content_hash(value)


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_canonical_text_round_trips_and_is_a_fixed_point(value: Any) -> None:
    text = canonical_json(value)
    assert json.loads(text) == value
    assert canonical_json(json.loads(text)) == text


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_the_hash_is_sha256_of_the_utf8_canonical_text(value: Any) -> None:
    data = canonical_bytes(value)
    assert data == canonical_json(value).encode("utf-8")
    assert content_hash(value) == hashlib.sha256(data).hexdigest() == hash_bytes(data)
    assert is_content_hash(content_hash(value))


@settings(max_examples=200, deadline=None)
@given(JSON, JSON)
def test_different_values_have_different_texts(first: Any, second: Any) -> None:
    # 1 == 1.0 == True in Python, but they are different JSON values (and texts).
    if json.dumps(first, sort_keys=True) != json.dumps(second, sort_keys=True):
        assert canonical_json(first) != canonical_json(second)


def test_text_is_compact_and_keeps_non_ascii_as_is() -> None:
    value = {"城市": "上海", "emoji": "🌧️", "list": [1, 2.5, None, True]}
    text = canonical_json(value)
    assert text == '{"emoji":"🌧️","list":[1,2.5,null,true],"城市":"上海"}'
    assert "\\u" not in text
    assert " " not in text


def test_tuples_are_arrays_and_numeric_keys_are_written_as_json_writes_them() -> None:
    assert canonical_json({"a": (1, 2)}) == canonical_json({"a": [1, 2]})
    assert content_hash({1: "x"}) == content_hash({"1": "x"})


def test_int_and_float_are_different_values() -> None:
    assert content_hash({"n": 1}) != content_hash({"n": 1.0})


def test_a_lone_surrogate_still_has_stable_bytes() -> None:
    value = json.loads('{"s": "\\ud800"}')
    assert canonical_bytes(value) == canonical_bytes(value)
    assert is_content_hash(content_hash(value))


@pytest.mark.parametrize(
    ("value", "path", "reason"),
    [
        ({"a": [1, float("nan")]}, "$.a[1]", "NaN and Infinity are not allowed"),
        ({"a": {"b": float("inf")}}, "$.a.b", "not a JSON number"),
        ([float("-inf")], "$[0]", "not a JSON number"),
        ({"tags": {"x", "y"}}, "$.tags", "a set has no JSON form"),
        ({"blob": b"\x00"}, "$.blob", "a bytes has no JSON form"),
        ({"when": object()}, "$.when", "has no JSON form"),
        ({1: "a", "b": 2}, "$", "mixes number and string keys"),
        ({float("nan"): 1}, "$", "not a JSON number"),
        ({(1, 2): "pair"}, "$", "a key of type tuple"),
    ],
)
def test_values_without_a_json_form_are_refused_with_their_path(
    value: Any, path: str, reason: str
) -> None:
    with pytest.raises(NotJSONSafeError) as caught:
        canonical_json(value)
    assert caught.value.path == path
    assert reason in caught.value.reason
    assert path in caught.value.message
    assert caught.value.code == "not_json_safe"


def test_a_circular_reference_is_refused_not_a_crash() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(NotJSONSafeError, match="circular reference"):
        content_hash({"loop": loop})


def test_a_value_nested_too_deeply_is_refused_not_a_crash() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(NotJSONSafeError, match="nested too deeply"):
        canonical_json(deep)


@pytest.mark.parametrize(
    "text",
    ["", "abc", "A" * 64, "g" * 64, "../" + "a" * 61, "a" * 63, "a" * 65, None, 12],
)
def test_only_64_lowercase_hex_characters_are_a_content_hash(text: Any) -> None:
    assert not is_content_hash(text)
