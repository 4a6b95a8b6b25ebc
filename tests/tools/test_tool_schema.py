"""function_schema: JSON Schema and calling convention from type hints and docstrings.

No ``from __future__ import annotations`` here on purpose: several tests define types inside
the test function, which string annotations could not resolve.
"""

import dataclasses
import enum
import functools
from typing import Annotated, Any, Literal, Optional

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from hermes.tools import ToolContext, function_schema
from hermes.tools._docstrings import parse_docstring


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class Pair(TypedDict):
    left: int
    right: str


class Options(BaseModel):
    """Display options."""

    verbose: bool = False
    level: int = Field(1, ge=0, description="how loud")


def _props(fn: Any) -> dict[str, Any]:
    props: dict[str, Any] = function_schema(fn).parameters["properties"]
    return props


def _walk_keys(node: Any) -> list[str]:
    keys: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            keys.append(key)
            keys.extend(_walk_keys(value))
    elif isinstance(node, list):
        for value in node:
            keys.extend(_walk_keys(value))
    return keys


def test_scalar_parameters_map_to_json_types() -> None:
    def f(a: int, b: float, c: str, d: bool) -> None: ...

    props = _props(f)
    assert [props[n]["type"] for n in "abcd"] == ["integer", "number", "string", "boolean"]


def test_parameters_without_defaults_are_required_and_others_have_defaults() -> None:
    def f(city: str, days: int = 3, unit: str = "c") -> None: ...

    schema = function_schema(f).parameters
    assert schema["required"] == ["city"]
    assert schema["properties"]["days"]["default"] == 3
    assert "default" not in schema["properties"]["city"]


def test_schema_is_closed_and_has_no_title_keywords() -> None:
    def f(a: int, p: Point, o: Options) -> None: ...

    schema = function_schema(f).parameters
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Point"]["additionalProperties"] is False
    assert "title" not in _walk_keys(schema)


def test_a_parameter_named_title_survives_title_cleanup() -> None:
    def f(title: str, json: int = 0, copy: bool = False) -> None: ...

    assert set(_props(f)) == {"title", "json", "copy"}


def test_function_without_parameters_has_an_empty_object_schema() -> None:
    def ping() -> str:
        return "pong"

    assert function_schema(ping).parameters == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


@pytest.mark.parametrize("annotation", [Optional[int], int | None])  # noqa: UP045
def test_optional_renders_as_any_of_with_null(annotation: Any) -> None:
    def f(x: annotation = None) -> None: ...

    assert _props(f)["x"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert _props(f)["x"]["default"] is None


def test_containers_literal_and_enum() -> None:
    def f(
        tags: list[str],
        scores: dict[str, float],
        mode: Literal["fast", "slow"] = "fast",
        colour: Colour = Colour.RED,
    ) -> None: ...

    schema = function_schema(f).parameters
    props = schema["properties"]
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["scores"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert props["colour"]["default"] == "red"
    assert schema["$defs"]["Colour"]["enum"] == ["red", "blue"]


def test_nested_model_dataclass_and_typeddict_get_defs() -> None:
    def f(point: Point, options: Options, pair: Pair) -> None: ...

    defs = function_schema(f).parameters["$defs"]
    assert defs["Point"]["required"] == ["x"]
    assert defs["Options"]["properties"]["level"]["minimum"] == 0
    assert defs["Pair"]["required"] == ["left", "right"]


def test_google_docstring_gives_description_and_parameter_docs() -> None:
    def f(city: str, days: int = 1) -> None:
        """Get the weather
        for a city.

        Longer text that is not part of the description.

        Args:
            city: City name,
                in Chinese or English.
            days (int): How many days.

        Returns:
            A forecast.
        """

    spec = function_schema(f)
    assert spec.description == "Get the weather for a city."
    assert spec.parameters["properties"]["city"]["description"] == (
        "City name, in Chinese or English."
    )
    assert spec.parameters["properties"]["days"]["description"] == "How many days."


def test_rest_docstring_parameter_docs() -> None:
    def f(city: str, days: int = 1) -> None:
        """Weather.

        :param city: City name.
        :param int days: How many
            days ahead.
        :returns: a forecast
        """

    props = _props(f)
    assert props["city"]["description"] == "City name."
    assert props["days"]["description"] == "How many days ahead."


def test_numpy_docstring_parameter_docs() -> None:
    doc = parse_docstring(
        """Sum things.

        Parameters
        ----------
        a : int
            First.
        b : int
            Second.

        Returns
        -------
        int
        """
    )
    assert doc.description == "Sum things."
    assert doc.params == {"a": "First.", "b": "Second."}


def test_docstring_starting_with_args_has_empty_description() -> None:
    assert parse_docstring("Args:\n    a: thing.").description == ""
    assert parse_docstring(None).description == ""


def test_annotated_field_description_wins_over_docstring() -> None:
    def f(n: Annotated[int, Field(ge=1, description="explicit")] = 1) -> None:
        """Do it.

        Args:
            n: from the docstring
        """

    props = _props(f)
    assert props["n"]["description"] == "explicit"
    assert props["n"]["minimum"] == 1


def test_field_default_carries_constraints() -> None:
    def f(n: int = Field(5, le=10)) -> None: ...

    props = _props(f)
    assert props["n"] == {"default": 5, "maximum": 10, "type": "integer"}


def test_tool_context_parameter_is_excluded_and_recorded() -> None:
    def f(city: str, ctx: ToolContext) -> None: ...

    spec = function_schema(f)
    assert spec.context_param == "ctx"
    assert set(spec.parameters["properties"]) == {"city"}


def test_optional_tool_context_is_recognised() -> None:
    def f(ctx: ToolContext | None = None) -> None: ...

    assert function_schema(f).context_param == "ctx"


def test_two_tool_context_parameters_are_refused() -> None:
    def f(a: ToolContext, b: ToolContext) -> None: ...

    with pytest.raises(TypeError, match="more than one ToolContext"):
        function_schema(f)


@pytest.mark.parametrize(
    "source",
    ["def f(*args: int) -> None: ...", "def f(a: int, **kwargs: int) -> None: ..."],
)
def test_var_args_are_refused_with_a_clear_message(source: str) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # a test fixture, not runtime code
    with pytest.raises(TypeError, match=r"\*args/\*\*kwargs"):
        function_schema(namespace["f"])


def test_positional_only_parameters_are_refused() -> None:
    def f(a: int, /) -> None: ...

    with pytest.raises(TypeError, match="positional-only"):
        function_schema(f)


def test_unresolvable_hints_are_a_type_error() -> None:
    def f(a: "Missing") -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(TypeError, match="cannot read its signature"):
        function_schema(f)


def test_type_pydantic_cannot_describe_names_the_parameter() -> None:
    class Opaque:
        pass

    def f(thing: Opaque) -> None: ...

    with pytest.raises(TypeError, match="'thing'"):
        function_schema(f)


def test_single_model_parameter_uses_the_model_schema() -> None:
    def f(options: Options) -> None: ...

    spec = function_schema(f)
    assert spec.call_mode == "model"
    assert spec.model_param == "options"
    assert set(spec.parameters["properties"]) == {"verbose", "level"}
    assert spec.description == "Display options."


def test_rich_types_get_converters_and_plain_types_do_not() -> None:
    def f(a: int, b: list[str], c: dict[str, int] | None, p: Point, col: Colour) -> None: ...

    spec = function_schema(f)
    assert spec.call_mode == "keywords"
    assert set(spec.converters) == {"p", "col"}


def test_partial_and_callable_instance_are_described() -> None:
    def base(a: int, b: int) -> int:
        """Add."""
        return a + b

    class Adder:
        def __call__(self, a: int) -> int:
            return a

    partial_spec = function_schema(functools.partial(base, b=2))
    assert partial_spec.name == "base"
    assert partial_spec.description == "Add."
    assert function_schema(Adder()).parameters["required"] == ["a"]


def test_every_generated_schema_is_valid_draft_2020_12() -> None:
    def f(
        a: int,
        p: Point | None = None,
        o: Options | None = None,
        pair: Pair | None = None,
        c: Colour = Colour.BLUE,
        t: tuple[int, str] = (1, "x"),
    ) -> None: ...

    Draft202012Validator.check_schema(function_schema(f).parameters)


def test_non_json_default_is_left_out_of_the_schema() -> None:
    sentinel = object()

    def f(a: Any = sentinel) -> None: ...

    props = _props(f)
    assert "default" not in props["a"]


def test_a_python_default_the_type_does_not_allow_is_not_shown_as_a_json_default() -> None:
    # ``unit: str = None`` (common in real tools): pydantic renders {"type": "string",
    # "default": null}; the model is not told a default that no call could send.
    def f(city: str, unit: str = None, days: int = 3) -> None: ...  # type: ignore[assignment]  # noqa: RUF013

    props = _props(f)
    assert props["unit"] == {"type": "string"}
    assert props["days"]["default"] == 3
