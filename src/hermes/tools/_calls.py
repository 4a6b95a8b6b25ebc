"""The callable the executor invokes: ``tool.fn(**validated_arguments)``.

For the common case (plain JSON parameters) that is the user's function itself — no wrapper,
no cost. Only richer parameter types (models, dataclasses, enums, tuples, datetimes …) and the
single-model calling convention get a thin wrapper that builds those values with pydantic.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from hermes.errors import FieldProblem, ToolArgumentError
from hermes.tools._problems import format_path
from hermes.tools.schema import FunctionSchema


def is_async_callable(fn: Any) -> bool:
    """True for ``async def`` functions, partials of them and objects with ``async __call__``."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004
    return not inspect.isfunction(fn) and inspect.iscoroutinefunction(call)


def make_caller(fn: Callable[..., Any], spec: FunctionSchema) -> Callable[..., Any]:
    """``fn`` itself, or a wrapper (sync or async like ``fn``) that converts arguments first."""
    if spec.call_mode == "model":
        assert spec.model_adapter is not None
        return _model_caller(fn, spec.model_adapter, spec.model_param, spec.context_param)
    if not spec.converters:
        return fn
    return _converting_caller(fn, spec.converters)


def _converting_caller(
    fn: Callable[..., Any], converters: Mapping[str, TypeAdapter[Any]]
) -> Callable[..., Any]:
    items = tuple(converters.items())

    def convert(kwargs: dict[str, Any]) -> dict[str, Any]:
        problems: list[FieldProblem] = []
        for name, adapter in items:
            if name in kwargs:
                try:
                    kwargs[name] = adapter.validate_python(kwargs[name])
                except ValidationError as exc:
                    problems.extend(_problems(exc, (name,)))
        if problems:
            raise ToolArgumentError(problems)
        return kwargs

    if is_async_callable(fn):

        async def call_async(**kwargs: Any) -> Any:
            return await fn(**convert(kwargs))

        return functools.update_wrapper(call_async, fn, updated=())

    def call(**kwargs: Any) -> Any:
        return fn(**convert(kwargs))

    return functools.update_wrapper(call, fn, updated=())


def _model_caller(
    fn: Callable[..., Any], adapter: TypeAdapter[Any], param: str | None, context_param: str | None
) -> Callable[..., Any]:
    """Validate all arguments into one model; pass it as ``param``, or (``param=None``) pass
    its fields as keyword arguments (``@tool(args_model=...)`` on a keyword function)."""

    def build(kwargs: dict[str, Any]) -> dict[str, Any]:
        context = kwargs.pop(context_param, None) if context_param else None
        try:
            instance = adapter.validate_python(kwargs)
        except ValidationError as exc:
            raise ToolArgumentError(_problems(exc, ())) from None
        if param is None:
            call_kwargs = {name: getattr(instance, name) for name in type(instance).model_fields}
        else:
            call_kwargs = {param: instance}
        if context_param:
            call_kwargs[context_param] = context
        return call_kwargs

    if is_async_callable(fn):

        async def call_async(**kwargs: Any) -> Any:
            return await fn(**build(kwargs))

        return functools.update_wrapper(call_async, fn, updated=())

    def call(**kwargs: Any) -> Any:
        return fn(**build(kwargs))

    return functools.update_wrapper(call, fn, updated=())


def _problems(exc: ValidationError, prefix: tuple[str, ...]) -> list[FieldProblem]:
    return [
        FieldProblem(format_path((*prefix, *error["loc"])), error["msg"])
        for error in exc.errors(include_url=False, include_input=False)
    ]
