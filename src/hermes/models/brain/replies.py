"""Phrasing tool results and the brain's own lists (what it can do, examples).

A result is phrased by its intent's templates; the fields are the tool output's own, plus a few
the brain computes so that a template can show a list or a calculation without code:

- ``{result}`` / ``{shown}`` / ``{equals}`` for a calculation: the exact value ("7", "0.3",
  "0.333333" with ``equals`` "≈" when it had to be rounded) and the arithmetic as written;
- ``{listing}`` / ``{count}`` for an output with a list (files, notes, to-dos, memories);
- ``{excerpt}`` for a file's content, ``{output_text}`` for a command's output;
- ``{place}`` / ``{in_place}`` / ``{where}`` for the clock: the place as asked and which zone
  the answer is in (and, for the default zone, where it came from).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from hermes.models.base import ToolSpec
from hermes.models.brain import arith, phrases
from hermes.models.brain.intents import Intent
from hermes.models.brain.phrases import render
from hermes.text.lang import Lang

__all__ = [
    "abilities",
    "agrees",
    "capabilities",
    "describe_result",
    "examples",
    "parse_fraction",
    "reachable_tools",
]

_MAX_EXAMPLES = 4
_DESCRIPTION_LIMIT = 100
#: Items a listing shows, and characters of a file or a command's output.
MAX_LISTED = 20
MAX_EXCERPT = 1500
#: Abilities named inline in a "no tool for that" reply.
MAX_ABILITIES = 6
_LIST_KEYS = ("entries", "notes", "todos", "memories")


def reachable_tools(tools: Sequence[ToolSpec], intents: Sequence[Intent]) -> list[ToolSpec]:
    """The offered tools some intent can call, in the order they are offered."""
    used = {intent.tool for intent in intents if intent.tool is not None}
    return [spec for spec in tools if spec.name in used]


def capabilities(tools: Sequence[ToolSpec], intents: Sequence[Intent], lang: Lang) -> str:
    """The tools the brain can really call, one per line; then those it cannot (they need a
    model). Never a tool that is not offered, never one it has no intent for as if it could."""
    reachable = reachable_tools(tools, intents)
    lines = []
    for spec in reachable:
        description = " ".join(spec.description.split())
        if len(description) > _DESCRIPTION_LIMIT:
            description = description[: _DESCRIPTION_LIMIT - 1] + "…"
        lines.append(f"{spec.name}: {description}" if description else spec.name)
    if lines:
        text = phrases.bullet_list(lines)
    else:
        text = phrases.NO_REACHABLE_TOOLS[lang] if tools else phrases.NO_TOOLS[lang]
    others = [spec.name for spec in tools if spec not in reachable]
    if others:
        separator = "、" if lang == "zh" else ", "
        text += "\n" + phrases.OTHER_TOOLS[lang].format(tools=separator.join(others))
    return text


def abilities(tools: Sequence[ToolSpec], intents: Sequence[Intent], lang: Lang) -> str:
    """What the brain can do right now, inline ("计算算式、查询当前时间")."""
    offered = {spec.name for spec in tools}
    seen: list[str] = []
    for intent in intents:
        if intent.tool is not None and intent.tool in offered:
            description = intent.description.get(lang)
            if lang == "en" and description[:1].isupper() and description[1:2].islower():
                description = description[0].lower() + description[1:]  # mid-sentence
            if description not in seen:
                seen.append(description)
    if not seen:
        return phrases.NO_ABILITIES[lang]
    shown = ("、" if lang == "zh" else ", ").join(seen[:MAX_ABILITIES])
    return shown + (phrases.AND_MORE[lang] if len(seen) > MAX_ABILITIES else "")


def examples(tools: Sequence[ToolSpec], intents: Sequence[Intent], lang: Lang) -> str:
    found = [
        intent.examples[lang][0]
        for spec in tools  # in the order the tools are offered
        for intent in intents
        if intent.tool == spec.name and intent.examples[lang]
    ]
    unique = list(dict.fromkeys(found))
    if not unique:
        return ""
    opening, closing, separator = phrases.EXAMPLE_QUOTES[lang]
    quoted = separator.join(f"{opening}{example}{closing}" for example in unique[:_MAX_EXAMPLES])
    return phrases.EXAMPLES_PREFIX[lang] + quoted


# -- one tool result --------------------------------------------------------------------------


def describe_result(
    content: str,
    intent: Intent | None,
    tool: str,
    *,
    slots: Mapping[str, Any],
    lang: Lang,
) -> tuple[str, Any]:
    """One tool result in words (the intent's reply, or an honest failure; never invention),
    and the output when the call succeeded (``None`` otherwise)."""
    try:
        payload = json.loads(content)
    except ValueError:
        payload = None
    if not isinstance(payload, dict) or not isinstance(payload.get("ok"), bool):
        return phrases.TOOL_UNREADABLE[lang].format(tool=tool, raw=phrases.quote(content)), None
    if not payload["ok"]:
        return _failure(payload, intent, tool, slots, lang), None
    output = payload.get("output")
    fields: dict[str, Any] = {**slots, "tool": tool, "summary": payload.get("summary") or ""}
    fields["output"] = phrases.quote(output)
    if isinstance(output, dict):
        fields.update((key, value) for key, value in output.items() if isinstance(key, str))
        fields.update(_computed(output, slots, lang))
    if intent is not None and intent.calculates:
        calculated = _calculation_fields(output, slots)
        if calculated is None:
            shown = payload.get("summary") or output
            return phrases.TOOL_DONE[lang].format(tool=tool, output=phrases.quote(shown)), output
        fields.update(calculated)
    if intent is not None:
        template = intent.reply
        if intent.empty_reply is not None and _lists_nothing(output):
            template = intent.empty_reply
        reply = render(template.get(lang), fields) if template is not None else None
        if reply is not None:
            return reply, output
    shown = payload.get("summary") or output
    return phrases.TOOL_DONE[lang].format(tool=tool, output=phrases.quote(shown)), output


def _failure(
    payload: dict[str, Any], intent: Intent | None, tool: str, slots: Mapping[str, Any], lang: Lang
) -> str:
    error = payload.get("error")
    error = error if isinstance(error, dict) else {}
    message = error.get("message") or payload.get("summary") or "unknown error"
    error_type = str(error.get("type") or "error")
    fields = {**slots, "tool": tool, "error": phrases.quote(message), "error_type": error_type}
    fields.setdefault("shown", slots.get("expression", ""))
    if intent is not None:
        text = intent.error_text(error_type)
        if text is not None:
            reply = render(text.get(lang), fields)
            if reply is not None:
                return reply
    return phrases.TOOL_FAILED[lang].format_map(fields)


def _lists_nothing(output: Any) -> bool:
    if not isinstance(output, dict):
        return False
    lists = [output[key] for key in _LIST_KEYS if isinstance(output.get(key), list)]
    return bool(lists) and not any(lists)


def _calculation_fields(output: Any, slots: Mapping[str, Any]) -> dict[str, Any] | None:
    """``result``/``equals`` from the brain's exact value, checked against the calculator's
    answer; ``None`` when the output has no number to check (the reply then quotes it)."""
    result = output.get("result") if isinstance(output, dict) else output
    if isinstance(result, bool) or not isinstance(result, int | float):
        return None
    exact = parse_fraction(slots.get("exact"))
    if exact is not None and agrees(exact, result):
        text, rounded = arith.present(exact)
    elif isinstance(result, int):
        text, rounded = str(result), False
    else:
        text, rounded = arith.present_float(result)
    shown = slots.get("shown")
    if not isinstance(shown, str):  # a call the brain did not plan (a lost scratch)
        expression = output.get("expression") if isinstance(output, dict) else None
        shown = expression if isinstance(expression, str) else str(slots.get("expression", ""))
    return {"result": text, "equals": "≈" if rounded else "=", "shown": shown}


def agrees(exact: Fraction, result: int | float) -> bool:
    """Whether the calculator's result is the exact value (to its 12 significant digits)."""
    try:
        difference = abs(Fraction(result) - exact)
    except (ValueError, OverflowError):
        return False
    return difference <= abs(exact) * Fraction(1, 10**9) or difference < Fraction(1, 10**12)


def parse_fraction(value: Any) -> Fraction | None:
    if not isinstance(value, str):
        return None
    try:
        return Fraction(value)
    except (ValueError, ZeroDivisionError):
        return None


def _computed(output: dict[str, Any], slots: Mapping[str, Any], lang: Lang) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key in _LIST_KEYS:
        items = output.get(key)
        if isinstance(items, list):
            fields["count"] = len(items)
            fields["listing"] = _listing(key, items, lang)
            break
    content = output.get("content")
    if isinstance(content, str):
        fields["excerpt"] = _excerpt(content, output.get("size"), lang)
    if "exit_code" in output:
        fields["output_text"] = _command_output(output, lang)
    if "utc_offset" in output and "timezone" in output:
        fields.update(_clock_fields(output, slots, lang))
    return fields


def _listing(key: str, items: list[Any], lang: Lang) -> str:
    lines = [_item_line(key, item) for item in items[:MAX_LISTED]]
    if not lines:
        return phrases.EMPTY_LIST[lang]
    if len(items) > MAX_LISTED:
        lines.append(phrases.MORE_ITEMS[lang].format(count=len(items) - MAX_LISTED))
    return "\n".join(f"- {line}" for line in lines)


def _item_line(key: str, item: Any) -> str:
    if not isinstance(item, dict):
        return phrases.quote(item)
    if key == "entries":
        name = str(item.get("name", "?"))
        kind = item.get("type")
        if kind == "dir":
            return name + "/"
        size = item.get("size")
        return f"{name} ({size} B)" if isinstance(size, int) else name
    if key == "memories":
        return phrases.quote(item.get("content", ""))
    mark = ""
    if key == "todos":
        mark = "[x] " if item.get("done") else "[ ] "
    return f"{mark}#{item.get('id', '?')} {phrases.quote(item.get('text', ''))}"


def _excerpt(content: str, size: Any, lang: Lang) -> str:
    if not content.strip():
        return phrases.EMPTY_FILE[lang]
    if len(content) <= MAX_EXCERPT:
        return content.rstrip("\n")
    shown = content[:MAX_EXCERPT].rstrip("\n")
    total = size if isinstance(size, int) else len(content.encode("utf-8"))
    return shown + "\n" + phrases.EXCERPT_CUT[lang].format(chars=MAX_EXCERPT, size=total)


def _command_output(output: dict[str, Any], lang: Lang) -> str:
    parts = []
    for key in ("stdout", "stderr"):
        text = output.get(key)
        if isinstance(text, str) and text.strip():
            clipped = text if len(text) <= MAX_EXCERPT else text[:MAX_EXCERPT] + "…"
            parts.append((f"{key}:\n" if key == "stderr" else "") + clipped.rstrip("\n"))
    return "\n".join(parts) if parts else phrases.NO_OUTPUT[lang]


def _clock_fields(output: dict[str, Any], slots: Mapping[str, Any], lang: Lang) -> dict[str, str]:
    """Which zone a time answer is in, and — when the message named no place — why that one."""
    zone = str(output.get("timezone"))
    asked = slots.get("timezone")
    if isinstance(asked, str) and asked.strip():
        shown = asked.strip()
        return {
            "place": shown,
            "in_place": f" in {shown}",
            "where": zone if zone.casefold() != shown.casefold() else f"UTC{output['utc_offset']}",
        }
    source = output.get("zone_source")
    note = phrases.ZONE_SOURCES[lang].get(str(source), "")
    return {"place": "", "in_place": "", "where": zone + note.format(zone=zone)}
