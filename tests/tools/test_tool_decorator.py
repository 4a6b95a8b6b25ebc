"""@tool, as_tool and ToolRegistry."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from pydantic import BaseModel

from hermes.models.base import ToolSpec
from hermes.tools import Tool, ToolContext, ToolRegistry, as_tool, tool


class WeatherArgs(BaseModel):
    """Weather query."""

    city: str
    days: int = 1


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_decorated_function_is_the_original_and_still_callable() -> None:
    assert add(2, 3) == 5
    assert add.__name__ == "add"


def test_bare_decorator_attaches_a_tool() -> None:
    built = add.__hermes_tool__  # type: ignore[attr-defined]
    assert isinstance(built, Tool)
    assert built.name == "add"
    assert built.description == "Add two integers."
    assert built.parameters["required"] == ["a", "b"]
    assert built.is_async is False
    assert built.fn is add  # plain JSON parameters: no wrapper


def test_options_are_recorded() -> None:
    @tool(
        name="weather.get",
        description="Current weather.",
        timeout=2.5,
        parallel_safe=False,
        toolset="weather",
        summary="{city}: {temp}",
        output_schema={"type": "object"},
    )
    def get_weather(city: str) -> dict[str, Any]:
        """Ignored docstring."""
        return {"city": city, "temp": 21}

    built = as_tool(get_weather)
    assert (built.name, built.description, built.timeout) == (
        "weather.get",
        "Current weather.",
        2.5,
    )
    assert (built.parallel_safe, built.toolset) == (False, "weather")
    assert built.summary is not None
    assert built.summary({"city": "Paris", "temp": 21}) == "Paris: 21"
    assert built.output_schema == {"type": "object"}


def test_async_functions_are_detected() -> None:
    @tool
    async def fetch(url: str) -> str:
        return url

    assert as_tool(fetch).is_async is True


def test_schema_first_uses_the_explicit_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "城市中文名"}},
        "required": ["city"],
    }

    @tool(schema=schema)
    def get_weather(city: str, date: str | None = None) -> dict[str, Any]:
        """Query the weather of a city."""
        return {}

    built = as_tool(get_weather)
    assert built.parameters == schema
    assert built.parameters is not schema  # a private copy
    assert built.description == "Query the weather of a city."


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "array"}, "must describe an object"),
        ({"type": "object", "properties": {"a": {"type": "integr"}}}, "not a valid JSON Schema"),
        ("not a schema", "must be a JSON Schema object"),
    ],
)
def test_bad_explicit_schema_is_refused_at_registration(schema: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):

        @tool(schema=schema)
        def f(a: int) -> None: ...


def test_explicit_schema_must_match_the_function() -> None:
    with pytest.raises(TypeError, match=r"\['b'\] have no matching function parameter"):

        @tool(schema={"type": "object", "properties": {"a": {}, "b": {}}})
        def f(a: int) -> None: ...

    with pytest.raises(TypeError, match=r"\['c'\] have no default"):

        @tool(schema={"type": "object", "properties": {"a": {}}})
        def g(a: int, c: int) -> None: ...


def test_explicit_schema_with_kwargs_function() -> None:
    @tool(schema={"type": "object", "properties": {"anything": {"type": "string"}}})
    def f(**kwargs: Any) -> dict[str, Any]:
        return kwargs

    assert "anything" in as_tool(f).parameters["properties"]


def test_args_model_with_model_parameter() -> None:
    @tool(args_model=WeatherArgs)
    def weather(args: WeatherArgs) -> str:
        return f"{args.city}/{args.days}"

    built = as_tool(weather)
    assert set(built.parameters["properties"]) == {"city", "days"}
    assert built.description == "Weather query."
    assert built.fn(city="Oslo") == "Oslo/1"


def test_args_model_with_keyword_function() -> None:
    @tool(args_model=WeatherArgs)
    def weather(city: str, days: int) -> str:
        """Weather by keywords."""
        return f"{city}/{days}"

    built = as_tool(weather)
    assert built.description == "Weather by keywords."
    assert built.fn(city="Oslo", days=2) == "Oslo/2"


def test_schema_and_args_model_together_are_refused() -> None:
    with pytest.raises(TypeError, match="not both"):

        @tool(schema={"type": "object"}, args_model=WeatherArgs)
        def f(city: str) -> None: ...


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "emoji🙂", "a/b"])
def test_invalid_tool_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="invalid tool name"):
        tool(name=name)(lambda: None)


def test_lambda_needs_a_name() -> None:
    with pytest.raises(ValueError, match="pass name="):
        tool(lambda: None)
    assert as_tool(tool(name="noop")(lambda: None)).name == "noop"


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), float("nan"), True])
def test_invalid_timeouts_are_refused(timeout: Any) -> None:
    with pytest.raises(ValueError, match="timeout"):
        tool(timeout=timeout)(add)


def test_as_tool_wraps_plain_typed_callables() -> None:
    def multiply(a: float, b: float) -> float:
        """Multiply."""
        return a * b

    built = as_tool(multiply)
    assert built.name == "multiply"
    assert not hasattr(multiply, "__hermes_tool__")  # as_tool never modifies its argument


def test_as_tool_accepts_tools_partials_and_callable_objects() -> None:
    built = as_tool(add)
    assert as_tool(built) is built

    def power(base: int, exponent: int) -> int:
        return int(base**exponent)

    assert as_tool(functools.partial(power, exponent=2)).parameters["required"] == ["base"]

    class Greeter:
        def __call__(self, who: str) -> str:
            return f"hi {who}"

    assert as_tool(Greeter()).name == "Greeter"


@pytest.mark.parametrize("thing", [None, 42, "calculator", WeatherArgs])
def test_as_tool_refuses_non_tools(thing: Any) -> None:
    with pytest.raises(TypeError, match="expected a @tool function, a Tool or a typed callable"):
        as_tool(thing)


def test_context_parameter_is_recorded() -> None:
    @tool
    def whoami(ctx: ToolContext) -> str:
        return ctx.user_id or ""

    built = as_tool(whoami)
    assert built.context_param == "ctx"
    assert built.parameters["properties"] == {}


def test_registry_registers_and_looks_up() -> None:
    registry = ToolRegistry([add])
    assert "add" in registry
    assert len(registry) == 1
    assert registry.get("add") is as_tool(add)
    assert registry.get("missing") is None
    assert registry.names() == ["add"]
    assert [t.name for t in registry] == ["add"]


def test_registry_refuses_duplicate_names_unless_replacing() -> None:
    registry = ToolRegistry([add])

    def other(x: int) -> int:
        return x

    with pytest.raises(ValueError, match="'add' is already registered"):
        registry.register(tool(name="add")(other))
    replaced = registry.register(tool(name="add")(other), replace=True)
    assert registry.get("add") is replaced


def test_registering_the_same_tool_twice_is_harmless() -> None:
    registry = ToolRegistry([add])
    registry.register(add)
    assert len(registry) == 1


def test_specs_are_cached_and_invalidated_on_register() -> None:
    registry = ToolRegistry([add])
    first = registry.specs()
    assert first == [ToolSpec("add", "Add two integers.", as_tool(add).parameters)]
    assert registry.specs() is first

    def sub(a: int, b: int) -> int:
        return a - b

    registry.register(sub)
    assert [s.name for s in registry.specs()] == ["add", "sub"]
    assert [s.name for s in registry.specs(["sub"])] == ["sub"]
    with pytest.raises(ValueError, match="unknown tools: nope"):
        registry.specs(["nope"])


def test_unregister_removes_a_tool() -> None:
    registry = ToolRegistry([add])
    assert registry.unregister("add") is as_tool(add)
    assert registry.unregister("add") is None
    assert registry.specs() == []


def test_spec_renders_openai_tool_entry() -> None:
    entry = ToolRegistry([add]).specs()[0].to_openai()
    assert entry["type"] == "function"
    assert entry["function"]["name"] == "add"


def test_unbound_methods_are_refused_and_bound_methods_work() -> None:
    class Store:
        def __init__(self) -> None:
            self.items = ["a"]

        def count(self, prefix: str) -> int:
            return sum(1 for i in self.items if i.startswith(prefix))

    with pytest.raises(TypeError, match="unbound method"):
        tool(Store.count)
    built = as_tool(Store().count)
    assert built.name == "count"
    assert built.parameters["required"] == ["prefix"]
    assert built.fn(prefix="a") == 1
