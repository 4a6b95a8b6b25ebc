"""The offline rule brain: Hermes's embedded model when no model server is configured.

It reads the last user message as one or more requests (:mod:`~hermes.models.brain.segments`:
"上海今天多少度？另外帮我算一下 (25+17)*3" is two), routes each to an intent (YAML patterns,
seed 000 §2.1 / §3.2: intent, slots, then a tool), asks for a missing slot and keeps it pending
across turns, calls the intents' tools — all of one message's calls in one step — and phrases
every part of the answer in one reply, in order. Arithmetic is read exactly
(:mod:`~hermes.models.brain.expression`); a follow-up continues the last result ("15乘以27等于
多少？" → 405, "再加100呢？" → 505, seed 003 §3.1) or swaps the place of the last time question
("现在几点？" → "纽约呢？"). It never invents data and never answers a part it did not
understand as if it had (seed 002 §2.3): each such part is named in the reply.

Per-session memory lives in ``request.scratch`` (persisted by the loop as JSON):

- ``pending``: ``{"intent", "slot", "slots", "lang"}`` — a question waiting for its answer;
- ``inflight``: ``{"trace", "parts", "asked", "ack"}`` — the reply being built: its parts in
  order, each a finished text or a tool call (``id``, ``intent``, ``tool``, ``slots``) whose
  result is due;
- ``last_result`` / ``last_exact`` / ``last_expression`` / ``last_intent``: from the last
  successful result (``last_exact``: the exact value as a fraction, "1/3");
- ``last_place``: ``{"intent", "slots"}`` — the last question about a place (time, date,
  weather), for "纽约呢？"; dropped by a message that asks nothing about a place;
- ``brain_calls``: the counter behind tool call ids (``brain-1``, ``brain-2``, …).

Every text reply carries ``meta["learn"] = False`` unless it told the user that a memory is
saved: memory then does not learn from the message (a reply that did not understand a
statement must not keep it silently).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from hermes.models.base import ModelRequest, ModelResponse, ToolCall
from hermes.models.brain import arith, phrases, replies
from hermes.models.brain.expression import read_arithmetic
from hermes.models.brain.extractors import SlotInput, extract_timezone
from hermes.models.brain.intents import (
    Intent,
    Slot,
    default_intents,
    load_intent_file,
    order_intents,
)
from hermes.models.brain.numbers import Number, format_exact
from hermes.models.brain.phrases import render
from hermes.models.brain.segments import place_follow_up, split_requests
from hermes.models.memory_notes import BLOCK_HEADER, SAVED_HEADER, note_items, note_reference
from hermes.text.lang import Lang, language_of

#: Longer messages are cut before slots are read (bounds the cost of user regexes).
MAX_TEXT = 4000
#: Intents are recognised from the start of a message: every pattern scans the text, so this
#: bounds the matching cost of a long message (a command is never 1,000 characters in).
MAX_MATCH_TEXT = 1000
# A part that asks for something to be done (帮我…, can you…): "no tool for that", not
# "didn't understand".
_ASKS_FOR_ACTION = re.compile(
    r"^\W*(?:请你?|帮我|帮忙|给我|麻烦你?|能不能|能否|可不可以|可以帮|替我|我想让你|我要你"
    r"|(?:can|could|would|will)\s+you\b|please\b|i\s+(?:want|need)\s+you\s+to\b)",
    re.IGNORECASE,
)
_ABOUT_ME = re.compile(r"^\W*(?:我|我的|i\b|i'm\b|my\b)", re.IGNORECASE)


@dataclass(slots=True)
class _Plan:
    """The reply to one message while it is being read: its parts, in order."""

    request: ModelRequest
    lang: Lang
    parts: list[dict[str, Any]] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    asked: str | None = None  # the slot a question of this reply asks for
    acknowledged: bool = False  # a memory save (from the memory note) was told
    unavailable: str | None = None  # the tool an intent needed and did not have
    previous: arith.Node | None = None  # the message's last calculation, for "，再加100"
    place: tuple[Intent, dict[str, Any]] | None = None  # the last time question, for "纽约呢"
    intents: list[str] = field(default_factory=list)
    offered: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self.offered = frozenset(spec.name for spec in self.request.tools)

    def say(self, text: str, intent: str | None = None) -> None:
        self.parts.append({"kind": "text", "text": text})
        if intent is not None:
            self.intents.append(intent)


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
            return self._finish(results, request, lang)
        return self._handle_text(user_text, request, lang)

    # -- a user message ---------------------------------------------------------------------

    def _handle_text(self, text: str, request: ModelRequest, lang: Lang) -> ModelResponse:
        scratch = request.scratch
        plan = _Plan(request, lang)
        if request.directive is not None and request.directive.intent is not None:
            return self._directed(plan, request.directive.intent, text)
        matched = self._match(text[:MAX_MATCH_TEXT], plan.offered)
        pending = _pending(scratch)
        carried: Mapping[str, Any] | None = None
        if pending is not None:
            pending_intent = self._by_name.get(pending["intent"])
            if matched is None and pending_intent is not None and place_follow_up(text) is None:
                self._answer_pending(plan, pending_intent, pending, text)
                return self._respond(plan)
            if not (matched is not None and matched[0].cancel):
                scratch.pop("pending", None)  # another intent wins: the question is abandoned
            if matched is not None and matched[0] is pending_intent:
                carried = pending["slots"]
        if matched is not None and matched[0].whole:
            segments = [text]
        else:
            segments = split_requests(text, self._is_request)
        for segment in segments:
            self._plan_segment(plan, segment, carried if len(segments) == 1 else None)
        if plan.place is None and any(name != "?" for name in plan.intents):
            scratch.pop("last_place", None)  # "纽约呢？" now follows something else
        if not plan.parts or (len(segments) <= 1 and plan.intents == ["?"]):
            return self._fallback(plan, text)
        return self._respond(plan)

    def _directed(self, plan: _Plan, name: str, text: str) -> ModelResponse:
        """The whole message handled by intent ``name``, whatever its patterns say (an event
        route's ``handler: {intent: NAME}``, seed 002 §3.3); an unknown name is said."""
        plan.request.scratch.pop("pending", None)
        intent = self._by_name.get(name)
        if intent is None:
            return _text(phrases.UNKNOWN_INTENT[plan.lang].format(intent=name), plan)
        match = intent.match(text[:MAX_MATCH_TEXT])
        if intent.calculates:
            arithmetic = text if match is None else _arithmetic_part(intent, text, match)
            self._plan_calculation(plan, intent, arithmetic, {}, answering=False)
        else:
            values: dict[str, Any] = {}
            # Without a pattern match the whole text is the slots' input, as an answer is.
            given = SlotInput(text, match, plan.request.scratch.get("last_result"), match is None)
            for slot in intent.slots:
                value = slot.extract(given)
                if value is not None:
                    values[slot.name] = value
            self._proceed(plan, intent, values)
        if not plan.parts:
            return self._fallback(plan, text)
        return self._respond(plan)

    def _is_request(self, text: str) -> bool:
        """Whether ``text`` is a request on its own (for splitting a message): it matches an
        intent — and, for a calculation, all of it reads as arithmetic (a clause with a word
        the brain does not know is never cut away from the arithmetic around it)."""
        matched = self._match(text[:MAX_MATCH_TEXT])
        if matched is None:
            return False
        if not matched[0].calculates:
            return True
        reading = read_arithmetic(text, has_last=True)
        return reading.understood and bool(reading.calculations)

    def _match(
        self, text: str, offered: frozenset[str] | None = None
    ) -> tuple[Intent, re.Match[str]] | None:
        """The first intent that matches. With ``offered``, one whose tool is not offered
        yields to a later matching intent whose tool is ("帮我记一下…": a note when the
        notes tool is on, else a memory); if none does, it is still the answer (and says
        that its tool is missing)."""
        unavailable: tuple[Intent, re.Match[str]] | None = None
        for intent in self._intents:
            found = intent.match(text)
            if found is None:
                continue
            if offered is None or intent.tool is None or intent.tool in offered:
                return intent, found
            unavailable = unavailable or (intent, found)
        return unavailable

    def _plan_segment(self, plan: _Plan, segment: str, carried: Mapping[str, Any] | None) -> None:
        matched = self._match(segment[:MAX_MATCH_TEXT], plan.offered)
        if matched is None:
            place = place_follow_up(segment)
            base = plan.place or self._last_place(plan.request.scratch)
            if place is not None and base is not None:
                intent, slots = base
                name, places = _place_values(intent, place)
                self._proceed(plan, intent, {**slots, name: places})
            elif place is not None:  # "纽约呢？" following nothing about a place: ask
                plan.say(phrases.PLACE_WITHOUT_QUESTION[plan.lang].format(place=place), "?")
            else:
                self._not_understood(plan, segment)
            return
        intent, match = matched
        if intent.cancel:
            had_question = plan.request.scratch.pop("pending", None) is not None
            text = self._reply_text(intent, {}, plan) if had_question else None
            plan.say(text or phrases.NOTHING_TO_CANCEL[plan.lang], intent.name)
            return
        if intent.whole and segment.strip() != _last_user_text(plan.request.messages).strip():
            plan.say(phrases.WHOLE_ALONE[plan.lang].format(text=segment), intent.name)
            return
        values = dict(carried or {})
        given = SlotInput(segment, match, plan.request.scratch.get("last_result"), False)
        for slot in intent.slots:
            if slot.source == "expression" and intent.calculates:
                continue  # read below, every calculation of the segment
            value = slot.extract(given)
            if value is not None:
                values[slot.name] = value
        if intent.calculates:
            arithmetic = _arithmetic_part(intent, segment, match)
            self._plan_calculation(plan, intent, arithmetic, values, answering=False)
            return
        self._proceed(plan, intent, values)

    def _answer_pending(
        self, plan: _Plan, intent: Intent, pending: dict[str, Any], text: str
    ) -> None:
        if intent.calculates and intent.slot(pending["slot"]) is _expression_slot(intent):
            self._plan_calculation(plan, intent, text, dict(pending["slots"]), answering=True)
            return
        values = dict(pending["slots"])
        slot = intent.slot(pending["slot"])
        if slot is not None:
            given = SlotInput(text, None, plan.request.scratch.get("last_result"), True)
            value = slot.extract(given)
            if value is not None:
                values[slot.name] = value
        self._proceed(plan, intent, values)

    # -- calculations -----------------------------------------------------------------------

    def _plan_calculation(
        self,
        plan: _Plan,
        intent: Intent,
        text: str,
        values: dict[str, Any],
        *,
        answering: bool,
    ) -> None:
        """Every calculation of ``text`` (``values``: the intent's other slots); what could not
        be read is said, never computed."""
        if self._refused(plan, intent, values):
            return
        lang = plan.lang
        last = _last_value(plan.request.scratch)
        reading = read_arithmetic(text, has_last=plan.previous is not None or last is not None)
        if reading.too_long:
            plan.say(phrases.TOO_LONG[lang], intent.name)
        said = bool(reading.calculations or reading.unreadable or reading.too_long)
        if not said and (answering or not reading.ignored):
            slot = _expression_slot(intent)
            self._proceed(plan, intent, values, ask=slot.name if slot else None)  # ask
            return
        for kind, index in reading.order:  # in the order of the text
            if kind == "unreadable":
                source, words = reading.unreadable[index]
                template = phrases.UNREADABLE_WORDS if words else phrases.UNREADABLE
                joined = "」「".join(words) if lang == "zh" else '", "'.join(words)
                plan.say(template[lang].format(text=source, words=joined), intent.name)
            elif kind == "ignored" and not answering:  # "I have 3 cats", a date: named
                self._not_understood(plan, reading.ignored[index])
            elif kind == "calculation":
                tree = reading.calculations[index].tree
                self._plan_one_calculation(plan, intent, tree, last, values)

    def _plan_one_calculation(
        self,
        plan: _Plan,
        intent: Intent,
        tree: arith.Node,
        last: arith.Node | None,
        values: dict[str, Any],
    ) -> None:
        if arith.continues(tree):
            tree = arith.substitute(tree, plan.previous or last or arith.Prev())
        exact = arith.exact_value(tree)
        slot = _expression_slot(intent)
        filled = {
            **values,
            "expression" if slot is None else slot.name: arith.calculator_text(tree),
            "shown": arith.display_text(tree),
            "exact": None if exact is None else str(exact),
        }
        plan.previous = tree if exact is None else _number_node(exact)
        self._proceed(plan, intent, filled)

    # -- one intent -------------------------------------------------------------------------

    def _refused(self, plan: _Plan, intent: Intent, values: Mapping[str, Any]) -> bool:
        """Say why the intent cannot run (no tool, no user) and return True; else False."""
        request, lang = plan.request, plan.lang
        if intent.tool is not None and intent.tool not in plan.offered:
            plan.request.scratch.pop("pending", None)
            memory_text = self._memory_note_reply(plan, intent)
            if memory_text is not None:
                plan.say(memory_text, intent.name)
                return True
            if intent.needs_user and request.user_id is None:
                plan.say(self._error_text(intent, "user_required", values, lang), intent.name)
                return True
            plan.unavailable = intent.tool
            plan.say(self._error_text(intent, "tool_unavailable", values, lang), intent.name)
            return True
        if intent.needs_user and not request.user_id:
            plan.say(self._error_text(intent, "user_required", values, lang), intent.name)
            return True
        return False

    def _proceed(
        self, plan: _Plan, intent: Intent, values: dict[str, Any], *, ask: str | None = None
    ) -> None:
        """Ask for the first missing required slot, else reply or call the tool."""
        if intent.tool == "recall_memories":
            answer = _reference_answer(plan)
            if answer is not None:  # "我上次订的会议室" is in this session, not long-term memory
                plan.say(answer, intent.name)
                return
        if self._refused(plan, intent, values):
            return
        scratch = plan.request.scratch
        for slot in intent.slots:
            missing = slot.name == ask or (slot.required and slot.name not in values)
            if missing and slot.ask is not None:
                if plan.asked is None:
                    scratch["pending"] = {
                        "intent": intent.name,
                        "slot": slot.name,
                        "slots": values,
                        "lang": plan.lang,
                    }
                    plan.asked = slot.name
                question = render(slot.ask.get(plan.lang), values) or slot.ask.get(plan.lang)
                plan.say(question, intent.name)
                return
        place_slot = _place_slot(intent)
        if place_slot is not None:
            kept = {k: v for k, v in values.items() if k != place_slot}
            plan.place = (intent, kept)
            scratch["last_place"] = {"intent": intent.name, "slots": kept}
        if intent.tool is None:
            plan.say(self._reply_text(intent, values, plan), intent.name)
            return
        for one in _fan_out(values):
            call_id = _next_call_id(scratch)
            plan.calls.append(ToolCall(call_id, intent.tool, intent.arguments(one)))
            plan.parts.append(
                {"kind": "call", "id": call_id, "intent": intent.name, "tool": intent.tool}
                | {"slots": one}
            )
            plan.intents.append(intent.name)

    def _error_text(
        self, intent: Intent, error_type: str, values: Mapping[str, Any], lang: Lang
    ) -> str:
        text = intent.error_replies.get(error_type)
        fields = {**values, "tool": intent.tool or "", "error": "", "error_type": error_type}
        rendered = None if text is None else render(text.get(lang), fields)
        if rendered is not None:
            return rendered
        if error_type == "user_required":
            return phrases.USER_REQUIRED[lang]
        return phrases.TOOL_UNAVAILABLE[lang].format(tool=intent.tool)

    def _reply_text(self, intent: Intent, values: Mapping[str, Any], plan: _Plan) -> str:
        template = intent.reply.get(plan.lang) if intent.reply else ""
        fields = dict(values)
        tools = plan.request.tools
        if "{capabilities}" in template or "{examples}" in template or "{abilities}" in template:
            fields["capabilities"] = replies.capabilities(tools, self._intents, plan.lang)
            fields["examples"] = replies.examples(tools, self._intents, plan.lang)
            fields["abilities"] = replies.abilities(tools, self._intents, plan.lang)
        for slot in intent.slots:
            fields.update(slot.phrases(fields.get(slot.name), plan.lang))
        reply = render(template, _with_defaults(intent, fields)) or template
        return reply.strip()

    # -- what it does not understand ----------------------------------------------------------

    def _not_understood(self, plan: _Plan, segment: str) -> None:
        lang = plan.lang
        saved = self._saved_note(plan)
        if saved is not None:
            plan.say(saved, "memory_saved")
            return
        text = " ".join(segment.split())
        if _ASKS_FOR_ACTION.search(text):
            abilities = replies.abilities(plan.request.tools, self._intents, lang)
            plan.say(phrases.NO_TOOL_FOR[lang].format(text=text, abilities=abilities), "?")
            return
        reply = phrases.NOT_UNDERSTOOD[lang].format(text=text)
        if _ABOUT_ME.search(text) and self._can_remember(plan):
            reply += phrases.STATEMENT_HINT[lang]
        plan.say(reply, "?")

    def _fallback(self, plan: _Plan, text: str) -> ModelResponse:
        """The whole message was not understood: say so, with what the brain can do."""
        lang, tools = plan.lang, plan.request.tools
        only = plan.parts[0]["text"] if plan.parts else ""
        if _ASKS_FOR_ACTION.search(text) or place_follow_up(text) is not None:
            return _text(only, plan, fallback=True)  # "no tool that can do …", and what it can
        reply = (
            phrases.FALLBACK[lang]
            .format(
                capabilities=replies.capabilities(tools, self._intents, lang),
                examples=replies.examples(tools, self._intents, lang),
            )
            .strip()
        )
        if _ABOUT_ME.search(text) and self._can_remember(plan):
            reply = phrases.STATEMENT_HINT[lang].strip() + "\n" + reply
        return _text(reply, plan, fallback=True)

    def _can_remember(self, plan: _Plan) -> bool:
        return any(spec.name == "remember" for spec in plan.request.tools)

    def _saved_note(self, plan: _Plan) -> str | None:
        """The acknowledgement of what the memory note says this turn saves (once)."""
        if plan.acknowledged:
            return None
        saved = note_items(_notes(plan.request.messages), SAVED_HEADER)
        if not saved:
            return None
        plan.acknowledged = True
        items = "；".join(saved) if plan.lang == "zh" else "; ".join(saved)
        return phrases.MEMORY_SAVED[plan.lang].format(items=items)

    def _memory_note_reply(self, plan: _Plan, intent: Intent) -> str | None:
        """Without the memory tools, the memory note may still tell what is saved or recalled."""
        if intent.tool == "remember":
            return self._saved_note(plan)
        if intent.tool == "recall_memories":
            recalled = note_items(_notes(plan.request.messages), BLOCK_HEADER)
            if recalled:
                lines = "\n".join(f"- {item}" for item in recalled)
                return phrases.MEMORY_RECALLED[plan.lang].format(items=lines)
        return None

    def _last_place(self, scratch: Mapping[str, Any]) -> tuple[Intent, dict[str, Any]] | None:
        last = scratch.get("last_place")
        if not isinstance(last, dict) or not isinstance(last.get("slots"), dict):
            return None
        intent = self._by_name.get(str(last.get("intent")))
        return None if intent is None else (intent, dict(last["slots"]))

    # -- replying -----------------------------------------------------------------------------

    def _respond(self, plan: _Plan) -> ModelResponse:
        if not plan.calls:
            return _text(_join(part["text"] for part in plan.parts), plan)
        plan.request.scratch["inflight"] = {
            "trace": plan.request.trace_id,
            "parts": plan.parts,
            "asked": plan.asked,
            "ack": plan.acknowledged,
        }
        return ModelResponse(
            tool_calls=plan.calls,
            finish_reason="tool_calls",
            model_name=self.name,
            meta={"intent": next(i for i in reversed(plan.intents) if i != "?")},
        )

    def _finish(
        self, results: list[dict[str, Any]], request: ModelRequest, lang: Lang
    ) -> ModelResponse:
        """The reply once the tool results are in: every part, in order."""
        scratch = request.scratch
        plan = _Plan(request, lang)
        inflight = scratch.pop("inflight", None)
        parts = _inflight_parts(inflight, request.trace_id)
        if isinstance(inflight, dict) and parts:
            plan.asked = inflight.get("asked") if isinstance(inflight.get("asked"), str) else None
            plan.acknowledged = inflight.get("ack") is True
        by_id = {part["id"]: part for part in parts if part.get("kind") == "call"}
        extra: list[dict[str, Any]] = []
        for message in results:
            call_id = message.get("tool_call_id")
            part = by_id.pop(call_id, None) if isinstance(call_id, str) else None
            if part is None:  # a call the brain did not plan now (an approved one, a lost scratch)
                name, arguments = _call_of(request.messages, message)
                part = {"kind": "call", "tool": name, "slots": arguments}
                extra.append(part)
            tool = str(part.get("tool"))
            intent = self._by_name.get(str(part.get("intent")))
            if intent is None or intent.tool != tool:
                intent = next((i for i in self._intents if i.tool == tool), None)
            found = part.get("slots")
            slots: dict[str, Any] = found if isinstance(found, dict) else {}
            content = _content_text(message.get("content"))
            text, output = replies.describe_result(content, intent, tool, slots=slots, lang=lang)
            part["text"] = text
            if output is not None:
                _remember(scratch, intent, tool, output, slots)
            if intent is not None:
                plan.intents.append(intent.name)
        for part in by_id.values():  # a call whose result never came (should not happen)
            part["text"] = phrases.TOOL_FAILED[lang].format(tool=part.get("tool"), error="—")
        plan.parts = [*parts, *extra]
        texts = (str(part.get("text", "")) for part in plan.parts)
        return _text(_join(texts), plan)


def _text(content: str, plan: _Plan, **meta: Any) -> ModelResponse:
    if plan.intents and plan.intents[-1] != "?" and not meta.get("fallback"):
        meta["intent"] = plan.intents[-1]
    if plan.asked is not None:
        meta["awaiting_slot"] = plan.asked
    if plan.unavailable is not None:
        meta["tool_unavailable"] = plan.unavailable
    if len(set(plan.intents)) > 1:
        meta["intents"] = list(plan.intents)
    if not plan.acknowledged:
        meta["learn"] = False  # nothing was said to be remembered: memory keeps nothing
    return ModelResponse(
        content=content, finish_reason="stop", model_name="offline-brain", meta=meta
    )


def _join(texts: Any) -> str:
    return "\n".join(text.strip() for text in texts if text and text.strip())


def _with_defaults(intent: Intent, fields: dict[str, Any]) -> dict[str, Any]:
    """Optional slots the reply template names are blank when not filled ("{place}")."""
    for slot in intent.slots:
        fields.setdefault(slot.name, "")
    return fields


def _arithmetic_part(intent: Intent, segment: str, match: re.Match[str]) -> str:
    """The segment without what is not arithmetic by the intent's own definition: the words of
    its pattern (a user intent's trigger, "含税价") and what its regex slots took ("税率 13%") —
    each cut out as a clause boundary, so the rest is read as arithmetic and nothing else."""
    spans = []
    trigger = read_arithmetic(match.group(0), has_last=True)
    if not (trigger.calculations or trigger.unreadable or trigger.bare or trigger.needs_last):
        spans.append(match.span())  # no arithmetic in what the pattern matched: a trigger
    for slot in intent.slots:
        if slot.pattern is not None:
            found = slot.pattern.search(segment)
            if found is not None:
                spans.append(found.span())
    text = segment
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + "，" + text[end:]
    return text


def _expression_slot(intent: Intent) -> Slot | None:
    return next((slot for slot in intent.slots if slot.source == "expression"), None)


def _place_slot(intent: Intent) -> str | None:
    """The slot that names the place of an intent (a time zone, a weather city), if any."""
    for slot in intent.slots:
        if slot.source == "timezone" or slot.name == "place":
            return slot.name
    return None


def _place_values(intent: Intent, place: str) -> tuple[str, Any]:
    """The place slot and its value(s) for a follow-up that names only a place."""
    name = _place_slot(intent) or "timezone"
    places = extract_timezone(place, answering=True)
    slot = intent.slot(name)
    if slot is not None and slot.source != "timezone" and isinstance(places, list):
        places = "、".join(places)  # a reply-only intent answers once, for all the places
    return name, places


def _fan_out(values: dict[str, Any]) -> list[dict[str, Any]]:
    """One set of slot values per element of a list value (several places: several calls)."""
    for name, value in values.items():
        if isinstance(value, list) and value:
            return [{**values, name: item} for item in value]
    return [values]


def _number_node(value: Fraction) -> arith.Node:
    shown = format_exact(value) or f"{value.numerator}/{value.denominator}"
    return arith.Num(Number(value, shown))


def _last_value(scratch: Mapping[str, Any]) -> arith.Node | None:
    """The session's last result as a number node (exact when it was exact)."""
    exact = replies.parse_fraction(scratch.get("last_exact"))
    if exact is not None:
        return _number_node(exact)
    last = scratch.get("last_result")
    if isinstance(last, bool) or not isinstance(last, int | float):
        return None
    try:
        return _number_node(Fraction(str(last)))
    except ValueError:
        return None


def _remember(
    scratch: dict[str, Any], intent: Intent | None, tool: str, output: Any, slots: Mapping[str, Any]
) -> None:
    """Keep what a follow-up needs ("再加100呢？" continues the last numeric result)."""
    scratch["last_intent"] = intent.name if intent is not None else tool
    result = output.get("result") if isinstance(output, dict) else output
    if not isinstance(result, int | float) or isinstance(result, bool):
        return
    exact = replies.parse_fraction(slots.get("exact"))
    if exact is not None and replies.agrees(exact, result):
        scratch["last_exact"] = str(exact)
        scratch["last_result"] = exact.numerator if exact.denominator == 1 else float(exact)
    else:
        scratch.pop("last_exact", None)
        scratch["last_result"] = result
    expression = output.get("expression") if isinstance(output, dict) else None
    if isinstance(expression, str):
        scratch["last_expression"] = expression


def _inflight_parts(inflight: Any, trace_id: str) -> list[dict[str, Any]]:
    """The parts of the reply being built, if they belong to this turn (an approval's results
    arrive in a later turn: its stale parts are not repeated)."""
    if not isinstance(inflight, dict):
        return []
    trace = inflight.get("trace")
    if isinstance(trace, str) and trace != trace_id:
        return []
    parts = inflight.get("parts")
    if isinstance(parts, list):
        return [dict(part) for part in parts if isinstance(part, dict)]
    if isinstance(inflight.get("id"), str):  # one call, as older versions stored it
        return [{"kind": "call", **inflight}]
    return []


def _notes(messages: Sequence[Any]) -> str:
    """The turn's memory notes (``hermes.models.memory_notes``): system messages, newest first."""
    texts = [
        _content_text(m.get("content"))
        for m in reversed(messages)
        if isinstance(m, dict) and m.get("role") == "system"
    ]
    return "\n".join(text for text in texts if SAVED_HEADER in text or BLOCK_HEADER in text)


def _reference_answer(plan: _Plan) -> str | None:
    """What a phrase of the message points at in this session (the memory note's reference
    line: a booked room a plan returned, the order just looked up), as the answer; several
    candidates are listed with a question, never picked."""
    texts = [
        _content_text(m.get("content"))
        for m in reversed(plan.request.messages)
        if isinstance(m, dict) and m.get("role") == "system"
    ]
    reference = next((r for r in map(note_reference, texts) if r is not None), None)
    if reference is None:
        return None
    if reference.target is not None:
        return phrases.REFERENCE_FACT[plan.lang].format(
            phrase=reference.phrase, target=reference.target
        )
    joined = ("；或 " if plan.lang == "zh" else "; or ").join(reference.candidates)
    return phrases.REFERENCE_AMBIGUOUS[plan.lang].format(phrase=reference.phrase, candidates=joined)


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


def _call_of(messages: Sequence[Any], result: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The tool a result answers and the call's arguments (its slots when phrasing it): the
    result's ``name``, else the matching assistant call's."""
    name = result.get("name")
    call_id = result.get("tool_call_id")
    for message in reversed(messages):
        if not (isinstance(message, dict) and message.get("role") == "assistant"):
            continue
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and call.get("id") == call_id:
                called = str(function.get("name") or "tool")
                return (name if isinstance(name, str) and name else called), _arguments(function)
    return (name if isinstance(name, str) and name else "tool"), {}


def _arguments(function: Mapping[str, Any]) -> dict[str, Any]:
    raw = function.get("arguments")
    if isinstance(raw, dict):
        return dict(raw)
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
