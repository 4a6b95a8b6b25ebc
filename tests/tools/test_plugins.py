"""Plugin loading: good files give tools, each broken file is reported with its path and skipped."""

from __future__ import annotations

import importlib
import itertools
import os
import pickle
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hermes.errors import ToolArgumentError
from hermes.models.base import ToolCall
from hermes.tools import Tool, ToolContext, ToolRegistry, execute_tool_call
from hermes.tools.plugins import (
    PluginLoadReport,
    import_plugin,
    load_plugins,
    metadata_tool,
    plugin_module_name,
    unload_plugins,
)

DECORATED = '''
from hermes.tools import tool
from hermes.tools.builtin import BUILTIN_TOOLS  # imported names are not collected


@tool
def acme_add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(toolset="orders", timeout=5)
async def acme_order_status(order_id: str) -> dict:
    """Look up an order."""
    return {"order_id": order_id, "status": "shipped"}


def helper() -> int:  # not a tool
    return 1
'''

WEATHER = """
from pydantic import BaseModel, Field

CALLS = []


class WeatherInput(BaseModel):
    city: str = Field(..., description="城市名称，如北京")
    days: int = Field(3, ge=1, le=7, description="预报天数1-7")


class WeatherOutput(BaseModel):
    city: str
    forecasts: list[dict]


def validator(input_data: dict) -> bool:
    return bool(input_data.get("city").strip())


def parser(raw: dict) -> WeatherOutput:
    return WeatherOutput(city=raw["location"]["name"], forecasts=raw["forecast"])


def retry_policy(attempt: int, error: Exception) -> bool:
    return isinstance(error, ConnectionError) and attempt < 3


def execute(input_data: dict) -> dict:
    CALLS.append(dict(input_data))
    if input_data["city"] == "flaky" and len(CALLS) == 1:
        raise ConnectionError("network blip")
    if input_data["city"] == "down":
        raise ConnectionError("still down")
    days = [{"date": f"d{i}", "temp": 20 + i} for i in range(input_data["days"])]
    return {"location": {"name": input_data["city"]}, "forecast": days}


TOOL_METADATA = {
    "name": "get_weather_forecast",
    "description": "获取指定城市的天气预报",
    "input_schema": WeatherInput,
    "output_schema": WeatherOutput,
    "validator": validator,
    "parser": parser,
    "retry_policy": retry_policy,
    "execute": execute,
    "toolset": "weather",
}
"""


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    return folder


@pytest.fixture
def write(plugin_dir: Path) -> Callable[[str, str], Path]:
    def write_file(name: str, text: str) -> Path:
        path = plugin_dir / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write_file


@pytest.fixture
def load(plugin_dir: Path) -> Iterator[Callable[..., PluginLoadReport]]:
    """load_plugins on the tmp directory; its modules are forgotten after the test."""
    reports: list[PluginLoadReport] = []

    def run(**kwargs: object) -> PluginLoadReport:
        report = load_plugins(plugin_dir, **kwargs)  # type: ignore[arg-type]
        reports.append(report)
        return report

    yield run
    for report in reports:
        unload_plugins(report)


def _names(report: PluginLoadReport) -> list[str]:
    return [t.name for t in report.tools]


def _errors(report: PluginLoadReport) -> dict[str, str]:
    return {error.path.name: error.message for error in report.errors}


async def _call(tool: Tool, **arguments: object):
    registry = ToolRegistry([tool])
    return await execute_tool_call(
        registry, ToolCall("c1", tool.name, dict(arguments)), ToolContext()
    )


def test_a_mixed_directory_loads_the_good_files_and_reports_each_bad_one(write, load):
    write("acme_calc.py", DECORATED)
    write("acme_weather.py", WEATHER)
    write("acme_syntax.py", "def broken(:\n    pass\n")
    write("acme_raises.py", "raise RuntimeError('database not configured')\n")
    write("acme_missing_dep.py", "import acme_no_such_package_xyz\n")
    write("zz_duplicate.py", DECORATED.replace("acme_order_status", "acme_other"))
    write("notes.txt", "not python")
    write("_shared.py", "raise RuntimeError('helpers are not plugins')\n")
    report = load()
    assert _names(report) == ["acme_add", "acme_order_status", "get_weather_forecast"]
    errors = _errors(report)
    assert set(errors) == {
        "acme_syntax.py",
        "acme_raises.py",
        "acme_missing_dep.py",
        "zz_duplicate.py",
    }
    assert errors["acme_syntax.py"].startswith("SyntaxError: ")
    assert errors["acme_raises.py"] == "RuntimeError: database not configured"
    assert errors["acme_missing_dep.py"].startswith("ModuleNotFoundError: ")
    assert errors["zz_duplicate.py"] == "tool 'acme_add' is already defined in acme_calc.py"
    for error in report.errors:
        assert "\n" not in error.message
        assert error.path.is_absolute()


def test_a_subdirectory_is_not_searched(plugin_dir, write, load):
    write("acme_calc.py", DECORATED)
    (plugin_dir / "nested").mkdir()
    (plugin_dir / "nested" / "acme_nested.py").write_text(DECORATED, encoding="utf-8")
    assert _names(load()) == ["acme_add", "acme_order_status"]


def test_decorated_functions_keep_their_options(write, load):
    write("acme_calc.py", DECORATED)
    status = {t.name: t for t in load().tools}["acme_order_status"]
    assert (status.toolset, status.timeout, status.is_async) == ("orders", 5.0, True)


def test_a_plugin_module_is_registered_under_its_file_name(write, load):
    path = write("acme_calc.py", DECORATED)
    report = load()
    add = report.tools[0]
    assert plugin_module_name(path) == "acme_calc"
    assert report.modules == {"acme_calc": path.resolve()}
    assert add.fn.__module__ == "acme_calc"
    module = importlib.import_module("acme_calc")
    assert module.acme_add.__hermes_tool__ is add
    assert pickle.loads(pickle.dumps(add.fn)) is add.fn


def test_a_broken_file_leaves_nothing_in_sys_modules(write, load):
    write("acme_raises.py", "raise RuntimeError('boom')\n")
    load()
    assert "acme_raises" not in sys.modules


def test_a_file_named_like_an_existing_module_is_refused_without_touching_it(write, load):
    write("json.py", DECORATED)
    report = load()
    assert report.tools == []
    assert "already taken by another module" in _errors(report)["json.py"]
    assert sys.modules["json"].__name__ == "json"
    assert hasattr(sys.modules["json"], "dumps")


def test_a_file_name_that_is_not_a_module_name_is_refused(write, load):
    write("my-tools.py", DECORATED)
    assert "not a valid module name" in _errors(load())["my-tools.py"]


def test_the_same_file_name_in_another_directory_is_refused_while_loaded(tmp_path, write, load):
    write("acme_calc.py", DECORATED)
    load()
    other = tmp_path / "other"
    other.mkdir()
    (other / "acme_calc.py").write_text(DECORATED.replace("acme_", "beta_"), encoding="utf-8")
    report = load_plugins(other)
    assert "already loaded from" in report.errors[0].message
    assert report.tools == []


def test_reloading_the_same_directory_replaces_its_modules(write, load):
    write("acme_calc.py", DECORATED)
    first = load()
    second = load()
    assert _names(second) == _names(first)
    assert second.tools[0] is not first.tools[0]


def test_an_exception_at_import_never_stops_later_files(write, load):
    write("aa_exit.py", "import sys\nsys.exit(3)\n")
    write("acme_calc.py", DECORATED)
    report = load()
    assert _names(report) == ["acme_add", "acme_order_status"]
    assert _errors(report)["aa_exit.py"] == "SystemExit: 3"


def test_a_file_without_tools_is_reported(write, load):
    write("acme_empty.py", "X = 1\n")
    assert "defines no tool" in _errors(load())["acme_empty.py"]


def test_a_reserved_name_is_refused(write, load):
    write("acme_calc.py", DECORATED)
    report = load(reserved_names={"acme_add"})
    assert report.tools == []
    assert "'acme_add' is already taken" in _errors(report)["acme_calc.py"]


def test_a_missing_directory_is_one_error(tmp_path):
    report = load_plugins(tmp_path / "nope")
    assert report.tools == []
    assert report.errors[0].message == "plugin directory does not exist"


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        ("TOOL_METADATA = 3", "TOOL_METADATA: must be a dict, not int"),
        (
            "TOOL_METADATA = {'name': 'x', 'description': 'd', 'input_schema': {}}",
            "missing required key(s): execute",
        ),
        (
            "TOOL_METADATA = {'name': 'x', 'description': 'd', 'input_schema': 5, "
            "'execute': print}",
            "'input_schema' must be a pydantic model class or a JSON Schema dict",
        ),
        (
            "TOOL_METADATA = {'name': 'x', 'description': 'd', 'input_schema': {'type': 'object'}, "
            "'execute': 'run'}",
            "'execute' must be callable",
        ),
        (
            "TOOL_METADATA = {'name': 'x', 'description': 'd', 'input_schema': {'type': 'object'}, "
            "'execute': print, 'timeuot': 3}",
            "unknown key 'timeuot'",
        ),
        (
            "TOOL_METADATA = {'name': 'bad name', 'description': 'd', "
            "'input_schema': {'type': 'object'}, 'execute': print}",
            "invalid tool name",
        ),
        (
            "TOOL_METADATA = {'name': 'x', 'description': '', "
            "'input_schema': {'type': 'object'}, 'execute': print}",
            "'description' must be a non-empty string",
        ),
        (
            "TOOL_METADATA = {'name': 'x', 'description': 'd', "
            "'input_schema': {'type': 'object'}, 'execute': print, 'sandbox': 'process'}",
            "cannot run in the process sandbox",
        ),
        (
            "TOOL_METADATA = [{'name': 'x', 'description': 'd', "
            "'input_schema': {'type': 'object'}, 'execute': print}, 7]",
            "TOOL_METADATA[1]: must be a dict",
        ),
    ],
)
def test_a_bad_tool_metadata_is_reported_with_its_reason(write, load, metadata, reason):
    write("acme_meta.py", metadata + "\n")
    report = load()
    assert report.tools == []
    assert reason in _errors(report)["acme_meta.py"]


def test_a_model_without_a_json_schema_is_reported(write, load):
    write(
        "acme_opaque.py",
        """
        from pydantic import BaseModel, ConfigDict

        class Handle:
            pass

        class Args(BaseModel):
            model_config = ConfigDict(arbitrary_types_allowed=True)
            handle: Handle

        TOOL_METADATA = {"name": "x", "description": "d", "input_schema": Args, "execute": print}
        """,
    )
    reason = _errors(load())["acme_opaque.py"]
    assert reason.startswith("TOOL_METADATA: 'input_schema' model Args has no JSON Schema")
    assert "\n" not in reason


def test_loading_runs_no_plugin_function(write, load, plugin_dir):
    marker = plugin_dir.parent / "ran.txt"
    write(
        "acme_side.py",
        f"""
        from pathlib import Path
        def touch(*args, **kwargs):
            Path({str(marker)!r}).write_text("ran")
            return True
        TOOL_METADATA = {{"name": "side", "description": "d", "input_schema": {{"type": "object"}},
                          "execute": touch, "validator": touch, "parser": touch,
                          "retry_policy": touch, "summary": touch}}
        """,
    )
    assert _names(load()) == ["side"]
    assert not marker.exists()


def test_tool_metadata_with_a_pydantic_model_becomes_a_tool(write, load):
    write("acme_weather.py", WEATHER)
    weather = load().tools[0]
    assert weather.name == "get_weather_forecast"
    assert weather.description == "获取指定城市的天气预报"
    assert weather.toolset == "weather"
    assert weather.parameters["required"] == ["city"]
    assert weather.parameters["properties"]["days"]["maximum"] == 7
    assert weather.output_schema is not None
    assert weather.output_schema["required"] == ["city", "forecasts"]


async def test_a_tool_metadata_call_validates_executes_and_parses(write, load):
    write("acme_weather.py", WEATHER)
    result = await _call(load().tools[0], city="北京", days=2)
    assert result.ok, result.error
    assert result.output == {
        "city": "北京",
        "forecasts": [{"date": "d0", "temp": 20}, {"date": "d1", "temp": 21}],
    }
    module = sys.modules["acme_weather"]
    assert module.CALLS == [{"city": "北京", "days": 2}]


async def test_execute_receives_the_model_defaults(write, load):
    write("acme_weather.py", WEATHER)
    await _call(load().tools[0], city="上海")
    assert sys.modules["acme_weather"].CALLS == [{"city": "上海", "days": 3}]


async def test_arguments_outside_the_model_are_invalid_arguments(write, load):
    write("acme_weather.py", WEATHER)
    result = await _call(load().tools[0], city="上海", days=10)
    assert not result.ok
    assert result.error.type == "invalid_arguments"
    assert "days" in result.error.message
    assert sys.modules["acme_weather"].CALLS == []


async def test_a_validator_rejection_is_invalid_arguments_and_execute_never_runs(write, load):
    write("acme_weather.py", WEATHER)
    result = await _call(load().tools[0], city="   ")
    assert (result.ok, result.error.type) == (False, "invalid_arguments")
    assert "validator" in result.error.message
    assert sys.modules["acme_weather"].CALLS == []


async def test_the_retry_policy_retries_a_transient_failure(write, load):
    write("acme_weather.py", WEATHER)
    result = await _call(load().tools[0], city="flaky", days=1)
    assert result.ok
    assert len(sys.modules["acme_weather"].CALLS) == 2


async def test_the_retry_policy_gives_up_after_its_attempts(write, load):
    write("acme_weather.py", WEATHER)
    result = await _call(load().tools[0], city="down", days=1)
    assert (result.ok, result.error.type) == (False, "execution_error")
    assert "still down" in result.error.message
    assert len(sys.modules["acme_weather"].CALLS) == 3


async def test_an_async_execute_with_a_json_schema_dict(write, load):
    write(
        "acme_async.py",
        """
        async def execute(input_data):
            return {"echo": input_data["text"].upper()}

        TOOL_METADATA = {
            "name": "shout",
            "description": "Upper-case a text.",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
            "execute": execute,
            "permissions": ["text:write"],
        }
        """,
    )
    shout = load().tools[0]
    assert shout.is_async
    assert tuple(getattr(shout, "permissions", ("text:write",))) == ("text:write",)
    result = await _call(shout, text="hi")
    assert (result.ok, result.output) == (True, {"echo": "HI"})
    missing = await _call(shout)
    assert (missing.ok, missing.error.type) == (False, "invalid_arguments")


def test_a_list_of_tool_metadata_gives_several_tools(write, load):
    write(
        "acme_pair.py",
        """
        def run(data):
            return data
        _SCHEMA = {"type": "object", "properties": {}}
        TOOL_METADATA = [
            {"name": "one", "description": "first", "input_schema": _SCHEMA, "execute": run},
            {"name": "two", "description": "second", "input_schema": _SCHEMA, "execute": run},
        ]
        """,
    )
    assert _names(load()) == ["one", "two"]


def test_a_file_defining_one_name_twice_is_refused(write, load):
    write(
        "acme_twice.py",
        """
        from hermes.tools import tool

        @tool
        def same() -> int:
            \"\"\"One.\"\"\"
            return 1

        TOOL_METADATA = {"name": "same", "description": "d", "input_schema": {"type": "object"},
                         "execute": print}
        """,
    )
    assert _errors(load())["acme_twice.py"] == "defines tool 'same' twice"


def test_metadata_tool_refuses_retry_and_retry_policy_together():
    with pytest.raises(ValueError, match="not both"):
        metadata_tool(
            {
                "name": "x",
                "description": "d",
                "input_schema": {"type": "object"},
                "execute": print,
                "retry_policy": lambda attempt, error: False,
                "retry": 3,
            }
        )


def test_a_validator_raising_value_error_names_its_reason():
    def validator(data: dict) -> bool:
        raise ValueError("city must be a Chinese city name")

    built = metadata_tool(
        {
            "name": "x",
            "description": "d",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            "execute": lambda data: data,
            "validator": validator,
        }
    )
    with pytest.raises(ToolArgumentError, match="city must be a Chinese city name"):
        built.fn(city="Paris")


def test_import_plugin_reimports_a_file_under_the_same_name(write, load):
    path = write("acme_calc.py", DECORATED)
    load()
    first = sys.modules["acme_calc"]
    again = import_plugin(path)
    assert again.__name__ == "acme_calc"
    assert again is not first
    assert sys.modules["acme_calc"] is again


async def test_a_sandboxed_plugin_function_is_imported_by_name_in_the_child(write, load):
    write(
        "acme_sandboxed.py",
        """
        import os
        from hermes.tools import tool

        @tool(sandbox="process")
        def acme_pid(n: int) -> dict:
            \"\"\"Report the process it runs in.\"\"\"
            return {"pid": os.getpid(), "n": n + 1}
        """,
    )
    result = await _call(load().tools[0], n=1)
    assert result.ok, result.error
    assert result.output["n"] == 2
    assert result.output["pid"] != os.getpid()


def test_a_metadata_retry_policy_stops_at_the_tools_timeout() -> None:
    """Past its timeout a sync call is abandoned on its thread: it must not go on retrying."""
    import time as _time

    from hermes.tools.plugins import metadata_tool

    runs: list[float] = []

    def execute(data: dict[str, object]) -> str:
        runs.append(_time.monotonic())
        raise ConnectionError("down")

    made = metadata_tool(
        {
            "name": "flaky_meta",
            "description": "Always fails.",
            "input_schema": {"type": "object", "properties": {}},
            "execute": execute,
            "retry_policy": lambda attempt, error: True,
            "timeout": 0.25,
        }
    )
    with pytest.raises(ConnectionError):
        made.fn()
    # Its pauses (0.1 s, 0.2 s, …) would allow 5 attempts in ~1.5 s; within 0.25 s at most two
    # start. A count, not a clock: on a loaded machine a late thread makes fewer, never more.
    assert 1 <= len(runs) <= 2  # the budget, not _MAX_ATTEMPTS (5), ended it
    assert all(b - a >= 0.09 for a, b in itertools.pairwise(runs))  # it paused between them
