"""Property tests of validate_arguments over generated schemas and inputs."""

from __future__ import annotations

import copy
import string
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from hermes.tools import ToolArgumentError, validate_arguments
from hermes.tools._fastcheck import compile_fast_check
from hermes.tools.validation import closed_schema

NAMES = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6)

LEAF_SCHEMAS = st.one_of(
    st.just({"type": "integer"}),
    st.just({"type": "number"}),
    st.just({"type": "string"}),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.just({"type": "integer", "minimum": -5, "maximum": 50}),
    st.just({"type": "string", "maxLength": 8}),
    st.lists(st.text(max_size=5), min_size=1, max_size=4, unique=True).map(
        lambda members: {"enum": members}
    ),
)


def _object_schema(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[Any]:
    def with_required(props: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
        names = sorted(props)
        required = st.lists(st.sampled_from(names), unique=True) if names else st.just([])
        return required.map(
            lambda req: {"type": "object", "properties": props, "required": sorted(req)}
        )

    return st.dictionaries(NAMES, children, max_size=4).flatmap(with_required)


def _extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        children.map(lambda items: {"type": "array", "items": items}),
        _object_schema(children),
        st.lists(children, min_size=2, max_size=3).map(lambda branches: {"anyOf": branches}),
    )


SCHEMAS = st.recursive(LEAF_SCHEMAS, _extend, max_leaves=8)
TOP_SCHEMAS = _object_schema(SCHEMAS)

JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=10),
        st.sampled_from(["1", "2.5", "true", "False", "[1]", '{"a": 1}', "null", " 7 "]),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(NAMES, children, max_size=4)
    ),
    max_leaves=12,
)


def instances(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid under one of the generated schemas."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([instances(branch) for branch in schema["anyOf"]])
    kind = schema["type"]
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        return st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False))
    if kind == "string":
        return st.text(max_size=schema.get("maxLength", 20))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(instances(schema["items"]), max_size=3)
    props = schema["properties"]
    required = set(schema["required"])
    return st.fixed_dictionaries(
        {name: instances(sub) for name, sub in props.items() if name in required},
        optional={name: instances(sub) for name, sub in props.items() if name not in required},
    )


@st.composite
def schema_and_instance(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    schema = draw(TOP_SCHEMAS)
    return schema, draw(instances(schema))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(schema_and_instance())
def test_valid_instances_come_back_unchanged(case: tuple[dict[str, Any], Any]) -> None:
    schema, instance = case
    before = copy.deepcopy(instance)
    assert validate_arguments(schema, instance) == instance
    assert instance == before


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(TOP_SCHEMAS, st.one_of(JSON_VALUES, st.dictionaries(NAMES, JSON_VALUES, max_size=5)))
def test_any_input_yields_a_valid_dict_or_tool_argument_error(
    schema: dict[str, Any], args: Any
) -> None:
    before = copy.deepcopy(args)
    result: Any = None
    error: ToolArgumentError | None = None
    try:
        result = validate_arguments(schema, args)
    except ToolArgumentError as caught:
        error = caught
    if error is not None:
        assert error.problems
        assert str(error).startswith("invalid arguments: ")
    else:
        assert isinstance(result, dict)
        assert Draft202012Validator(schema).is_valid(result)
    assert args == before


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(TOP_SCHEMAS, JSON_VALUES)
def test_fast_check_never_accepts_what_jsonschema_rejects(
    schema: dict[str, Any], value: Any
) -> None:
    closed = closed_schema(schema)
    fast = compile_fast_check(closed)
    assert fast is not None  # every generated keyword is supported
    if fast(value):
        assert Draft202012Validator(closed).is_valid(value)


@settings(max_examples=200)
@given(st.text(max_size=30))
def test_integer_coercion_never_invents_numbers_from_text(text: str) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    try:
        result = validate_arguments(schema, {"n": text})
    except ToolArgumentError:
        return
    assert Decimal(text.strip()) == result["n"]


_FLAT_SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "integer"},
        "b": {"type": "number"},
        "s": {"type": "string", "maxLength": 5},
        "f": {"type": "boolean"},
        "n": {"type": ["string", "null"]},
        "e": {"enum": ["Red", "green"]},
    },
    "required": ["a"],
}
_FLAT_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["1", "2.5", "true", "red", "Red", "green", "toolong!", ""]),
)


@given(st.dictionaries(st.sampled_from(["a", "b", "s", "f", "n", "e", "x"]), _FLAT_VALUES))
def test_the_valid_flat_shortcut_gives_what_coercion_gives(args: dict[str, object]) -> None:
    """The shortcut for valid flat arguments (no coercion pass) never changes an outcome."""
    from hermes.tools import validation

    compiled = validation._compile(_FLAT_SCHEMA)
    assert compiled.defaults_free
    try:
        expected: object = compiled.coercer.coerce(args, compiled.schema)
        ok = compiled.validator.is_valid(expected)
    except Exception as exc:
        expected, ok = type(exc), False
    if ok:
        assert validation.validate_arguments(_FLAT_SCHEMA, args) == expected
    else:
        with pytest.raises(ToolArgumentError):
            validation.validate_arguments(_FLAT_SCHEMA, args)
