"""Templates in a plan's params: ``{{n1.result.room_id}}``, ``{{n1.result.rooms[0]}}``,
``{{params.city}}`` (DESIGN.md, "Multi-call plans").

- A string that is one template and nothing else is replaced by the value itself, keeping its
  JSON type (a number stays a number, a list a list).
- A template inside a longer string is replaced by its text (a string as is, anything else as
  compact JSON): ``"Room {{n1.result.room_id}} booked"``.
- Paths: ``.key`` (letters, digits, ``_``, ``-``), ``["any key"]``, ``[N]`` (``[-1]`` is the
  last item). A missing key, an index out of range or a step into a scalar is a
  :class:`TemplateError` naming the template and where it stopped: the node fails clearly
  instead of calling its tool with a hole in its arguments.

:func:`references` lists the templates of a value (validation); :func:`render` resolves them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Ref", "TemplateError", "TemplateSyntaxError", "lookup_path", "references", "render"]

#: ``{{…}}`` with no ``}}`` inside: "{{a}} + {{b}}" is two templates, never one spanning both.
_TEMPLATE = re.compile(r"\{\{((?:(?!\}\}).)*)\}\}", re.DOTALL)
_HEAD = re.compile(r"\s*([A-Za-z0-9_][A-Za-z0-9_-]{0,127})")
_SEGMENT = re.compile(r"\.([A-Za-z0-9_-]+)|\[\s*(-?\d+)\s*\]|\[\s*\"((?:[^\"\\]|\\.)*)\"\s*\]")
_MAX_DEPTH = 64
_MAX_SHOWN = 80

PathPart = str | int


class TemplateError(ValueError):
    """A template could not be resolved (missing field, index out of range, not upstream)."""


class TemplateSyntaxError(TemplateError):
    """A ``{{…}}`` that is not a template of the plan format."""


@dataclass(frozen=True, slots=True)
class Ref:
    """One template: ``node`` is the node id (``None`` for ``params``), ``path`` the steps
    after ``result`` (or after ``params``), ``text`` the template as written."""

    node: str | None
    path: tuple[PathPart, ...]
    text: str


def parse_ref(inner: str) -> Ref:
    """The :class:`Ref` of the text between ``{{`` and ``}}``; ``TemplateSyntaxError``."""
    text = "{{" + inner + "}}"
    head = _HEAD.match(inner)
    if head is None:
        raise TemplateSyntaxError(
            f"{_show(text)} is not a template: expected NODE.result… or params.NAME"
        )
    path: list[PathPart] = []
    pos = head.end()
    rest = inner.rstrip()
    while pos < len(rest):
        seg = _SEGMENT.match(rest, pos)
        if seg is None:
            raise TemplateSyntaxError(
                f"{_show(text)}: cannot read the path at {rest[pos : pos + 20]!r}"
            )
        key, index, quoted = seg.groups()
        if key is not None:
            path.append(key)
        elif index is not None:
            path.append(int(index))
        else:
            path.append(json.loads(f'"{quoted}"'))
        pos = seg.end()
    name = head.group(1)
    if name == "params":
        if not path or not isinstance(path[0], str):
            raise TemplateSyntaxError(
                f"{_show(text)}: name the parameter, as in {{{{params.city}}}}"
            )
        return Ref(None, tuple(path), text)
    if not path or path[0] != "result":
        raise TemplateSyntaxError(
            f"{_show(text)}: a node's value is its result, as in {{{{{name}.result.field}}}}"
        )
    return Ref(name, tuple(path[1:]), text)


def references(value: Any) -> Iterator[Ref]:
    """Every template in ``value`` (strings inside dicts and lists, keys excluded);
    ``TemplateSyntaxError`` for a malformed one."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "{{" in item:
                for match in _TEMPLATE.finditer(item):
                    yield parse_ref(match.group(1))
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def render(value: Any, resolve: Callable[[Ref], Any]) -> Any:
    """``value`` with every template replaced through ``resolve(ref)`` (which raises
    ``TemplateError`` for what it cannot give); a new value, ``value`` is not changed."""
    return _render(value, resolve, 0)


def _render(value: Any, resolve: Callable[[Ref], Any], depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise TemplateError("the params are nested too deeply")
    if isinstance(value, str):
        if "{{" not in value:
            return value
        whole = _TEMPLATE.fullmatch(value)
        if whole is not None:
            return resolve(parse_ref(whole.group(1)))
        return _TEMPLATE.sub(lambda m: _as_text(resolve(parse_ref(m.group(1)))), value)
    if isinstance(value, Mapping):
        return {k: _render(v, resolve, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_render(v, resolve, depth + 1) for v in value]
    return value


def lookup_path(root: Any, ref: Ref, *, what: str) -> Any:
    """Follow ``ref.path`` into ``root`` — a node's result, or the plan's params for a
    ``params`` template — (``what`` names the root in errors: "the result of node n1");
    ``TemplateError`` saying where it stopped."""
    value = root
    walked = ""
    for part in ref.path:
        if isinstance(part, int):
            if not isinstance(value, list):
                raise TemplateError(
                    f"{_show(ref.text)}: {what}{walked} is {_kind(value)}, not a list"
                )
            if not -len(value) <= part < len(value):
                raise TemplateError(
                    f"{_show(ref.text)}: index [{part}] is out of range — {what}{walked} has "
                    f"{len(value)} item(s)"
                )
            value = value[part]
            walked += f"[{part}]"
            continue
        if not isinstance(value, Mapping):
            raise TemplateError(
                f"{_show(ref.text)}: {what}{walked} is {_kind(value)}, not an object"
            )
        if part not in value:
            keys = ", ".join(sorted(map(str, value))[:10]) or "none"
            raise TemplateError(
                f"{_show(ref.text)}: {what}{walked} has no field {part!r} (fields: {keys})"
            )
        value = value[part]
        walked += f".{part}"
    return value


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _show(text: str) -> str:
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"
