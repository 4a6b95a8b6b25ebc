"""The brain's own words: language choice, template rendering and the built-in replies.

Intent-specific wording lives in ``intents.yaml``; what is here is what every intent shares
(a tool that is missing, a call that failed, the fallback when nothing matched).
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterable, Mapping
from typing import Any, Literal

Lang = Literal["zh", "en"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_FORMATTER = string.Formatter()
#: How much of a tool's raw output or error we quote back, so a reply stays readable.
QUOTE_LIMIT = 300


def language_of(text: str) -> Lang:
    """Chinese when the text contains any CJK ideograph, else English."""
    return "zh" if _CJK.search(text) else "en"


def template_fields(template: str) -> list[str]:
    """The field names a ``str.format`` template uses; raises ``ValueError`` if malformed or if
    a field is not a plain identifier (no ``{0}``, ``{a.b}``, ``{a[0]}``: templates come from
    YAML files and must not reach into objects)."""
    fields: list[str] = []
    for _literal, field_name, _spec, _conversion in _FORMATTER.parse(template):
        if field_name is None:
            continue
        if not field_name.isidentifier():
            raise ValueError(f"template field '{{{field_name}}}' is not a plain name")
        fields.append(field_name)
    return fields


def render(template: str, values: Mapping[str, Any]) -> str | None:
    """The template filled from ``values``; ``None`` when a field is missing or will not format
    (a tool returned other fields than the template expects), so the caller can fall back."""
    try:
        return template.format_map(values)
    except (KeyError, ValueError, TypeError, IndexError, AttributeError):
        return None


def quote(value: Any) -> str:
    """A short, single-line rendering of a tool output or error text."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_LIMIT else text[: QUOTE_LIMIT - 1] + "…"


def bullet_list(lines: Iterable[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


NO_TOOLS: dict[Lang, str] = {
    "zh": "（当前没有可用的工具）",
    "en": "(no tools are available right now)",
}
TOOL_UNAVAILABLE: dict[Lang, str] = {
    "zh": "抱歉，当前没有可用的「{tool}」工具，所以这件事我做不了。"
    "可以在配置中启用该工具，或配置一个模型服务。",
    "en": "Sorry, the '{tool}' tool is not available here, so I can't do that. "
    "Enable the tool in the configuration, or configure a model server.",
}
TOOL_FAILED: dict[Lang, str] = {
    "zh": "抱歉，「{tool}」执行失败：{error}",
    "en": "Sorry, '{tool}' failed: {error}",
}
TOOL_UNREADABLE: dict[Lang, str] = {
    "zh": "「{tool}」返回了我无法解读的结果：{raw}",
    "en": "'{tool}' returned a result I could not read: {raw}",
}
TOOL_DONE: dict[Lang, str] = {
    "zh": "「{tool}」的结果：{output}",
    "en": "Result of '{tool}': {output}",
}
FALLBACK: dict[Lang, str] = {
    "zh": "抱歉，我没听懂。我是离线规则助手，目前可以：\n{capabilities}\n{examples}",
    "en": "Sorry, I didn't understand that. I'm the offline rule assistant; right now I can:\n"
    "{capabilities}\n{examples}",
}
MEMORY_SAVED: dict[Lang, str] = {
    "zh": "好的，我记住了：{items}",
    "en": "Got it, I'll remember: {items}",
}
MEMORY_RECALLED: dict[Lang, str] = {
    "zh": "我记得这些（如果有变化，请告诉我）：\n{items}",
    "en": "Here is what I remember (tell me if anything has changed):\n{items}",
}
EXAMPLES_PREFIX: dict[Lang, str] = {"zh": "你可以试试：", "en": "Try: "}
EXAMPLE_QUOTES: dict[Lang, tuple[str, str, str]] = {
    "zh": ("「", "」", "、"),
    "en": ('"', '"', ", "),
}
