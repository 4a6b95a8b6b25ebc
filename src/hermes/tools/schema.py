"""From a typed Python function to a tool's JSON Schema (the "function-first" path).

Seed 001 §3.1 warns that signature-derived schemas drift from what the model needs (nested
dataclasses, ``Optional[List[str]]``, enum defaults); so every annotation is rendered by
pydantic (which knows those types), the result is cleaned (no noisy ``title`` keys, objects
closed with ``additionalProperties: false``) and checked like a hand-written schema. Tools that
want full control pass ``schema=`` to :func:`hermes.tools.tool` instead (schema-first).
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic.errors import PydanticUserError
from pydantic.fields import FieldInfo
from pydantic.json_schema import PydanticJsonSchemaWarning

from hermes.tools._docstrings import parse_docstring
from hermes.tools._schema_walk import transform_schema
from hermes.tools.base import ToolContext
from hermes.tools.validation import check_json_schema, closed_schema

__all__ = [
    "CallMode",
    "FunctionSchema",
    "callable_name",
    "clean_schema",
    "function_description",
    "function_schema",
    "model_schema",
    "signature_info",
]

#: ``keywords``: ``fn(a=..., b=...)``; ``model``: ``fn(one_model_instance)``.
CallMode = Literal["keywords", "model"]

_PLAIN_TYPES: tuple[Any, ...] = (int, float, str, bool, type(None), None, Any, list, dict)


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    """What a tool needs to know about a function: its contract and how to call it.

    ``converters`` maps parameters whose Python type is richer than JSON (a model, a dataclass,
    an enum, a tuple, a datetime …) to the pydantic adapter that builds that type from the
    validated JSON value; plain JSON parameters are passed through untouched (no cost).
    In ``model`` mode all arguments are validated into one model instance
    (``model_adapter``), passed as ``model_param`` — or, when ``model_param`` is ``None``,
    spread into keyword arguments (``@tool(args_model=...)`` on a keyword function).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    context_param: str | None = None
    call_mode: CallMode = "keywords"
    model_param: str | None = None
    model_adapter: TypeAdapter[Any] | None = None
    converters: Mapping[str, TypeAdapter[Any]] = field(default_factory=dict)
    param_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Param:
    name: str
    annotation: Any
    default: Any


def function_schema(fn: Callable[..., Any]) -> FunctionSchema:
    """The JSON Schema and calling convention of ``fn``, from its type hints and docstring.

    Raises ``TypeError`` for ``*args``/``**kwargs``, positional-only parameters, a second
    ``ToolContext`` parameter, unresolvable hints, or a type pydantic cannot describe.
    """
    name = callable_name(fn)
    params, context_param = _signature_params(fn, name, allow_var_keyword=False)
    doc = parse_docstring(inspect.getdoc(_doc_source(fn)))
    only = params[0] if len(params) == 1 else None
    if only is not None and _is_model_class(only.annotation):
        model: type[BaseModel] = only.annotation
        return FunctionSchema(
            name=name,
            description=doc.description or _model_description(model),
            parameters=_without_description(model_schema(model)),
            context_param=context_param,
            call_mode="model",
            model_param=only.name,
            model_adapter=TypeAdapter(model),
            param_names=(only.name,),
        )
    parameters = _parameters_schema(name, params, doc.params)
    converters = {p.name: _adapter(name, p) for p in params if _needs_conversion(p.annotation)}
    return FunctionSchema(
        name=name,
        description=doc.description,
        parameters=parameters,
        context_param=context_param,
        converters=converters,
        param_names=tuple(p.name for p in params),
    )


def _without_description(schema: dict[str, Any]) -> dict[str, Any]:
    # The model's docstring already became the tool's description; once is enough.
    schema.pop("description", None)
    return schema


def signature_info(
    fn: Callable[..., Any],
) -> tuple[tuple[str, ...], tuple[str, ...], str | None, bool]:
    """``(parameter names, required names, context parameter, accepts **kwargs)`` of ``fn``,
    used to check an explicit ``schema=`` against the function it describes."""
    name = callable_name(fn)
    params, context_param = _signature_params(fn, name, allow_var_keyword=True)
    has_var_keyword = any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(fn).parameters.values()
    )
    required = tuple(p.name for p in params if p.default is inspect.Parameter.empty)
    return tuple(p.name for p in params), required, context_param, has_var_keyword


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A pydantic model's JSON Schema, cleaned for tool use (see :func:`clean_schema`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PydanticJsonSchemaWarning)
        return clean_schema(model.model_json_schema(mode="validation"))


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop ``title`` keywords (noise for a model), close object schemas that do not say
    otherwise (``additionalProperties: false``) and make sure the root is an object schema
    with ``properties``; then check the result is a valid JSON Schema."""

    def drop_title(node: dict[str, Any], _parent: str | None) -> dict[str, Any]:
        node.pop("title", None)
        return node

    cleaned = _without_unfit_defaults(closed_schema(transform_schema(schema, drop_title)))
    cleaned.setdefault("type", "object")
    cleaned.setdefault("properties", {})
    cleaned.setdefault("additionalProperties", False)
    if not cleaned.get("required", True):
        del cleaned["required"]
    check_json_schema(cleaned, what="generated schema")
    return cleaned


def _without_unfit_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without the ``default`` keywords their own sub-schema refuses.

    ``def f(unit: str = None)`` is common: pydantic renders ``{"type": "string", "default":
    null}``, a default no call may send (validation leaves such a default out anyway, see
    :mod:`hermes.tools._coercion`); the model is not told about it.
    """
    validator = Draft202012Validator(schema)

    def drop_unfit(node: dict[str, Any], _parent: str | None) -> dict[str, Any]:
        if "default" in node:
            rest = {key: value for key, value in node.items() if key != "default"}
            if not validator.evolve(schema=rest).is_valid(node["default"]):
                return rest
        return node

    return transform_schema(schema, drop_unfit)


def callable_name(fn: Callable[..., Any]) -> str:
    """The natural name of a callable: function name, wrapped function of a partial, or class."""
    target = fn.func if isinstance(fn, functools.partial) else fn
    name = getattr(target, "__name__", None)
    return name if isinstance(name, str) else type(target).__name__


def function_description(fn: Callable[..., Any]) -> str:
    """The first paragraph of ``fn``'s docstring (``""`` without one)."""
    return parse_docstring(inspect.getdoc(_doc_source(fn))).description


def _doc_source(fn: Callable[..., Any]) -> Any:
    return fn.func if isinstance(fn, functools.partial) else fn


def _hint_source(fn: Callable[..., Any]) -> Any:
    if isinstance(fn, functools.partial):
        return _hint_source(fn.func)
    if inspect.isfunction(fn) or inspect.ismethod(fn):
        return fn
    call = getattr(type(fn), "__call__", None)  # a callable instance  # noqa: B004
    return call if call is not None else fn


def _signature_params(
    fn: Callable[..., Any], name: str, *, allow_var_keyword: bool
) -> tuple[list[_Param], str | None]:
    if inspect.isclass(fn):
        raise TypeError(f"tool {name!r}: a class is not a tool function; decorate a function")
    try:
        signature = inspect.signature(fn)
        hints = typing.get_type_hints(_hint_source(fn), include_extras=True)
    except (NameError, TypeError, ValueError) as exc:
        raise TypeError(f"tool {name!r}: cannot read its signature or type hints: {exc}") from None
    params: list[_Param] = []
    context_param: str | None = None
    first = next(iter(signature.parameters.values()), None)
    if first is not None and first.name in ("self", "cls") and "self" not in hints:
        raise TypeError(
            f"tool {name!r}: looks like an unbound method ({first.name}); decorate a plain "
            "function, or register the bound method with as_tool(instance.method)"
        )
    for param in signature.parameters.values():
        if param.kind is inspect.Parameter.VAR_POSITIONAL or (
            param.kind is inspect.Parameter.VAR_KEYWORD and not allow_var_keyword
        ):
            raise TypeError(
                f"tool {name!r}: *args/**kwargs ({param.name}) cannot be described to a model; "
                "declare each argument, or give an explicit schema=..."
            )
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(
                f"tool {name!r}: positional-only parameter {param.name!r} is not supported "
                "(tools are called with keyword arguments)"
            )
        annotation = hints.get(param.name, Any)
        if _is_context(annotation):
            if context_param is not None:
                raise TypeError(f"tool {name!r}: more than one ToolContext parameter")
            context_param = param.name
            continue
        params.append(_Param(param.name, annotation, param.default))
    return params, context_param


def _is_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(members) == 1 and members[0] is ToolContext
    return False


def _is_model_class(annotation: Any) -> bool:
    return inspect.isclass(annotation) and issubclass(annotation, BaseModel)


def _model_description(model: type[BaseModel]) -> str:
    doc = model.__doc__
    return parse_docstring(doc).description if doc and doc != BaseModel.__doc__ else ""


def _field_info(param: _Param, description: str | None) -> tuple[Any, FieldInfo]:
    annotation = param.annotation
    if isinstance(param.default, FieldInfo):
        # ``def f(x: int = Field(5, ge=0))``: the FieldInfo carries default and constraints.
        annotation = typing.Annotated[annotation, param.default]
        default: Any = ...
    else:
        default = ... if param.default is inspect.Parameter.empty else param.default
    extra: dict[str, Any] = {}
    if description and not _has_own_description(annotation):
        extra["description"] = description  # an explicit Field(description=...) wins
    return annotation, Field(default, alias=param.name, **extra)


def _has_own_description(annotation: Any) -> bool:
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(isinstance(m, FieldInfo) and m.description for m in annotation.__metadata__)


def _parameters_schema(name: str, params: list[_Param], docs: dict[str, str]) -> dict[str, Any]:
    # Internal field names p0, p1 … with the real names as aliases: a parameter may be called
    # ``json``, ``copy`` or ``model_config`` without clashing with BaseModel attributes.
    fields: dict[str, Any] = {
        f"p{i}": _field_info(p, docs.get(p.name) or None) for i, p in enumerate(params)
    }
    try:
        model = create_model(
            f"{name}_arguments", __config__=ConfigDict(populate_by_name=False), **fields
        )
        return model_schema(model)
    except (PydanticUserError, TypeError, ValueError) as exc:
        culprit = next((p for p in params if not _renders(p)), None)
        where = f"parameter {culprit.name!r} ({culprit.annotation!r})" if culprit else "a type"
        raise TypeError(
            f"tool {name!r}: {where} cannot be described as JSON Schema: {exc}"
        ) from None


def _renders(param: _Param) -> bool:
    try:
        TypeAdapter(param.annotation).json_schema()
    except (PydanticUserError, TypeError, ValueError):
        return False
    return True


def _adapter(name: str, param: _Param) -> TypeAdapter[Any]:
    annotation = param.annotation
    if isinstance(param.default, FieldInfo):
        annotation = typing.Annotated[annotation, param.default]
    try:
        return TypeAdapter(annotation)
    except (PydanticUserError, TypeError, ValueError) as exc:
        raise TypeError(f"tool {name!r}: parameter {param.name!r}: {exc}") from None


def _needs_conversion(annotation: Any) -> bool:
    """Whether the validated JSON value must be converted to reach the annotated Python type."""
    if any(annotation is plain for plain in _PLAIN_TYPES):
        return False
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Literal:
        return not all(a is None or isinstance(a, (str, int, bool)) for a in args)
    if origin in (typing.Union, types.UnionType):
        return any(_needs_conversion(a) for a in args)
    if origin is list:
        return bool(args) and _needs_conversion(args[0])
    if origin is dict:
        return bool(args) and (args[0] is not str or _needs_conversion(args[1]))
    return True
