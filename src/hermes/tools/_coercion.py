"""Safe coercion of model-produced arguments toward a JSON Schema, before validation.

Models get types slightly wrong all the time (seed 002 §3.2: about 2 calls in 10); most of those
mistakes have exactly one sensible reading, and fixing them beats a round trip to the model.
The rules below only ever apply when the value does NOT already fit the schema, and only when
the reading is unambiguous:

* ``"123"`` → ``123`` and ``3.0`` → ``3`` for integers; ``"1.5"`` → ``1.5`` for numbers;
* ``"true"``/``"false"`` (any case, surrounding spaces ignored) → booleans. ``"yes"``, ``"1"``
  or ``1`` are NOT booleans: they are ambiguous across languages and APIs, so they are reported;
* a number → its text for string fields (seed 003 §4.2: ``1001`` sent for a string id);
* a string matching an enum member except for letter case → that member (only if unique);
* a scalar (or object) where an array is expected → a one-item array;
* a JSON text where an object/array is expected → the parsed value, if it has the right type;
* ``null`` for an optional field that does not accept null → the field is treated as absent
  (its default, if any, applies);
* defaults of the schema fill absent properties, at every level of nesting — coerced by these
  same rules when they do not fit their own schema (``"default": "false"`` on a boolean is
  ``False``), and left out when even that does not make them valid (``"default": null`` on a
  string): a default the caller never sent must never make a call fail (seed 003 §4.2).

Never: ``"abc"`` → int, ``1.5`` → ``1``, a bool → a number or a string. A value is only
converted toward a type the schema declares (``type``, ``enum``, ``const``, through ``$ref`` and
unions): ``items`` or ``properties`` without ``type`` constrain arrays or objects *if* the value
is one, so they never turn a string into an array. Whatever is not fixed here is reported by
validation, field by field. The input is never mutated.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from hermes.tools._schema_walk import resolve_local_ref

#: Deeper argument structures are refused (and recursive ``$ref`` loops stop here).
MAX_DEPTH = 64

_INT_TEXT = re.compile(r"[+-]?\d+")
_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_SCALARS = (str, int, float, bool)
_IMMUTABLE = (str, int, float, bool, type(None))


class CoercionDepthError(Exception):
    """The arguments (or a ``$ref`` cycle) nest deeper than :data:`MAX_DEPTH`."""


def json_type(value: Any) -> str | None:
    """The JSON type name of a Python value (``integer`` for ints, never for bools)."""
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return None


def _fits(value: Any, types: frozenset[str]) -> bool:
    # A float where only "integer" is accepted does not fit (3.0 is turned into 3).
    kind = json_type(value)
    return kind in types or (kind == "integer" and "number" in types)


class Coercer:
    """Coerces values against sub-schemas of one root schema (which holds the ``$defs``).

    ``is_valid(value, sub_schema)`` decides between ``anyOf`` branches that all take the
    value's type, so a value valid under one of them is never rewritten for another.
    """

    __slots__ = ("_defaults", "_is_valid", "_nulls", "_root")

    def __init__(
        self, root: dict[str, Any], is_valid: Callable[[Any, Any], bool] | None = None
    ) -> None:
        self._root = root
        self._is_valid = is_valid
        #: id(property schema) → its default made valid, or _NO (the root holds the schemas).
        self._defaults: dict[int, Any] = {}
        #: id(property schema) → whether null is valid under it.
        self._nulls: dict[int, bool] = {}

    def coerce(self, value: Any, schema: Any, depth: int = 0) -> Any:
        """``value`` made to fit ``schema`` where a safe rule applies; otherwise unchanged."""
        if depth > MAX_DEPTH:
            raise CoercionDepthError
        if not isinstance(schema, dict):
            return value
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = resolve_local_ref(self._root, ref)
            if target is not None:
                value = self.coerce(value, target, depth + 1)
        for sub in schema.get("allOf", ()):
            value = self.coerce(value, sub, depth + 1)
        branches = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(branches, list) and branches:
            value = self._coerce_union(value, branches, depth)
        types = self.types_of(schema)
        if types is not None and not _fits(value, types):
            value = _coerce_scalar(value, types)
        enum = schema.get("enum")
        if isinstance(enum, list) and isinstance(value, str) and value not in enum:
            value = _match_enum_case(value, enum)
        if isinstance(value, dict):
            return self._coerce_object(value, schema, depth)
        if isinstance(value, list):
            return self._coerce_array(value, schema, depth)
        return value

    def types_of(self, schema: Any, depth: int = 0) -> frozenset[str] | None:
        """The JSON types a schema accepts at its top level, or ``None`` when unconstrained."""
        if not isinstance(schema, dict) or depth > MAX_DEPTH:
            return None
        declared = schema.get("type")
        if isinstance(declared, str):
            return frozenset((declared,))
        if isinstance(declared, list):
            return frozenset(t for t in declared if isinstance(t, str))
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self.types_of(resolve_local_ref(self._root, ref), depth + 1)
        if "enum" in schema and isinstance(schema["enum"], list):
            return frozenset(filter(None, map(json_type, schema["enum"]))) or None
        if "const" in schema:
            kind = json_type(schema["const"])
            return frozenset((kind,)) if kind else None
        branches = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(branches, list) and branches:
            found: set[str] = set()
            for branch in branches:
                sub = self.types_of(branch, depth + 1)
                if sub is None:
                    return None
                found |= sub
            return frozenset(found)
        return None

    def _coerce_union(self, value: Any, branches: list[Any], depth: int) -> Any:
        # A branch that already takes the value's type wins; among several, the first under
        # which the value is already valid (round trip: valid data is never rewritten);
        # otherwise the first branch a safe coercion satisfies.
        fitting = [b for b in branches if (t := self.types_of(b)) is None or _fits(value, t)]
        if len(fitting) > 1 and self._is_valid is not None:
            valid = next((b for b in fitting if self._is_valid(value, b)), None)
            if valid is not None:
                return self.coerce(value, valid, depth + 1)
        if fitting:
            return self.coerce(value, fitting[0], depth + 1)
        for branch in branches:
            types = self.types_of(branch)
            candidate = self.coerce(value, branch, depth + 1)
            if types is not None and _fits(candidate, types):
                return candidate
        return value

    def _coerce_object(self, value: dict[Any, Any], schema: dict[str, Any], depth: int) -> Any:
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            properties = {}
        extra = schema.get("additionalProperties")
        extra_schema = extra if isinstance(extra, dict) else None
        if not properties and extra_schema is None:
            return dict(value)
        required = schema.get("required")
        required_names = required if isinstance(required, list) else ()
        out: dict[Any, Any] = {}
        for key, item in value.items():
            sub = properties.get(key, extra_schema) if isinstance(key, str) else None
            if sub is None:
                out[key] = item
            elif (
                item is None
                and key in properties
                and key not in required_names
                and not self._accepts_null(sub)
            ):
                continue  # null for an optional field: treat as absent (module docstring)
            else:
                out[key] = self.coerce(item, sub, depth + 1)
        for key, sub in properties.items():
            if key not in out and isinstance(sub, dict) and "default" in sub:
                default = self._usable_default(sub, depth)
                if default is not _NO:
                    out[key] = (
                        default if isinstance(default, _IMMUTABLE) else copy.deepcopy(default)
                    )
        return out

    def _accepts_null(self, schema: Any) -> bool:
        if self._is_valid is None:
            types = self.types_of(schema)
            return types is None or "null" in types
        key = id(schema)
        accepted = self._nulls.get(key)
        if accepted is None:  # asked once per sub-schema: an enum or a const may refuse it too
            accepted = self._nulls[key] = self._is_valid(None, schema)
        return accepted

    def _usable_default(self, schema: dict[str, Any], depth: int) -> Any:
        """``schema``'s default as it may be filled in: as written when valid, else safely
        coerced when that makes it valid, else ``_NO`` (the field stays absent)."""
        key = id(schema)
        if key in self._defaults:
            return self._defaults[key]
        default = schema["default"]
        if self._is_valid is None:
            usable = default  # no validator to ask: the default as written
        elif self._is_valid(default, schema):
            usable = default
        else:
            coerced = self.coerce(copy.deepcopy(default), schema, depth + 1)
            usable = coerced if self._is_valid(coerced, schema) else _NO
        self._defaults[key] = usable
        return usable

    def _coerce_array(self, value: list[Any], schema: dict[str, Any], depth: int) -> list[Any]:
        prefix = schema.get("prefixItems")
        prefix_schemas = prefix if isinstance(prefix, list) else []
        items = schema.get("items")
        if not prefix_schemas and not isinstance(items, dict):
            return list(value)
        out: list[Any] = []
        for index, item in enumerate(value):
            sub = prefix_schemas[index] if index < len(prefix_schemas) else items
            out.append(self.coerce(item, sub, depth + 1) if isinstance(sub, dict) else item)
        return out


def _coerce_scalar(value: Any, types: frozenset[str]) -> Any:
    """Try each accepted type in a fixed order; the first safe conversion wins. ``object``
    comes before ``array``: a JSON object text is that object, not a one-item array of it."""
    for kind in ("integer", "number", "boolean", "string", "object", "array"):
        if kind not in types:
            continue
        converted = _CONVERTERS[kind](value)
        if converted is not _NO:
            return converted
    return value


class _Missing:
    __slots__ = ()


_NO: Any = _Missing()


def _to_integer(value: Any) -> Any:
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else _NO
    if not isinstance(value, str):
        return _NO
    text = value.strip()
    try:
        if _INT_TEXT.fullmatch(text):
            return int(text)
        if _NUMBER_TEXT.fullmatch(text):
            number = Decimal(text)
            # Exponents are bounded so "1e999999" cannot build a million-digit int.
            if abs(number.adjusted()) <= 400 and number == number.to_integral_value():
                return int(number)
    except (ValueError, InvalidOperation):  # e.g. more digits than int() accepts
        return _NO
    return _NO


def _to_number(value: Any) -> Any:
    if not isinstance(value, str):
        return _NO
    text = value.strip()
    if _INT_TEXT.fullmatch(text):
        try:
            return int(text)
        except ValueError:
            return _NO
    if _NUMBER_TEXT.fullmatch(text):
        number = float(text)
        return number if math.isfinite(number) else _NO
    return _NO


def _to_boolean(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "true":
            return True
        if text == "false":
            return False
    return _NO


def _to_string(value: Any) -> Any:
    if isinstance(value, bool):
        return _NO
    if isinstance(value, int):
        try:
            return str(value)
        except ValueError:  # beyond int → str digit limit
            return _NO
    if isinstance(value, float) and math.isfinite(value):
        return str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)
    return _NO


def _to_array(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip().startswith("["):
        parsed = _parse_json(value)
        if isinstance(parsed, list):
            return parsed
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, (*_SCALARS, dict)):
        return [value]
    return _NO


def _to_object(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip().startswith("{"):
        parsed = _parse_json(value)
        if isinstance(parsed, dict):
            return parsed
    return _NO


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested beyond the parser's limit
        return _NO


_CONVERTERS = {
    "integer": _to_integer,
    "number": _to_number,
    "boolean": _to_boolean,
    "string": _to_string,
    "array": _to_array,
    "object": _to_object,
}


def _match_enum_case(value: str, enum: list[Any]) -> str:
    folded = value.strip().casefold()
    matches = [m for m in enum if isinstance(m, str) and m.casefold() == folded]
    return matches[0] if len(matches) == 1 else value
