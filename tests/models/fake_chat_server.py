"""A small scripted OpenAI chat-completions server on 127.0.0.1, for tests and benchmarks.

    from tests.models.fake_chat_server import FakeChatServer, Reply, ScriptedCall

    with FakeChatServer([Reply.calls(ScriptedCall("add", {"a": 2, "b": 3})),
                         Reply.text("The answer is 5.")]) as server:
        model = OpenAICompatModel(base_url=server.base_url, model="fake")
        ...
        assert server.requests[0]["temperature"] == 0.2

Each request to ``POST .../chat/completions`` takes the next scripted :class:`Reply` (then the
``responder`` callback, then ``default``; with none left it answers HTTP 500). A reply is text,
tool calls, an HTTP error (optionally with ``Retry-After``), a garbage body, garbage SSE
chunks or a dropped connection, optionally slowed down (``delay`` before answering,
``chunk_delay`` between streamed chunks). Streamed requests (``"stream": true``) get SSE
chunks, text and tool-call arguments split over several chunks, then ``data: [DONE]``. Every
request body and its headers are recorded. With ``strict=True`` it refuses, with HTTP 500 as
real ones do, what real servers and chat templates refuse (null content, a system message
after the first: :func:`strict_refusal`). The server is bounded: bodies over 16 MiB are
refused, delays are capped and end at shutdown, and idle keep-alive connections time out.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import pytest

__all__ = ["FakeChatServer", "Reply", "ScriptedCall", "strict_refusal"]

MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_DELAY_SECONDS = 30.0


@dataclass(slots=True)
class ScriptedCall:
    """A tool call the fake model makes. ``arguments`` as a str is sent verbatim (for broken
    JSON); ``id="auto"`` numbers it (``call_1`` …), ``id=None`` leaves the id out."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = "auto"


@dataclass(slots=True)
class Reply:
    """One scripted answer. Build it with the class methods."""

    content: str | None = None
    tool_calls: list[ScriptedCall] = field(default_factory=list)
    finish_reason: str | None = None
    status: int = 200
    retry_after: str | None = None
    error_message: str = "scripted error"
    raw_body: bytes | None = None
    content_type: str = "application/json"
    raw_chunks: list[str] | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    disconnect: bool = False
    usage: tuple[int, int] | None = (12, 7)
    chunk_size: int = 4
    model: str = "fake-model"
    #: Answer HTTP 400 to a request carrying ``stream_options`` (this reply stays queued).
    reject_stream_options: bool = False

    @classmethod
    def text(cls, content: str, **options: Any) -> Reply:
        """A plain text answer (``finish_reason`` "stop")."""
        return cls(content=content, **options)

    @classmethod
    def calls(cls, *calls: ScriptedCall, content: str | None = None, **options: Any) -> Reply:
        """An answer with tool calls (``finish_reason`` "tool_calls"), optionally with text."""
        return cls(content=content, tool_calls=list(calls), **options)

    @classmethod
    def http_error(
        cls, status: int, message: str = "scripted error", *, retry_after: str | None = None
    ) -> Reply:
        """An HTTP error with an OpenAI-style error body and optional ``Retry-After``."""
        return cls(status=status, error_message=message, retry_after=retry_after)

    @classmethod
    def garbage(
        cls, body: bytes = b"<html>502 Bad Gateway</html>", content_type: str = "text/html"
    ) -> Reply:
        """HTTP 200 with ``body`` as is (also for streamed requests)."""
        return cls(raw_body=body, content_type=content_type)

    @classmethod
    def hang_up(cls, after_text: str | None = None) -> Reply:
        """Close the connection without answering; to a streamed request, after streaming
        ``after_text`` if given (the client sees a connection dropped mid-stream)."""
        return cls(content=after_text, disconnect=True)

    @classmethod
    def sse(cls, *payloads: str) -> Reply:
        """A streamed answer whose ``data:`` payloads are exactly ``payloads`` (no [DONE])."""
        return cls(raw_chunks=list(payloads))


class FakeChatServer:
    """A threaded chat-completions server on 127.0.0.1 with a random free port.

    Use as a context manager (or call :meth:`start` / :meth:`stop`). ``base_url`` ends in
    ``/v1``. ``requests`` and ``request_headers`` record every chat request in order.
    """

    def __init__(
        self,
        replies: list[Reply] | None = None,
        *,
        responder: Callable[[dict[str, Any]], Reply] | None = None,
        default: Reply | None = None,
        strict: bool = False,
    ) -> None:
        #: Refuse what real servers and chat templates refuse (see :func:`strict_refusal`).
        self.strict = strict
        self._replies: deque[Reply] = deque(replies or [])
        self.responder = responder
        self.default = default
        self.requests: list[dict[str, Any]] = []
        #: What the strict mode refused, one line per refused request.
        self.refusals: list[str] = []
        self.request_headers: list[dict[str, str]] = []
        self.responder_errors: list[Exception] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._call_ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeChatServer:
        handler = type("_BoundHandler", (_Handler,), {"fake": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeChatServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # script ------------------------------------------------------------------------------
    def push(self, *replies: Reply) -> None:
        """Queue more scripted replies."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """How many scripted replies are still queued."""
        with self._lock:
            return len(self._replies)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if self._replies:
                return self._replies.popleft()
        if self.responder is not None:
            try:
                return self.responder(body)
            except Exception as exc:  # a bug in the test's responder: answer 500, keep it
                self.responder_errors.append(exc)
                return Reply.http_error(500, f"fake chat server: responder failed: {exc!r}")
        if self.default is not None:
            return self.default
        return Reply.http_error(500, "fake chat server: no scripted reply left")

    def _call_id(self, call: ScriptedCall) -> str | None:
        return f"call_{next(self._call_ids)}" if call.id == "auto" else call.id

    def _sleep(self, seconds: float) -> None:
        self._stopping.wait(min(seconds, MAX_DELAY_SECONDS))


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (its timeout fired during a scripted delay, or it dropped a
        # keep-alive connection) is expected in these tests; anything else is reported.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeChatServer
    protocol_version = "HTTP/1.1"
    timeout = 10  # idle keep-alive connections end instead of holding a thread forever
    # Headers and body are separate writes; with Nagle on, the body waits for the client's
    # delayed ACK (~40 ms per request on Linux).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr line."""

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": "fake-model"}]})
        else:
            self._send_json(404, _error_body("not found", 404))

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY_BYTES:
            self.close_connection = True
            self._send_json(413, _error_body("bad or too large Content-Length", 413))
            return
        raw = self.rfile.read(length)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, _error_body(f"no route {self.path}", 404))
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send_json(400, _error_body("request body is not JSON", 400))
            return
        with self.fake._lock:
            self.fake.request_headers.append({k.lower(): v for k, v in self.headers.items()})
        refusal = strict_refusal(body) if self.fake.strict else None
        if refusal is not None:
            with self.fake._lock:
                self.fake.requests.append(body)
                self.fake.refusals.append(refusal)
            self._send_json(500, {"error": {"message": refusal, "type": "internal_server_error"}})
            return
        reply = self.fake._next_reply(body)
        if reply.delay:
            self.fake._sleep(reply.delay)
        self._answer(reply, body)

    def _answer(self, reply: Reply, body: dict[str, Any]) -> None:
        streamed = bool(body.get("stream"))
        if reply.disconnect and not (streamed and reply.content):
            self.close_connection = True
        elif reply.reject_stream_options and "stream_options" in body:
            with self.fake._lock:  # the same reply answers the request sent without the field
                self.fake._replies.appendleft(reply)
            message = "stream_options: Extra inputs are not permitted"
            self._send_json(400, _error_body(message, 400))
        elif reply.status != 200:
            headers = {"Retry-After": reply.retry_after} if reply.retry_after is not None else {}
            self._send_json(reply.status, _error_body(reply.error_message, reply.status), headers)
        elif reply.raw_body is not None:
            self._send(200, reply.raw_body, reply.content_type)
        elif streamed or reply.raw_chunks is not None:
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._send_stream(reply, include_usage)
        else:
            self._send_json(200, self._completion(reply))

    def _completion(self, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                _call_json(self.fake._call_id(call), call) for call in reply.tool_calls
            ]
        completion: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model,
            "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
        }
        if reply.usage is not None:
            completion["usage"] = _usage(reply.usage)
        return completion

    def _send_stream(self, reply: Reply, include_usage: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunks = self._stream_chunks(reply, include_usage)
        if reply.raw_chunks is not None:
            payloads: Iterator[str] = iter(reply.raw_chunks)
        elif reply.disconnect:  # the text, then hang up before the finish chunk
            unfinished = itertools.takewhile(
                lambda c: c["choices"][0]["finish_reason"] is None, chunks
            )
            payloads = (json.dumps(chunk) for chunk in unfinished)
        else:
            payloads = itertools.chain((json.dumps(chunk) for chunk in chunks), ["[DONE]"])
        for payload in payloads:
            self._write_chunk(f"data: {payload}\n\n")
            if reply.chunk_delay:
                self.fake._sleep(reply.chunk_delay)
        if reply.disconnect:
            self.close_connection = True  # no terminating chunk: the body is cut short
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _stream_chunks(self, reply: Reply, include_usage: bool) -> Iterator[dict[str, Any]]:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": reply.model,
                "choices": [choice],
            }

        yield chunk({"role": "assistant", "content": ""})
        for piece in _pieces(reply.content or "", reply.chunk_size):
            yield chunk({"content": piece})
        for index, call in enumerate(reply.tool_calls):
            whole = _call_json(self.fake._call_id(call), call)
            function = {"name": call.name, "arguments": ""}
            first: dict[str, Any] = {"index": index, "type": "function", "function": function}
            if whole.get("id") is not None:
                first["id"] = whole["id"]
            yield chunk({"tool_calls": [first]})
            for piece in _pieces(whole["function"]["arguments"], reply.chunk_size):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, _finish(reply))
        if include_usage and reply.usage is not None:
            yield {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": reply.model,
                "choices": [],
                "usage": _usage(reply.usage),
            }

    def _write_chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", headers)

    def _send(
        self,
        status: int,
        data: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


def strict_refusal(body: dict[str, Any]) -> str | None:
    """Why a strict server refuses ``body``, or None. As real ones do, with HTTP 500:

    * an assistant (or tool) message whose ``content`` is null — llama-cpp-python's request
      model wants a string, and its error handler turns the validation error into a 500
      (llama.cpp's own server: ggml-org/llama.cpp#13471);
    * a ``system`` message anywhere but first — what strict chat templates raise (Qwen3,
      Gemma, Mistral …; llama.cpp answers 500 with the template's message).
    """
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role in ("assistant", "tool") and "content" in message and message["content"] is None:
            return (
                f"[{{'type': 'string_type', 'loc': ('body', 'messages', {index}, "
                f"'typed-dict', 'content'), 'msg': 'Input should be a valid string', "
                "'input': None}]"
            )
        if role == "system" and index != 0:
            return "System message must be at the beginning."
    return None


def _call_json(call_id: str | None, call: ScriptedCall) -> dict[str, Any]:
    arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
    result: dict[str, Any] = {
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }
    if call_id is not None:
        result["id"] = call_id
    return result


def _finish(reply: Reply) -> str:
    if reply.finish_reason is not None:
        return reply.finish_reason
    return "tool_calls" if reply.tool_calls else "stop"


def _usage(usage: tuple[int, int]) -> dict[str, int]:
    return {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _error_body(message: str, status: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": "fake_error", "code": status}}


@pytest.fixture
def server() -> Iterator[FakeChatServer]:
    """A running fake chat server (import this fixture where it is needed)."""
    with FakeChatServer() as fake:
        yield fake


def model_settings(server: FakeChatServer, **overrides: Any) -> dict[str, Any]:
    """OpenAICompatModel keywords for ``server``: short timeouts and tiny retry waits."""
    settings: dict[str, Any] = {
        "base_url": server.base_url,
        "model": "fake-model",
        "timeout": 5.0,
        "connect_timeout": 2.0,
        "retry_backoff": 0.001,
        "retry_backoff_max": 0.01,
    }
    settings.update(overrides)
    return settings
