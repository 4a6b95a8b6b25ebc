"""Walking a JSON Schema by its keywords (Draft 2020-12), without confusing data for schemas.

A property *named* ``title`` lives under ``properties`` and must survive when the ``title``
*keyword* is dropped; ``default``/``enum``/``const`` values are data and are never walked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Keywords whose value is a map of name → sub-schema.
SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
#: Keywords whose value is a list of sub-schemas.
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
#: Keywords whose value is one sub-schema.
SCHEMA_SINGLES = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
)

#: ``visit(node, parent_keyword)`` returns the replacement of an already rebuilt node.
Visitor = Callable[[dict[str, Any], str | None], dict[str, Any]]


def transform_schema(
    schema: dict[str, Any], visit: Visitor, parent_keyword: str | None = None
) -> dict[str, Any]:
    """A rebuilt copy of ``schema``: sub-schemas first (bottom-up), then ``visit`` on each node.

    The input is never mutated; data values (``default``, ``enum`` …) are shared, not copied.
    """
    node: dict[str, Any] = dict(schema)
    for key in SCHEMA_MAPS:
        sub = node.get(key)
        if isinstance(sub, dict):
            node[key] = {
                name: transform_schema(value, visit, key) if isinstance(value, dict) else value
                for name, value in sub.items()
            }
    for key in SCHEMA_LISTS:
        sub = node.get(key)
        if isinstance(sub, list):
            node[key] = [
                transform_schema(value, visit, key) if isinstance(value, dict) else value
                for value in sub
            ]
    for key in SCHEMA_SINGLES:
        sub = node.get(key)
        if isinstance(sub, dict):
            node[key] = transform_schema(sub, visit, key)
    return visit(node, parent_keyword)


def iter_refs(schema: Any) -> list[str]:
    """Every ``$ref`` string found anywhere in ``schema`` (used to reject non-local refs)."""
    found: list[str] = []
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                found.append(ref)
            for key in SCHEMA_MAPS:
                sub = node.get(key)
                if isinstance(sub, dict):
                    stack.extend(sub.values())
            for key in SCHEMA_LISTS:
                sub = node.get(key)
                if isinstance(sub, list):
                    stack.extend(sub)
            stack.extend(node.get(key) for key in SCHEMA_SINGLES if key in node)
    return found


def resolve_local_ref(root: dict[str, Any], ref: str) -> Any:
    """The sub-schema a local ``$ref`` (``#``, ``#/$defs/Name``, any JSON pointer) points to.

    Returns ``None`` when the reference is not local or points nowhere.
    """
    if not ref.startswith("#"):
        return None
    node: Any = root
    pointer = ref[1:]
    if not pointer:
        return node
    if not pointer.startswith("/"):
        return None
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node
