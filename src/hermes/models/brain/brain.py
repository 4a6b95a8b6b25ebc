"""The offline rule brain: Hermes's embedded model when no model server is configured.

It routes the last user message to an intent (YAML patterns, seed 000 §2.1 / §3.2: intent,
slots, then a tool), asks for a missing slot and keeps it pending across turns, calls the
intent's tool, and phrases the tool's result — including a follow-up on the last result
("15乘以27等于多少？" → 405, "再加100呢？" → 505, seed 003 §3.1). It never invents data: what
it has no tool for gets an honest answer.

Per-session memory lives in ``request.scratch`` (persisted by the loop as JSON):

- ``pending``: ``{"intent", "slot", "slots", "lang"}`` — a question waiting for its answer;
- ``inflight``: ``{"id", "intent", "tool", "slots"}`` — the tool call whose result is due;
- ``last_result`` / ``last_expression`` / ``last_intent``: from the last successful result;
- ``brain_calls``: the counter behind tool call ids (``brain-1``, ``brain-2``, …).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hermes.memory.notes import BLOCK_HEADER, SAVED_HEADER, note_items
from hermes.models.base import ModelRequest, ModelResponse, ToolCall, ToolSpec
from hermes.models.brain import phrases
from hermes.models.brain.extractors import SlotInput
from hermes.models.brain.intents import Intent, default_intents, load_intent_file, order_intents
from hermes.models.brain.phrases import Lang, language_of, render

#: Longer messages are cut before slots are read (bounds the cost of user regexes).
MAX_TEXT = 4000
#: Intents are recognised from the start of a message: every pattern scans the text, so this
#: bounds the matching cost of a long message (a command is never 1,000 characters in).
MAX_MATCH_TEXT = 1000
_MAX_EXAMPLES = 4
_DESCRIPTION_LIMIT = 100


class RuleBrain:
    """A deterministic, offline :class:`hermes.models.base.Model` driven by YAML intents.

    ``intent_files`` are user intent files (format: :mod:`hermes.models.brain.schema`); they
    are tried before the packaged defaults and replace defaults of the same name. A bad file
    raises :class:`hermes.errors.ConfigError` naming the file and the key. After construction
    :meth:`complete` does no I/O and keeps all conversation state in ``request.scratch``.
    """

    def __init__(
        self, intent_files: Sequence[str | Path] = (), *, include_defaults: bool = True
    ) -> None:
        user = [load_intent_file(path) for path in intent_files]
        self._intents = order_intents(default_intents() if include_defaults else (), user)
        self._by_name = {intent.name: intent for intent in self._intents}

    @property
    def name(self) -> str:
        return "offline-brain"

    @property
    def intents(self) -> tuple[Intent, ...]:
        """The intents in matching order."""
        return self._intents

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one step of a turn (never raises for any user text or tool result)."""
        response = self.respond(request)
        if response.content and request.on_text is not None:
            request.on_text(response.content)  # the whole reply as one "delta"
        return response

    def respond(self, request: ModelRequest) -> ModelResponse:
        """The synchronous core of :meth:`complete` (no streaming callback)."""
        user_text = _last_user_text(request.messages)[:MAX_TEXT]
        lang = language_of(user_text)
        results = _trailing_tool_messages(request.messages)
        if results:
            return self._reply_to_results(results, request, lang)
        return self._handle_text(user_text, request, lang)

    # -- a user message ---------------------------------------------------------------------

    def _handle_text(self, text: str, request: ModelRequest, lang: Lang) -> ModelResponse:
        scratch = request.scratch
        matched = self._match(text[:MAX_MATCH_TEXT])  # spans stay valid positions in text
        pending = _pending(scratch)
        if matched is not None and matched[0].cancel:
            scratch.pop("pending", None)
            return self._reply_only(matched[0], {}, request, lang)
        if pending is not None:
            pending_intent = self._by_name.get(pending["intent"])
            if matched is None and pending_intent is not None:
                return self._answer_pending(pending_intent, pending, text, request, lang)
            scratch.pop("pending", None)  # another intent wins: the question is abandoned
            if matched is not None and matched[0] is pending_intent:
                return self._run(matched, text, request, lang, carried=pending["slots"])
        if matched is None:
            return _memory_reply(request.messages, text, lang) or self._fallback(request, lang)
        return self._run(matched, text, request, lang)

    def _match(self, text: str) -> tuple[Intent, re.Match[str]] | None:
        for intent in self._intents:
            found = intent.match(text)
            if found is not None:
                return intent, found
        return None

    def _run(
        self,
        matched: tuple[Intent, re.Match[str]],
        text: str,
        request: ModelRequest,
        lang: Lang,
        *,
        carried: Mapping[str, Any] | None = None,
    ) -> ModelResponse:
        intent, match = matched
        values = dict(carried or {})
        given = SlotInput(text, match, request.scratch.get("last_result"), answering=False)
        for slot in intent.slots:
            value = slot.extract(given)
            if value is not None:
                values[slot.name] = value
        return self._proceed(intent, values, request, lang)

    def _answer_pending(
        self,
        intent: Intent,
        pending: dict[str, Any],
        text: str,
        request: ModelRequest,
        lang: Lang,
    ) -> ModelResponse:
        values = dict(pending["slots"])
        slot = intent.slot(pending["slot"])
        if slot is not None:
            given = SlotInput(text, None, request.scratch.get("last_result"), answering=True)
            value = slot.extract(given)
            if value is not None:
                values[slot.name] = value
        return self._proceed(intent, values, request, lang)

    def _proceed(
        self, intent: Intent, values: dict[str, Any], request: ModelRequest, lang: Lang
    ) -> ModelResponse:
        """Ask for the first missing required slot, else reply or call the tool."""
        scratch = request.scratch
        if intent.tool is not None and intent.tool not in {spec.name for spec in request.tools}:
            # Say so before asking for parameters the missing tool would never use.
            scratch.pop("pending", None)
            reply = phrases.TOOL_UNAVAILABLE[lang].format(tool=intent.tool)
            return _text(reply, intent=intent.name, tool_unavailable=intent.tool)
        for slot in intent.slots:
            if slot.required and slot.name not in values and slot.ask is not None:
                scratch["pending"] = {
                    "intent": intent.name,
                    "slot": slot.name,
                    "slots": values,
                    "lang": lang,
                }
                question = render(slot.ask.get(lang), values) or slot.ask.get(lang)
                return _text(question, intent=intent.name, awaiting_slot=slot.name)
        scratch.pop("pending", None)
        if intent.tool is None:
            return self._reply_only(intent, values, request, lang)
        call_id = _next_call_id(scratch)
        scratch["inflight"] = {
            "id": call_id,
            "intent": intent.name,
            "tool": intent.tool,
            "slots": values,
        }
        call = ToolCall(id=call_id, name=intent.tool, arguments=intent.arguments(values))
        return ModelResponse(
            tool_calls=[call],
            finish_reason="tool_calls",
            model_name=self.name,
            meta={"intent": intent.name},
        )

    def _reply_only(
        self, intent: Intent, values: Mapping[str, Any], request: ModelRequest, lang: Lang
    ) -> ModelResponse:
        template = intent.reply.get(lang) if intent.reply else ""
        fields = dict(values)
        if "{capabilities}" in template or "{examples}" in template:
            fields["capabilities"] = self._capabilities(request.tools, lang)
            fields["examples"] = self._examples(request.tools, lang)
        reply = render(template, fields) or template
        return _text(reply.strip(), intent=intent.name)

    def _fallback(self, request: ModelRequest, lang: Lang) -> ModelResponse:
        reply = phrases.FALLBACK[lang].format(
            capabilities=self._capabilities(request.tools, lang),
            examples=self._examples(request.tools, lang),
        )
        return _text(reply.strip(), fallback=True)

    def _capabilities(self, tools: Sequence[ToolSpec], lang: Lang) -> str:
        if not tools:
            return phrases.NO_TOOLS[lang]
        lines = []
        for spec in tools:
            description = " ".join(spec.description.split())
            if len(description) > _DESCRIPTION_LIMIT:
                description = description[: _DESCRIPTION_LIMIT - 1] + "…"
            lines.append(f"{spec.name}: {description}" if description else spec.name)
        return phrases.bullet_list(lines)

    def _examples(self, tools: Sequence[ToolSpec], lang: Lang) -> str:
        found = [
            intent.examples[lang][0]
            for spec in tools  # in the order the tools are offered
            for intent in self._intents
            if intent.tool == spec.name and intent.examples[lang]
        ]
        if not found:
            return ""
        opening, closing, separator = phrases.EXAMPLE_QUOTES[lang]
        quoted = separator.join(f"{opening}{example}{closing}" for example in found[:_MAX_EXAMPLES])
        return phrases.EXAMPLES_PREFIX[lang] + quoted

    # -- tool results -----------------------------------------------------------------------

    def _reply_to_results(
        self, results: list[dict[str, Any]], request: ModelRequest, lang: Lang
    ) -> ModelResponse:
        scratch = request.scratch
        inflight = scratch.pop("inflight", None)
        inflight = inflight if isinstance(inflight, dict) else {}
        parts: list[str] = []
        intent_names: list[str] = []
        for message in results:
            call_id = message.get("tool_call_id")
            mine = bool(call_id) and call_id == inflight.get("id")
            tool = str(inflight.get("tool") if mine else _tool_name(request.messages, message))
            intent = self._by_name.get(str(inflight.get("intent"))) if mine else None
            if intent is None or intent.tool != tool:
                intent = next((i for i in self._intents if i.tool == tool), None)
            slots = inflight.get("slots") if mine else None
            slots = slots if isinstance(slots, dict) else {}
            content = _content_text(message.get("content"))
            parts.append(
                _describe_result(content, intent, tool, slots=slots, scratch=scratch, lang=lang)
            )
            if intent is not None:
                intent_names.append(intent.name)
        meta: dict[str, Any] = {"intent": intent_names[-1]} if intent_names else {}
        return _text("\n".join(parts), **meta)


def _describe_result(
    content: str,
    intent: Intent | None,
    tool: str,
    *,
    slots: Mapping[str, Any],
    scratch: dict[str, Any],
    lang: Lang,
) -> str:
    """One tool result in words: the intent's reply, or an honest failure; never invention."""
    try:
        payload = json.loads(content)
    except ValueError:
        payload = None
    if not isinstance(payload, dict) or not isinstance(payload.get("ok"), bool):
        return phrases.TOOL_UNREADABLE[lang].format(tool=tool, raw=phrases.quote(content))
    if not payload["ok"]:
        error = payload.get("error")
        error = error if isinstance(error, dict) else {}
        message = error.get("message") or payload.get("summary") or "unknown error"
        fields = {**slots, "tool": tool, "error": phrases.quote(message)}
        fields["error_type"] = str(error.get("type") or "error")
        if intent is not None and intent.error_reply is not None:
            reply = render(intent.error_reply.get(lang), fields)
            if reply is not None:
                return reply
        return phrases.TOOL_FAILED[lang].format_map(fields)
    output = payload.get("output")
    _remember(scratch, intent, tool, output)
    fields = {**slots, "tool": tool, "summary": payload.get("summary") or ""}
    fields["output"] = phrases.quote(output)
    if isinstance(output, dict):
        fields.update((key, value) for key, value in output.items() if isinstance(key, str))
    if intent is not None and intent.reply is not None:
        reply = render(intent.reply.get(lang), fields)
        if reply is not None:
            return reply
    shown = payload.get("summary") or output
    return phrases.TOOL_DONE[lang].format(tool=tool, output=phrases.quote(shown))


def _remember(scratch: dict[str, Any], intent: Intent | None, tool: str, output: Any) -> None:
    """Keep what a follow-up needs ("再加100呢？" continues the last numeric result)."""
    scratch["last_intent"] = intent.name if intent is not None else tool
    result = output.get("result") if isinstance(output, dict) else output
    if isinstance(result, int | float) and not isinstance(result, bool):
        scratch["last_result"] = result
        expression = output.get("expression") if isinstance(output, dict) else None
        if isinstance(expression, str):
            scratch["last_expression"] = expression


def _text(content: str, **meta: Any) -> ModelResponse:
    return ModelResponse(
        content=content, finish_reason="stop", model_name="offline-brain", meta=meta
    )


def _memory_reply(messages: Sequence[Any], text: str, lang: Lang) -> ModelResponse | None:
    """An answer from the turn's memory note (``hermes.memory.notes``), when there is one: an
    acknowledgement of what an explicit "记住…" saves, or — for a question — what was recalled.
    The brain only repeats what memory gave it; with memory off there is no note."""
    note = next(
        (
            _content_text(m.get("content"))
            for m in reversed(messages)
            if isinstance(m, dict) and m.get("role") == "system"
        ),
        "",
    )
    saved = note_items(note, SAVED_HEADER)
    if saved:
        items = "；".join(saved) if lang == "zh" else "; ".join(saved)
        return _text(phrases.MEMORY_SAVED[lang].format(items=items), intent="memory_saved")
    recalled = note_items(note, BLOCK_HEADER)
    if recalled and _QUESTION.search(text):
        lines = "\n".join(f"- {item}" for item in recalled)
        return _text(phrases.MEMORY_RECALLED[lang].format(items=lines), intent="memory_recalled")
    return None


_QUESTION = re.compile(
    r"[?？]|吗|什么|哪|谁|多少|几|记得|(?i:\b(?:what|where|who|which|when|how|do you remember)\b)"
)


def _next_call_id(scratch: dict[str, Any]) -> str:
    count = scratch.get("brain_calls")
    count = count + 1 if isinstance(count, int) and not isinstance(count, bool) else 1
    scratch["brain_calls"] = count
    return f"brain-{count}"


def _pending(scratch: Mapping[str, Any]) -> dict[str, Any] | None:
    """The pending question, if the scratch holds a well-formed one."""
    pending = scratch.get("pending")
    if (
        isinstance(pending, dict)
        and isinstance(pending.get("intent"), str)
        and isinstance(pending.get("slot"), str)
        and isinstance(pending.get("slots"), dict)
    ):
        return pending
    return None


def _content_text(content: Any) -> str:
    """The text of a chat message's content (a string or a list of content parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text") for part in content if isinstance(part, dict)]
        return " ".join(text for text in texts if isinstance(text, str))
    return ""


def _last_user_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def _trailing_tool_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """The tool results at the end of the conversation, in order."""
    results: list[dict[str, Any]] = []
    for message in reversed(messages):
        if not (isinstance(message, dict) and message.get("role") == "tool"):
            break
        results.append(message)
    results.reverse()
    return results


def _tool_name(messages: Sequence[Any], result: Mapping[str, Any]) -> str:
    """The name of the tool a result answers: its ``name``, else the matching assistant call."""
    name = result.get("name")
    if isinstance(name, str) and name:
        return name
    call_id = result.get("tool_call_id")
    for message in reversed(messages):
        if not (isinstance(message, dict) and message.get("role") == "assistant"):
            continue
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and call.get("id") == call_id:
                return str(function.get("name") or "tool")
    return "tool"
