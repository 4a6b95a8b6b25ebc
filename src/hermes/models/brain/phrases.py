"""The brain's own words: language choice, template rendering and the built-in replies.

Intent-specific wording lives in ``intents.yaml``; what is here is what every intent shares
(a tool that is missing, a call that failed, the fallback when nothing matched).
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterable, Mapping
from typing import Any

# Lang lives in :mod:`hermes.text.lang` (memory and the agent use it too, without importing the
# brain); ``hermes.models.brain.phrases.Lang`` still names it for older imports.
from hermes.text.lang import Lang

_FORMATTER = string.Formatter()
#: How much of a tool's raw output or error we quote back, so a reply stays readable.
QUOTE_LIMIT = 300


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
NO_REACHABLE_TOOLS: dict[Lang, str] = {
    "zh": "（配置的工具我都没有调用它们的说法）",
    "en": "(none of the configured tools is one I have phrasings for)",
}
NO_ABILITIES: dict[Lang, str] = {
    "zh": "目前没有可用的工具，只能聊聊天",
    "en": "no tools are available right now, so only small talk",
}
OTHER_TOOLS: dict[Lang, str] = {
    "zh": "另外还配置了：{tools}（离线助手没有调用这些工具的说法，"
    "配置一个模型 model 后才能使用）。",
    "en": "Also configured, but only usable with a language model (model in hermes.yaml): {tools}.",
}
TOOL_UNAVAILABLE: dict[Lang, str] = {
    "zh": "抱歉，当前没有可用的「{tool}」工具，所以这件事我做不了。"
    "可以在配置中启用该工具，或配置一个模型服务。",
    "en": "Sorry, the '{tool}' tool is not available here, so I can't do that. "
    "Enable the tool in the configuration, or configure a model server.",
}
USER_REQUIRED: dict[Lang, str] = {
    "zh": "这件事需要知道你是谁，但这次对话没有用户 ID。命令行请加 --user（或在 hermes.yaml 中设置 "
    "agent.default_user），HTTP 请求请带上 user_id。",
    "en": "That needs to know who you are, and this conversation has no user id. On the command "
    "line add --user (or set agent.default_user in hermes.yaml); over HTTP send a user_id.",
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
NOT_UNDERSTOOD: dict[Lang, str] = {
    "zh": "我没看懂「{text}」这部分。",
    "en": 'I didn\'t understand "{text}".',
}
NO_TOOL_FOR: dict[Lang, str] = {
    "zh": "我没有能做「{text}」的工具，所以这件事做不了。我现在能做的：{abilities}。",
    "en": 'I have no tool that can do "{text}", so I can\'t do that. What I can do now: '
    "{abilities}.",
}
PLACE_WITHOUT_QUESTION: dict[Lang, str] = {
    "zh": "你想问「{place}」的什么呢？比如「{place}现在几点？」。",
    "en": 'What would you like to know about {place}? For example "what time is it in {place}?".',
}
STATEMENT_HINT: dict[Lang, str] = {
    "zh": "（如果想让我记住，请说「请记住……」。）",
    "en": ' (If you want me to remember it, say "remember that …".)',
}
UNREADABLE_WORDS: dict[Lang, str] = {
    "zh": "我没看懂「{text}」里的「{words}」，所以没有计算。"
    "请换个写法，比如「5乘以12」「6除以2」。",
    "en": 'I couldn\'t read "{words}" in "{text}", so I didn\'t calculate it. Please put it '
    'another way, e.g. "5 times 12" or "6 divided by 2".',
}
UNREADABLE: dict[Lang, str] = {
    "zh": "我没看懂「{text}」这个算式，所以没有计算。可以写成「15乘以27」或「(3+4)*5」这样。",
    "en": 'I couldn\'t read "{text}" as arithmetic, so I didn\'t calculate it. Try "15 times '
    '27" or "(3+4)*5".',
}
TOO_LONG: dict[Lang, str] = {
    "zh": "这个算式太长了，我没有计算。请拆成几步来问。",
    "en": "That expression is too long for me, so I didn't calculate it. Please ask in steps.",
}
WHOLE_ALONE: dict[Lang, str] = {
    "zh": "「{text}」请单独发一条消息：命令和笔记的内容我会原样使用，不和别的请求放在一起。",
    "en": 'Please send "{text}" as a message of its own: I use a command or a note exactly as '
    "written, so I don't mix it with other requests.",
}
UNKNOWN_INTENT: dict[Lang, str] = {
    "zh": (
        "没有名为「{intent}」的意图，无法处理这条消息；请检查 webhooks.routes 中的 handler.intent。"
    ),
    "en": (
        "There is no intent named {intent!r}, so this message was not handled; check "
        "handler.intent in webhooks.routes."
    ),
}
NOTHING_TO_CANCEL: dict[Lang, str] = {
    "zh": "好的。现在没有进行中的提问，不需要取消。",
    "en": "OK. There is no open question to cancel.",
}
MEMORY_SAVED: dict[Lang, str] = {
    "zh": "好的，我记住了：{items}",
    "en": "Got it, I'll remember: {items}",
}
MEMORY_RECALLED: dict[Lang, str] = {
    "zh": "我记得这些（如果有变化，请告诉我）：\n{items}",
    "en": "Here is what I remember (tell me if anything has changed):\n{items}",
}
#: A question about something this session showed ("我上次订的会议室是哪个？"), answered from
#: the reference line of the memory note (``hermes.models.memory_notes.note_reference``).
REFERENCE_FACT: dict[Lang, str] = {
    "zh": "你说的「{phrase}」是：{target}",
    "en": 'By "{phrase}" I understand: {target}',
}
REFERENCE_AMBIGUOUS: dict[Lang, str] = {
    "zh": "「{phrase}」可能指：{candidates}。你指的是哪一个？",
    "en": '"{phrase}" could mean: {candidates}. Which one do you mean?',
}
AND_MORE: dict[Lang, str] = {"zh": "等", "en": ' and more (ask "what can you do")'}
EMPTY_LIST: dict[Lang, str] = {"zh": "（空）", "en": "(none)"}
MORE_ITEMS: dict[Lang, str] = {"zh": "……还有 {count} 项", "en": "… and {count} more"}
EMPTY_FILE: dict[Lang, str] = {"zh": "（文件是空的）", "en": "(the file is empty)"}
EXCERPT_CUT: dict[Lang, str] = {
    "zh": "……（只显示前 {chars} 个字符，文件共 {size} 字节）",
    "en": "… (first {chars} characters shown; the file has {size} bytes)",
}
NO_OUTPUT: dict[Lang, str] = {"zh": "（没有输出）", "en": "(no output)"}
#: How a time answer says where the default zone came from (``zone_source`` of the clock).
ZONE_SOURCES: dict[Lang, dict[str, str]] = {
    "zh": {
        "host": "，本机时区",
        "host_utc": "，本机时区；要用其他时区，请在 hermes.yaml 中设置 agent.timezone",
        "utc_fallback": "——本机没有配置时区，所以用的是 UTC；"
        "可在 hermes.yaml 中设置 agent.timezone",
    },
    "en": {
        "host": ", this machine's time zone",
        "host_utc": ", this machine's time zone; set agent.timezone in hermes.yaml for another",
        "utc_fallback": " — this machine has no time zone configured, so this is UTC; set "
        "agent.timezone in hermes.yaml",
    },
}
EXAMPLES_PREFIX: dict[Lang, str] = {"zh": "你可以试试：", "en": "Try: "}
EXAMPLE_QUOTES: dict[Lang, tuple[str, str, str]] = {
    "zh": ("「", "」", "、"),
    "en": ('"', '"', ", "),
}
