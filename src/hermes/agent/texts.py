"""What the agent itself says to a person when a turn cannot end normally (zh and en)."""

from __future__ import annotations

import math
import re
from typing import Literal, assert_never

from hermes.errors import ModelError, ModelFailure

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")

#: What the agent says when a turn ends abnormally (the keys ``say`` takes).
TextKey = Literal["unknown_tools", "max_iterations", "timeout", "model_error", "empty_reply"]

_TEXTS: dict[TextKey, tuple[str, str]] = {
    "unknown_tools": (
        "抱歉，这个操作不在我的能力范围内：我没有能完成它的工具。",
        "Sorry, I can't do that: I don't have a tool for it.",
    ),
    "max_iterations": (
        "抱歉，我在 {n} 步之内没能完成这个任务。请把问题拆小一点再试。",
        "Sorry, I could not finish this within {n} steps. Please try a smaller request.",
    ),
    "timeout": (
        "抱歉，这一轮处理超时了（{seconds:g} 秒）。已经完成的步骤都已保存，请稍后再试。",
        "Sorry, this turn timed out after {seconds:g} s. Finished steps are saved; please retry.",
    ),
    "model_error": (
        "抱歉，模型服务暂时不可用，请稍后再试。（追踪号 {trace}）",
        "Sorry, the model service is unavailable right now; please try again later "
        "(trace {trace}).",
    ),
    "empty_reply": (
        "（模型没有给出回复）",
        "(the model returned no reply)",
    ),
}


#: The model failures with a sentence of their own (every :data:`ModelFailure` but ``error``),
#: and ``rate_limited`` split by whether the server said when to retry.
_FailureText = Literal[
    "unreachable",
    "authentication",
    "rate_limited",
    "rate_limited_now",
    "timeout",
    "server_error",
    "request_rejected",
    "context_overflow",
    "not_found",
    "malformed",
]

#: One sentence per kind of model failure (hermes.errors.ModelFailure): the cause, and what to
#: do. "Try again later" only where waiting can help.
_MODEL_FAILURES: dict[_FailureText, tuple[str, str]] = {
    "unreachable": (
        "抱歉，连接不上模型服务 {server}：请确认它已经启动、model.base_url 填写正确。",
        "Sorry, the model server at {server} cannot be reached: check that it is running and "
        "that model.base_url is right.",
    ),
    "authentication": (
        "抱歉，模型服务拒绝了 API 密钥（HTTP {status}）：请检查 model.api_key。",
        "Sorry, the model server refused the API key (HTTP {status}): check model.api_key.",
    ),
    "rate_limited": (
        "抱歉，模型服务正在限流：请在 {seconds} 秒后再试。",
        "Sorry, the model server is rate limiting requests: try again in {seconds} s.",
    ),
    "rate_limited_now": (
        "抱歉，模型服务正在限流，请稍后再试。",
        "Sorry, the model server is rate limiting requests; please try again later.",
    ),
    "timeout": (
        "抱歉，模型服务没有在时限内回答，请稍后再试。",
        "Sorry, the model server did not answer in time; please try again later.",
    ),
    "server_error": (
        "抱歉，模型服务暂时不可用（服务器出错），请稍后再试。",
        "Sorry, the model service is unavailable right now (a server error); please try "
        "again later.",
    ),
    "request_rejected": (
        "抱歉，模型服务拒绝了这次请求（HTTP {status}），重试也无济于事：请检查模型配置"
        "（model.model、model.tool_mode）或服务端日志。",
        "Sorry, the model server refused this request (HTTP {status}); retrying will not "
        "help: check the model settings (model.model, model.tool_mode) or the server's log.",
    ),
    "context_overflow": (
        "抱歉，这次对话超出了模型服务的上下文窗口（HTTP {status}）：请调低 "
        "agent.context_budget_tokens，或调大服务端的上下文长度。",
        "Sorry, the conversation is larger than the model server's context window (HTTP "
        "{status}): lower agent.context_budget_tokens, or give the server a larger context.",
    ),
    "not_found": (
        "抱歉，模型服务上没有这个模型或接口（HTTP 404）：请检查 model.model 和 model.base_url。",
        "Sorry, the model server has no such model or endpoint (HTTP 404): check model.model "
        "and model.base_url.",
    ),
    "malformed": (
        "抱歉，模型服务的回答无法解析：请确认 model.base_url 指向 OpenAI 兼容接口（以 /v1 结尾）。",
        "Sorry, the model server's answer could not be read: check that model.base_url is an "
        "OpenAI-compatible endpoint (ending in /v1).",
    ),
}
_TRACE = ("（追踪号 {trace}）", " (trace {trace})")


def model_failure(error: ModelError, chinese: bool, trace: str) -> str:
    """The sentence a person reads when the model failed: its cause, and what to do."""
    key = _failure_text(error.kind, error.retry_after)
    if key is None:
        return say("model_error", chinese, trace=trace)
    texts = _MODEL_FAILURES[key]
    values = {
        "server": error.server or "?",
        "status": error.status_code if error.status_code is not None else "?",
        "seconds": math.ceil(error.retry_after or 0),
    }
    sentence = (texts[0] if chinese else texts[1]).format(**values)
    return sentence + _TRACE[0 if chinese else 1].format(trace=trace)


def _failure_text(kind: ModelFailure, retry_after: float | None) -> _FailureText | None:
    """Which sentence a failure gets (``None``: the generic one); every kind is matched."""
    match kind:
        case "rate_limited":
            return "rate_limited" if retry_after is not None else "rate_limited_now"
        case (
            "unreachable"
            | "authentication"
            | "timeout"
            | "server_error"
            | "request_rejected"
            | "context_overflow"
            | "not_found"
            | "malformed"
        ):
            return kind
        case "error":
            return None
        case _:
            assert_never(kind)


def is_chinese(text: str) -> bool:
    """Whether a person wrote in Chinese (or Japanese/Korean): then we answer in Chinese."""
    return _CJK.search(text) is not None


def say(key: TextKey, chinese: bool, **values: object) -> str:
    """The sentence ``key`` in the person's language, with ``values`` filled in."""
    zh, en = _TEXTS[key]
    return (zh if chinese else en).format(**values)
