"""A :class:`~hermes.models.base.Model` for any OpenAI-compatible chat-completions server.

Works with OpenAI itself and with local servers (vLLM, llama.cpp, Ollama, LM Studio, SGLang):

* ``tool_mode="native"`` sends ``tools=[...]`` and reads ``message.tool_calls`` — for servers
  with a tool parser.
* ``tool_mode="hermes"`` puts the tools in the system prompt and reads ``<tool_call>`` blocks
  out of the text (:mod:`hermes.models.hermes_format`) — for servers without one.

Every failure ends as one :class:`~hermes.errors.ModelError` naming the server. Transient
failures (HTTP 408/429/5xx, connection errors, timeouts) are retried here with exponential
backoff and jitter, honouring ``Retry-After``; the SDK's own retries are off so that there is one
retry policy, and one place that logs it.
"""

from __future__ import annotations

import email.utils
import re
import secrets
import socket
import time
import urllib.parse
from typing import Any, Literal, assert_never

import openai
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessage
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from hermes.backoff import retry_delay
from hermes.errors import ConfigError, ModelError, ModelFailure
from hermes.models.base import FinishReason, ModelRequest, ModelResponse, ToolCall, Usage
from hermes.models.conversation import wire_messages
from hermes.models.guard import check_model_request
from hermes.models.hermes_format import parse_tool_calls, to_hermes_messages
from hermes.models.json_repair import loads_lenient
from hermes.models.stream_relay import TextRelay
from hermes.observe import get_logger

__all__ = ["OpenAICompatModel", "retry_delay"]

_log = get_logger("models")

ToolMode = Literal["native", "hermes"]
_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",  # the pre-tools name some servers still send
    "length": "length",
    "content_filter": "content_filter",
}
_DETAIL_LIMIT = 200
FailureKind = Literal["unreachable", "dropped", "timeout", "status", "malformed", "error"]


class _AttemptError(Exception):
    """One failed attempt, before the retry policy decides what the caller sees."""

    def __init__(
        self,
        kind: FailureKind,
        detail: str,
        *,
        retryable: bool = False,
        status_code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(detail)
        self.kind: FailureKind = kind
        #: What the person is told (ModelError.kind).
        self.failure: ModelFailure = _FAILURES[kind]
        self.detail = detail
        self.retryable = retryable
        self.status_code = status_code
        self.retry_after = retry_after


_FAILURES: dict[FailureKind, ModelFailure] = {
    "unreachable": "unreachable",
    "dropped": "server_error",
    "timeout": "timeout",
    "status": "server_error",  # refined from the status and the body by _translate
    "malformed": "malformed",
    "error": "error",
}
#: A 5xx whose text says the server refused the request itself (a validation error, a chat
#: template that raised, a context overflow): sending it again cannot help.
_REQUEST_REFUSED = re.compile(
    r"validation error|input should be|field required|extra inputs are not permitted"
    r"|is not valid under|must alternate|system message must be|raise_exception"
    r"|chat template|jinja|template error|unprocessable|invalid[ _]request|bad request"
    r"|context (?:length|size|window)|exceeds? the (?:context|maximum)|too many tokens",
    re.IGNORECASE,
)


#: The server's context window is smaller than the request (llama.cpp, vLLM, OpenAI wording).
_CONTEXT_OVERFLOW = re.compile(
    r"context (?:length|size|window)|exceeds? the (?:context|maximum context)"
    r"|maximum context length|too many tokens|context_length_exceeded",
    re.IGNORECASE,
)


def _malformed(detail: str) -> _AttemptError:
    return _AttemptError("malformed", detail)


class OpenAICompatModel:
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``api_key`` defaults to ``"EMPTY"`` (local servers ignore it). ``timeout`` bounds each
    read (and, when streaming, the gap between chunks); ``connect_timeout`` the TCP connect.
    ``max_retries`` counts retries after the first attempt; ``retry_backoff`` and
    ``retry_backoff_max`` shape the waits between them (seconds). With ``stream=True`` text
    deltas go to ``request.on_text`` as they arrive. Close with :meth:`aclose`.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        temperature: float = 0.2,
        max_tokens: int | None = None,
        timeout: float = 60.0,
        connect_timeout: float = 10.0,
        max_retries: int = 2,
        tool_mode: ToolMode = "native",
        stream: bool = False,
        extra_headers: dict[str, str] | None = None,
        retry_backoff: float = 0.2,
        retry_backoff_max: float = 5.0,
    ) -> None:
        if tool_mode not in ("native", "hermes"):
            raise ConfigError(f"unknown tool_mode {tool_mode!r} (native|hermes)", key="tool_mode")
        if max_retries < 0:
            raise ConfigError("max_retries must be >= 0", key="max_retries")
        if timeout <= 0 or connect_timeout <= 0:
            raise ConfigError("timeouts must be positive", key="timeout")
        self._model = model
        self._base_url = base_url.rstrip("/")
        #: The URL as errors and logs show it: never credentials or query parameters.
        self._shown_url = _without_secrets(self._base_url)
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._timeout = timeout
        self._max_retries = max_retries
        self._tool_mode: ToolMode = tool_mode
        self._stream = stream
        self._backoff = retry_backoff
        self._backoff_max = retry_backoff_max
        # Ask for token usage in the last streamed chunk. Most servers support it; one that
        # rejects the field (HTTP 400/422 naming it) gets it no more, see _open_stream.
        self._stream_usage = True
        self._client = openai.AsyncOpenAI(
            base_url=self._base_url,
            api_key=api_key or "EMPTY",
            timeout=openai.Timeout(timeout, connect=connect_timeout),
            max_retries=0,
            default_headers=extra_headers,
        )

    @property
    def name(self) -> str:
        return f"openai:{self._model}"

    @property
    def base_url(self) -> str:
        return self._base_url

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()

    async def __aenter__(self) -> OpenAICompatModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # the call path -----------------------------------------------------------------------
    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request``; raises :class:`ModelError` once retries are exhausted."""
        params = self._request_params(request)
        names = frozenset(spec.name for spec in request.tools)
        attempts = 0
        response: ModelResponse | None = None
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(self._worth_retrying),
            before_sleep=self._log_retry,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    check_model_request(self.name)
                    if self._stream:
                        response = await self._streamed(request, params, names)
                    else:
                        response = await self._non_streamed(params, names)
        except _AttemptError as failure:
            raise self._final_error(failure, attempts) from failure
        assert response is not None  # the loop either returned a response or raised
        return response

    def _request_params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self._model, "temperature": self._temperature}
        if self._max_tokens is not None:
            params["max_tokens"] = self._max_tokens
        # One system message first, no null content: what every server and template takes.
        messages = wire_messages(request.messages)
        if self._tool_mode == "hermes":
            params["messages"] = to_hermes_messages(messages, request.tools)
        else:
            params["messages"] = messages
            if request.tools:
                params["tools"] = [spec.to_openai() for spec in request.tools]
                params["tool_choice"] = "auto"
        return params

    async def _non_streamed(self, params: dict[str, Any], names: frozenset[str]) -> ModelResponse:
        try:
            completion: object = await self._client.chat.completions.create(**params)
        except (openai.OpenAIError, ValueError) as exc:
            raise _translate(exc) from exc
        choices = _get(completion, "choices")
        if not isinstance(choices, list) or not choices:
            if isinstance(completion, str | bytes):
                raise _malformed(f"the body is not JSON: {_snippet(completion)}")
            raise _malformed("no choices in the answer")
        message = _get(choices[0], "message")
        if not isinstance(message, ChatCompletionMessage | dict):
            raise _malformed("the first choice has no message object")
        builder = _ResponseBuilder(self._tool_mode, self._model, names)
        builder.add_text(_text(_get(message, "content")))
        for raw in _list(_get(message, "tool_calls")):
            function = _get(raw, "function")
            builder.add_call(_get(raw, "id"), _get(function, "name"), _get(function, "arguments"))
        builder.finish_reason = _get(choices[0], "finish_reason")
        builder.set_usage(_get(completion, "usage"))
        builder.set_model(_get(completion, "model"))
        return builder.build()

    async def _streamed(
        self, request: ModelRequest, params: dict[str, Any], names: frozenset[str]
    ) -> ModelResponse:
        try:
            stream = await self._open_stream(params)
        except (openai.OpenAIError, ValueError) as exc:
            raise _translate(exc) from exc
        builder = _ResponseBuilder(self._tool_mode, self._model, names)
        relay = TextRelay(request.on_text, names=names)
        chunks = 0
        try:
            iterator = aiter(stream)
            while True:
                try:
                    chunk: object = await anext(iterator)
                except StopAsyncIteration:
                    break
                except (openai.OpenAIError, ValueError) as exc:
                    failure = _translate(exc)
                    # Text already shown to the user would be shown twice by a retry.
                    failure.retryable = failure.retryable and not relay.forwarded
                    raise failure from exc
                chunks += 1
                _add_chunk(builder, relay, chunk)
        finally:
            await stream.close()
        if chunks == 0:
            raise _malformed("the stream carried no chunks (is this an SSE endpoint?)")
        if not builder.saw_choice:
            raise _malformed("no choices in the streamed answer")
        response = builder.build()
        relay.flush(release=not response.tool_calls)
        return response

    async def _open_stream(self, params: dict[str, Any]) -> openai.AsyncStream[ChatCompletionChunk]:
        create = self._client.chat.completions.create
        stream: openai.AsyncStream[ChatCompletionChunk]
        if not self._stream_usage:
            stream = await create(**params, stream=True)
            return stream
        try:
            stream = await create(**params, stream=True, stream_options={"include_usage": True})
        except openai.APIStatusError as exc:
            if exc.status_code not in (400, 422) or "stream_options" not in str(exc.body):
                raise
            _log.info("stream_options_rejected", server=self._shown_url)
            self._stream_usage = False
            stream = await create(**params, stream=True)
        return stream

    # retry policy ------------------------------------------------------------------------
    def _worth_retrying(self, exc: BaseException) -> bool:
        """Transient failures only; not a rate limit whose Retry-After is past our cap (the
        retry would be refused again: the person is told when to come back instead)."""
        if not isinstance(exc, _AttemptError) or not exc.retryable:
            return False
        return exc.retry_after is None or exc.retry_after <= self._backoff_max

    def _wait(self, state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome is not None else None
        retry_after = failure.retry_after if isinstance(failure, _AttemptError) else None
        return retry_delay(
            state.attempt_number,
            base=self._backoff,
            cap=self._backoff_max,
            retry_after=retry_after,
        )

    def _log_retry(self, state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        _log.warning(
            "model_retry",
            server=self._shown_url,
            error=str(failure),
            attempt=state.attempt_number,
            max_retries=self._max_retries,
            wait_s=round(wait, 3),
        )

    def _final_error(self, failure: _AttemptError, attempts: int) -> ModelError:
        server = f"model server {self._shown_url}"
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        match failure.kind:
            case "unreachable":
                message = f"{server} is unreachable{tries}: {failure.detail}"
            case "dropped":
                message = f"{server} dropped the connection{tries}: {failure.detail}"
            case "timeout":
                message = f"{server} did not answer within {self._timeout:g} s{tries}"
            case "status":
                message = f"{server} answered HTTP {failure.status_code}{tries}: {failure.detail}"
            case "malformed":
                message = f"{server} returned a malformed response: {failure.detail}"
            case "error":
                message = f"{server} reported an error: {failure.detail}"
            case _:
                assert_never(failure.kind)
        return ModelError(
            message,
            retryable=failure.retryable,
            status_code=failure.status_code,
            kind=failure.failure,
            server=self._shown_url,
            retry_after=failure.retry_after,
        )


class _ResponseBuilder:
    """Collects the parts of an answer (whole or streamed) into a :class:`ModelResponse`."""

    def __init__(self, tool_mode: ToolMode, model: str, tool_names: frozenset[str]) -> None:
        self.tool_mode = tool_mode
        self.model = model
        #: The offered tools: their names make the other call shapes in text calls too.
        self.tool_names = tool_names
        self.text_parts: list[str] = []
        self.native_calls: dict[int, list[Any]] = {}  # index -> [id, name parts, argument parts]
        self.finish_reason: object = None
        self.usage: Usage | None = None
        self.saw_choice = False

    def add_text(self, text: str | None) -> None:
        if text:
            self.text_parts.append(text)

    def add_call(self, call_id: object, name: object, arguments: object) -> None:
        self.native_calls[len(self.native_calls)] = [call_id, [name], [arguments]]

    def add_call_delta(self, index: int, call_id: object, name: object, arguments: object) -> None:
        # OpenAI sends the id and name once, then argument fragments; names are concatenated
        # like the SDK's own stream accumulator does, ids keep their first value.
        entry = self.native_calls.setdefault(index, [None, [], []])
        if entry[0] is None and call_id:
            entry[0] = call_id
        if isinstance(name, str):
            entry[1].append(name)
        if isinstance(arguments, str | dict):
            entry[2].append(arguments)

    def set_usage(self, usage: object) -> None:
        prompt, completion = _get(usage, "prompt_tokens"), _get(usage, "completion_tokens")
        if isinstance(prompt, int) or isinstance(completion, int):
            self.usage = Usage(
                input_tokens=prompt if isinstance(prompt, int) else 0,
                output_tokens=completion if isinstance(completion, int) else 0,
            )

    def set_model(self, model: object) -> None:
        if isinstance(model, str) and model:
            self.model = model

    def build(self) -> ModelResponse:
        content = "".join(self.text_parts) or None
        calls: list[ToolCall] = []
        errors: list[str] = []
        used_ids: set[str] = set()
        for call_id, names, fragments in self.native_calls.values():
            call = _native_call(call_id, names, fragments, errors, used_ids)
            if call is not None:
                calls.append(call)
        # Hermes mode reads calls out of the text; so does native mode when the server sent
        # none but the text holds one (a server running without a tool parser).
        if content is not None and (self.tool_mode == "hermes" or (self.tool_names and not calls)):
            parsed = parse_tool_calls(content, tool_names=self.tool_names)
            content = parsed.content
            errors.extend(parsed.errors)
            calls.extend(
                ToolCall(id=_new_call_id(), name=c.name, arguments=c.arguments)
                for c in parsed.tool_calls
            )
        reason = self.finish_reason
        finish = _FINISH_REASONS.get(reason, "stop") if isinstance(reason, str) else "stop"
        if calls and finish == "stop":
            finish = "tool_calls"  # servers in hermes mode (and some parsers) say "stop"
        return ModelResponse(
            content=content,
            tool_calls=calls,
            finish_reason=finish,
            usage=self.usage,
            model_name=self.model,
            meta={"tool_call_errors": errors} if errors else {},
        )


def _native_call(
    call_id: object,
    names: list[object],
    fragments: list[object],
    errors: list[str],
    used_ids: set[str],
) -> ToolCall | None:
    """A :class:`ToolCall` from a server's ``tool_calls`` entry, or None (error recorded)."""
    name = "".join(part for part in names if isinstance(part, str)).strip()
    if not name:
        errors.append("a tool call without a name was skipped")
        return None
    if not isinstance(call_id, str) or not call_id or call_id in used_ids:
        call_id = _new_call_id()
    used_ids.add(call_id)
    if len(fragments) == 1 and isinstance(fragments[0], dict):
        return ToolCall(id=call_id, name=name, arguments=fragments[0])
    raw = "".join(part for part in fragments if isinstance(part, str))
    if not raw.strip():
        return ToolCall(id=call_id, name=name, arguments={})
    try:
        arguments = loads_lenient(raw)
    except ValueError as exc:
        return ToolCall(id=call_id, name=name, arguments_error=f"arguments are {exc}")
    if not isinstance(arguments, dict):
        error = f"arguments must be a JSON object, not {type(arguments).__name__}"
        return ToolCall(id=call_id, name=name, arguments_error=error)
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _add_chunk(builder: _ResponseBuilder, relay: TextRelay, chunk: object) -> None:
    """Fold one streamed chunk into ``builder``; forward its text through ``relay``."""
    if not isinstance(chunk, ChatCompletionChunk | dict):
        raise _malformed(f"a streamed chunk is not a JSON object: {_snippet(chunk)}")
    builder.set_usage(_get(chunk, "usage"))
    builder.set_model(_get(chunk, "model"))
    choices = _get(chunk, "choices")
    if not isinstance(choices, list) or not choices:
        return  # the usage-only last chunk
    builder.saw_choice = True
    choice = choices[0]
    delta = _get(choice, "delta")
    text = _text(_get(delta, "content"))
    if text:
        builder.add_text(text)
        relay.feed(text)
    for position, raw in enumerate(_list(_get(delta, "tool_calls"))):
        index = _get(raw, "index")
        function = _get(raw, "function")
        builder.add_call_delta(
            index if isinstance(index, int) else position,
            _get(raw, "id"),
            _get(function, "name"),
            _get(function, "arguments"),
        )
    finish = _get(choice, "finish_reason")
    if finish is not None:
        builder.finish_reason = finish


def _translate(exc: Exception) -> _AttemptError:
    """An SDK (or JSON decoding) exception as a classified attempt failure."""
    if isinstance(exc, openai.APITimeoutError):
        return _AttemptError("timeout", "timed out", retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        connected = not _failed_to_connect(exc)
        kind: Literal["unreachable", "dropped"] = "dropped" if connected else "unreachable"
        return _AttemptError(kind, _connection_detail(exc), retryable=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        failure = _status_failure(status, exc.body)
        attempt = _AttemptError(
            "status",
            _status_detail(exc),
            retryable=failure in ("server_error", "rate_limited", "timeout"),
            status_code=status,
            retry_after=_retry_after_seconds(exc.response.headers),
        )
        attempt.failure = failure
        return attempt
    if isinstance(exc, openai.APIResponseValidationError | ValueError):
        return _malformed(f"not valid JSON ({exc})" if isinstance(exc, ValueError) else str(exc))
    if isinstance(exc, openai.APIError):
        return _AttemptError("error", exc.message)
    return _AttemptError("error", f"{type(exc).__name__}: {exc}")


def _status_failure(status: int, body: object) -> ModelFailure:
    """What an HTTP error status (and its body) means for the person and for retrying."""
    if status in (400, 413, 422, 500) and _CONTEXT_OVERFLOW.search(str(body)[:4000]):
        return "context_overflow"
    if status in (401, 403):
        return "authentication"
    if status == 404:
        return "not_found"
    if status == 408:
        return "timeout"
    if status == 429:
        return "rate_limited"
    if status < 500:
        return "request_rejected"
    error = _get(body, "error")
    kind = _get(error if isinstance(error, dict) else body, "type")
    text = str(body)[:4000]
    if status == 500 and (kind == "invalid_request_error" or _REQUEST_REFUSED.search(text)):
        return "request_rejected"
    return "server_error"


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from, outermost first."""
    chain: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and len(chain) < 10:  # short chains; the bound guards against cycles
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    return chain


def _failed_to_connect(exc: BaseException) -> bool:
    """Whether the connection was never made (as opposed to dropped during the exchange).

    Matched by class name: the SDK's transport is ``httpx`` in some releases and ``httpx2`` in
    others, and both call this failure ``ConnectError``.
    """
    return any(
        isinstance(cause, ConnectionRefusedError | socket.gaierror)
        or type(cause).__name__ == "ConnectError"
        for cause in _causes(exc)
    )


def _connection_detail(exc: BaseException) -> str:
    """The root cause of a connection failure in a few words ("connection refused")."""
    chain = _causes(exc)
    if any(isinstance(cause, ConnectionRefusedError) for cause in chain):
        return "connection refused"
    root = chain[-1]
    if isinstance(root, OSError) and root.strerror:
        return root.strerror.lower()
    return str(root) or type(root).__name__


def _status_detail(exc: openai.APIStatusError) -> str:
    message = _get(exc.body, "message")
    if isinstance(message, str) and message:
        return _snippet(message)
    return _snippet(exc.body if exc.body is not None else exc.message)


def _retry_after_seconds(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date), if any."""
    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return float(millis) / 1000
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return float(value)
        except ValueError:
            moment = email.utils.parsedate_to_datetime(value)
            return moment.timestamp() - time.time()
    except (ValueError, TypeError, AttributeError):
        return None  # an unreadable header: fall back to our own backoff


def _get(obj: object, key: str) -> Any:
    """``obj[key]`` or ``obj.key`` — SDK objects built from unvalidated JSON may be either."""
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


def _list(value: object) -> list[Any]:
    """``value`` if it is a list, else an empty one (a server may send null or nonsense)."""
    return value if isinstance(value, list) else []


def _text(content: object) -> str | None:
    """Message content as text (joins text parts; anything else is no text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(t for part in content if isinstance(t := _get(part, "text"), str))
    return None


def _snippet(value: object) -> str:
    text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_LIMIT else text[:_DETAIL_LIMIT] + "…"


def _new_call_id() -> str:
    return f"call_{secrets.token_hex(12)}"


def _without_secrets(url: str) -> str:
    """``url`` without ``user:password@`` and without its query string (keys hide there)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"  # IPv6
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))
