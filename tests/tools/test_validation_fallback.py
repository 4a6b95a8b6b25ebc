"""validate_arguments beyond the fast check: schemas whose keywords (``format``, ``oneOf``,
``not``, ``patternProperties``, ``if``/``then``, ``dependentRequired``, ``prefixItems`` …) send
every call to ``jsonschema``. Valid arguments must come back (coerced, completed with their
defaults), invalid ones must name their field — on that path as on the fast one."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from hermes.tools import ToolArgumentError, validate_arguments
from hermes.tools import validation as validation_module
from hermes.tools._coercion import Coercer
from hermes.tools._fastcheck import compile_fast_check
from hermes.tools.validation import check_json_schema, closed_schema

#: Every schema here is outside the fast-check subset (checked by the first test).
FORMATTED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email"},
        "day": {"type": "string", "format": "date"},
        "host": {"type": "string", "format": "ipv4"},
    },
    "required": ["email"],
}
ONE_OF: dict[str, Any] = {
    "type": "object",
    "properties": {
        "target": {
            "oneOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "pattern": "^[a-z]+$"},
            ]
        }
    },
    "required": ["target"],
}
NUMBER_OR_FLAG: dict[str, Any] = {
    "type": "object",
    "properties": {"v": {"oneOf": [{"type": "integer"}, {"type": "boolean"}], "format": "x"}},
}
NOT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "not": {"const": "root"}}},
    "required": ["name"],
}
PATTERN_PROPS: dict[str, Any] = {
    "type": "object",
    "patternProperties": {"^x_": {"type": "integer"}},
    "additionalProperties": False,
}
CONDITIONAL: dict[str, Any] = {
    "type": "object",
    "properties": {"kind": {"enum": ["file", "url"]}, "path": {"type": "string"}},
    "if": {"properties": {"kind": {"const": "file"}}},
    "then": {"required": ["path"]},
}
DEPENDENT: dict[str, Any] = {
    "type": "object",
    "properties": {"card": {"type": "string"}, "cvv": {"type": "string"}},
    "dependentRequired": {"card": ["cvv"]},
}
TUPLE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pair": {
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
            "items": False,
        }
    },
}
FALLBACK_SCHEMAS = [FORMATTED, ONE_OF, NOT_SCHEMA, PATTERN_PROPS, CONDITIONAL, DEPENDENT, TUPLE]


@pytest.mark.parametrize("schema", FALLBACK_SCHEMAS)
def test_these_schemas_have_no_fast_check(schema: dict[str, Any]) -> None:
    assert compile_fast_check(closed_schema(schema)) is None


@pytest.mark.parametrize(
    ("schema", "args"),
    [
        (FORMATTED, {"email": "ada@example.org"}),
        (FORMATTED, {"email": "ada@example.org", "day": "2026-12-02", "host": "127.0.0.1"}),
        (ONE_OF, {"target": 3}),
        (ONE_OF, {"target": "abc"}),
        (NOT_SCHEMA, {"name": "ada"}),
        (PATTERN_PROPS, {"x_a": 1, "x_b": 2}),
        (PATTERN_PROPS, {}),
        (CONDITIONAL, {"kind": "file", "path": "/tmp/a"}),
        (CONDITIONAL, {"kind": "url"}),
        (DEPENDENT, {"card": "4111", "cvv": "123"}),
        (DEPENDENT, {"cvv": "123"}),
        (TUPLE, {"pair": [1, "one"]}),
    ],
)
def test_valid_arguments_come_back_on_the_jsonschema_path(
    schema: dict[str, Any], args: dict[str, Any]
) -> None:
    sent = copy.deepcopy(args)
    got = validate_arguments(schema, sent)
    assert got == args
    assert sent == args  # the caller's dict is not mutated
    assert got is not sent


@pytest.mark.parametrize(
    ("schema", "args", "expected"),
    [
        # coercion still runs before jsonschema decides
        (FORMATTED, {"email": "ada@example.org", "host": "10.0.0.1"}, None),
        (ONE_OF, {"target": "abc"}, None),  # a string branch takes "7" as it is: no coercion
        (NUMBER_OR_FLAG, {"v": "7"}, {"v": 7}),
        (NUMBER_OR_FLAG, {"v": " TRUE "}, {"v": True}),
        (ONE_OF, {"target": 7.0}, {"target": 7}),
        (PATTERN_PROPS, '{"x_a": 1}', {"x_a": 1}),
        (TUPLE, {"pair": ["1", 2]}, {"pair": [1, "2"]}),
        (TUPLE, {"pair": '[3, "three"]'}, {"pair": [3, "three"]}),
    ],
)
def test_coerced_arguments_come_back_on_the_jsonschema_path(
    schema: dict[str, Any], args: Any, expected: dict[str, Any] | None
) -> None:
    assert validate_arguments(schema, args) == (args if expected is None else expected)


def test_defaults_are_filled_on_the_jsonschema_path() -> None:
    schema = {
        "type": "object",
        "properties": {
            "email": {"type": "string", "format": "email"},
            "retries": {"type": "integer", "default": 3},
            "tags": {"type": "array", "items": {"type": "string"}, "default": ["a"]},
        },
    }
    first = validate_arguments(schema, {"email": "a@b.c"})
    assert first == {"email": "a@b.c", "retries": 3, "tags": ["a"]}
    first["tags"].append("mutated")  # a filled default is a copy, not the schema's list
    assert validate_arguments(schema, {})["tags"] == ["a"]
    assert schema["properties"]["tags"]["default"] == ["a"]


def test_a_string_that_a_string_branch_takes_is_not_coerced_for_another() -> None:
    # seed 002 §3.2: coercion only touches values that fit no branch; "7" fits the string
    # branch's type, so jsonschema judges it there (and its pattern refuses it).
    with pytest.raises(ToolArgumentError, match="target: must match the pattern"):
        validate_arguments(ONE_OF, {"target": "7"})


@pytest.mark.parametrize(
    ("schema", "args", "field", "words"),
    [
        (FORMATTED, {"email": "not an address"}, "email", "email"),
        (FORMATTED, {"email": "a@b.c", "day": "2026-13-45"}, "day", "date"),
        (FORMATTED, {"email": "a@b.c", "host": "999.1.1.1"}, "host", "ipv4"),
        (FORMATTED, {"email": "a@b.c", "colour": "red"}, "colour", "unknown field"),
        (FORMATTED, {}, "email", "missing required field"),
        (ONE_OF, {"target": -1}, "target", ""),
        (ONE_OF, {"target": "ABC!"}, "target", ""),
        (NOT_SCHEMA, {"name": "root"}, "name", ""),
        (PATTERN_PROPS, {"y": 1}, "y", ""),
        (PATTERN_PROPS, {"x_a": "many"}, "x_a", "integer"),
        (CONDITIONAL, {"kind": "file"}, "path", "missing required field"),
        (DEPENDENT, {"card": "4111"}, "cvv", ""),
        (TUPLE, {"pair": [1, "one", "extra"]}, "pair", ""),
    ],
)
def test_invalid_arguments_name_their_field_on_the_jsonschema_path(
    schema: dict[str, Any], args: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        validate_arguments(schema, args)
    problems = caught.value.problems
    assert problems, "a refusal says what is wrong"
    assert any(field in p.path or field in p.message for p in problems), problems
    assert words in str(caught.value)


@pytest.mark.parametrize(
    ("args", "kind"),
    [(None, "null"), ([1, 2], "array"), (3, "integer"), ("not json", "string"), ("[1]", "array")],
)
def test_anything_but_an_object_is_one_problem_at_the_root(args: Any, kind: str) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        validate_arguments(FORMATTED, args)
    [problem] = caught.value.problems
    assert problem.path == ""
    assert problem.message == f"expected an object with the tool's arguments, got {kind}"


def test_an_object_of_an_unknown_python_type_is_named_by_its_type() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        validate_arguments(FORMATTED, {1, 2})
    assert caught.value.problems[0].message.endswith("got set")


def test_arguments_nested_too_deeply_are_one_problem() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#"}}, "format": "x"}
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(200):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(ToolArgumentError) as caught:
        validate_arguments(schema, deep)
    [problem] = caught.value.problems
    assert (problem.path, problem.message) == ("", "arguments are nested too deeply")


def test_the_flat_shortcut_returns_a_copy() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    sent = {"a": 1}
    got = validate_arguments(schema, sent)
    assert got == {"a": 1}
    assert got is not sent
    got["a"] = 2
    assert sent == {"a": 1}


def test_the_flat_shortcut_still_coerces_what_does_not_fit() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert validate_arguments(schema, {"a": "5"}) == {"a": 5}
    with pytest.raises(ToolArgumentError, match="a: "):
        validate_arguments(schema, {"a": "five"})


def test_the_flat_shortcut_turns_a_whole_float_into_an_integer_field_int() -> None:
    # jsonschema takes 3.0 as an integer, so only coercion makes it the int the tool declared.
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    got = validate_arguments(schema, {"a": 3.0})
    assert got == {"a": 3}
    assert type(got["a"]) is int


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the fast path should not get here")


def test_a_valid_flat_call_is_not_coerced(monkeypatch: pytest.MonkeyPatch) -> None:
    # The common call's cost (BENCHMARKS §4): valid flat arguments are copied, not coerced.
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "ratio": {"type": "number"},
            "metric": {"type": "boolean"},
        },
    }
    monkeypatch.setattr(Coercer, "coerce", _refuse)
    sent = {"city": "Oslo", "days": 3, "ratio": 0.5, "metric": True}
    assert validate_arguments(schema, sent) == sent


def test_coerced_arguments_the_fast_check_accepts_skip_jsonschema(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    schema = {"type": "object", "properties": {"days": {"type": "integer"}}}
    validate_arguments(schema, {"days": 1})  # compiled first: checking a schema runs jsonschema
    monkeypatch.setattr(Draft202012Validator, "iter_errors", _refuse)
    assert validate_arguments(schema, {"days": "3"}) == {"days": 3}


def test_nested_values_skip_the_shortcut_and_are_coerced() -> None:
    schema = {
        "type": "object",
        "properties": {"p": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    }
    assert validate_arguments(schema, {"p": {"n": "4"}}) == {"p": {"n": 4}}


def test_a_property_named_default_still_validates() -> None:
    schema = {"type": "object", "properties": {"default": {"type": "integer"}}}
    assert validate_arguments(schema, {"default": 1}) == {"default": 1}
    assert validate_arguments(schema, {"default": "2"}) == {"default": 2}


def test_an_anyof_value_valid_under_a_later_branch_is_not_rewritten() -> None:
    # Both branches take objects; {"n": 5} is valid under the second as it is, and coercing it
    # for the first would turn 5 into "5". The validator picks the branch it is valid under.
    schema = {
        "type": "object",
        "properties": {
            "v": {
                "anyOf": [
                    {"type": "object", "properties": {"n": {"type": "string"}}},
                    {"type": "object", "properties": {"n": {"type": "integer"}}},
                ]
            }
        },
    }
    assert validate_arguments(schema, {"v": {"n": 5}}) == {"v": {"n": 5}}
    assert validate_arguments(schema, {"v": {"n": "5"}}) == {"v": {"n": "5"}}


def test_null_for_an_optional_field_that_refuses_null_is_dropped_on_both_paths() -> None:
    fast = {"type": "object", "properties": {"a": {"type": "integer"}}}
    slow = {"type": "object", "properties": {"a": {"type": "integer", "format": "int32"}}}
    for schema in (fast, slow):
        assert validate_arguments(schema, {"a": None}) == {}
    enum_schema = {"type": "object", "properties": {"a": {"enum": ["x", None]}}}
    assert validate_arguments(enum_schema, {"a": None}) == {"a": None}


def test_a_schema_equal_to_a_cached_one_gives_the_same_answers() -> None:
    def make() -> dict[str, Any]:
        return {"type": "object", "properties": {"d": {"type": "string", "format": "date"}}}

    first, second = make(), make()
    assert validate_arguments(first, {"d": "2026-01-02"}) == {"d": "2026-01-02"}
    assert validate_arguments(second, {"d": "2026-01-02"}) == {"d": "2026-01-02"}
    with pytest.raises(ToolArgumentError):
        validate_arguments(second, {"d": "yesterday"})


def test_the_compiled_caches_stay_bounded() -> None:
    for n in range(validation_module._CACHE_SIZE + 50):
        schema = {"type": "object", "properties": {f"f{n}": {"type": "integer"}}}
        assert validate_arguments(schema, {f"f{n}": n}) == {f"f{n}": n}
    assert len(validation_module._by_json) <= validation_module._CACHE_SIZE
    assert len(validation_module._by_identity) <= validation_module._CACHE_SIZE


def test_a_schema_that_is_not_json_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not JSON-serializable"):
        validate_arguments({"type": "object", "default": {1, 2}}, {})


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ([], "must be a JSON Schema object"),
        ({"type": "nonsense"}, "not a valid JSON Schema at type"),
        ({"properties": {"a": {"minimum": "x"}}}, "at properties/a/minimum"),
        ({"$ref": "https://example.org/s.json"}, "non-local $ref 'https://example.org/s.json'"),
    ],
)
def test_check_json_schema_says_what_is_wrong(schema: Any, message: str) -> None:
    with pytest.raises(ValueError, match=r"^tool 'x' schema ") as caught:
        check_json_schema(schema, what="tool 'x' schema")
    assert message in str(caught.value)


def test_check_json_schema_accepts_local_refs() -> None:
    check_json_schema({"$ref": "#/$defs/A", "$defs": {"A": {"type": "string"}}})


def test_closed_schema_closes_only_what_does_not_say_otherwise() -> None:
    schema = {
        "type": "object",
        "properties": {
            "inner": {"type": "object", "properties": {"x": {"type": "integer"}}},
            "open": {"properties": {"y": {}}, "additionalProperties": True},
            "patterned": {"properties": {"z": {}}, "patternProperties": {"^a": {}}},
            "evaluated": {"properties": {"z": {}}, "unevaluatedProperties": False},
            "combined": {"properties": {"z": {}}, "allOf": [{"properties": {"w": {}}}]},
        },
    }
    closed = closed_schema(schema)
    assert closed["additionalProperties"] is False
    props = closed["properties"]
    assert props["inner"]["additionalProperties"] is False
    assert props["open"]["additionalProperties"] is True
    assert "additionalProperties" not in props["patterned"]
    assert "additionalProperties" not in props["evaluated"]
    assert "additionalProperties" not in props["combined"]
    assert "additionalProperties" not in props["combined"]["allOf"][0]  # allOf parts stay open
    assert "additionalProperties" not in schema  # the input is not changed


_EMAILS = st.from_regex(r"[a-z]{1,8}@[a-z]{1,8}\.[a-z]{2,3}", fullmatch=True)
_DATES = st.dates().map(lambda d: d.isoformat())
_IPS = st.ip_addresses(v=4).map(str)


@settings(max_examples=60, deadline=None)
@given(
    email=_EMAILS,
    day=st.one_of(st.none(), _DATES),
    host=st.one_of(st.none(), _IPS),
)
def test_valid_formatted_arguments_always_come_back(
    email: str, day: str | None, host: str | None
) -> None:
    args = {"email": email}
    if day is not None:
        args["day"] = day
    if host is not None:
        args["host"] = host
    assert validate_arguments(FORMATTED, args) == args


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.integers(min_value=0, max_value=10**6), st.from_regex(r"[a-z]{1,10}", fullmatch=True)
    )
)
def test_valid_one_of_values_always_come_back_unchanged(target: int | str) -> None:
    assert validate_arguments(ONE_OF, {"target": target}) == {"target": target}
