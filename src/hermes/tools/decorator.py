"""``@tool``: turn a typed function into a registered-ready :class:`~hermes.tools.base.Tool`.

Three ways to give the argument contract, one result::

    @tool                                   # function-first: schema from hints + docstring
    def add(a: int, b: int) -> int: ...

    @tool(schema={"type": "object", ...})   # schema-first (seed 001 §3.1): explicit contract
    def get_weather(city: str, date: str | None = None) -> dict: ...

    @tool(args_model=WeatherArgs)           # a pydantic model is the contract
    def get_weather(args: WeatherArgs) -> dict: ...

The decorator returns the ORIGINAL function (``add(2, 3) == 5`` still holds) with the Tool in
its ``__hermes_tool__`` attribute. Every mistake in a declaration is raised at decoration time,
with the tool's name in the message — never at the first call.

Execution policies are keyword options too (see :class:`ToolPolicies`; all off by default, so
a plain tool stays plain and fast)::

    @tool(retry=3, circuit_breaker=True, timeout=5)           # a flaky network read
    def fetch_rate(currency: str) -> float: ...

    @tool(idempotency_key=("order_id",), requires_approval=True, permissions=("orders:write",))
    def refund(order_id: str, amount: float) -> dict: ...
"""

from __future__ import annotations

import copy
import inspect
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypedDict, TypeVar, Unpack, get_args, overload

from pydantic import BaseModel, TypeAdapter

from hermes.tools._calls import is_async_callable, make_caller
from hermes.tools.base import SandboxMode, Tool
from hermes.tools.policies.breaker import BreakerPolicy
from hermes.tools.policies.retry import RetryPolicy
from hermes.tools.schema import (
    FunctionSchema,
    callable_name,
    function_description,
    function_schema,
    model_schema,
    signature_info,
)
from hermes.tools.validation import check_json_schema

__all__ = ["TOOL_ATTRIBUTE", "ToolPolicies", "as_tool", "make_tool", "tool"]

#: The attribute of a decorated function that holds its :class:`Tool`.
TOOL_ATTRIBUTE = "__hermes_tool__"

# OpenAI's limit for function names; other providers accept a subset of the same alphabet.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")

F = TypeVar("F", bound=Callable[..., Any])
Summary = Callable[[Any], str] | str


class ToolPolicies(TypedDict, total=False):
    """The execution-policy options of ``@tool`` / :func:`make_tool` (all optional).

    - ``retry``: a :class:`RetryPolicy`, or ``n`` for ``RetryPolicy(max_attempts=n)``, or
      ``True`` for the default policy (3 attempts). Default: no retry.
    - ``circuit_breaker``: a :class:`BreakerPolicy`, or ``True`` (5 failures, 30 s).
    - ``idempotent=True``: the key is all arguments; ``idempotency_key=("order_id", …)``: the
      key is those arguments (implies idempotent). ``idempotency_ttl``: seconds (default 24 h).
    - ``cache_ttl``: seconds an identical successful result is reused (read-only tools).
    - ``permissions``: scopes the caller needs (a string or an iterable of strings).
    - ``requires_approval``: a person approves each call before it runs.
    - ``sandbox``: ``"process"`` runs each call in a separate limited process (the function
      must be importable by module and name; a ``ToolContext`` reaches it without ``extras``);
      default ``"none"``.
    - ``max_output_chars``: this tool's text-output limit (else the caller's).
    - ``parser``: raw output → structured output; ``post_validate``: raises if the parsed
      output is wrong (both become ``invalid_output`` errors).
    - ``side_effects``: ``False`` for a read-only tool, a callable ``arguments -> bool`` when
      it depends on the call; default ``True`` (a plan node cut off mid-call is run again on
      resume only when its tool is read-only or idempotent).
    """

    retry: RetryPolicy | int | bool | None
    circuit_breaker: BreakerPolicy | bool | None
    idempotent: bool
    idempotency_key: str | Sequence[str] | None
    idempotency_ttl: float
    cache_ttl: float | None
    permissions: str | Iterable[str]
    requires_approval: bool
    sandbox: SandboxMode
    max_output_chars: int | None
    parser: Callable[[Any], Any] | None
    post_validate: Callable[[Any], Any] | None
    side_effects: bool | Callable[[Mapping[str, Any]], bool]


@overload
def tool(fn: F, /) -> F: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    schema: dict[str, Any] | None = None,
    args_model: type[BaseModel] | None = None,
    timeout: float = 10.0,
    summary: Summary | None = None,
    output_schema: dict[str, Any] | None = None,
    parallel_safe: bool = True,
    toolset: str = "default",
    **policies: Unpack[ToolPolicies],
) -> Callable[[F], F]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    schema: dict[str, Any] | None = None,
    args_model: type[BaseModel] | None = None,
    timeout: float = 10.0,
    summary: Summary | None = None,
    output_schema: dict[str, Any] | None = None,
    parallel_safe: bool = True,
    toolset: str = "default",
    **policies: Unpack[ToolPolicies],
) -> Any:
    """Declare a tool; usable bare (``@tool``) or with options (``@tool(timeout=30)``).

    ``summary`` is a callable ``output -> str`` or a ``str.format`` template filled from a dict
    output (``"{expression} = {result}"``) or ``{output}``. ``timeout`` is in seconds.
    ``parallel_safe=False`` makes concurrent calls from one model response run in order.
    The execution policies (``retry``, ``circuit_breaker``, ``idempotency_key`` …) are
    described in :class:`ToolPolicies`.
    """

    def decorate(target: F) -> F:
        built = make_tool(
            target,
            name=name,
            description=description,
            schema=schema,
            args_model=args_model,
            timeout=timeout,
            summary=summary,
            output_schema=output_schema,
            parallel_safe=parallel_safe,
            toolset=toolset,
            **policies,
        )
        try:
            setattr(target, TOOL_ATTRIBUTE, built)
        except (AttributeError, TypeError):
            raise TypeError(
                f"@tool cannot attach to {target!r}; wrap it with as_tool(...) instead"
            ) from None
        return target

    return decorate(fn) if fn is not None else decorate


def as_tool(obj: Any) -> Tool:
    """The :class:`Tool` for a ``@tool`` function, a Tool, or a plain typed callable.

    Raises ``TypeError`` for anything else (a class, a string, ``None`` …).
    """
    if isinstance(obj, Tool):
        return obj
    attached = getattr(obj, TOOL_ATTRIBUTE, None)
    if isinstance(attached, Tool):
        return attached
    if callable(obj) and not inspect.isclass(obj):
        return make_tool(obj)
    raise TypeError(
        f"expected a @tool function, a Tool or a typed callable, got {type(obj).__name__}"
    )


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    schema: dict[str, Any] | None = None,
    args_model: type[BaseModel] | None = None,
    timeout: float = 10.0,
    summary: Summary | None = None,
    output_schema: dict[str, Any] | None = None,
    parallel_safe: bool = True,
    toolset: str = "default",
    **policies: Unpack[ToolPolicies],
) -> Tool:
    """Build the :class:`Tool` for ``fn`` without touching ``fn`` (what ``@tool`` attaches)."""
    if not callable(fn):
        raise TypeError(f"a tool must be callable, got {type(fn).__name__}")
    tool_name = name if name is not None else callable_name(fn)
    if not isinstance(tool_name, str) or not _TOOL_NAME.fullmatch(tool_name):
        raise ValueError(
            f"invalid tool name {tool_name!r}: use 1-64 characters from A-Z a-z 0-9 _ . - "
            "(pass name=... for lambdas and other unnamed callables)"
        )
    if schema is not None and args_model is not None:
        raise TypeError(f"tool {tool_name!r}: give schema= or args_model=, not both")
    _seconds(tool_name, "timeout", timeout)
    if output_schema is not None:
        check_json_schema(output_schema, what=f"output_schema of tool {tool_name!r}")
    if schema is not None:
        spec = _schema_first(fn, tool_name, schema)
    elif args_model is not None:
        spec = _model_first(fn, tool_name, args_model)
    else:
        spec = function_schema(fn)
    policy_fields = _policy_fields(tool_name, policies, spec)
    return Tool(
        name=tool_name,
        description=description if description is not None else spec.description,
        parameters=spec.parameters,
        fn=make_caller(fn, spec),
        is_async=is_async_callable(fn),
        output_schema=copy.deepcopy(output_schema),
        timeout=float(timeout),
        summary=_summary_callable(summary),
        context_param=spec.context_param,
        parallel_safe=parallel_safe,
        toolset=toolset,
        **policy_fields,
    )


def _schema_first(fn: Callable[..., Any], name: str, schema: dict[str, Any]) -> FunctionSchema:
    check_json_schema(schema, what=f"schema of tool {name!r}")
    if schema.get("type") != "object":
        raise ValueError(f'schema of tool {name!r} must describe an object ("type": "object")')
    names, required, context_param, var_keyword = signature_info(fn)
    properties = schema.get("properties", {})
    unknown = [p for p in properties if p not in names and p != context_param]
    if unknown and not var_keyword:
        raise TypeError(
            f"tool {name!r}: schema properties {unknown} have no matching function parameter"
        )
    missing = [p for p in required if p not in properties]
    if missing:
        raise TypeError(
            f"tool {name!r}: function parameters {missing} have no default and are missing "
            "from the schema's properties"
        )
    doc = function_description(fn)
    return FunctionSchema(
        name=name,
        description=doc,
        parameters=copy.deepcopy(schema),
        context_param=context_param,
        param_names=names,
    )


def _model_first(fn: Callable[..., Any], name: str, model: type[BaseModel]) -> FunctionSchema:
    if not (inspect.isclass(model) and issubclass(model, BaseModel)):
        raise TypeError(f"tool {name!r}: args_model must be a pydantic BaseModel subclass")
    names, _required, context_param, var_keyword = signature_info(fn)
    fields = tuple(model.model_fields)
    if len(names) == 1 and names[0] not in fields:
        model_param: str | None = names[0]  # fn(args: Model)
    else:
        model_param = None  # fn(a=..., b=...) with the model's fields
        unknown = [f for f in fields if f not in names]
        if unknown and not var_keyword:
            raise TypeError(
                f"tool {name!r}: args_model fields {unknown} have no matching function parameter"
            )
    parameters = model_schema(model)
    model_doc = parameters.pop("description", "")  # becomes the tool's description instead
    return FunctionSchema(
        name=name,
        description=function_description(fn) or model_doc,
        parameters=parameters,
        context_param=context_param,
        call_mode="model",
        model_param=model_param,
        model_adapter=TypeAdapter(model),
        param_names=names,
    )


def _summary_callable(summary: Summary | None) -> Callable[[Any], str] | None:
    if summary is None or callable(summary):
        return summary
    if isinstance(summary, str):
        template = summary

        def render(output: Any) -> str:
            if isinstance(output, Mapping):
                return template.format_map(output)
            return template.format(output=output)

        return render
    raise TypeError(f"summary must be a callable or a format string, got {type(summary)}")


def _seconds(tool_name: str, option: str, value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"tool {tool_name!r}: {option} must be a positive number of seconds")
    return float(value)


def _policy_fields(name: str, options: ToolPolicies, spec: FunctionSchema) -> dict[str, Any]:
    """The Tool fields of the policy options, each checked (errors name the tool)."""
    unknown = sorted(set(options) - ToolPolicies.__optional_keys__)
    if unknown:
        raise TypeError(f"tool {name!r}: unknown option(s) {', '.join(unknown)}")
    sandbox = options.get("sandbox", "none")
    if sandbox not in get_args(SandboxMode):
        raise ValueError(f'tool {name!r}: sandbox must be "none" or "process", got {sandbox!r}')
    cache_ttl = options.get("cache_ttl")
    return {
        "retry": _retry_policy(name, options.get("retry")),
        "circuit_breaker": _breaker_policy(name, options.get("circuit_breaker")),
        "idempotency_key": _idempotency_key(name, options, spec.parameters),
        "idempotency_ttl": _seconds(
            name, "idempotency_ttl", options.get("idempotency_ttl", 86_400)
        ),
        "cache_ttl": None if cache_ttl is None else _seconds(name, "cache_ttl", cache_ttl),
        "permissions": _scopes(name, options.get("permissions", ())),
        "requires_approval": _flag(name, "requires_approval", options.get("requires_approval")),
        "sandbox": sandbox,
        "max_output_chars": _output_limit(name, options.get("max_output_chars")),
        "parser": _hook(name, "parser", options.get("parser")),
        "post_validate": _hook(name, "post_validate", options.get("post_validate")),
        "side_effects": _side_effects(name, options.get("side_effects", True)),
    }


def _side_effects(name: str, value: Any) -> bool | Callable[[Mapping[str, Any]], bool]:
    if isinstance(value, bool) or callable(value):
        return value  # type: ignore[no-any-return]
    raise TypeError(f"tool {name!r}: side_effects must be true, false or a callable")


def _retry_policy(name: str, value: Any) -> RetryPolicy | None:
    if value is None or value is False:
        return None
    if value is True:
        return RetryPolicy()
    if isinstance(value, RetryPolicy):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise ValueError(f"tool {name!r}: retry=n needs n >= 1 attempts, got {value}")
        return RetryPolicy(max_attempts=value) if value > 1 else None
    raise TypeError(f"tool {name!r}: retry must be a RetryPolicy, an attempt count or a bool")


def _breaker_policy(name: str, value: Any) -> BreakerPolicy | None:
    if value is None or value is False:
        return None
    if value is True:
        return BreakerPolicy()
    if isinstance(value, BreakerPolicy):
        return value
    raise TypeError(f"tool {name!r}: circuit_breaker must be a BreakerPolicy or a bool")


def _idempotency_key(
    name: str, options: ToolPolicies, parameters: dict[str, Any]
) -> tuple[str, ...] | None:
    idempotent = _flag(name, "idempotent", options.get("idempotent"))
    fields = options.get("idempotency_key")
    if fields is None:
        return () if idempotent else None
    chosen = (fields,) if isinstance(fields, str) else tuple(fields)
    if not chosen or not all(isinstance(f, str) for f in chosen):
        raise TypeError(f"tool {name!r}: idempotency_key must name one or more arguments")
    known = parameters.get("properties", {})
    missing = [f for f in chosen if f not in known]
    if missing:
        raise ValueError(f"tool {name!r}: idempotency_key names unknown arguments {missing}")
    return chosen


def _scopes(name: str, value: Any) -> tuple[str, ...]:
    scopes = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(s, str) and s.strip() for s in scopes):
        raise TypeError(f"tool {name!r}: permissions must be non-empty strings")
    return scopes


def _flag(name: str, option: str, value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise TypeError(f"tool {name!r}: {option} must be True or False")
    return value


def _output_limit(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"tool {name!r}: max_output_chars must be a positive integer")
    return value


def _hook(name: str, option: str, value: Any) -> Callable[[Any], Any] | None:
    if value is not None and not callable(value):
        raise TypeError(f"tool {name!r}: {option} must be a callable")
    return value  # type: ignore[no-any-return]
