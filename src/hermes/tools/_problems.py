"""Turning ``jsonschema`` errors into short, field-named :class:`FieldProblem` lines.

The message goes back to the model so it can correct the call (seed 001 §3.2), so it names the
field and what was expected; values are quoted only briefly (never a whole argument).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from jsonschema.exceptions import ValidationError

from hermes.errors import FieldProblem

_MAX_VALUE_CHARS = 40
_MAX_ENUM_SHOWN = 10
_JSON_NAMES = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
    list: "array",
    dict: "object",
}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")

#: Sort rank: missing fields first, then wrong values, then unknown fields.
_MISSING, _INVALID, _UNKNOWN = 0, 1, 2


def format_path(parts: Iterable[Any]) -> str:
    """``("a", "b", 0, "c")`` → ``a.b[0].c``; odd keys are quoted: ``a["x y"]``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and _IDENTIFIER.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{_short(str(part))}]"
    return out


def describe(value: Any) -> str:
    """A short description of a value for an error line: ``'ten'``, ``1.5``, ``null``, ``array``."""
    if isinstance(value, (str, bool, int, float)) or value is None:
        return _short(_plain(value))
    if isinstance(value, (list, dict)):
        return _JSON_NAMES[type(value)]
    return type(value).__name__


def problems_from_errors(errors: Iterable[ValidationError]) -> list[FieldProblem]:
    """One problem per offending field, deduplicated, missing → invalid → unknown."""
    ranked: dict[tuple[int, str, str], None] = {}
    for error in errors:
        for rank, problem in _convert(error):
            ranked[(rank, problem.path, problem.message)] = None
    return [FieldProblem(path, message) for _, path, message in sorted(ranked)]


def _convert(error: ValidationError) -> list[tuple[int, FieldProblem]]:
    path = list(error.absolute_path)
    kind = error.validator
    value: Any = error.validator_value
    instance = error.instance
    if kind == "required" and isinstance(instance, dict):
        return [
            (_MISSING, FieldProblem(format_path([*path, name]), "missing required field"))
            for name in value
            if name not in instance
        ]
    if kind == "additionalProperties" and value is False and isinstance(instance, dict):
        return [
            (_UNKNOWN, FieldProblem(format_path([*path, name]), "unknown field"))
            for name in _unexpected(instance, error.schema)
        ]
    if kind in ("anyOf", "oneOf") and error.context:
        chosen = _single_plausible_branch(error.context)
        if chosen is not None:
            return [item for sub in chosen for item in _convert(sub)]
    return [(_INVALID, FieldProblem(format_path(path), _message(error)))]


def _unexpected(instance: dict[Any, Any], schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return [str(k) for k in instance]
    known = schema.get("properties", {})
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    return [
        str(key)
        for key in instance
        if key not in known and not any(p.search(str(key)) for p in patterns)
    ]


def _single_plausible_branch(errors: Sequence[ValidationError]) -> list[ValidationError] | None:
    """The errors of the only ``anyOf`` branch whose *shape* fits, if exactly one does.

    ``Point | None`` given an object with a bad field should report that field, not "expected
    object or null".
    """
    by_branch: dict[Any, list[ValidationError]] = {}
    for error in errors:
        branch = error.relative_schema_path[0] if error.relative_schema_path else None
        by_branch.setdefault(branch, []).append(error)
    plausible = [
        branch_errors
        for branch_errors in by_branch.values()
        if not any(
            not e.relative_path and e.validator in ("type", "enum", "const") for e in branch_errors
        )
    ]
    return plausible[0] if len(plausible) == 1 else None


def _expected_types(error: ValidationError) -> str:
    if error.validator == "type":
        declared: Any = error.validator_value
        names = [declared] if isinstance(declared, str) else list(declared)
        return " or ".join(names)
    names = []
    for sub in error.context or ():
        if sub.validator == "type" and not sub.relative_path:
            declared = sub.validator_value
            names.extend([declared] if isinstance(declared, str) else declared)
    return " or ".join(dict.fromkeys(names)) or "one of the allowed shapes"


def _message(error: ValidationError) -> str:
    kind, got = error.validator, describe(error.instance)
    value: Any = error.validator_value
    match kind:
        case "type":
            return f"expected {_expected_types(error)}, got {got}"
        case "anyOf" | "oneOf":
            if kind == "oneOf" and not error.context:
                return "matches more than one allowed shape"
            return f"expected {_expected_types(error)}, got {got}"
        case "enum":
            shown = ", ".join(_short(_plain(m)) for m in value[:_MAX_ENUM_SHOWN])
            more = ", …" if len(value) > _MAX_ENUM_SHOWN else ""
            return f"must be one of {shown}{more}; got {got}"
        case "const":
            return f"must be {_short(_plain(value))}; got {got}"
        case "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum":
            op = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">"}.get(kind, "<")
            return f"must be {op} {value}; got {got}"
        case "minLength":
            return f"must be at least {value} characters long"
        case "maxLength":
            return f"must be at most {value} characters long"
        case "minItems":
            return f"must have at least {value} items"
        case "maxItems":
            return f"must have at most {value} items"
        case "uniqueItems":
            return "items must be unique"
        case "pattern":
            return f"must match the pattern {_short(str(value))}; got {got}"
        case "format":
            return f"must be a valid {value}; got {got}"
        case "multipleOf":
            return f"must be a multiple of {value}; got {got}"
        case _:
            return _short(error.message, 200)


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _short(text: str, limit: int = _MAX_VALUE_CHARS) -> str:
    if len(text) > limit:
        return text[: limit - 1] + "…"
    return text
