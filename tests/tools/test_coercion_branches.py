"""Safe coercion (hermes.tools._coercion) against type lists, ``$ref``, ``const``, ``enum`` and
``anyOf``/``oneOf`` branches, and its scalar converters, rule by rule (seed 002 §3.2: one
sensible reading is fixed, anything ambiguous is left for validation to report)."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.tools import ToolArgumentError, validate_arguments
from hermes.tools._coercion import (
    _NO,
    MAX_DEPTH,
    Coercer,
    CoercionDepthError,
    _coerce_scalar,
    _match_enum_case,
    _to_array,
    _to_boolean,
    _to_integer,
    _to_number,
    _to_object,
    _to_string,
    json_type,
)

ROOT: dict[str, Any] = {
    "$defs": {
        "Count": {"type": "integer"},
        "Colour": {"enum": ["Red", "Green"]},
        "Alias": {"$ref": "#/$defs/Count"},
        "Flag": {"const": True},
    }
}


def coerce(value: Any, schema: dict[str, Any]) -> Any:
    return Coercer(ROOT).coerce(value, schema)


# -- the types a schema accepts --------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "types"),
    [
        ({"type": "integer"}, {"integer"}),
        ({"type": ["integer", "null"]}, {"integer", "null"}),
        ({"type": ["string", 5]}, {"string"}),
        ({"$ref": "#/$defs/Count"}, {"integer"}),
        ({"$ref": "#/$defs/Alias"}, {"integer"}),
        ({"$ref": "#/$defs/Missing"}, None),
        ({"enum": ["a", 1, None]}, {"string", "integer", "null"}),
        ({"enum": [True, 2.5]}, {"boolean", "number"}),
        ({"enum": "not a list"}, None),
        ({"enum": [object()]}, None),
        ({"const": 3}, {"integer"}),
        ({"const": None}, {"null"}),
        ({"const": object()}, None),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"integer", "string"}),
        ({"oneOf": [{"type": "boolean"}, {"const": "x"}]}, {"boolean", "string"}),
        ({"anyOf": [{"type": "integer"}, {}]}, None),
        ({"anyOf": []}, None),
        ({"anyOf": 5}, None),  # not a list of branches
        ({"type": "string", "enum": [1]}, {"string"}),  # an explicit type wins
        ({}, None),
        ("not a schema", None),
    ],
)
def test_types_of(schema: Any, types: set[str] | None) -> None:
    got = Coercer(ROOT).types_of(schema)
    assert got == (None if types is None else frozenset(types))


def test_types_of_stops_at_a_ref_cycle() -> None:
    root = {"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}}
    assert Coercer(root).types_of({"$ref": "#/$defs/A"}) is None


def test_types_of_past_the_depth_limit_is_unconstrained() -> None:
    assert Coercer(ROOT).types_of({"type": "integer"}, MAX_DEPTH + 1) is None
    assert Coercer(ROOT).types_of({"type": "integer"}, MAX_DEPTH) == frozenset({"integer"})


def steps_to_integer(kind: str, steps: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(a root, a schema ``steps`` ``$ref`` or ``anyOf`` steps from ``{"type": "integer"}``)."""
    if kind == "$ref":
        defs: dict[str, Any] = {f"R{n}": {"$ref": f"#/$defs/R{n + 1}"} for n in range(steps - 1)}
        defs[f"R{steps - 1}"] = {"type": "integer"}
        return {"$defs": defs}, {"$ref": "#/$defs/R0"}
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(steps):
        schema = {"anyOf": [schema]}
    return ROOT, schema


@pytest.mark.parametrize("kind", ["$ref", "anyOf"])
def test_types_of_follows_as_many_steps_as_the_depth_limit(kind: str) -> None:
    root, schema = steps_to_integer(kind, MAX_DEPTH)
    assert Coercer(root).types_of(schema) == frozenset({"integer"})


@pytest.mark.parametrize("kind", ["$ref", "anyOf"])
def test_types_of_one_step_past_the_depth_limit_is_unconstrained(kind: str) -> None:
    root, schema = steps_to_integer(kind, MAX_DEPTH + 1)
    assert Coercer(root).types_of(schema) is None


# -- type lists, $ref, const, enum -----------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        ({"type": ["integer", "null"]}, "5", 5),
        ({"type": ["integer", "null"]}, None, None),
        ({"type": ["integer", "string"]}, "5", "5"),  # fits as it is: left alone
        ({"type": ["integer", "string"]}, 3.0, 3),  # integer is tried before string
        ({"type": ["string", "integer"]}, 3.5, "3.5"),
        ({"type": ["number", "boolean"]}, "true", True),
        ({"type": ["number", "boolean"]}, "2.5", 2.5),
        ({"type": ["boolean", "string"]}, 7, "7"),
        ({"type": ["array", "string"]}, 7, "7"),  # string before array
        ({"type": ["array", "null"]}, 7, [7]),
        ({"type": ["object", "null"]}, '{"a": 1}', {"a": 1}),
        ({"type": "number"}, 4, 4),  # an integer is a number
        ({"$ref": "#/$defs/Count"}, "12", 12),
        ({"$ref": "#/$defs/Alias"}, "12", 12),
        ({"$ref": "#/$defs/Colour"}, "green", "Green"),
        ({"$ref": "#/$defs/Missing"}, "12", "12"),
        ({"const": 5}, "5", 5),
        ({"const": True}, "TRUE", True),
        ({"const": "5"}, 5, "5"),
        ({"$ref": "#/$defs/Flag"}, "true", True),
        ({"enum": [1, 2, 3]}, "2", 2),
        ({"enum": ["Red", "Green"]}, " red ", "Red"),
        ({"enum": ["Red", "RED"]}, "red", "red"),  # two readings: left for validation
        ({"enum": ["Red", 2]}, "blue", "blue"),
        ({"type": "string", "enum": ["Red"]}, "Red", "Red"),
        ({"allOf": [{"$ref": "#/$defs/Count"}]}, "9", 9),
        ({"items": {"type": "integer"}}, "abc", "abc"),  # no type: a string stays a string
    ],
)
def test_coercion_follows_what_the_schema_declares(
    schema: dict[str, Any], value: Any, expected: Any
) -> None:
    got = coerce(value, schema)
    assert got == expected
    assert type(got) is type(expected)


# -- anyOf / oneOf branch choice -------------------------------------------------------------


@pytest.mark.parametrize("union", ["anyOf", "oneOf"])
@pytest.mark.parametrize(
    ("branches", "value", "expected"),
    [
        ([{"type": "integer"}, {"type": "boolean"}], "7", 7),
        ([{"type": "integer"}, {"type": "boolean"}], "false", False),
        ([{"type": "boolean"}, {"type": "integer"}], "7", 7),
        ([{"type": "integer"}, {"type": "boolean"}], "seven", "seven"),
        ([{"type": "integer"}, {"type": "string"}], "7", "7"),  # the string branch takes it
        ([{"type": "integer"}, {"type": "number"}], "1.5", 1.5),
        ([{"type": "null"}, {"$ref": "#/$defs/Count"}], "3", 3),
        ([{"type": "array", "items": {"type": "integer"}}, {"type": "null"}], "4", [4]),
        ([{"type": "array", "items": {"type": "integer"}}], ["1", "2"], [1, 2]),
        (  # no branch takes a text: the one its conversion fits is coerced all the way
            [{"type": "integer"}, {"type": "object", "properties": {"n": {"type": "integer"}}}],
            '{"n": "1"}',
            {"n": 1},
        ),
        (
            [{"type": "object", "properties": {"n": {"type": "integer"}}}, {"type": "null"}],
            {"n": "1"},
            {"n": 1},
        ),
    ],
)
def test_union_branch_choice(
    union: str, branches: list[dict[str, Any]], value: Any, expected: Any
) -> None:
    got = coerce(value, {union: branches})
    assert got == expected
    assert type(got) is type(expected)


def test_the_first_of_several_fitting_branches_wins_without_a_validator() -> None:
    schema = {
        "anyOf": [
            {"type": "object", "properties": {"n": {"type": "string"}}},
            {"type": "object", "properties": {"n": {"type": "integer"}}},
        ]
    }
    assert Coercer(ROOT).coerce({"n": 5}, schema) == {"n": "5"}


def test_with_a_validator_the_branch_the_value_is_valid_under_wins() -> None:
    branches = [
        {"type": "object", "properties": {"n": {"type": "string"}}},
        {"type": "object", "properties": {"n": {"type": "integer"}}},
    ]
    asked: list[Any] = []

    def is_valid(value: Any, schema: Any) -> bool:
        asked.append(schema)
        return schema is branches[1] and isinstance(value.get("n"), int)

    assert Coercer(ROOT, is_valid).coerce({"n": 5}, {"anyOf": branches}) == {"n": 5}
    assert asked[:2] == [branches[0], branches[1]]
    # valid under none of them: the first fitting branch coerces it
    assert Coercer(ROOT, is_valid).coerce({"n": 5.0}, {"anyOf": branches}) == {"n": "5"}


def test_the_branch_a_value_is_valid_under_fills_its_defaults() -> None:
    def shape(kind: str, field: str, default: int) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"kind": {"const": kind}, field: {"type": "number", "default": default}},
            "required": ["kind"],
        }

    schema = {
        "type": "object",
        "properties": {"shape": {"anyOf": [shape("circle", "r", 1), shape("square", "side", 2)]}},
    }
    got = validate_arguments(schema, {"shape": {"kind": "square"}})
    assert got == {"shape": {"kind": "square", "side": 2}}


def test_a_single_fitting_branch_needs_no_validator_call() -> None:
    def is_valid(value: Any, schema: Any) -> bool:
        raise AssertionError("not asked when only one branch takes the type")

    schema = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert Coercer(ROOT, is_valid).coerce(5, schema) == 5


def test_union_branches_through_validation() -> None:
    schema = {
        "type": "object",
        "properties": {
            "when": {"oneOf": [{"type": "integer"}, {"type": "boolean"}]},
            "size": {"anyOf": [{"type": "null"}, {"type": "number", "minimum": 0}]},
        },
    }
    assert validate_arguments(schema, {"when": "12", "size": "2.5"}) == {"when": 12, "size": 2.5}
    assert validate_arguments(schema, {"when": "true", "size": None}) == {
        "when": True,
        "size": None,
    }
    with pytest.raises(ToolArgumentError, match="when"):
        validate_arguments(schema, {"when": "soon"})


# -- objects, arrays, nulls and defaults -----------------------------------------------------


def test_null_for_an_optional_field_is_dropped_without_a_validator() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": ["integer", "null"]},
            "c": {},
            "r": {"type": "integer"},
        },
        "required": ["r"],
    }
    got = Coercer(ROOT).coerce({"a": None, "b": None, "c": None, "r": None}, schema)
    assert got == {"b": None, "c": None, "r": None}


def test_null_acceptance_is_asked_once_per_sub_schema() -> None:
    sub = {"type": "integer"}
    schema = {"type": "object", "properties": {"a": sub}}
    calls: list[Any] = []

    def is_valid(value: Any, schema: Any) -> bool:
        calls.append((value, schema))
        return False

    coercer = Coercer(ROOT, is_valid)
    assert coercer.coerce({"a": None}, schema) == {}
    assert coercer.coerce({"a": None}, schema) == {}
    assert calls == [(None, sub)]


def test_defaults_fill_absent_fields_and_are_made_valid() -> None:
    def is_valid(value: Any, schema: Any) -> bool:
        types = Coercer(ROOT).types_of(schema)
        return types is None or json_type(value) in types

    schema = {
        "type": "object",
        "properties": {
            "flag": {"type": "boolean", "default": "false"},
            "name": {"type": "string", "default": None},
            "n": {"type": "integer", "default": 2},
            "tags": {"type": "array", "default": ["x"]},
        },
    }
    coercer = Coercer(ROOT, is_valid)
    got = coercer.coerce({}, schema)
    assert got == {"flag": False, "n": 2, "tags": ["x"]}
    got["tags"].append("y")
    assert coercer.coerce({}, schema)["tags"] == ["x"]
    assert coercer.coerce({"n": 5}, schema)["n"] == 5
    # without a validator the default is used as written
    assert Coercer(ROOT).coerce({}, schema)["flag"] == "false"


def test_additional_properties_schemas_coerce_extra_fields() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert coerce({"a": "1", "b": "2"}, schema) == {"a": 1, "b": 2}
    mixed = {"type": "object", "properties": {"s": {"type": "string"}}}
    assert coerce({"s": 1, "other": "1"}, mixed) == {"s": "1", "other": "1"}
    assert coerce({"x": "1"}, {"type": "object"}) == {"x": "1"}


def test_arrays_coerce_prefix_items_then_items() -> None:
    schema = {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "items": {"type": "boolean"},
    }
    assert coerce(["1", 2, "true", "false"], schema) == [1, "2", True, False]
    assert coerce(["1", 2], {"type": "array", "prefixItems": [{"type": "integer"}]}) == [1, 2]
    assert coerce(["1"], {"type": "array"}) == ["1"]


def test_coercion_never_mutates_its_input() -> None:
    value = {"a": ["1", {"b": "2"}]}
    schema = {
        "type": "object",
        "properties": {
            "a": {
                "type": "array",
                "prefixItems": [
                    {"type": "integer"},
                    {"type": "object", "properties": {"b": {"type": "integer"}}},
                ],
            }
        },
    }
    assert coerce(value, schema) == {"a": [1, {"b": 2}]}
    assert value == {"a": ["1", {"b": "2"}]}


def test_the_depth_limit() -> None:
    coercer = Coercer(ROOT)
    assert coercer.coerce(1, {"type": "integer"}, MAX_DEPTH) == 1
    with pytest.raises(CoercionDepthError):
        coercer.coerce(1, {"type": "integer"}, MAX_DEPTH + 1)
    looping = {"$defs": {"L": {"$ref": "#/$defs/L"}}}
    with pytest.raises(CoercionDepthError):
        Coercer(looping).coerce(1, {"$ref": "#/$defs/L"})


@pytest.mark.parametrize(
    ("value", "branches", "is_valid"),
    [
        (1, [{"type": "integer"}], None),  # the one branch that takes the type
        (1, [{"type": "integer"}, {"type": "integer", "minimum": 0}], lambda v, s: True),  # valid
        ("1", [{"type": "integer"}], None),  # no branch takes it: each is tried in turn
    ],
    ids=["fitting", "valid", "tried"],
)
def test_a_union_branch_is_one_level_deeper_than_its_union(
    value: Any, branches: list[Any], is_valid: Any
) -> None:
    coercer = Coercer(ROOT, is_valid)
    assert coercer.coerce(value, {"anyOf": branches}, MAX_DEPTH - 1) == 1
    with pytest.raises(CoercionDepthError):
        coercer.coerce(value, {"anyOf": branches}, MAX_DEPTH)


# -- the scalar converters -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("12", 12),
        (" 12 ", 12),
        ("+5", 5),
        ("-5", -5),
        ("007", 7),
        ("1e3", 1000),
        ("1.0", 1),
        ("2.50e1", 25),
        ("-0.0", 0),
        ("1e400", 10**400),
        (3.0, 3),
        (-2.0, -2),
        ("1.5", _NO),
        ("1e401", _NO),
        ("1e999999", _NO),
        ("1e-3", _NO),
        ("1" * 5000, _NO),  # more digits than int() accepts
        ("abc", _NO),
        ("", _NO),
        ("1 2", _NO),
        (3.5, _NO),
        (math.inf, _NO),
        (math.nan, _NO),
        (True, _NO),
        (None, _NO),
        ([1], _NO),
    ],
)
def test_to_integer(value: Any, expected: Any) -> None:
    got = _to_integer(value)
    assert got is _NO if expected is _NO else (got == expected and type(got) is int)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1.5", 1.5),
        (" -1.5 ", -1.5),
        ("10", 10),
        ("+10", 10),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("1E-2", 0.01),
        ("1e999", _NO),
        ("-1e999", _NO),
        ("1" * 5000, _NO),
        ("nan", _NO),
        ("inf", _NO),
        ("abc", _NO),
        ("", _NO),
        (5, _NO),
        (1.5, _NO),
        (None, _NO),
    ],
)
def test_to_number(value: Any, expected: Any) -> None:
    got = _to_number(value)
    if expected is _NO:
        assert got is _NO
    else:
        assert got == expected
        assert type(got) is type(expected)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", True),
        (" TRUE ", True),
        ("False", False),
        ("yes", _NO),
        ("1", _NO),
        ("", _NO),
        (1, _NO),
        (0, _NO),
        (None, _NO),
    ],
)
def test_to_boolean(value: Any, expected: Any) -> None:
    assert _to_boolean(value) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (5, "5"),
        (-5, "-5"),
        (3.0, "3"),
        (2.5, "2.5"),
        (1e20, "1e+20"),
        (1e15, "1000000000000000"),
        (-1e15, "-1000000000000000"),
        (1e16, "1e+16"),
        (True, _NO),
        (False, _NO),
        (math.inf, _NO),
        (math.nan, _NO),
        (None, _NO),
        ([1], _NO),
    ],
)
def test_to_string(value: Any, expected: Any) -> None:
    got = _to_string(value)
    assert got is _NO if expected is _NO else got == expected


def test_to_string_past_the_digit_limit_is_refused() -> None:
    assert _to_string(10**5000) is _NO


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("[1, 2]", [1, 2]),
        ("  [1]", [1]),
        ("[bad", ["[bad"]),
        ("x", ["x"]),
        (5, [5]),
        (True, [True]),
        ({"a": 1}, [{"a": 1}]),
        ((1, 2), [1, 2]),
        (None, _NO),
        ("[" * 100_000, ["[" * 100_000]),  # beyond the JSON parser's nesting: a plain string
    ],
)
def test_to_array(value: Any, expected: Any) -> None:
    got = _to_array(value)
    assert got is _NO if expected is _NO else got == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('  {"a": 1}', {"a": 1}),
        ("[1]", _NO),
        ("{bad", _NO),
        ("x", _NO),
        ({"a": 1}, _NO),
        (5, _NO),
    ],
)
def test_to_object(value: Any, expected: Any) -> None:
    got = _to_object(value)
    assert got is _NO if expected is _NO else got == expected


def test_scalar_coercion_tries_the_types_in_a_fixed_order() -> None:
    assert _coerce_scalar("5", frozenset({"string", "integer", "number"})) == 5
    assert type(_coerce_scalar("5", frozenset({"number", "string"}))) is int
    assert _coerce_scalar("true", frozenset({"integer", "boolean"})) is True
    assert _coerce_scalar("x", frozenset({"integer", "boolean"})) == "x"
    assert _coerce_scalar("x", frozenset({"array", "object"})) == ["x"]
    assert _coerce_scalar(5, frozenset({"null"})) == 5


def test_json_text_for_an_object_or_array_is_parsed_not_wrapped() -> None:
    # A JSON text where an object or an array is expected is the parsed value when it has one
    # of the types (module docstring): '{"a": 1}' for ["array", "object"] is the object, not
    # a one-item array holding the text.
    either = frozenset({"array", "object"})
    assert _coerce_scalar('{"a": 1}', either) == {"a": 1}
    assert _coerce_scalar("[1, 2]", either) == [1, 2]
    assert _coerce_scalar("x", either) == ["x"]
    assert _coerce_scalar(5, either) == [5]
    schema = {"type": "object", "properties": {"v": {"type": ["array", "object"]}}}
    assert validate_arguments(schema, {"v": '{"a": 1}'}) == {"v": {"a": 1}}


def test_enum_case_matching() -> None:
    assert _match_enum_case("RED", ["Red", "Green"]) == "Red"
    assert _match_enum_case(" green ", ["Red", "Green"]) == "Green"
    assert _match_enum_case("red", ["Red", "RED"]) == "red"
    assert _match_enum_case("blue", ["Red", 1, None]) == "blue"
    assert _match_enum_case("straße", ["STRASSE"]) == "STRASSE"  # casefold, not lower


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("s", "string"),
        (True, "boolean"),
        (1, "integer"),
        (1.5, "number"),
        (None, "null"),
        ([], "array"),
        ({}, "object"),
        (object(), None),
    ],
)
def test_json_type(value: Any, kind: str | None) -> None:
    assert json_type(value) == kind


@settings(max_examples=200, deadline=None)
@given(st.integers(-(10**30), 10**30))
def test_integer_text_round_trips(number: int) -> None:
    assert _to_integer(str(number)) == number
    assert _to_integer(f"  {number}\t") == number
    assert _to_number(str(number)) == number


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_number_text_round_trips(number: float) -> None:
    got = _to_number(repr(number))
    assert got == number
    integral = _to_integer(number)
    if number.is_integer():
        assert integral == int(number)
    else:
        assert integral is _NO


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12))
def test_converters_never_invent_values(text: str) -> None:
    integer = _to_integer(text)
    if integer is not _NO:
        assert Decimal(text.strip()) == integer
    boolean = _to_boolean(text)
    if boolean is not _NO:
        assert text.strip().lower() == str(boolean).lower()
