"""What the agent itself says to a person when a turn cannot end normally (zh and en)."""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")

_TEXTS: dict[str, tuple[str, str]] = {
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


def is_chinese(text: str) -> bool:
    """Whether a person wrote in Chinese (or Japanese/Korean): then we answer in Chinese."""
    return _CJK.search(text) is not None


def say(key: str, chinese: bool, **values: object) -> str:
    """The sentence ``key`` in the person's language, with ``values`` filled in."""
    zh, en = _TEXTS[key]
    return (zh if chinese else en).format(**values)
