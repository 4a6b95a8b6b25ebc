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

__all__ = ["MAX_REPAIR_CHARS", "lenient_value_end", "loads_lenient", "strip_code_fence"]

#: Longer texts are parsed as strict JSON only (see loads_lenient).
MAX_REPAIR_CHARS = 256 * 1024

_FENCE_OPEN = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\r?\n?")
_WORD_RE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_LITERALS = {"True": "true", "False": "false", "None": "null"}
#: Brackets and quotes: what lenient_value_end looks at.
_STRUCTURE = re.compile(r"[{}\[\]\"']")
_STRINGS = {  # unrolled, possessive: an unterminated megabyte string fails without backtracking
    '"': re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL),
    "'": re.compile(r"'[^'\\]*+(?:\\.[^'\\]*+)*+'", re.DOTALL),
}
#: Deeper nesting is not a tool call (json.loads would refuse it anyway).
MAX_DEPTH = 256
#: Where the repair pass has something to decide: quotes, commas, comments, words.
_SPECIAL = re.compile(r"[\"',/A-Za-z_$]")
#: Inside a string: the closing quote, an escape, a double quote or a control character.
_STRING_STOPS = {
    '"': re.compile(r'[\\"\x00-\x1f]'),
    "'": re.compile(r"[\\'\"\x00-\x1f]"),
}
# Escapes JSON understands after a backslash; any other one is kept as a literal backslash.
_JSON_ESCAPES = frozenset('"\\/bfnrtu')
_WHITESPACE = " \t\r\n"


def strip_code_fence(text: str) -> str:
    """``text`` without surrounding whitespace and one enclosing Markdown code fence, if any."""
    text = text.strip()
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        # An anchored opening and an endswith test: a lazy regex over the whole text would
        # retry its ending at every position of a long unclosed fence.
        opening = _FENCE_OPEN.match(text)
        if opening is not None and opening.end() <= len(text) - 3:
            return text[opening.end() : -3].strip()
    return text


def loads_lenient(text: str) -> Any:
    """Parse ``text`` as JSON, repairing the usual model mistakes first if needed.

    Accepts strict JSON plus: a Markdown code fence around the value, trailing commas,
    single-quoted strings, ``True``/``False``/``None``, unquoted object keys, ``//`` and
    ``/* */`` comments, raw control characters and unknown escapes inside strings.
    Never completes truncated input. Texts over :data:`MAX_REPAIR_CHARS` must be strict JSON.

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
    if len(candidate) > MAX_REPAIR_CHARS:
        # The repair pass is linear but runs Python code per token: past this size only
        # strict JSON is read, so a megabyte of garbage costs milliseconds, not seconds.
        raise ValueError(f"not valid JSON, and too long to repair ({len(candidate):,} characters)")
    try:
        repaired = _repair(candidate)
        return json.loads(repaired)
    except ValueError as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise ValueError("not valid JSON: nested too deeply") from None


def lenient_value_end(text: str, start: int, stop: int | None = None) -> int | None:
    """The index just past the object or array that starts at ``text[start]`` and may be
    written leniently (single quotes, comments aside), or None when it does not close before
    ``stop``. Brackets inside strings do not count; runs between brackets and quotes are
    skipped by a regex, so a long string or a long tail after the value costs little.
    """
    stop = len(text) if stop is None else stop
    if start >= stop or text[start] not in "{[":
        return None
    depth = 0
    i = start
    while i < stop:
        special = _STRUCTURE.search(text, i, stop)
        if special is None:
            return None
        i = special.start()
        char = text[i]
        if char in "\"'":
            string = _STRINGS[char].match(text, i, stop)
            if string is None:
                return None  # unterminated string
            i = string.end()
            continue
        depth += 1 if char in "{[" else -1
        i += 1
        if depth == 0:
            return i
        if depth > MAX_DEPTH:
            return None
    return None


def _repair(text: str) -> str:
    """One pass over ``text`` rewriting lenient syntax into strict JSON (see loads_lenient).

    Runs of characters that need no rewriting (digits, brackets, blanks, the inside of a
    string) are found with a regex and copied whole, so a megabyte of model output costs
    milliseconds, not a Python loop per character.
    """
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        special = _SPECIAL.search(text, i)
        if special is None:
            out.append(text[i:])
            break
        if special.start() > i:
            out.append(text[i : special.start()])
            i = special.start()
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
    stops = _STRING_STOPS[quote]
    while i < n:
        stop = stops.search(text, i)
        if stop is None:
            break
        if stop.start() > i:
            parts.append(text[i : stop.start()])
            i = stop.start()
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
