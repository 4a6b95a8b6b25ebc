"""Canonical JSON and the hashes the memory tiers key on (seed 000 §3.5, §4.4).

One value, one text: keys sorted, separators ``(",", ":")``, non-ASCII kept as is
(``ensure_ascii=False``), encoded as UTF-8. So ``{"a": 1, "b": 2}`` and ``{"b": 2, "a": 1}``
have the same text and the same hash — seed 000 §4.4 tells of a cache that missed because
``str(dict)`` depended on insertion order.

What is refused, with :class:`NotJSONSafeError` naming the path of the first offending value:
NaN and ±Infinity (not JSON; ``json.dumps`` would write the non-standard ``NaN``), objects
JSON has no form for (sets, bytes, datetimes, arbitrary classes — convert them first, e.g.
with ``hermes.tools.executor.json_safe``), mixed key types in one object (they cannot be
sorted) and circular references. Tuples are written as arrays; non-string keys (``1``,
``True``, ``None``) are written as JSON writes them (``"1"``, ``"true"``, ``"null"``), so
``{1: "x"}`` and ``{"1": "x"}`` share a hash — they are the same JSON document. ``1`` and
``1.0`` are different texts and so different hashes.

Why the stdlib and not RFC 8785 (the ``rfc8785`` package): the brief fixes this exact form
(``sort_keys``, the compact separators, raw UTF-8), and ``json.dumps`` produces it in C; JCS
differs only in number formatting and UTF-16 key order, which nothing here needs.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from hermes.errors import ErrorCode, HermesError

__all__ = [
    "HASH_HEX_LENGTH",
    "NotJSONSafeError",
    "canonical_bytes",
    "canonical_json",
    "content_hash",
    "hash_bytes",
    "is_content_hash",
]

#: Length of a hash as the tiers store it: lowercase hex of a sha256 digest.
HASH_HEX_LENGTH = 64
_HEX = frozenset("0123456789abcdef")
_SCALARS = (str, int, bool, type(None))
_MAX_SHOWN_KEY = 40


class NotJSONSafeError(HermesError):
    """A value has no canonical JSON form; ``path`` is where (``$.a[2]``), ``reason`` why."""

    code: ErrorCode = "not_json_safe"
    status = 400

    def __init__(self, message: str, *, path: str, reason: str) -> None:
        super().__init__(message, path=path, reason=reason)
        self.path = path
        self.reason = reason


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value`` (see the module docstring).

    Raises :class:`NotJSONSafeError` for a value with no JSON form.
    """
    try:
        return json.dumps(
            value,
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
            default=_no_json_form,
        )
    except (TypeError, ValueError, RecursionError) as exc:
        raise _explain(value, exc) from None


def canonical_bytes(value: Any) -> bytes:
    """:func:`canonical_json` as UTF-8 bytes (what is hashed and archived).

    A lone surrogate (``"\\ud800"``, which ``json.loads`` accepts) is kept with
    ``surrogatepass``, so every string has bytes and the same string always the same bytes.
    """
    return canonical_json(value).encode("utf-8", "surrogatepass")


def hash_bytes(data: bytes) -> str:
    """The sha256 of ``data`` as 64 lowercase hex characters."""
    return hashlib.sha256(data).hexdigest()


def content_hash(value: Any) -> str:
    """The hash of ``value``'s canonical JSON: ``input_hash`` / ``output_hash`` of the L2 index
    and the address of an L3 blob. Raises :class:`NotJSONSafeError`."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


def is_content_hash(text: object) -> bool:
    """Whether ``text`` looks like a hash of this module (64 lowercase hex characters).

    Archives check this before using a hash as a file name or object key, so a hash can never
    be a path (``../x``) or another user's key prefix.
    """
    return isinstance(text, str) and len(text) == HASH_HEX_LENGTH and _HEX.issuperset(text)


def _no_json_form(value: Any) -> Any:
    raise TypeError(f"a {type(value).__name__} has no JSON form")


def _explain(value: Any, exc: BaseException) -> NotJSONSafeError:
    """Find where ``value`` stops being JSON and say so (only on the error path)."""
    try:
        found = _first_problem(value, "$", set())
    except RecursionError:
        found = ("$", "the value is nested too deeply")
    if found is None:  # json refused something the walk accepts: report json's own words
        path, reason = "$", f"{type(exc).__name__}: {exc}"
    else:
        path, reason = found
    return NotJSONSafeError(
        f"value at {path} cannot be written as canonical JSON: {reason}", path=path, reason=reason
    )


def _first_problem(value: Any, path: str, active: set[int]) -> tuple[str, str] | None:
    """``(path, reason)`` of the first value without a JSON form, depth first, or None."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return path, f"{value!r} is not a JSON number (NaN and Infinity are not allowed)"
        return None
    if isinstance(value, _SCALARS):
        return None
    if not isinstance(value, dict | list | tuple):
        return path, f"a {type(value).__name__} has no JSON form; convert it first"
    if id(value) in active:
        return path, "circular reference"
    active.add(id(value))
    try:
        if isinstance(value, dict):
            return _dict_problem(value, path, active)
        for index, item in enumerate(value):
            found = _first_problem(item, f"{path}[{index}]", active)
            if found is not None:
                return found
        return None
    finally:
        active.discard(id(value))


def _dict_problem(value: dict[Any, Any], path: str, active: set[int]) -> tuple[str, str] | None:
    kinds: set[str] = set()
    for key in value:
        if not isinstance(key, str | int | float | bool | type(None)):
            return path, f"a key of type {type(key).__name__} has no JSON form"
        if isinstance(key, float) and (math.isnan(key) or math.isinf(key)):
            return path, f"the key {key!r} is not a JSON number"
        kinds.add("string" if isinstance(key, str) else "null" if key is None else "number")
    if len(kinds) > 1:
        shown_kinds = " and ".join(sorted(kinds))
        return path, f"an object mixes {shown_kinds} keys, which cannot be sorted"
    for key, item in value.items():
        shown = str(key) if len(str(key)) <= _MAX_SHOWN_KEY else str(key)[:_MAX_SHOWN_KEY] + "…"
        found = _first_problem(item, f"{path}.{shown}", active)
        if found is not None:
            return found
    return None
