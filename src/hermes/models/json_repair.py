"""A lenient JSON loader for what language models write when they mean JSON.

Models (and the servers in front of them) emit "almost JSON": trailing commas, single-quoted
strings, Python literals (``True``/``False``/``None``), unquoted keys, ``//`` comments, raw
newlines inside strings, and whole values wrapped in a Markdown code fence. :func:`loads_lenient`
tries the strict parser first (the common case costs one ``json.loads``) and only then runs one
small repair pass before parsing again.

Why not a library such as ``json-repair``: those also "complete" truncated JSON (closing open
strings and brackets). For tool arguments that turns a cut-off answer into a call with silently
wrong values, against DESIGN principle 1 ("an honest failure beats a wrong success"). The repairs
below only rewrite syntax whose meaning is unambiguous, and the code is small enough to own.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["loads_lenient", "strip_code_fence"]

_FENCE_RE = re.compile(r"^```[A-Za-z0-9_+-]*[ \t]*\r?\n?(.*?)\r?\n?[ \t]*```$", re.DOTALL)
_WORD_RE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_LITERALS = {"True": "true", "False": "false", "None": "null"}
# Escapes JSON understands after a backslash; any other one is kept as a literal backslash.
_JSON_ESCAPES = frozenset('"\\/bfnrtu')
_WHITESPACE = " \t\r\n"


def strip_code_fence(text: str) -> str:
    """``text`` without surrounding whitespace and one enclosing Markdown code fence, if any."""
    text = text.strip()
    if text.startswith("```"):
        match = _FENCE_RE.match(text)
        if match is not None:
            return match.group(1).strip()
    return text


def loads_lenient(text: str) -> Any:
    """Parse ``text`` as JSON, repairing the usual model mistakes first if needed.

    Accepts strict JSON plus: a Markdown code fence around the value, trailing commas,
    single-quoted strings, ``True``/``False``/``None``, unquoted object keys, ``//`` and
    ``/* */`` comments, raw control characters and unknown escapes inside strings.
    Never completes truncated input.

    Raises:
        ValueError: the text is not JSON even after repair (the message says why).
    """
    if not isinstance(text, str):
        raise ValueError(f"expected a JSON string, got {type(text).__name__}")
    try:
        return json.loads(text)
    except ValueError:
        pass  # not strict JSON: the repair pass below gets its chance
    except RecursionError:
        raise ValueError("not valid JSON: nested too deeply") from None
    candidate = strip_code_fence(text)
    if not candidate:
        raise ValueError("empty JSON text")
    try:
        repaired = _repair(candidate)
        return json.loads(repaired)
    except ValueError as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise ValueError("not valid JSON: nested too deeply") from None


def _repair(text: str) -> str:
    """One pass over ``text`` rewriting lenient syntax into strict JSON (see loads_lenient)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in "\"'":
            i = _copy_string(text, i, out)
        elif char == ",":
            following = _skip_blank(text, i + 1)
            if following >= n or text[following] not in "}]":
                out.append(",")  # a trailing comma (before } or ]) is dropped
            i += 1
        elif char == "/" and i + 1 < n and text[i + 1] in "/*":
            i = _skip_comment(text, i)
        elif char.isalpha() or char in "_$":
            match = _WORD_RE.match(text, i)
            word = match.group(0) if match else char
            i += len(word)
            literal = _LITERALS.get(word)
            if literal is not None:
                out.append(literal)  # a Python literal
            elif _skip_blank(text, i) < n and text[_skip_blank(text, i)] == ":":
                out.append(f'"{word}"')  # an unquoted key
            else:
                out.append(word)  # NaN, Infinity, an exponent, or garbage json.loads reports
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _copy_string(text: str, start: int, out: list[str]) -> int:
    """Copy the string literal at ``start`` as a double-quoted JSON string; return the end."""
    quote = text[start]
    parts = ['"']
    i, n = start + 1, len(text)
    while i < n:
        char = text[i]
        if char == "\\" and i + 1 < n:
            escaped = text[i + 1]
            if escaped == "'":
                parts.append("'")
            elif escaped in _JSON_ESCAPES:
                parts.append(char + escaped)
            else:
                parts.append("\\\\" + escaped)
            i += 2
            continue
        if char == quote:
            parts.append('"')
            out.append("".join(parts))
            return i + 1
        if char == '"':
            parts.append('\\"')  # a double quote inside a single-quoted string
        elif char < " ":
            parts.append(f"\\u{ord(char):04x}")  # raw newline/tab inside a string
        else:
            parts.append(char)
        i += 1
    raise ValueError(f"unterminated string starting at offset {start}")


def _skip_blank(text: str, i: int) -> int:
    """The index of the first non-whitespace character at or after ``i``."""
    n = len(text)
    while i < n and text[i] in _WHITESPACE:
        i += 1
    return i


def _skip_comment(text: str, i: int) -> int:
    """The index just past the ``//`` or ``/* */`` comment starting at ``i``."""
    if text[i + 1] == "/":
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    end = text.find("*/", i + 2)
    if end < 0:
        raise ValueError(f"unterminated comment starting at offset {i}")
    return end + 2
