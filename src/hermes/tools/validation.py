"""Checking a tool call's arguments against the tool's JSON Schema (seed 001 §3.2, seed 002 §2.1).

Public contract: :func:`validate_arguments` returns the coerced arguments or raises
:class:`~hermes.errors.ToolArgumentError`, whose message names every offending field::

    invalid arguments: city: missing required field; days: expected integer, got 'ten';
    colour: unknown field

Steps: safe coercions (see :mod:`hermes.tools._coercion`) and schema defaults, then a fast
conservative check for common schema shapes, then ``jsonschema`` (Draft 2020-12) for anything
else and for the error messages. Compiled schemas are cached (keyed by the schema object, then
by its canonical JSON); a schema must not be mutated after its first use.

Unknown fields are rejected: an object schema with ``properties`` and no explicit
``additionalProperties`` (nor ``patternProperties``/``unevaluatedProperties``/``allOf``) is
treated as closed — "constraint over freedom" (DESIGN principle 1). A schema that wants extra
fields says ``"additionalProperties": true``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from hermes.errors import FieldProblem, ToolArgumentError
from hermes.tools._coercion import Coercer, CoercionDepthError, json_type
from hermes.tools._fastcheck import compile_fast_check
from hermes.tools._problems import problems_from_errors
from hermes.tools._schema_walk import iter_refs, transform_schema

__all__ = [
    "FieldProblem",
    "ToolArgumentError",
    "check_json_schema",
    "closed_schema",
    "validate_arguments",
]

_CACHE_SIZE = 1024
#: Values that cannot be changed through a shallow copy of the arguments (floats aside: a
#: whole one is valid for an integer field, and only coercion makes it an int, 3.0 → 3).
_SCALARS = (str, int, bool, type(None))
_OPENING_KEYWORDS = ("additionalProperties", "patternProperties", "unevaluatedProperties", "allOf")


@dataclass(frozen=True, slots=True)
class _Compiled:
    schema: dict[str, Any]
    validator: Draft202012Validator
    coercer: Coercer
    fast_check: Callable[[Any], bool] | None
    #: No ``default`` anywhere: valid flat arguments need no coercion pass at all.
    defaults_free: bool = False


# id(schema) → (schema, compiled): holding the schema keeps its id from being reused.
_by_identity: dict[int, tuple[dict[str, Any], _Compiled]] = {}
_by_json: dict[str, _Compiled] = {}


def validate_arguments(schema: dict[str, Any], args: Any) -> dict[str, Any]:
    """The arguments coerced and completed with defaults, or :class:`ToolArgumentError`.

    ``args`` should be a dict; a JSON text of an object is accepted too. Anything else (None,
    a list, a number) is reported as a problem at the root. The caller's dict is never mutated.
    Raises ``ValueError`` if ``schema`` itself is not a valid JSON Schema (a programming error).
    """
    compiled = _compile(schema)
    if isinstance(args, str):
        args = _parse_object_text(args)
    if not isinstance(args, dict):
        kind = json_type(args) or type(args).__name__
        raise ToolArgumentError(
            [FieldProblem("", f"expected an object with the tool's arguments, got {kind}")]
        )
    fast_check = compiled.fast_check
    if (
        compiled.defaults_free
        and fast_check is not None
        and all(
            isinstance(value, _SCALARS) or (type(value) is float and not value.is_integer())
            for value in args.values()
        )
        and fast_check(args)
    ):
        # Already valid, flat and with no defaults to fill: coercion would copy it unchanged
        # (its rules only touch values that do not fit). Skipping it halves the cost of the
        # common call (an MCP call spends ~25 µs here otherwise, BENCHMARKS §4).
        return dict(args)
    try:
        coerced = compiled.coercer.coerce(args, compiled.schema)
        if compiled.fast_check is not None and compiled.fast_check(coerced):
            return coerced  # type: ignore[no-any-return]
        problems = problems_from_errors(compiled.validator.iter_errors(coerced))
    except (CoercionDepthError, RecursionError):
        raise ToolArgumentError([FieldProblem("", "arguments are nested too deeply")]) from None
    if problems:
        raise ToolArgumentError(problems)
    return coerced  # type: ignore[no-any-return]


def check_json_schema(schema: Any, *, what: str = "schema") -> None:
    """Raise ``ValueError`` unless ``schema`` is a valid Draft 2020-12 JSON Schema object
    whose ``$ref``s are all local (``#/$defs/...``): tools never fetch remote schemas."""
    if not isinstance(schema, dict):
        raise ValueError(f"{what} must be a JSON Schema object (a dict), got {type(schema)}")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "<root>"
        raise ValueError(f"{what} is not a valid JSON Schema at {where}: {exc.message}") from None
    remote = [ref for ref in iter_refs(schema) if not ref.startswith("#")]
    if remote:
        raise ValueError(f"{what} has non-local $ref {remote[0]!r}; put it under $defs")


def closed_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` where every object schema with ``properties`` that does not say
    otherwise gets ``additionalProperties: false`` (see the module docstring)."""

    def close(node: dict[str, Any], parent_keyword: str | None) -> dict[str, Any]:
        if (
            "properties" in node
            and parent_keyword != "allOf"
            and not any(key in node for key in _OPENING_KEYWORDS)
        ):
            node["additionalProperties"] = False
        return node

    return transform_schema(schema, close)


def _compile(schema: dict[str, Any]) -> _Compiled:
    entry = _by_identity.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1]
    try:
        key = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"schema is not JSON-serializable: {exc}") from None
    compiled = _by_json.get(key)
    if compiled is None:
        check_json_schema(schema)
        closed = closed_schema(schema)
        validator = Draft202012Validator(closed, format_checker=Draft202012Validator.FORMAT_CHECKER)

        def is_valid_under(value: Any, sub_schema: Any) -> bool:
            return bool(validator.evolve(schema=sub_schema).is_valid(value))

        compiled = _Compiled(
            schema=closed,
            validator=validator,
            coercer=Coercer(closed, is_valid_under),
            fast_check=compile_fast_check(closed),
            # Conservative: a property merely named "default" also turns the shortcut off.
            defaults_free='"default"' not in key,
        )
        _remember(_by_json, key, compiled)
    _remember(_by_identity, id(schema), (schema, compiled))
    return compiled


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    # Oldest-first eviction keeps memory bounded when callers build schemas per call.
    if len(cache) >= _CACHE_SIZE:
        cache.pop(next(iter(cache)), None)
    cache[key] = value


def _parse_object_text(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text
