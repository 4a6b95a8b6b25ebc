"""A fast, conservative validity check for the common shapes of tool schemas.

``jsonschema`` costs ~15 µs even for a three-field object; tool calls are on the hot path. A
schema made only of the keywords below is compiled to plain Python closures. The check is
*sound*, not complete: ``True`` guarantees ``jsonschema`` would accept the value; ``False`` only
means "ask ``jsonschema``", which then also produces the error messages. A schema using any
other keyword (``format``, ``oneOf``, ``patternProperties`` …) gets no fast check at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from hermes.tools._schema_walk import resolve_local_ref

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$schema",
        "$defs",
        "definitions",
    }
)
_SUPPORTED = _ANNOTATIONS | {
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "allOf",
    "$ref",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
}


class _Unsupported(Exception):
    pass


def _is_integer(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and v.is_integer())


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_TYPE_CHECKS: dict[str, Check] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def compile_fast_check(schema: dict[str, Any]) -> Check | None:
    """A sound fast check for ``schema``, or ``None`` when it uses unsupported keywords."""
    try:
        return _Compiler(schema).compile(schema)
    except (_Unsupported, re.error):
        return None


class _Compiler:
    def __init__(self, root: dict[str, Any]) -> None:
        self._root = root
        self._refs: dict[str, list[Check]] = {}

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        if not isinstance(schema, dict) or not schema.keys() <= _SUPPORTED:
            raise _Unsupported
        checks: list[Check] = []
        if "type" in schema:
            checks.append(self._type(schema["type"]))
        if "enum" in schema:
            checks.append(_enum(schema["enum"]))
        if "const" in schema:
            checks.append(_enum([schema["const"]]))
        checks.extend(_bounds(schema))
        if "$ref" in schema:
            checks.append(self._ref(schema["$ref"]))
        if "anyOf" in schema:
            checks.append(_any_of([self.compile(sub) for sub in schema["anyOf"]]))
        if "allOf" in schema:
            checks.append(_all([self.compile(sub) for sub in schema["allOf"]]))
        if "items" in schema:
            checks.append(self._items(schema["items"]))
        if {"properties", "required", "additionalProperties"} & schema.keys():
            checks.append(self._object(schema))
        return _all(checks)

    def _type(self, declared: Any) -> Check:
        names = [declared] if isinstance(declared, str) else list(declared)
        try:
            parts = [_TYPE_CHECKS[name] for name in names]
        except (KeyError, TypeError) as exc:
            raise _Unsupported from exc
        if len(parts) == 1:
            return parts[0]
        return lambda v: any(p(v) for p in parts)

    def _ref(self, ref: Any) -> Check:
        if not isinstance(ref, str):
            raise _Unsupported
        cell = self._refs.get(ref)
        if cell is None:
            # The cell is registered before compiling so recursive schemas terminate.
            cell = self._refs[ref] = []
            target = resolve_local_ref(self._root, ref)
            if target is None:
                raise _Unsupported
            cell.append(self.compile(target))
        # Late binding on purpose: for a recursive schema the cell is filled after this returns.
        return lambda v: cell[0](v)  # noqa: PLW0108

    def _items(self, items: Any) -> Check:
        sub = self.compile(items)
        return lambda v: not isinstance(v, list) or all(sub(x) for x in v)

    def _object(self, schema: dict[str, Any]) -> Check:
        properties = {name: self.compile(s) for name, s in schema.get("properties", {}).items()}
        required = tuple(schema.get("required", ()))
        extra = schema.get("additionalProperties", True)
        extra_check = None if extra is True or extra is False else self.compile(extra)
        forbid = extra is False

        def check(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for name in required:
                if name not in v:
                    return False
            for key, value in v.items():
                sub = properties.get(key)
                if sub is None:
                    if forbid or (extra_check is not None and not extra_check(value)):
                        return False
                elif not sub(value):
                    return False
            return True

        return check


def _all(checks: list[Check]) -> Check:
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    frozen = tuple(checks)

    def check(v: Any) -> bool:
        return all(c(v) for c in frozen)

    return check


def _any_of(branches: list[Check]) -> Check:
    frozen = tuple(branches)

    def check(v: Any) -> bool:
        return any(b(v) for b in frozen)

    return check


def _enum(members: Any) -> Check:
    if not isinstance(members, list):
        raise _Unsupported
    # Python's ``==`` treats True as 1, JSON Schema does not; scalars only, compared by kind.
    plain = [m for m in members if isinstance(m, (str, int, float)) and not isinstance(m, bool)]
    flags = [m for m in members if m is True or m is False or m is None]

    def check(v: Any) -> bool:
        if v is True or v is False or v is None:
            return any(v is m for m in flags)
        return isinstance(v, (str, int, float)) and v in plain

    return check


def _bounds(schema: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    lo, hi = schema.get("minimum"), schema.get("maximum")
    xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if any(b is not None for b in (lo, hi, xlo, xhi)):

        def numeric(v: Any) -> bool:
            if not _is_number(v):
                return True
            return not (
                (lo is not None and v < lo)
                or (hi is not None and v > hi)
                or (xlo is not None and v <= xlo)
                or (xhi is not None and v >= xhi)
            )

        checks.append(numeric)
    min_len, max_len = schema.get("minLength"), schema.get("maxLength")
    pattern = schema.get("pattern")
    if min_len is not None or max_len is not None or pattern is not None:
        compiled = re.compile(pattern) if isinstance(pattern, str) else None

        def text(v: Any) -> bool:
            if not isinstance(v, str):
                return True
            return not (
                (min_len is not None and len(v) < min_len)
                or (max_len is not None and len(v) > max_len)
                or (compiled is not None and compiled.search(v) is None)
            )

        checks.append(text)
    min_items, max_items = schema.get("minItems"), schema.get("maxItems")
    if min_items is not None or max_items is not None:

        def sized(v: Any) -> bool:
            if not isinstance(v, list):
                return True
            return not (
                (min_items is not None and len(v) < min_items)
                or (max_items is not None and len(v) > max_items)
            )

        checks.append(sized)
    return checks
