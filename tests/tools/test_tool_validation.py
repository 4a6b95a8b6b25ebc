"""validate_arguments: safe coercions, defaults and field-named errors (public contract)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hermes.errors import FieldProblem
from hermes.tools import ToolArgumentError, validate_arguments

WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1, "default": 1},
        "unit": {"enum": ["celsius", "fahrenheit"], "default": "celsius"},
        "hourly": {"type": "boolean", "default": False},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["city"],
    "additionalProperties": False,
}

NESTED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "point": {"$ref": "#/$defs/Point"},
        "maybe": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}], "default": None},
        "points": {"type": "array", "items": {"$ref": "#/$defs/Point"}},
    },
    "$defs": {
        "Point": {
            "type": "object",
            "properties": {
                "x": {"type": "integer"},
                "y": {"type": "number", "default": 0},
            },
            "required": ["x"],
        }
    },
}


def _error(schema: dict[str, Any], args: Any) -> ToolArgumentError:
    with pytest.raises(ToolArgumentError) as caught:
        validate_arguments(schema, args)
    return caught.value


def test_valid_arguments_get_defaults_filled() -> None:
    assert validate_arguments(WEATHER, {"city": "Beijing"}) == {
        "city": "Beijing",
        "days": 1,
        "unit": "celsius",
        "hourly": False,
    }


def test_message_names_every_offending_field() -> None:
    error = _error(WEATHER, {"days": "ten", "colour": "red"})
    assert str(error) == (
        "invalid arguments: city: missing required field; days: expected integer, got 'ten'; "
        "colour: unknown field"
    )
    assert error.problems == [
        FieldProblem("city", "missing required field"),
        FieldProblem("days", "expected integer, got 'ten'"),
        FieldProblem("colour", "unknown field"),
    ]
    assert error.code == "invalid_arguments"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("123", 123), (" 42 ", 42), ("+7", 7), (3.0, 3), ("3.0", 3), ("1e3", 1000)],
)
def test_integer_coercions(value: Any, expected: int) -> None:
    result = validate_arguments(WEATHER, {"city": "x", "days": value})
    assert result["days"] == expected
    assert type(result["days"]) is int


@pytest.mark.parametrize("value", ["abc", 1.5, "1.5", True, "", [1], "1_000", "-7", {}])
def test_unsafe_integer_inputs_are_reported(value: Any) -> None:
    error = _error(WEATHER, {"city": "x", "days": value})
    assert [p.path for p in error.problems] == ["days"]


def test_number_coercion_from_text() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "number"}}}
    assert validate_arguments(schema, {"v": "1.5"}) == {"v": 1.5}
    assert validate_arguments(schema, {"v": "-2"}) == {"v": -2}
    for bad in ("nan", "inf", "1e999", "1.5x"):
        assert _error(schema, {"v": bad}).problems[0].path == "v"


@pytest.mark.parametrize(
    ("value", "expected"), [("true", True), ("FALSE", False), (" True ", True)]
)
def test_boolean_coercion_from_text(value: str, expected: bool) -> None:
    assert validate_arguments(WEATHER, {"city": "x", "hourly": value})["hourly"] is expected


@pytest.mark.parametrize("value", ["yes", "1", 1, 0, "on"])
def test_ambiguous_boolean_inputs_are_reported(value: Any) -> None:
    error = _error(WEATHER, {"city": "x", "hourly": value})
    assert error.problems[0].path == "hourly"
    assert "expected boolean" in error.problems[0].message


def test_number_becomes_text_for_string_field() -> None:
    # seed 003 §4.2: the model sent 1001 where a string id was expected
    assert validate_arguments(WEATHER, {"city": 1001})["city"] == "1001"
    assert validate_arguments(WEATHER, {"city": 10.0})["city"] == "10"
    assert validate_arguments(WEATHER, {"city": 2.5})["city"] == "2.5"


def test_bool_is_not_text() -> None:
    assert _error(WEATHER, {"city": True}).problems[0].path == "city"


def test_scalar_becomes_one_item_array() -> None:
    assert validate_arguments(WEATHER, {"city": "x", "tags": "rain"})["tags"] == ["rain"]
    assert validate_arguments(WEATHER, {"city": "x", "tags": 7})["tags"] == ["7"]


def test_json_text_is_parsed_for_arrays_and_objects() -> None:
    assert validate_arguments(WEATHER, {"city": "x", "tags": '["a", "b"]'})["tags"] == ["a", "b"]
    result = validate_arguments(NESTED, {"point": '{"x": "2"}'})
    assert result["point"] == {"x": 2, "y": 0}


def test_json_text_of_the_wrong_type_is_not_parsed() -> None:
    error = _error(NESTED, {"point": "[1, 2]"})
    assert error.problems[0].path == "point"


def test_enum_member_matched_ignoring_case() -> None:
    assert validate_arguments(WEATHER, {"city": "x", "unit": "Celsius"})["unit"] == "celsius"
    error = _error(WEATHER, {"city": "x", "unit": "kelvin"})
    assert error.problems[0].message.startswith("must be one of 'celsius', 'fahrenheit'")


def test_null_for_optional_field_means_absent() -> None:
    result = validate_arguments(WEATHER, {"city": "x", "days": None, "tags": None})
    assert result["days"] == 1
    assert "tags" not in result


def test_null_for_required_field_is_reported() -> None:
    error = _error(WEATHER, {"city": None})
    assert error.problems == [FieldProblem("city", "expected string, got null")]


def test_nested_coercion_and_defaults_through_refs() -> None:
    result = validate_arguments(
        NESTED, {"point": {"x": "1"}, "maybe": {"x": 2.0}, "points": [{"x": "3", "y": "0.5"}]}
    )
    assert result == {
        "point": {"x": 1, "y": 0},
        "maybe": {"x": 2, "y": 0},
        "points": [{"x": 3, "y": 0.5}],
    }


def test_nested_problems_have_paths() -> None:
    error = _error(NESTED, {"point": {"y": "z"}, "points": [{"x": 1}, {"x": "q", "z": 1}]})
    assert [str(p) for p in error.problems] == [
        "point.x: missing required field",
        "point.y: expected number, got 'z'",
        "points[1].x: expected integer, got 'q'",
        "points[1].z: unknown field",
    ]


def test_optional_object_reports_inner_field_not_the_union() -> None:
    error = _error(NESTED, {"maybe": {"y": 1}})
    assert error.problems == [FieldProblem("maybe.x", "missing required field")]


def test_union_of_scalars_reports_all_expected_types() -> None:
    error = _error(NESTED, {"maybe": 5})
    assert error.problems == [FieldProblem("maybe", "expected object or null, got 5")]


def test_nested_unknown_field_rejected_without_explicit_additional_properties() -> None:
    error = _error(NESTED, {"point": {"x": 1, "extra": True}})
    assert error.problems == [FieldProblem("point.extra", "unknown field")]


def test_schema_that_allows_extra_fields_keeps_them() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": True,
    }
    assert validate_arguments(schema, {"a": "1", "b": 2}) == {"a": 1, "b": 2}


def test_additional_properties_schema_coerces_values() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert validate_arguments(schema, {"a": "1", "b": 2}) == {"a": 1, "b": 2}


def test_nested_defaults_are_fresh_copies() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"items": {"type": "array", "default": []}},
    }
    first = validate_arguments(schema, {})
    first["items"].append(1)
    assert validate_arguments(schema, {}) == {"items": []}
    assert schema["properties"]["items"]["default"] == []


@pytest.mark.parametrize(
    ("args", "kind"), [(None, "null"), ([1], "array"), ("text", "string"), (5, "integer")]
)
def test_non_object_arguments_are_a_clear_error(args: Any, kind: str) -> None:
    error = _error(WEATHER, args)
    assert str(error) == (
        f"invalid arguments: <root>: expected an object with the tool's arguments, got {kind}"
    )


def test_json_text_of_an_object_is_accepted() -> None:
    assert validate_arguments(WEATHER, '{"city": "Paris"}')["city"] == "Paris"


def test_caller_dict_is_not_mutated() -> None:
    args = {"city": 1001, "days": "2", "tags": "x", "point": None}
    before = copy.deepcopy(args)
    nested = {"point": {"x": "1"}}
    nested_before = copy.deepcopy(nested)
    validate_arguments(WEATHER | {"additionalProperties": True}, args)
    validate_arguments(NESTED, nested)
    assert args == before
    assert nested == nested_before


def test_schema_is_not_mutated() -> None:
    schema = copy.deepcopy(NESTED)
    validate_arguments(schema, {"point": {"x": 1}})
    assert schema == NESTED


def test_constraint_messages_are_readable() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "maximum": 5},
            "s": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
            "l": {"type": "array", "maxItems": 1},
            "c": {"const": "fixed"},
        },
    }
    error = _error(schema, {"n": 9, "s": "A", "l": [1, 2], "c": "other"})
    assert [str(p) for p in error.problems] == [
        "c: must be 'fixed'; got 'other'",
        "l: must have at most 1 items",
        "n: must be <= 5; got 9",
        "s: must be at least 2 characters long",
        "s: must match the pattern ^[a-z]+$; got 'A'",
    ]


def test_long_values_are_shortened_in_messages() -> None:
    error = _error(WEATHER, {"city": "x", "days": "z" * 5000})
    assert len(str(error)) < 200


def test_deeply_nested_arguments_are_refused_cleanly() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
    }
    deep: dict[str, Any] = {}
    for _ in range(500):
        deep = {"child": deep}
    error = _error(schema, {"tree": deep})
    assert "nested too deeply" in str(error)


def test_invalid_schema_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not a valid JSON Schema"):
        validate_arguments({"type": "object", "properties": {"a": {"type": "integr"}}}, {})


def test_remote_ref_is_refused() -> None:
    with pytest.raises(ValueError, match="non-local"):
        validate_arguments({"$ref": "https://example.com/schema.json"}, {})


def test_equal_schemas_built_per_call_share_one_compiled_validator() -> None:
    from hermes.tools import validation

    validation._by_json.clear()
    for _ in range(3):
        validate_arguments(copy.deepcopy(WEATHER), {"city": "x"})
    assert len(validation._by_json) == 1


# seed 003 §4.2: a schema's own default never makes a call fail -------------------------------
def _one(prop: dict[str, Any], *, required: bool = False) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {"o": prop}}
    if required:
        schema["required"] = ["o"]
    return schema


def test_a_null_default_on_a_string_is_left_out() -> None:
    assert validate_arguments(_one({"type": "string", "default": None}), {}) == {}


@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        ({"type": "boolean", "default": "false"}, False),
        ({"type": "boolean", "default": "TRUE"}, True),
        ({"type": "integer", "format": "int32", "default": "250"}, 250),
        ({"type": "number", "default": "0.5"}, 0.5),
        ({"type": "string", "default": 7}, "7"),
        ({"type": "array", "items": {"type": "string"}, "default": "all"}, ["all"]),
        ({"enum": ["asc", "desc"], "default": "DESC"}, "desc"),
    ],
)
def test_a_default_of_the_wrong_type_is_coerced_when_that_is_safe(
    prop: dict[str, Any], expected: Any
) -> None:
    result = validate_arguments(_one(prop), {})
    assert result == {"o": expected}
    assert type(result["o"]) is type(expected)


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "integer", "default": "all"},
        {"type": "boolean", "default": "yes"},
        {"type": "string", "enum": ["a", "b"], "default": ""},
        {"type": "integer", "minimum": 1, "default": 0},
        {"type": "string", "pattern": "^[0-9]+$", "default": "none"},
        {"type": "object", "properties": {"x": {"type": "integer"}}, "default": None},
        {"type": "object", "properties": {"x": {"type": "integer"}}, "default": {"y": 1}},
        {"type": "array", "items": {"type": "integer"}, "default": ["a"]},
    ],
)
def test_a_default_that_cannot_be_made_valid_is_left_out(prop: dict[str, Any]) -> None:
    assert validate_arguments(_one(prop), {}) == {}


def test_a_valid_default_is_still_filled_in() -> None:
    schema = _one({"type": "object", "properties": {"x": {"type": "integer"}}, "default": {}})
    assert validate_arguments(schema, {}) == {"o": {}}


def test_nested_defaults_that_do_not_fit_are_left_out_too() -> None:
    inner = {
        "type": "object",
        "properties": {
            "flag": {"type": "boolean", "default": "false"},
            "limit": {"type": "integer", "default": None},
        },
    }
    assert validate_arguments(_one(inner), {"o": {}}) == {"o": {"flag": False}}


def test_null_for_an_optional_field_with_a_bad_default_means_not_given() -> None:
    schema = _one({"type": "string", "default": None})
    assert validate_arguments(schema, {"o": None}) == {}


def test_null_is_kept_where_the_schema_accepts_it() -> None:
    schema = _one({"type": ["string", "null"], "default": "x"})
    assert validate_arguments(schema, {"o": None}) == {"o": None}
    assert validate_arguments(schema, {}) == {"o": "x"}


def test_a_required_field_whose_default_does_not_fit_is_still_missing() -> None:
    error = _error(_one({"type": "integer", "default": "all"}, required=True), {})
    assert error.problems == [FieldProblem("o", "missing required field")]


def test_a_value_that_fits_an_untyped_schema_is_not_rewritten() -> None:
    # No "type": "items" says what array items must be, not that the value is an array.
    # (A second field with a default makes the call take the coercion path.)
    for untyped, value in (
        ({"items": {"type": "string", "enum": ["text", "audio"]}}, "example"),
        ({"properties": {"x": {"type": "integer"}}}, "text"),
    ):
        schema = _one(untyped)
        schema["properties"]["n"] = {"type": "integer", "default": 1}
        assert validate_arguments(schema, {"o": value}) == {"o": value, "n": 1}
