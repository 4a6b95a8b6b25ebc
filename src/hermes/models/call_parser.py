"""Tool calls in a model's text: ``<tool_call>`` blocks, and the other shapes real models emit.

Models served without a tool parser answer calls in the Hermes format (``<tool_call>{"name":
…, "arguments": …}</tool_call>``) — or in the shape their own training used (DESIGN "Public
contracts"). With the offered tool names, :func:`parse_tool_calls` also reads:

* ``<function=NAME>{…}</function>`` (Llama 3.1 custom tools) and ``<function=NAME>
  <parameter=KEY>value</parameter>…</function>`` (Qwen3-Coder), also inside ``<tool_call>``;
* ``<function name="NAME">…</function>``, with a JSON body or ``<parameter name="KEY">`` tags;
* ``<tools>{…}</tools>`` (a model echoing the prompt's tag), read like ``<tool_call>``;
* a Markdown code fence holding nothing but a call object (or a list of them);
* a bare call object (or list) that is the whole message, also after Mistral's
  ``[TOOL_CALLS]`` or Llama's ``<|python_tag|>``; ``{"name", "parameters"}`` and the OpenAI
  ``{"type": "function", "function": {…}}`` wrapper included.

Those shapes are calls only when they name an offered tool, and never when they carry a
``description`` (a tool definition echoed back). Prose that merely contains call JSON is
text: an honest "I did not understand" beats running something the model only talked about.
``<tool_call>`` blocks are explicit and are calls whatever they name (an unknown name gets an
``unknown_tool`` result the model learns from).

Work is bounded: blocks are found with ``str.find``, JSON is decoded in place, lenient repair
stops at :data:`~hermes.models.json_repair.MAX_REPAIR_CHARS`, and past :data:`MAX_BLOCKS`
blocks or :data:`MAX_CALLS` calls the rest is ignored (and said so) — a megabyte of answer costs
milliseconds.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes.models.json_repair import lenient_value_end, loads_lenient, strip_code_fence

__all__ = [
    "CALL_CLOSE",
    "CALL_OPEN",
    "MAX_CALLS",
    "ParsedOutput",
    "ParsedToolCall",
    "parse_tool_calls",
]

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
TOOLS_OPEN = "<tools>"
TOOLS_CLOSE = "</tools>"
FUNCTION_CLOSE = "</function>"
#: More calls than this in one answer are ignored (with one error line).
MAX_CALLS = 128
#: Tag blocks read per answer; the rest of the text is left as it is.
MAX_BLOCKS = 256
#: Error lines kept; the last one says how many more there were.
MAX_ERRORS = 20
_DECODER = json.JSONDecoder()
_BLANK = " \t\r\n"
#: Prefixes some models put before a whole-message JSON call.
_PREFIXES = ("[TOOL_CALLS]", "<|python_tag|>")
_MARKERS = (CALL_OPEN, TOOLS_OPEN, "<function", "```", *_PREFIXES)
_FUNCTION_OPEN = re.compile(
    r"<function(?:=(?P<bare>[^>\s]+)|\s+name\s*=\s*(?P<q>[\"'])(?P<quoted>[^\"'>]*)(?P=q))\s*>"
)
_PARAMETER = re.compile(
    r"<parameter(?:=(?P<bare>[^>\s]+)|\s+name\s*=\s*(?P<q>[\"'])(?P<quoted>[^\"'>]*)(?P=q))\s*>"
)
_FENCE = re.compile(r"```[ \t]*(?:json|tool_call|tool_code|tool|javascript)?[ \t]*\r?\n")


@dataclass(slots=True)
class ParsedToolCall:
    """One usable tool call found in a model's text."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ParsedOutput:
    """A model's answer split into text and tool calls.

    ``content`` is the text outside the tool calls, stripped (None when nothing is left);
    ``errors`` says, one line per problem, which calls were skipped and why.
    """

    content: str | None = None
    tool_calls: list[ParsedToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class _Collector:
    """Calls and errors of one answer, both bounded."""

    def __init__(self, names: frozenset[str] | None) -> None:
        self.names = names
        self.calls: list[ParsedToolCall] = []
        self.errors: list[str] = []
        self.dropped_errors = 0
        self.dropped_calls = 0

    def error(self, line: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(line)
        else:
            self.dropped_errors += 1

    def add(self, call: ParsedToolCall) -> None:
        if len(self.calls) < MAX_CALLS:
            self.calls.append(call)
        else:
            self.dropped_calls += 1

    def result(self, content: str) -> ParsedOutput:
        if self.dropped_calls:
            self.error(f"{self.dropped_calls} more calls than {MAX_CALLS} were ignored")
        errors = self.errors
        if self.dropped_errors:
            errors = [*errors, f"… and {self.dropped_errors} more problems"]
        return ParsedOutput(content.strip() or None, self.calls, errors)


def parse_tool_calls(text: str, *, tool_names: Iterable[str] | None = None) -> ParsedOutput:
    """Split a model's answer into its text and its tool calls (see the module docstring).

    Without ``tool_names`` only ``<tool_call>`` blocks are calls. ``<tool_call>`` blocks
    tolerate text before, between and after them; an unclosed last block (read to the end of
    the text); lenient JSON, a code fence, a list of calls or several objects in one block;
    ``arguments`` as a JSON string or under ``parameters``; the OpenAI ``{"function": {…}}``
    wrapper. A call without a name or whose arguments are not an object is skipped and
    reported in ``errors``. Never raises; a non-string input gives an empty result.
    """
    received: object = text  # callers outside the type checker may pass anything
    if not isinstance(received, str):
        return ParsedOutput(errors=[f"expected text, got {type(received).__name__}"])
    if CALL_OPEN in text:
        found = _Collector(None if tool_names is None else frozenset(tool_names))
        return found.result(_tool_call_blocks(text, found))
    plain = ParsedOutput(text.replace(CALL_CLOSE, "").strip() or None)
    if tool_names is None or (
        text.lstrip()[:1] not in ("{", "[") and not any(marker in text for marker in _MARKERS)
    ):
        return plain  # the common plain-text answer: a few scans, no copies
    names = frozenset(tool_names)
    if not names:
        return plain
    found = _Collector(names)
    whole = _whole_message(text, found)
    if whole == "calls":
        return found.result("")
    if whole == "json":
        return plain  # a JSON answer (structured output), not a call: tags in it are data
    return found.result(_other_shapes(text, found))


# <tool_call> and <tools> blocks ------------------------------------------------------------
def _tool_call_blocks(
    text: str,
    found: _Collector,
    opening: str = CALL_OPEN,
    closing: str = CALL_CLOSE,
    only_offered: bool = False,
) -> str:
    """The text outside the blocks; their calls go to ``found``.

    ``only_offered``: a block is a call only when it names an offered tool (``<tools>``);
    otherwise it stays text.
    """
    outside: list[str] = []
    position = 0
    last_close = text.rfind(closing)  # lets blocks after it skip searching for one
    block_number = 0
    while True:
        start = text.find(opening, position)
        if start < 0 or block_number >= MAX_BLOCKS:
            outside.append(text[position:].replace(closing, ""))
            break
        outside.append(text[position:start].replace(closing, ""))  # stray closing tags
        block_number += 1
        values, end, problem = _read_block(text, start + len(opening), last_close, opening, closing)
        where = f"tool call block {block_number}"
        if only_offered:
            calls = _offered_calls(values, where, found)
            if calls:
                for call in calls:
                    found.add(call)
            else:
                outside.append(text[start:end])
            position = end
            continue
        if problem is not None:
            found.error(f"{where}: {problem}")
        for value in values:
            _add_calls(value, where, found)
        position = end
    return "".join(outside)


def _read_block(
    text: str, body_start: int, last_close: int, opening: str, closing: str
) -> tuple[list[Any], int, str | None]:
    """Decode the block whose body starts at ``body_start``.

    Returns the decoded JSON values (or call objects from a ``<function=…>`` body), the index
    just past the block, and a problem if the body could not be decoded. The fast path
    decodes strict JSON in place, so a closing tag inside a string argument does not end the
    block early.
    """
    values, end = _decode_in_place(text, body_start)
    if values:
        after = _skip_blank(text, end)
        while after < len(text) and text[after] in "}]":
            after = _skip_blank(text, after + 1)  # small models often add a closing brace too many
        if text.startswith(closing, after):
            return values, after + len(closing), None
        if after >= len(text) or text.startswith(opening, after) or last_close < after:
            # An unclosed block: it ends at the end of the text, at the next block, or where the
            # JSON ends (what follows is text for the user).
            return values, after, None
    # Slow path: the body is everything up to the closing tag (or the next opening tag, or the
    # end of the text), then decoded leniently.
    close = text.find(closing, body_start) if last_close >= body_start else -1
    reopen = text.find(opening, body_start)
    if close < 0 or 0 <= reopen < close:
        body_end = reopen if reopen >= 0 else len(text)
        block_end = body_end
    else:
        body_end, block_end = close, close + len(closing)
    body = strip_code_fence(text[body_start:body_end])
    if not body:
        return [], block_end, "empty block"
    function = _FUNCTION_OPEN.match(body)
    if function is not None:  # Qwen3-Coder: <tool_call><function=…>…</function></tool_call>
        arguments = _function_arguments(body[function.end() :].replace(FUNCTION_CLOSE, "", 1))
        if isinstance(arguments, str):
            return [], block_end, arguments
        return [{"name": _function_name(function), "arguments": arguments}], block_end, None
    try:
        return [loads_lenient(body)], block_end, None
    except ValueError as exc:
        problem = f"invalid JSON ({exc})"
    if block_end == body_end:
        # Unclosed (no closing tag of its own: the text ends, or the next block opens), and
        # more than JSON follows: the call is the leading (lenient) value, the rest is text
        # for the user.
        start = _skip_blank(text, body_start)
        value_end = lenient_value_end(text, start, body_end)
        if value_end is not None:
            try:
                return [loads_lenient(text[start:value_end])], value_end, None
            except ValueError:
                pass  # the first problem is the one worth reporting
    return [], block_end, problem


def _decode_in_place(text: str, i: int) -> tuple[list[Any], int]:
    """Strict JSON values (separated by blanks or commas) starting at ``i``, and their end."""
    values: list[Any] = []
    i = _skip_blank(text, i)
    fenced = text.startswith("```", i)
    if fenced:
        newline = text.find("\n", i)
        if newline < 0:
            return [], i
        i = newline + 1
    while len(values) <= MAX_CALLS:
        i = _skip_blank(text, i)
        if i >= len(text) or text[i] not in "{[":
            break
        try:
            value, i = _DECODER.raw_decode(text, i)
        except (ValueError, RecursionError):
            return [], i
        values.append(value)
        i = _skip_blank(text, i)
        if i < len(text) and text[i] == ",":
            i += 1
    if fenced:
        if not text.startswith("```", i):
            return [], i
        i += 3
    return values, i


# the other shapes ---------------------------------------------------------------------------
def _whole_message(text: str, found: _Collector) -> Literal["calls", "json", "other"]:
    """``calls`` when the whole message (after a known prefix) is JSON of offered calls (they
    go to ``found``), ``json`` when it is JSON of anything else, else ``other``."""
    body = text.strip()
    for prefix in _PREFIXES:
        if body.startswith(prefix):
            body = body[len(prefix) :].lstrip()
            break
    if body[:1] not in ("{", "["):
        return "other"
    try:
        value = _DECODER.decode(body)
    except (ValueError, RecursionError):
        try:
            value = loads_lenient(body)
        except ValueError:
            return "other"
    calls = _offered_calls([value], "the answer", found)
    for call in calls:
        found.add(call)
    return "calls" if calls else "json"


def _other_shapes(text: str, found: _Collector) -> str:
    """``<tools>`` blocks, then ``<function…>`` tags, then fences: calls naming offered tools
    go to ``found``; the text outside them is returned."""
    if TOOLS_OPEN in text:
        text = _tool_call_blocks(text, found, TOOLS_OPEN, TOOLS_CLOSE, only_offered=True)
    if "<function" in text:
        text = _function_tags(text, found)
    if "```" in text:
        text = _fences(text, found)
    return text


def _function_tags(text: str, found: _Collector) -> str:
    outside: list[str] = []
    position = 0
    blocks = 0
    while blocks < MAX_BLOCKS:
        match = _FUNCTION_OPEN.search(text, position)
        if match is None:
            break
        blocks += 1
        close = text.find(FUNCTION_CLOSE, match.end())
        reopen = _FUNCTION_OPEN.search(text, match.end())
        unclosed = close < 0 or (reopen is not None and reopen.start() < close)
        if unclosed:
            body_end = block_end = reopen.start() if reopen is not None else len(text)
        else:
            body_end, block_end = close, close + len(FUNCTION_CLOSE)
        name = _function_name(match)
        if name not in (found.names or ()):
            outside.append(text[position:block_end])  # not an offered tool: just text
            position = block_end
            continue
        outside.append(text[position : match.start()])
        arguments = _function_arguments(text[match.end() : body_end])
        if isinstance(arguments, str) and unclosed:
            # Unclosed, and more than JSON follows: the arguments are the leading value and
            # the rest is text for the user.
            start = _skip_blank(text, match.end())
            end = lenient_value_end(text, start, body_end)
            if end is not None and not isinstance(
                lenient := _function_arguments(text[start:end]), str
            ):
                arguments, block_end = lenient, end
        if isinstance(arguments, str):
            found.error(f"function tag ({name}): {arguments}")
        else:
            found.add(ParsedToolCall(name, arguments))
        position = block_end
    outside.append(text[position:])
    return "".join(outside)


def _function_name(match: re.Match[str]) -> str:
    return (match.group("bare") or match.group("quoted") or "").strip()


def _function_arguments(text: str) -> dict[str, Any] | str:
    """The arguments in the body of a ``<function…>`` tag: a JSON object, or ``<parameter…>``
    tags; a problem (str) otherwise."""
    body = strip_code_fence(text.strip())
    if not body:
        return {}
    if body.startswith("<parameter"):
        return _parameters(body)
    try:
        value = _DECODER.decode(body)
    except (ValueError, RecursionError):
        try:
            value = loads_lenient(body)
        except ValueError as exc:
            return f"arguments are {exc}"
    if not isinstance(value, dict):
        return f"arguments must be a JSON object, got {_json_type(value)}"
    return value


def _parameters(body: str) -> dict[str, Any]:
    """``<parameter=KEY>value</parameter>`` tags as arguments: values stay text (the tool's
    schema coerces them) unless they are a JSON object or array."""
    arguments: dict[str, Any] = {}
    position = 0
    while len(arguments) < 1000:
        match = _PARAMETER.search(body, position)
        if match is None:
            break
        close = body.find("</parameter>", match.end())
        following = _PARAMETER.search(body, match.end())
        end = len(body) if close < 0 else close
        if following is not None and following.start() < end:
            end = following.start()
        value: Any = body[match.end() : end].strip("\r\n")
        if value.strip()[:1] in ("{", "["):
            # Text that looks like JSON but is not is kept as written.
            with contextlib.suppress(ValueError, RecursionError):
                value = _DECODER.decode(value.strip())
        arguments[_function_name(match)] = value
        position = end if close < 0 or end != close else close + len("</parameter>")
    return arguments


def _fences(text: str, found: _Collector) -> str:
    outside: list[str] = []
    position = 0
    blocks = 0
    while blocks < MAX_BLOCKS:
        start = text.find("```", position)
        if start < 0:
            break
        blocks += 1
        opening = _FENCE.match(text, start)
        close = text.find("```", opening.end()) if opening is not None else -1
        if opening is None or close < 0:
            # Not a fence opening a block, or an unclosed one: a call only if all of the rest
            # is one call object.
            body = text[opening.end() :] if opening is not None else ""
            calls = _fence_calls(body, found) if body else []
            if calls:
                outside.append(text[position:start])
                position = len(text)
                break
            outside.append(text[position : start + 3])
            position = start + 3
            continue
        calls = _fence_calls(text[opening.end() : close], found)
        outside.append(text[position:start] if calls else text[position : close + 3])
        position = close + 3
    outside.append(text[position:])
    return "".join(outside)


def _fence_calls(body: str, found: _Collector) -> list[ParsedToolCall]:
    stripped = body.strip()
    if stripped[:1] not in ("{", "["):
        return []
    try:
        value = _DECODER.decode(stripped)
    except (ValueError, RecursionError):
        try:
            value = loads_lenient(stripped)
        except ValueError:
            return []
    calls = _offered_calls([value], "fenced call", found)
    for call in calls:
        found.add(call)
    return calls


def _offered_calls(values: list[Any], where: str, found: _Collector) -> list[ParsedToolCall]:
    """The calls in ``values`` that name an offered tool; [] unless at least one does (then
    call objects naming other tools are reported, not called)."""
    objects = [v for v in _flatten(values) if isinstance(v, dict)]
    candidates = [_unwrap(v) for v in objects]
    offered = [
        c
        for c in candidates
        if isinstance(c.get("name"), str)
        and c["name"].strip() in (found.names or ())
        and "description" not in c
    ]
    if not offered:
        return []
    inner = _Collector(found.names)
    for candidate in candidates:
        if candidate in offered:
            _add_calls(candidate, where, inner)
        elif isinstance(candidate.get("name"), str):
            found.error(f"{where}: tool {candidate['name']!r} is not offered; skipped")
    for line in inner.errors:
        found.error(line)
    return inner.calls


def _flatten(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if isinstance(value, list):
            out.extend(value[: MAX_CALLS + 1])
        elif isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
            out.extend(value["tool_calls"][: MAX_CALLS + 1])  # a whole OpenAI message
        else:
            out.append(value)
    return out


def _unwrap(value: dict[str, Any]) -> dict[str, Any]:
    if "name" not in value and isinstance(value.get("function"), dict):
        return dict(value["function"])  # {"type": "function", "function": {...}} (OpenAI)
    return value


def _add_calls(value: Any, where: str, found: _Collector) -> None:
    """Append the call(s) in one decoded value to ``found`` (errors for unusable ones)."""
    if isinstance(value, list):
        for item in value[: MAX_CALLS + 1]:
            _add_calls(item, where, found)
        return
    if not isinstance(value, dict):
        found.error(f"{where}: expected a JSON object, got {_json_type(value)}")
        return
    value = _unwrap(value)
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        found.error(f"{where}: missing tool name")
        return
    name = name.strip()
    arguments = value.get("arguments", value.get("parameters"))
    if arguments is None:
        arguments = {}
    elif isinstance(arguments, str):
        if not arguments.strip():
            arguments = {}
        else:
            try:
                arguments = loads_lenient(arguments)
            except ValueError as exc:
                found.error(f"{where} ({name}): arguments are not valid JSON ({exc})")
                return
    if not isinstance(arguments, dict):
        found.error(
            f"{where} ({name}): arguments must be a JSON object, got {_json_type(arguments)}"
        )
        return
    found.add(ParsedToolCall(name=name, arguments=arguments))


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number" if isinstance(value, int | float) else "value")


def _skip_blank(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in _BLANK:
        i += 1
    return i
