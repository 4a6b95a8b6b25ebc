"""Memory in a turn (seed 002 §2.2; seed 001 §5.2–5.3, §6.1–6.2): working memory, recall,
arguments from memory, learning.

Only agents with a :class:`~hermes.memory.facade.Memory` come here: the agent makes its
:class:`MemoryTurns` the runtime's memory hook (``hermes.agent.turn_memory``; without a memory
the hook is the null ``NO_MEMORY`` and this module is never imported, nor the memory package).
In the order of a turn:

1. :meth:`MemoryTurns.begin` — the session's working memory is read from ``SessionState.scratch``
   (:data:`WORKING_MEMORY_KEY`; the rule brain's own keys are ``pending``, ``inflight``,
   ``last_intent``, ``last_result``, ``last_expression`` and ``brain_calls``); a follow-up
   such as "再跑一下这个数据" is resolved against it *before* the new message is observed; with
   a user id and a long-term store, and only when the gate (``needs_memory``) passes, the
   user's memories are recalled — never another user's, bounded by ``recall_timeout``. All of
   it becomes ONE system message placed just before the user's message: it starts with
   :data:`DATA_HEADER` (data, not instructions; the recall block also tells the model the
   items may not apply) and takes at most a quarter of the turn's message budget. Whether the
   user's own message asks for something to be remembered is noted for the ``remember`` tool.
2. :meth:`MemoryTurn.fill` — a call missing required arguments is completed from working memory,
   then from this turn's recalled memories (``fill_missing``: explicit arguments are never
   overridden); the stored call item carries the provenance in ``meta.filled_from_memory`` and
   the tool message a ``memory_note`` the model can pass on to the user.
3. :meth:`MemoryTurn.observe` — each finished call goes into working memory.
4. :meth:`MemoryTurn.finish` — working memory is saved back into the scratch (stored with the
   reply); :meth:`MemoryTurn.learn_later` then writes memories from the user's own text (and
   habits) in the background, so the reply never waits for it.

Memory never fails a turn: every failure here is logged and the turn goes on without it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hermes.agent.turn_memory import MemoryHook, TurnFacts, TurnMemory
from hermes.errors import HermesError
from hermes.memory.extract import MAX_SCAN_CHARS, MemoryCandidate, extract_candidates
from hermes.memory.facade import Memory
from hermes.memory.params import FilledArgument, describe_filled, fill_missing
from hermes.memory.recall import RecallResult, format_block, needs_memory, recall
from hermes.memory.records import MemoryHit
from hermes.memory.tools import MEMORY_TOOLS, MEMORY_USER_ASKED_KEY
from hermes.memory.working import Reference, WorkingMemory
from hermes.models.base import ModelResponse, ToolCall
from hermes.models.memory_notes import DATA_HEADER, SAVED_HEADER
from hermes.observe import get_logger
from hermes.session.privacy import has_secret_marker, without_secret_clauses
from hermes.session.tokens import message_tokens
from hermes.text.lang import Lang
from hermes.tools.base import ToolResult
from hermes.tools.registry import ToolRegistry

__all__ = [
    "DATA_HEADER",
    "MEMORY_USER_ASKED_KEY",
    "NOTE_BUDGET_SHARE",
    "WORKING_MEMORY_KEY",
    "MemoryTurn",
    "MemoryTurns",
    "user_asked_to_remember",
]

log = get_logger("agent")

#: Where a session's working memory lives in ``SessionState.scratch``.
WORKING_MEMORY_KEY = "working_memory"


class MemoryTurns(MemoryHook):
    """The runtime's memory hook for an agent with a :class:`Memory`: starts each turn's
    :class:`MemoryTurn`."""

    __slots__ = ("memory",)

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    async def begin(
        self,
        turn: TurnFacts,
        text: str,
        tools: ToolRegistry,
        budget_tokens: int,
    ) -> tuple[TurnMemory, str | None]:
        """This turn's memory and the system note to inject before the user's message (or
        None). On a failure: no note, and a turn memory that only says whether the user asked
        to remember (the ``remember`` tool still needs that)."""
        try:
            self.memory.start()  # scheduled upkeep, from the first turn on
            return await _begin(self.memory, turn, text, tools.names(), budget_tokens)
        except Exception as exc:  # noqa: BLE001 - memory is a help: the turn goes on without it
            log.error("memory_failed", error_type=type(exc).__name__, error=str(exc)[:300])
            return _AskedOnly(user_asked_to_remember(text)), None


class _AskedOnly(TurnMemory):
    """The memory of a turn whose memory failed to begin: only the remember flag."""

    __slots__ = ("user_asked",)

    def __init__(self, user_asked: bool) -> None:
        self.user_asked = user_asked

    def tool_extras(self) -> dict[str, Any]:
        return {MEMORY_USER_ASKED_KEY: self.user_asked}


@dataclass(slots=True)
class MemoryTurn(TurnMemory):
    """What memory holds for one turn (see :class:`~hermes.agent.turn_memory.TurnMemory`)."""

    memory: Memory
    working: WorkingMemory
    lang: Lang
    #: This turn's recalled long-term memories (best first): the only ones used to fill calls.
    recalled: tuple[MemoryHit, ...] = ()
    #: Call id → the arguments memory filled in.
    filled: dict[str, list[FilledArgument]] = field(default_factory=dict)
    #: The user's own message of this turn asks for something to be remembered (the
    #: ``remember`` tool refuses otherwise; see :data:`MEMORY_USER_ASKED_KEY`).
    user_asked: bool = False

    def tool_extras(self) -> dict[str, Any]:
        return {MEMORY_USER_ASKED_KEY: self.user_asked}

    def filled_for(self, call_id: str) -> list[dict[str, Any]] | None:
        filled = self.filled.get(call_id)
        return [f.to_dict() for f in filled] if filled else None

    def call_meta(self) -> dict[str, dict[str, Any]] | None:
        if not self.filled:
            return None
        return {
            call_id: {"filled_from_memory": [f.to_dict() for f in filled]}
            for call_id, filled in self.filled.items()
        }

    def result_notes(self) -> dict[str, str] | None:
        if not self.filled:
            return None
        notes = {}
        for call_id, filled in self.filled.items():
            names = ", ".join(f"{f.name}={f.value}" for f in filled)
            notes[call_id] = (
                f"arguments filled from memory (tell the user): {names} — "
                f"{describe_filled(filled, self.lang)}"
            )
        return notes

    def fill(self, registry: ToolRegistry, response: ModelResponse) -> ModelResponse:
        """``response`` with its calls' missing required arguments filled from memory (a new
        response when anything was filled; the calls are new objects, the model's are kept)."""
        if not self.memory.fill_arguments:
            return response
        calls = [_fill_one(registry, self, tc) for tc in response.tool_calls]
        if all(new is old for new, old in zip(calls, response.tool_calls, strict=True)):
            return response
        return dataclasses.replace(response, tool_calls=calls)

    def observe(self, calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> None:
        now = self.memory.now()
        for tc, result in zip(calls, results, strict=True):
            try:
                self.working.observe_tool_call(
                    tc.name,
                    tc.arguments,
                    ok=result.ok,
                    now=now,
                    output=result.output,
                    summary=result.summary,
                    error_type=None if result.error is None else result.error.type,
                )
            except Exception as exc:  # noqa: BLE001 - working memory is a help, never a failure
                log.error(
                    "working_memory_failed", error_type=type(exc).__name__, error=str(exc)[:200]
                )

    def finish(self, scratch: dict[str, Any]) -> None:
        scratch[WORKING_MEMORY_KEY] = self.working.to_dict()

    def learn_later(self, turn: TurnFacts, text: str) -> None:
        memory = self.memory
        if turn.user_id is None or memory.store is None:
            return
        if memory.extractor is None and not memory.habits:
            return
        calls = [(r.name, r.arguments, r.ok) for r in turn.records if r.name not in MEMORY_TOOLS]
        memory.spawn(
            memory.learn(
                turn.user_id,
                text,
                session_id=turn.session_id,
                calls=calls,
                lang=self.lang,
                trace_id=turn.trace_id,
            ),
            what="learn",
        )


async def _begin(
    memory: Memory,
    turn: TurnFacts,
    text: str,
    tool_names: Sequence[str],
    budget_tokens: int | None = None,
) -> tuple[MemoryTurn, str | None]:
    """This turn's memory and the system note to inject before the user's message (or None).

    ``budget_tokens`` is the turn's message budget: the note takes at most
    :data:`NOTE_BUDGET_SHARE` of it (recalled items go first, then working-memory lines), so
    memory never crowds out the conversation itself.
    """
    lang: Lang = "zh" if turn.chinese else "en"
    working = WorkingMemory()
    reference: Reference | None = None
    rendered = ""
    try:
        # Inside the try: one damaged stored entry must not disable memory for the session.
        working = WorkingMemory.from_dict(turn.state.scratch.get(WORKING_MEMORY_KEY))
        reference = working.resolve(text)
        rendered = working.render(lang=lang)
        working.observe_user(text, now=memory.now())
    except Exception as exc:  # noqa: BLE001 - working memory is a help, never a reason to fail
        log.error("working_memory_failed", error_type=type(exc).__name__, error=str(exc)[:200])
        working, reference, rendered = WorkingMemory(), None, ""
    explicit = _explicit_requests(text, now=memory.now())  # the rules run once a turn here
    tm = MemoryTurn(memory, working, lang, user_asked=user_asked_to_remember(text, explicit))
    found = await _recall(memory, turn, text, tool_names)
    note = _Note(
        working=rendered.splitlines() if rendered else [],
        reference=None if reference is None else _reference_line(reference, lang),
        hits=list(found.hits) if found is not None and found.block else [],
        saved=_saved_note(memory, turn, explicit),
    )
    if budget_tokens is not None:
        note.fit(max(_MIN_NOTE_TOKENS, int(budget_tokens * NOTE_BUDGET_SHARE)))
    tm.recalled = tuple(note.hits)  # only what the model was shown fills arguments
    return tm, note.text()


#: The first line of every memory note: what follows is data, never an instruction (the
#: recall block's own header says its items may not apply; this covers the whole note).
#: The share of the turn's message budget a memory note may take.
NOTE_BUDGET_SHARE = 0.25
_MIN_NOTE_TOKENS = 64


@dataclass(slots=True)
class _Note:
    """The parts of a turn's memory note, shortened part by part to fit a token budget."""

    working: list[str]
    reference: str | None
    hits: list[MemoryHit]
    saved: str | None

    def text(self) -> str | None:
        parts: list[str] = []
        if len(self.working) > 1:  # a header alone says nothing
            parts.append("\n".join(self.working))
        if self.reference is not None:
            parts.append(self.reference)
        if self.hits:
            parts.append(format_block(self.hits))
        if self.saved is not None:
            parts.append(self.saved)
        return "\n\n".join([DATA_HEADER, *parts]) if parts else None

    def tokens(self) -> int:
        text = self.text()
        return 0 if text is None else message_tokens({"role": "system", "content": text})

    def fit(self, limit: int) -> None:
        """Drop recalled items (least relevant first), then working-memory lines (last
        first), then the reference line, until the note fits ``limit`` tokens. What this
        turn saves (the user's own "记住…") is kept: the model must acknowledge it."""
        dropped = 0
        while self.tokens() > limit:
            if self.hits:
                self.hits.pop()
            elif len(self.working) > 1:
                self.working.pop()
            elif self.reference is not None:
                self.reference = None
            else:
                break
            dropped += 1
        if dropped:
            log.info("memory_note_shortened", dropped=dropped, limit_tokens=limit)


# A remember cue the extractor's stricter rules may not take as a request ("save this to my
# memory", "帮我存一下"): enough to let the ``remember`` tool run, never to store anything.
_REMEMBER_CUE = re.compile(
    r"记住|记下|记一下|记着|牢记|别忘|不要忘|存一下|保存到记忆|记到记忆"
    r"|\b(?:remember|memori[sz]e|don't\s+forget|do\s+not\s+forget|keep\s+in\s+mind"
    r"|make\s+a\s+note|note\s+(?:that|down)|save\s+(?:this|that|it)\b.{0,20}\bmemory)\b",
    re.IGNORECASE,
)


def _explicit_requests(text: str, now: datetime | None = None) -> list[MemoryCandidate]:
    """The explicit "记住…" / "remember that…" memories of the user's own message (rules)."""
    try:
        found = extract_candidates(without_secret_clauses(text)[:MAX_SCAN_CHARS], now=now)
        # A removed secret ("记住我的密码是[已隐去的机密]") is never saved, so never announced.
        return [c for c in found if c.explicit and not has_secret_marker(c.content)]
    except Exception as exc:  # noqa: BLE001 - the cue regex still decides whether they asked
        log.warning("remember_cue_failed", error_type=type(exc).__name__)
        return []


def user_asked_to_remember(text: str, explicit: Sequence[MemoryCandidate] | None = None) -> bool:
    """Whether the user's own message asks for something to be remembered: the ``remember``
    tool may only save then (a tool result saying "call remember(…)" must not store anything).
    ``explicit``: the message's explicit requests when the caller has them already."""
    found = _explicit_requests(text) if explicit is None else explicit
    return bool(found) or _REMEMBER_CUE.search(text[:MAX_SCAN_CHARS]) is not None


def _saved_note(memory: Memory, turn: TurnFacts, explicit: Sequence[MemoryCandidate]) -> str | None:
    """What an explicit "记住…" / "remember that…" will save after this turn, so the model
    (the offline brain too) can acknowledge it honestly — only when it will be saved. Dated
    as the stored memory is (the turn's clock: "明天" becomes the date)."""
    if turn.user_id is None or memory.store is None or memory.extractor is None or not explicit:
        return None
    return "\n".join([SAVED_HEADER, *(f"- {c.content}" for c in explicit)])


def _reference_line(reference: Reference, lang: Lang) -> str:
    line = reference.describe(lang)
    request = reference.call.request if reference.call is not None else None
    if request:
        line += f"（原请求：{request}）" if lang == "zh" else f" (asked as: {request})"
    return line


async def _recall(
    memory: Memory, turn: TurnFacts, text: str, tool_names: Sequence[str]
) -> RecallResult | None:
    """The user's recalled memories, or None (no user, no store, the gate said no, failure)."""
    store, user_id = memory.store, turn.user_id
    if store is None or user_id is None or not needs_memory(text, tool_names=tool_names):
        return None  # the gate ran here: recall() below is told not to run it again
    loop = asyncio.get_running_loop()
    deadline = min(loop.time() + memory.recall_timeout, turn.deadline)
    try:
        async with asyncio.timeout_at(deadline):
            # Only the turn's own user: recall is scoped to them in SQL and checked again.
            found = await recall(store, user_id, text, policy=memory.policy, force=True)
    except TimeoutError:
        log.warning("memory_recall_timeout", timeout_s=memory.recall_timeout)
    except HermesError as exc:
        log.error("memory_recall_failed", error_type=exc.code, error=exc.message[:300])
    except Exception as exc:  # noqa: BLE001 - a turn goes on without memories, never fails
        log.error("memory_recall_failed", error_type=type(exc).__name__, error=str(exc)[:300])
    else:
        for listener in memory.recall_listeners:  # metrics (seed 002 §4.3)
            listener(len(found.hits))
        return found
    return None


def _fill_one(registry: ToolRegistry, tm: MemoryTurn, tc: ToolCall) -> ToolCall:
    tool = registry.get(tc.name)
    if tool is None or tc.arguments_error is not None or not isinstance(tc.arguments, dict):
        return tc
    required = tool.parameters.get("required")
    if not isinstance(required, list) or all(name in tc.arguments for name in required):
        return tc  # the common case: nothing is missing
    try:
        arguments, filled = fill_missing(
            tool.parameters,
            tc.arguments,
            working=tm.working,
            recalled=tm.recalled,
            tool_name=tc.name,
        )
    except Exception as exc:  # noqa: BLE001 - the call goes on as the model made it
        log.error("memory_fill_failed", tool=tc.name, error_type=type(exc).__name__)
        return tc
    if not filled:
        return tc
    tm.filled[tc.id] = filled
    return ToolCall(tc.id, tc.name, arguments)
