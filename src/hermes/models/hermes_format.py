"""The Hermes (NousResearch) tool-calling prompt format, for servers without a tool parser.

The model is shown its tools inside ``<tools> ... </tools>`` in the system prompt and answers a
call as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``; results come back as
``<tool_response>{"name": ..., "content": ...}</tool_response>`` in a user turn. Qwen 2.5/3 and
the Hermes 2/3 models are trained on this format.

* :func:`parse_tool_calls` reads a model's answer. It never raises: what it cannot use is
  skipped and described in ``ParsedOutput.errors``.
* :func:`render_tools_prompt` writes the system-prompt section offering the tools.
* :func:`to_hermes_messages` turns OpenAI chat-format messages (assistant ``tool_calls``,
  ``role: tool`` results) into the plain-text turns a Hermes-format model expects.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hermes.models.base import ToolSpec
from hermes.models.json_repair import loads_lenient, strip_code_fence

__all__ = [
    "CALL_CLOSE",
    "CALL_OPEN",
    "ParsedOutput",
    "ParsedToolCall",
    "parse_tool_calls",
    "render_tools_prompt",
    "to_hermes_messages",
]

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
_DECODER = json.JSONDecoder()
_BLANK = " \t\r\n"


@dataclass(slots=True)
class ParsedToolCall:
    """One usable tool call found in a model's text."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ParsedOutput:
    """A model's answer split into text and tool calls.

    ``content`` is the text outside the tool-call tags, stripped (None when nothing is left);
    ``errors`` says, one line per problem, which calls were skipped and why.
    """

    content: str | None = None
    tool_calls: list[ParsedToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def parse_tool_calls(text: str) -> ParsedOutput:
    """Split a Hermes-format answer into its text and its ``<tool_call>`` blocks.

    Tolerates several blocks with text before, between and after them; an unclosed last block
    (read to the end of the text); lenient JSON inside a block (see
    :func:`hermes.models.json_repair.loads_lenient`), a code fence around it, a list of calls
    or several objects in one block; ``arguments`` given as a JSON string or under the key
    ``parameters``; an OpenAI-style ``{"function": {...}}`` wrapper. A call without a name or
    whose arguments are not an object is skipped and reported in ``errors``.
    Never raises; a non-string input gives an empty result.
    """
    result = ParsedOutput()
    received: object = text  # callers outside the type checker may pass anything
    if not isinstance(received, str):
        result.errors.append(f"expected text, got {type(received).__name__}")
        return result
    if CALL_OPEN not in text:  # the common plain-text answer: one scan, no copies
        result.content = text.replace(CALL_CLOSE, "").strip() or None
        return result
    outside: list[str] = []
    position = 0
    last_close = text.rfind(CALL_CLOSE)  # lets blocks after it skip searching for one
    block_number = 0
    while True:
        start = text.find(CALL_OPEN, position)
        if start < 0:
            outside.append(text[position:].replace(CALL_CLOSE, ""))
            break
        outside.append(text[position:start].replace(CALL_CLOSE, ""))  # stray closing tags
        block_number += 1
        values, position, problem = _read_block(text, start + len(CALL_OPEN), last_close)
        if problem is not None:
            result.errors.append(f"tool call block {block_number}: {problem}")
        for value in values:
            _add_calls(value, block_number, result)
    result.content = "".join(outside).strip() or None
    return result


def _read_block(text: str, body_start: int, last_close: int) -> tuple[list[Any], int, str | None]:
    """Decode the block whose body starts at ``body_start``.

    Returns the decoded JSON values, the index just past the block, and a problem if the
    body could not be decoded. The fast path decodes strict JSON in place, so a closing tag
    inside a string argument does not end the block early.
    """
    values, end = _decode_in_place(text, body_start)
    if values:
        after = _skip_blank(text, end)
        while after < len(text) and text[after] in "}]":
            after = _skip_blank(text, after + 1)  # small models often add a closing brace too many
        if text.startswith(CALL_CLOSE, after):
            return values, after + len(CALL_CLOSE), None
        if after >= len(text) or text.startswith(CALL_OPEN, after) or last_close < after:
            # An unclosed block: it ends at the end of the text, at the next block, or where the
            # JSON ends (what follows is text for the user).
            return values, after, None
    # Slow path: the body is everything up to the closing tag (or the next opening tag, or the
    # end of the text), then decoded leniently.
    close = text.find(CALL_CLOSE, body_start) if last_close >= body_start else -1
    reopen = text.find(CALL_OPEN, body_start)
    if close < 0 or 0 <= reopen < close:
        body_end = reopen if reopen >= 0 else len(text)
        block_end = body_end
    else:
        body_end, block_end = close, close + len(CALL_CLOSE)
    body = strip_code_fence(text[body_start:body_end])
    if not body:
        return [], block_end, "empty block"
    try:
        return [loads_lenient(body)], block_end, None
    except ValueError as exc:
        return [], block_end, f"invalid JSON ({exc})"


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
    while True:
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


def _add_calls(value: Any, block_number: int, result: ParsedOutput) -> None:
    """Append the call(s) in one decoded value to ``result`` (errors for unusable ones)."""
    if isinstance(value, list):
        for item in value:
            _add_calls(item, block_number, result)
        return
    where = f"tool call block {block_number}"
    if not isinstance(value, dict):
        result.errors.append(f"{where}: expected a JSON object, got {_json_type(value)}")
        return
    if "name" not in value and isinstance(value.get("function"), dict):
        value = value["function"]  # {"type": "function", "function": {...}} (OpenAI shape)
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        result.errors.append(f"{where}: missing tool name")
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
                result.errors.append(f"{where} ({name}): arguments are not valid JSON ({exc})")
                return
    if not isinstance(arguments, dict):
        result.errors.append(
            f"{where} ({name}): arguments must be a JSON object, got {_json_type(arguments)}"
        )
        return
    result.tool_calls.append(ParsedToolCall(name=name, arguments=arguments))


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number" if isinstance(value, int | float) else "value")


def _skip_blank(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in _BLANK:
        i += 1
    return i


_PROMPT_HEAD = (
    "# Tools\n\n"
    "You may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
)
_PROMPT_TAIL = (
    "\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags, one block per call:\n"
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>\n'
    "Results come back inside <tool_response></tool_response> tags. "
    "Do not invent results; wait for them."
)


def render_tools_prompt(tools: Iterable[ToolSpec]) -> str:
    """The system-prompt section offering ``tools`` and asking for ``<tool_call>`` blocks.

    Each tool is one line of JSON in the OpenAI function format (Qwen/Hermes chat templates
    render tools the same way, so models recognise it).
    """
    lines = [json.dumps(spec.to_openai(), ensure_ascii=False) for spec in tools]
    return _PROMPT_HEAD + "\n".join(lines) + _PROMPT_TAIL


def to_hermes_messages(
    messages: list[dict[str, Any]], tools: Iterable[ToolSpec] | None = None
) -> list[dict[str, Any]]:
    """Convert OpenAI chat-format messages into plain-text Hermes-format turns.

    An assistant message's ``tool_calls`` become ``<tool_call>`` blocks after its text; each
    ``role: tool`` result becomes a ``<tool_response>`` block in a user message (consecutive
    results share one message). With ``tools``, :func:`render_tools_prompt` is appended to the
    first system message, or a system message is put first. The input is not modified.
    """
    call_names: dict[str, str] = {}
    converted: list[dict[str, Any]] = []
    pending_responses: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            pending_responses.append(_tool_response_block(message, call_names))
            continue
        if pending_responses:
            converted.append({"role": "user", "content": "\n".join(pending_responses)})
            pending_responses = []
        if role == "assistant" and message.get("tool_calls"):
            converted.append(_assistant_text(message, call_names))
        else:
            converted.append(message)
    if pending_responses:
        converted.append({"role": "user", "content": "\n".join(pending_responses)})
    tool_list = list(tools) if tools is not None else []
    if tool_list:
        _add_tools_prompt(converted, render_tools_prompt(tool_list))
    return converted


def _assistant_text(message: dict[str, Any], call_names: dict[str, str]) -> dict[str, Any]:
    """An assistant message with ``tool_calls`` as text with ``<tool_call>`` blocks."""
    parts = [_text_of(message.get("content"))] if message.get("content") else []
    for call in message.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        if not isinstance(function, dict):
            function = {}
        name = str(function.get("name") or "")
        if call.get("id"):
            call_names[str(call["id"])] = name
        raw_arguments = function.get("arguments")
        arguments: Any = raw_arguments
        if isinstance(raw_arguments, str):
            try:
                arguments = loads_lenient(raw_arguments) if raw_arguments.strip() else {}
            except ValueError:
                arguments = raw_arguments  # shown to the model as it wrote it
        payload = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
        parts.append(f"{CALL_OPEN}\n{payload}\n{CALL_CLOSE}")
    return {"role": "assistant", "content": "\n".join(parts)}


def _tool_response_block(message: dict[str, Any], call_names: dict[str, str]) -> str:
    """One ``<tool_response>`` block for a ``role: tool`` message."""
    name = message.get("name") or call_names.get(str(message.get("tool_call_id")), "")
    content: Any = _text_of(message.get("content"))
    if content[:1] in ("{", "["):
        # Tool results are JSON objects (ToolResult.to_model_text); embed them as JSON rather
        # than as a string full of escaped quotes.
        with contextlib.suppress(ValueError):  # not JSON after all: sent as the plain string
            content = json.loads(content)
    payload = json.dumps({"name": name, "content": content}, ensure_ascii=False, default=str)
    return f"<tool_response>\n{payload}\n</tool_response>"


def _text_of(content: Any) -> str:
    """Message content as text (joins the text parts of a content-part list)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


def _add_tools_prompt(messages: list[dict[str, Any]], prompt: str) -> None:
    for index, message in enumerate(messages):
        if message.get("role") == "system":
            text = _text_of(message.get("content"))
            merged = f"{text}\n\n{prompt}" if text else prompt
            messages[index] = {**message, "content": merged}
            return
    messages.insert(0, {"role": "system", "content": prompt})
