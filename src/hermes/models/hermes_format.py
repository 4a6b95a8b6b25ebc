"""The Hermes (NousResearch) tool-calling prompt format, for servers without a tool parser.

The model is shown its tools inside ``<tools> ... </tools>`` in the system prompt and answers a
call as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``; results come back as
``<tool_response>{"name": ..., "content": ...}</tool_response>`` in a user turn. Qwen 2.5/3 and
the Hermes 2/3 models are trained on this format.

* :func:`parse_tool_calls` reads a model's answer (:mod:`hermes.models.call_parser`; with
  the offered tool names also the other call shapes real models emit). It never raises: what
  it cannot use is skipped and described in ``ParsedOutput.errors``.
* :func:`render_tools_prompt` writes the system-prompt section offering the tools.
* :func:`to_hermes_messages` turns OpenAI chat-format messages (assistant ``tool_calls``,
  ``role: tool`` results) into the plain-text turns a Hermes-format model expects.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from typing import Any

from hermes.models.base import ToolSpec
from hermes.models.call_parser import (
    CALL_CLOSE,
    CALL_OPEN,
    ParsedOutput,
    ParsedToolCall,
    parse_tool_calls,
)
from hermes.models.json_repair import loads_lenient

__all__ = [
    "CALL_CLOSE",
    "CALL_OPEN",
    "ParsedOutput",
    "ParsedToolCall",
    "parse_tool_calls",
    "render_tools_prompt",
    "to_hermes_messages",
]

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
