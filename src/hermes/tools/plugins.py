"""Plugin tools: every ``*.py`` file of a directory, loaded at start-up (seed 000 §3.3).

A plugin file offers tools in either (or both) of two ways:

- functions decorated with ``@hermes.tools.tool`` defined in the file (imported ones are not
  collected, so ``from hermes.tools.builtin import calculator`` does not re-export a tool);
- a module-level ``TOOL_METADATA`` dict (or a list of them) as in seed 000 §3.3::

      TOOL_METADATA = {
          "name": "get_weather_forecast",
          "description": "获取指定城市的天气预报",
          "input_schema": WeatherInput,      # a pydantic model class, or a JSON Schema dict
          "output_schema": WeatherOutput,    # optional; model class or JSON Schema dict
          "execute": execute,                # execute(input_data: dict) -> raw result
          "validator": validator,            # optional: validator(input_data) -> bool
          "parser": parser,                  # optional: parser(raw) -> structured output
          "retry_policy": retry_policy,      # optional: retry_policy(attempt, error) -> bool
      }

  ``execute`` may be sync or async. How the optional keys map onto a :class:`Tool`:

  - ``input_schema`` becomes the tool's parameters; a pydantic model also validates each call
    (its own validators included) and ``execute`` receives ``model.model_dump()`` — a dict with
    defaults filled, as the seed's ``execute(input_data: dict)`` expects;
  - ``validator`` runs on that dict before ``execute``; a falsy answer, or a ``ValueError`` /
    ``TypeError`` / ``AssertionError`` it raises, becomes an ``invalid_arguments`` result the
    model can correct (seed 000 §2.2: "若校验失败直接返回结构化错误，不调用任何外部服务");
  - ``parser`` becomes the tool's ``parser`` option when this Hermes has one (the executor
    then parses), otherwise it is applied to ``execute``'s result inside the call;
  - ``retry_policy`` is honoured inside the call: after the n-th failed attempt it is asked
    ``retry_policy(n, error)``; ``True`` retries after an exponential pause (0.1 s, 0.2 s, …
    at most 2 s), at most 5 attempts in all, all within the tool's ``timeout``. Argument
    errors are never retried, and the executor's ``ToolResult.attempts`` counts the call as
    one attempt. (The executor's own ``retry`` option cannot express the seed's
    ``(attempt, error)`` signature; giving both ``retry_policy`` and ``retry`` is an error.)
  - any other key naming an option of ``make_tool`` (``timeout``, ``toolset``, ``summary``,
    ``parallel_safe``, ``permissions``, ``requires_approval``, ``cache_ttl`` … as this Hermes
    has them) is passed to it, so it is checked the same way as for ``@tool``; an unknown
    key is an error, so a typo is reported instead of silently ignored. ``sandbox="process"``
    is refused: the sandbox imports a tool function by module and name, and a TOOL_METADATA
    tool runs through a wrapper — declare such a tool with ``@tool(sandbox="process")``.

Loading (:func:`load_plugins`): files are read in name order, not recursively; names starting
with ``_`` or ``.`` are skipped (shared helpers, ``__init__.py``). Each file is imported as a
fresh top-level module named after the file (``weather.py`` → ``weather``, see
:func:`import_plugin`), registered in ``sys.modules``. That is exactly the module a process
finds with the plugin directory on ``sys.path``, which is how the process sandbox's child
imports a ``@tool(sandbox="process")`` plugin function (``weather:get_weather``, with the
directory of ``sys.modules["weather"].__file__`` as an import root). In this process the
directory is NOT put on ``sys.path``, so plugin files shadow nothing; instead a file whose
name is already a module (``json.py``, ``calendar.py``, an installed package, a plugin of
another directory) is refused with a request to rename it. Plugin code runs only at that
import: nothing of a plugin is called while loading.

A broken file — syntax error, failing import, exception at import, bad ``TOOL_METADATA``, no
tool at all, a tool name already taken by another file or by a reserved (built-in) name — is
skipped whole and reported as a :class:`PluginError` with its path and a one-line reason; it
never stops the other files from loading. Load plugins at start-up, from one thread.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import keyword
import sys
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

from pydantic import BaseModel, PydanticUserError, ValidationError

from hermes.errors import FieldProblem, ToolArgumentError
from hermes.observe import get_logger
from hermes.tools import decorator
from hermes.tools._calls import is_async_callable
from hermes.tools._problems import format_path
from hermes.tools.base import Tool
from hermes.tools.decorator import TOOL_ATTRIBUTE, make_tool
from hermes.tools.schema import model_schema

__all__ = [
    "PluginError",
    "PluginLoadReport",
    "import_plugin",
    "load_plugins",
    "metadata_tool",
    "plugin_module_name",
    "unload_plugins",
]

logger = get_logger("tools")

#: Module name → file of every plugin module imported by this process.
_PLUGIN_FILES: dict[str, Path] = {}
_MAX_REASON_CHARS = 300
_CORE_KEYS = frozenset(
    {"name", "description", "input_schema", "output_schema", "execute", "validator"}
    | {"parser", "retry_policy"}
)
_MAX_ATTEMPTS = 5
_BACKOFF_FIRST_S = 0.1
_BACKOFF_MAX_S = 2.0


@dataclass(frozen=True, slots=True)
class PluginError:
    """A plugin file that was skipped, and why (one line)."""

    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(slots=True)
class PluginLoadReport:
    """What :func:`load_plugins` found: the tools to register and the files it skipped."""

    tools: list[Tool] = field(default_factory=list)
    errors: list[PluginError] = field(default_factory=list)
    #: Module name → file of every plugin loaded (for a sandbox that must re-import them).
    modules: dict[str, Path] = field(default_factory=dict)


class _PluginProblem(Exception):
    """A reason to skip one plugin file (becomes a PluginError)."""


def plugin_module_name(path: str | Path) -> str:
    """The module name of a plugin file: its stem (``weather.py`` → ``weather``)."""
    return Path(path).stem


def import_plugin(path: str | Path) -> ModuleType:
    """Execute a plugin file as a fresh top-level module named :func:`plugin_module_name`.

    Replaces an earlier import of the same file. Raises ``ImportError`` when the name is not a
    valid module name or is already taken by another module (a standard-library or installed
    module, or a plugin file of another directory), and whatever the file itself raises; on
    failure nothing is left in ``sys.modules``.
    """
    file = Path(path).resolve()
    name = plugin_module_name(file)
    _check_module_name(name, file)
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {file.name} as a Python module")
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(name)
    # Registered before it runs, as a normal import does: pydantic models and dataclasses in
    # the plugin resolve their annotations through sys.modules[cls.__module__].
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:  # clean up, then re-raise unchanged
        if previous is not None:
            sys.modules[name] = previous
        else:
            sys.modules.pop(name, None)
        raise
    _PLUGIN_FILES[name] = file
    return module


def unload_plugins(report: PluginLoadReport) -> None:
    """Forget the modules of ``report`` (tests; reloading a plugin directory from scratch).

    Tools already built keep working in this process; the names become free again.
    """
    for name, file in report.modules.items():
        if _PLUGIN_FILES.get(name) == file:
            _forget(name)


def _check_module_name(name: str, file: Path) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ImportError(
            f"{file.name!r} is not a valid module name; use letters, digits and _ "
            "(not starting with a digit)"
        )
    owner = _PLUGIN_FILES.get(name)
    if owner is not None:
        if owner == file:
            return  # reloading the same file
        raise ImportError(f"a plugin module named {name!r} is already loaded from {owner}")
    try:
        taken = name in sys.modules or importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        taken = True
    if taken:
        raise ImportError(
            f"module name {name!r} is already taken by another module (standard library or "
            "installed); rename the plugin file"
        )


def load_plugins(
    directory: str | Path, *, reserved_names: Collection[str] = ()
) -> PluginLoadReport:
    """Load every plugin file of ``directory``; never raises for a broken plugin.

    ``reserved_names``: tool names already in use (built-ins, tools given in code); a plugin
    file defining one of them is reported and skipped. A missing directory is reported as one
    error.
    """
    report = PluginLoadReport()
    folder = Path(directory)
    if not folder.is_dir():
        report.errors.append(PluginError(folder, "plugin directory does not exist"))
        logger.warning("plugin_dir_missing", path=str(folder))
        return report
    owners: dict[str, Path] = {}
    for file in sorted(folder.iterdir(), key=lambda p: p.name):
        if file.suffix != ".py" or file.name.startswith(("_", ".")) or not file.is_file():
            continue
        try:
            module = _import(file)
        except _PluginProblem as problem:
            _skip(report, file, problem)
            continue
        try:
            tools = _tools_of(module)
            _check_names(tools, owners, reserved_names)
        except _PluginProblem as problem:
            _forget(module.__name__)
            _skip(report, file, problem)
            continue
        for built in tools:
            owners[built.name] = file
        report.tools.extend(tools)
        report.modules[module.__name__] = file.resolve()
    logger.info(
        "plugins_loaded", path=str(folder), tools=len(report.tools), skipped=len(report.errors)
    )
    return report


def _skip(report: PluginLoadReport, file: Path, problem: _PluginProblem) -> None:
    report.errors.append(PluginError(file, str(problem)))
    logger.warning("plugin_skipped", path=str(file), reason=str(problem))


def _forget(name: str) -> None:
    """Drop a plugin module this loader imported (never another module of that name)."""
    if _PLUGIN_FILES.pop(name, None) is not None:
        sys.modules.pop(name, None)


def _import(file: Path) -> ModuleType:
    try:
        return import_plugin(file)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any plugin failure is reported
        raise _PluginProblem(_one_line(exc)) from None


def _tools_of(module: ModuleType) -> list[Tool]:
    """The module's own ``@tool`` functions, in definition order, then its TOOL_METADATA."""
    found: list[Tool] = []
    for value in vars(module).values():
        # Plain functions only, read through __dict__: no plugin code (a module-level object
        # with a __getattr__) runs while collecting.
        if isinstance(value, FunctionType) and value.__module__ == module.__name__:
            built = value.__dict__.get(TOOL_ATTRIBUTE)
            if isinstance(built, Tool) and all(built is not seen for seen in found):
                found.append(built)
    metadata = vars(module).get("TOOL_METADATA")
    if metadata is not None:
        several = isinstance(metadata, (list, tuple))
        entries = metadata if several else [metadata]
        for index, entry in enumerate(entries):
            where = f"TOOL_METADATA[{index}]" if several else "TOOL_METADATA"
            try:
                found.append(metadata_tool(entry))
            except (TypeError, ValueError) as exc:  # a declaration mistake, named by its key
                raise _PluginProblem(f"{where}: {_one_line(exc, with_type=False)}") from None
            except Exception as exc:  # noqa: BLE001 - e.g. a model whose schema cannot build
                raise _PluginProblem(f"{where}: {_one_line(exc)}") from None
    if not found:
        raise _PluginProblem("defines no tool (no @tool function and no TOOL_METADATA)")
    return found


def _check_names(tools: list[Tool], owners: Mapping[str, Path], reserved: Collection[str]) -> None:
    seen: set[str] = set()
    for built in tools:
        if built.name in seen:
            raise _PluginProblem(f"defines tool {built.name!r} twice")
        if built.name in owners:
            raise _PluginProblem(
                f"tool {built.name!r} is already defined in {owners[built.name].name}"
            )
        if built.name in reserved:
            raise _PluginProblem(f"tool name {built.name!r} is already taken (built-in or given)")
        seen.add(built.name)


def metadata_tool(metadata: Any) -> Tool:
    """The :class:`Tool` of one ``TOOL_METADATA`` dict (module docstring: how keys map).

    Raises ``TypeError``/``ValueError`` naming the offending key.
    """
    if not isinstance(metadata, Mapping):
        raise TypeError(f"must be a dict, not {type(metadata).__name__}")
    missing = [
        key for key in ("name", "description", "input_schema", "execute") if key not in metadata
    ]
    if missing:
        raise ValueError("missing required key(s): " + ", ".join(missing))
    name, description = metadata["name"], metadata["description"]
    if not isinstance(description, str) or not description.strip():
        raise ValueError("'description' must be a non-empty string")
    for key in ("execute", "validator", "parser", "retry_policy"):
        value = metadata.get(key)
        if (key == "execute" or value is not None) and not callable(value):
            raise TypeError(f"{key!r} must be callable")
    model, schema = _input_contract(metadata["input_schema"])
    options = _extra_options(metadata)
    parser = metadata.get("parser")
    parser_option = parser is not None and "parser" in _make_tool_options()
    if parser_option:
        options["parser"] = parser
    call_type = _AsyncMetadataCall if is_async_callable(metadata["execute"]) else _MetadataCall
    call = call_type(
        metadata["execute"],
        model=model,
        validator=metadata.get("validator"),
        parser=None if parser_option else parser,
        retry_policy=metadata.get("retry_policy"),
        budget_s=float(options.get("timeout", 10.0)),
    )
    output = metadata.get("output_schema")
    return make_tool(
        call,
        name=name,
        description=description,
        schema=schema,
        output_schema=_output_contract(output) if output is not None else None,
        **options,
    )


def _input_contract(value: Any) -> tuple[type[BaseModel] | None, dict[str, Any]]:
    if inspect.isclass(value) and issubclass(value, BaseModel):
        schema = _model_json_schema(value, "input_schema")
        schema.pop("description", None)  # the tool has its own description
        return value, schema
    if isinstance(value, Mapping):
        return None, dict(value)
    raise TypeError("'input_schema' must be a pydantic model class or a JSON Schema dict")


def _output_contract(value: Any) -> dict[str, Any]:
    if inspect.isclass(value) and issubclass(value, BaseModel):
        return _model_json_schema(value, "output_schema")
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError("'output_schema' must be a pydantic model class or a JSON Schema dict")


def _model_json_schema(model: type[BaseModel], key: str) -> dict[str, Any]:
    try:
        return model_schema(model)
    except PydanticUserError as exc:  # e.g. a field of an arbitrary Python type
        reason = _one_line(exc, with_type=False).split(" For further information")[0]
        raise TypeError(f"{key!r} model {model.__name__} has no JSON Schema: {reason}") from None


def _extra_options(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The non-core keys, checked to be ``make_tool`` options."""
    accepted = _make_tool_options()
    options: dict[str, Any] = {}
    for key, value in metadata.items():
        if key in _CORE_KEYS:
            continue
        if key not in accepted:
            raise ValueError(f"unknown key {key!r}")
        options[key] = value
    if options.get("sandbox", "none") != "none":
        raise ValueError(
            "a TOOL_METADATA tool cannot run in the process sandbox; declare it with "
            '@tool(sandbox="process") instead'
        )
    if "retry" in options and metadata.get("retry_policy") is not None:
        raise ValueError("give 'retry_policy' or 'retry', not both")
    return options


def _make_tool_options() -> frozenset[str]:
    """Keyword options of ``make_tool``: its named ones and its ``**policies`` TypedDict."""
    named = {
        name
        for name, param in inspect.signature(make_tool).parameters.items()
        if param.kind is inspect.Parameter.KEYWORD_ONLY
    }
    policies = getattr(decorator, "ToolPolicies", None)
    for attribute in ("__required_keys__", "__optional_keys__"):
        named |= set(getattr(policies, attribute, ()))
    return frozenset(named - {"schema", "args_model", "name", "description", "output_schema"})


class _MetadataCall:
    """``tool.fn`` of a TOOL_METADATA tool: arguments → input dict → validator → execute (with
    the plugin's retry policy) → parser. A module-level class, so it pickles by reference to
    the plugin's own functions."""

    __slots__ = ("budget_s", "execute", "model", "parser", "retry_policy", "validator")

    def __init__(
        self,
        execute: Callable[..., Any],
        *,
        model: type[BaseModel] | None,
        validator: Callable[[dict[str, Any]], Any] | None,
        parser: Callable[[Any], Any] | None,
        retry_policy: Callable[[int, Exception], Any] | None,
        budget_s: float = 10.0,
    ) -> None:
        #: The tool's timeout: no retry starts past it. A sync call abandoned at its timeout
        #: keeps running on its thread, and must not go on retrying side effects there.
        self.budget_s = budget_s
        self.execute = execute
        self.model = model
        self.validator = validator
        self.parser = parser
        self.retry_policy = retry_policy

    def __call__(self, **arguments: Any) -> Any:
        data = self._input(arguments)
        deadline = time.monotonic() + self.budget_s
        attempt = 0
        while True:
            attempt += 1
            try:
                raw = self.execute(data)
            except ToolArgumentError:
                raise
            except Exception as exc:
                pause = self._retry_pause(attempt, exc)
                if pause is None or time.monotonic() + pause >= deadline:
                    raise
                time.sleep(pause)  # a worker thread: the executor runs sync tools off the loop
                continue
            return self.parser(raw) if self.parser is not None else raw

    def _input(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if self.model is not None:
            try:
                data = self.model.model_validate(arguments).model_dump()
            except ValidationError as exc:
                raise ToolArgumentError(
                    [
                        FieldProblem(format_path(error["loc"]), error["msg"])
                        for error in exc.errors(include_url=False, include_input=False)
                    ]
                ) from None
        else:
            data = dict(arguments)
        if self.validator is not None:
            try:
                verdict = self.validator(data)
            except (ValueError, TypeError, AssertionError) as exc:
                raise ToolArgumentError(
                    [FieldProblem("", _one_line(exc, with_type=False))]
                ) from None
            if not verdict:
                raise ToolArgumentError([FieldProblem("", "rejected by the tool's validator")])
        return data

    def _retry_pause(self, attempt: int, error: Exception) -> float | None:
        """Seconds to wait before the next attempt, or ``None`` to give up."""
        if self.retry_policy is None or attempt >= _MAX_ATTEMPTS:
            return None
        if not self.retry_policy(attempt, error):
            return None
        return min(_BACKOFF_FIRST_S * 2.0 ** (attempt - 1), _BACKOFF_MAX_S)


class _AsyncMetadataCall(_MetadataCall):
    """The same for an ``async def execute``: awaited on the loop, pauses with asyncio."""

    __slots__ = ()

    async def __call__(self, **arguments: Any) -> Any:
        data = self._input(arguments)
        attempt = 0
        while True:
            attempt += 1
            try:
                raw = await self.execute(data)
            except ToolArgumentError:
                raise
            except Exception as exc:
                pause = self._retry_pause(attempt, exc)
                if pause is None:
                    raise
                await asyncio.sleep(pause)
                continue
            return self.parser(raw) if self.parser is not None else raw


def _one_line(exc: BaseException, *, with_type: bool = True) -> str:
    text = " ".join(str(exc).split()) or "(no message)"
    if with_type:
        text = f"{type(exc).__name__}: {text}"
    return text if len(text) <= _MAX_REASON_CHARS else text[: _MAX_REASON_CHARS - 1] + "…"
