"""The OpenAI chat-completions wire format of the façade (``openai_compat``): reading a request
body, writing a completion, its stream chunks and its errors (DESIGN.md, HTTP,
"OpenAI-compatible").

Requests are read by hand rather than by a strict model: unknown OpenAI parameters are
accepted and ignored, and every refusal is a 400 naming the field (``param``), which the
``openai`` client raises as ``BadRequestError``. Errors are OpenAI's shape
``{"error": {"message", "type", "param", "code"}}`` — Hermes's ``type`` and ``message`` keys
are the same ones.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi.responses import JSONResponse

from hermes.agent.client_turn import ClientResult, ClientTurn
from hermes.models.base import ToolSpec

#: Roles a request's messages may have (``developer`` is OpenAI's newer ``system``).
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
#: OpenAI's rule for a function name.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: How much of the clients' tool results a results turn's text holds (language, recall).
_RESULTS_TEXT_CHARS = 2000


class WireError(Exception):
    """A request the façade refuses: its status, ``type``, message and the field at fault."""

    def __init__(
        self,
        status: int,
        type_: str,
        message: str,
        *,
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message
        self.param = param
        self.headers = dict(headers or {})


def error_response(
    status: int,
    type_: str,
    message: str,
    *,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """An error in OpenAI's shape (which keeps Hermes's ``type`` and ``message``)."""
    body = {"error": {"message": message, "type": type_, "param": param, "code": type_}}
    return JSONResponse(body, status_code=status, headers=headers)


def bad_request(message: str, param: str | None = None) -> WireError:
    return WireError(400, "invalid_request_error", message, param=param)


@dataclass(slots=True)
class CompletionRequest:
    """What the façade takes from a chat-completions body."""

    #: The new input: a user message's text, or the results of the client's tool calls.
    text: str
    results: tuple[ClientResult, ...]
    #: The messages before the input (they seed a new session).
    history: list[dict[str, Any]]
    tools: tuple[ToolSpec, ...]
    model: str | None
    stream: bool
    include_usage: bool
    user: str | None

    def client_turn(self) -> ClientTurn:
        return ClientTurn(self.tools, self.results, tuple(self.history))


def read_request(raw: bytes) -> CompletionRequest:
    """The body of ``POST /v1/chat/completions``; :class:`WireError` 400 naming what is
    wrong (unknown parameters are ignored)."""
    try:
        body = json.loads(raw)
    except ValueError:
        raise WireError(
            400, "invalid_json", "the body is not valid JSON / 请求体不是合法的 JSON"
        ) from None
    if not isinstance(body, dict):
        raise bad_request("the body must be a JSON object / 请求体必须是 JSON 对象")
    n = body.get("n")
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n != 1):
        raise bad_request(
            f"n must be 1 (one answer per request), got {n!r} / n 只能为 1", param="n"
        )
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad_request(
            "messages must be a non-empty list of chat messages / messages 必须是非空列表",
            param="messages",
        )
    checked = [_message(i, m) for i, m in enumerate(messages)]
    text, results, start = _input(checked)
    model = body.get("model")
    user = body.get("user")
    options = body.get("stream_options")
    return CompletionRequest(
        text=text,
        results=results,
        history=checked[:start],
        tools=_tools(body.get("tools"), body.get("tool_choice")),
        model=model if isinstance(model, str) and model else None,
        stream=body.get("stream") is True,
        include_usage=isinstance(options, dict) and options.get("include_usage") is True,
        user=user if isinstance(user, str) and user else None,
    )


def _message(index: int, message: object) -> dict[str, Any]:
    """One message, checked; ``developer`` becomes ``system`` (what the session keeps)."""
    where = f"messages[{index}]"
    if not isinstance(message, dict):
        raise bad_request(f"{where} must be an object / 消息必须是对象", param=where)
    role = message.get("role")
    if role not in ROLES:
        raise bad_request(
            f"{where}.role is {role!r}; expected one of {', '.join(sorted(ROLES))} / 角色无效",
            param=f"{where}.role",
        )
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        raise bad_request(
            f"{where}.content must be a string or a list of content parts / 内容格式无效",
            param=f"{where}.content",
        )
    if isinstance(content, list) and not all(isinstance(p, dict) for p in content):
        raise bad_request(
            f"{where}.content parts must be objects / 内容片段必须是对象",
            param=f"{where}.content",
        )
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise bad_request(
            f"{where} is a tool result without its tool_call_id / 工具结果缺少 tool_call_id",
            param=f"{where}.tool_call_id",
        )
    if role == "developer":
        return {**message, "role": "system"}
    return message


def text_of(content: object) -> str:
    """The text of a message's content (a string, or the text parts of a list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _refuse_non_text(content: object, index: int) -> None:
    """400 for a new message with parts other than text (an image, audio, a file): the agent
    reads text only, and answering the text alone would answer a question not asked. (Earlier
    messages keep their text: refusing them would refuse every later turn of such a chat.)"""
    if not isinstance(content, list):
        return
    other = sorted({str(p.get("type")) for p in content if p.get("type") != "text"})
    if other:
        raise bad_request(
            f"messages[{index}] has {', '.join(other)} content; this agent reads text only — "
            "send the text alone / 该智能体只接受文本，消息中含有图片、音频或文件",
            param=f"messages[{index}].content",
        )


def _input(messages: list[dict[str, Any]]) -> tuple[str, tuple[ClientResult, ...], int]:
    """The new input of a request — the last user message, or the tool results that end the
    list — and the index where it starts."""
    last = messages[-1]
    if last["role"] == "user":
        _refuse_non_text(last.get("content"), len(messages) - 1)
        text = text_of(last.get("content"))
        if not text.strip():
            raise bad_request(
                "the last message has no text; Hermes takes text messages / 最后一条消息没有文本",
                param=f"messages[{len(messages) - 1}].content",
            )
        return text, (), len(messages) - 1
    if last["role"] != "tool":
        raise bad_request(
            f"the last message is {last['role']!r}; it must be the user's message or the "
            "results of the tool calls / 最后一条消息必须是用户消息或工具结果",
            param=f"messages[{len(messages) - 1}].role",
        )
    start = len(messages)
    while start > 0 and messages[start - 1]["role"] == "tool":
        start -= 1
    results = tuple(
        ClientResult(str(m["tool_call_id"]), text_of(m.get("content"))) for m in messages[start:]
    )
    joined = "\n".join(r.content for r in results).strip()
    return joined[:_RESULTS_TEXT_CHARS] or "(tool results)", results, start


def _tools(tools: object, choice: object) -> tuple[ToolSpec, ...]:
    """The client's tools as specs (none with ``tool_choice: "none"``)."""
    if tools is None or choice == "none":
        return ()
    if not isinstance(tools, list):
        raise bad_request("tools must be a list / tools 必须是列表", param="tools")
    specs: list[ToolSpec] = []
    for index, entry in enumerate(tools):
        where = f"tools[{index}]"
        function = entry.get("function") if isinstance(entry, dict) else None
        if not isinstance(function, dict) or entry.get("type", "function") != "function":
            raise bad_request(
                f"{where} must be {{'type': 'function', 'function': {{...}}}} / 工具格式无效",
                param=where,
            )
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise bad_request(
                f"{where}.function.name must be 1-64 letters, digits, _ or - / 工具名无效",
                param=f"{where}.function.name",
            )
        parameters = function.get("parameters")
        if parameters is None:
            parameters = {"type": "object", "properties": {}}
        if not isinstance(parameters, dict):
            raise bad_request(
                f"{where}.function.parameters must be a JSON Schema object / 参数须为 JSON Schema",
                param=f"{where}.function.parameters",
            )
        description = function.get("description")
        specs.append(
            ToolSpec(name, description if isinstance(description, str) else "", parameters)
        )
    return tuple(specs)


# -- responses ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reply:
    """What a finished turn answers, in the façade's terms."""

    completion_id: str
    model: str
    content: str
    client_calls: list[dict[str, Any]]
    finish_reason: str
    usage: dict[str, int]
    hermes: dict[str, Any]


def reply_of(run: Mapping[str, Any], completion_id: str, model: str) -> Reply:
    """A :class:`Reply` from a turn's ``run --json`` object (its ``reply`` event)."""
    calls = list(run.get("client_tool_calls") or ())
    error = run.get("error")
    error_type = error.get("type") if isinstance(error, dict) else None
    finish = "tool_calls" if calls else ("length" if error_type == "max_iterations" else "stop")
    reported = run.get("usage") or {}
    prompt = int(reported.get("prompt_tokens", 0))
    completion = int(reported.get("completion_tokens", 0))
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    hermes: dict[str, Any] = {
        "session_id": run.get("session_id"),
        "trace_id": run.get("trace_id"),
        "state": run.get("state"),
        "tool_calls": list(run.get("tool_calls") or ()),
    }
    if isinstance(error, dict):
        hermes["error"] = error
    return Reply(completion_id, model, str(run.get("reply") or ""), calls, finish, usage, hermes)


def _wire_calls(calls: list[dict[str, Any]], *, indexed: bool) -> list[dict[str, Any]]:
    wired = []
    for index, call in enumerate(calls):
        entry: dict[str, Any] = {
            "id": call["id"],
            "type": "function",
            "function": {
                "name": call["name"],
                "arguments": json.dumps(call.get("arguments") or {}, ensure_ascii=False),
            },
        }
        wired.append({"index": index, **entry} if indexed else entry)
    return wired


def completion(reply: Reply) -> dict[str, Any]:
    """The ``chat.completion`` object of a plain request."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.client_calls:
        message["tool_calls"] = _wire_calls(reply.client_calls, indexed=False)
    return {
        "id": reply.completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": reply.usage,
        "hermes": reply.hermes,
    }


def chunk(
    completion_id: str,
    model: str,
    delta: dict[str, Any] | None,
    *,
    finish_reason: str | None = None,
    hermes: dict[str, Any] | None = None,
    usage: dict[str, int] | None = None,
) -> bytes:
    """One ``data:`` line of a stream: a ``chat.completion.chunk`` (``delta`` None: the
    usage chunk, with empty ``choices``). ``hermes`` is the side channel (docs/http.md)."""
    data: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": []
        if delta is None
        else [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
    }
    if usage is not None:
        data["usage"] = usage
    if hermes is not None:
        data["hermes"] = hermes
    return sse_data(data)


def sse_data(data: Mapping[str, Any]) -> bytes:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"data: {text}\n\n".encode()


DONE = b"data: [DONE]\n\n"


def tool_call_deltas(reply: Reply) -> list[dict[str, Any]]:
    """The deltas that hand the client its tool calls, one call each (name, then arguments,
    as OpenAI streams them)."""
    deltas: list[dict[str, Any]] = []
    for wired in _wire_calls(reply.client_calls, indexed=True):
        arguments = wired["function"]["arguments"]
        head = {**wired, "function": {"name": wired["function"]["name"], "arguments": ""}}
        deltas.append({"tool_calls": [head]})
        deltas.append(
            {"tool_calls": [{"index": wired["index"], "function": {"arguments": arguments}}]}
        )
    return deltas
