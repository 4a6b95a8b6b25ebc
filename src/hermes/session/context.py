"""Build the chat messages of one model call from a bounded context slice (seed 001 §2.2–2.3).

The order is: system prompt, summary of the earlier conversation, sticky notes older than the
window, extra system blocks (recalled memories, state hints), then the window — the last rounds,
converted to OpenAI chat format. A round starts at a user text item.

seed 001 §2.3: OpenAI-style APIs reject a request where an assistant ``tool_calls`` message is
not followed by one tool message per call, or where a tool message has no call before it.
Trimming breaks such pairs, so the builder always repairs them: a missing result becomes a
synthetic ``missing_result`` error, a result without its call is dropped, and results follow
their calls in call order. Over budget, :mod:`hermes.session.fitting` then gives way in its
order of sacrifice — older results to their summaries, whole older rounds, this turn's earlier
results, and this turn's newest result last — which never splits a call from its result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hermes.session.fitting import FRESH_FLOOR_TOKENS, fit
from hermes.session.items import ContextSlice, Item
from hermes.session.sticky import STICKY_HEADER, sticky_line
from hermes.session.tokens import (
    MESSAGE_OVERHEAD,
    REPLY_PRIMING,
    TOOL_CALL_OVERHEAD,
    count_tokens,
    message_tokens,
)

__all__ = [
    "DEFAULT_ROUNDS",
    "FRESH_FLOOR_TOKENS",
    "MISSING_RESULT",
    "STICKY_BUDGET_SHARE",
    "STICKY_HEADER",
    "SUMMARY_HEADER",
    "BuiltContext",
    "build_messages",
    "fit_messages",
]

Message = dict[str, Any]

#: seed 001 §2.2: the window keeps the last 12 rounds in full by default.
DEFAULT_ROUNDS = 12

SUMMARY_HEADER = "Summary of the earlier conversation:\n"
MISSING_RESULT = json.dumps(
    {
        "ok": False,
        "error": {
            "type": "missing_result",
            "message": "the result of this tool call is not available (the call was interrupted "
            "or its result was trimmed); call the tool again if the result is still needed",
        },
    }
)


@dataclass(slots=True)
class BuiltContext:
    """The messages of one model call and what building them cost.

    ``tokens`` is the estimate of the whole request; it exceeds the budget only when the fixed
    part (system prompt, summary, sticky notes, extra blocks) plus the last round, with its tool
    results at their floors (``hermes.session.fitting``), is larger. ``dropped_rounds`` counts
    whole rounds left out for the budget, ``repaired`` the tool pairing fixes, ``truncated`` the
    shortened results.
    """

    messages: list[Message]
    tokens: int
    dropped_rounds: int = 0
    repaired: int = 0
    truncated: int = 0


def build_messages(
    slice: ContextSlice,
    *,
    system_prompt: str | None,
    budget_tokens: int,
    extra_system: list[str] | None = None,
) -> BuiltContext:
    """The chat messages for ``slice``, repaired and fitted to ``budget_tokens`` in the order
    of sacrifice of :func:`hermes.session.fitting.fit` (the last round is this turn)."""
    messages = _head(slice, system_prompt, extra_system, budget_tokens)
    total = REPLY_PRIMING + sum(message_tokens(m) for m in messages)
    rounds, repaired, sticky, window_tokens = _rounds(slice.window)
    for round_messages in rounds:
        messages.extend(round_messages)
    total += window_tokens
    fitted = fit(messages, total, budget_tokens, sticky=lambda m: id(m) in sticky)
    return BuiltContext(messages, fitted.tokens, fitted.dropped_rounds, repaired, fitted.truncated)


def _head(
    slice: ContextSlice, system_prompt: str | None, extra: list[str] | None, budget: int
) -> list[Message]:
    head: list[Message] = []
    if system_prompt:
        head.append({"role": "system", "content": system_prompt})
    summary = slice.summary
    if summary is not None and summary.content.strip():
        head.append({"role": "system", "content": SUMMARY_HEADER + summary.content})
    notes = _sticky_notes([item for item in slice.sticky if item.kind != "summary"], budget)
    if notes:
        head.append({"role": "system", "content": STICKY_HEADER + "\n".join(notes)})
    head.extend({"role": "system", "content": block} for block in extra or () if block)
    return head


#: The share of the budget the sticky notes may take: a session where the user states an id in
#: every message must not crowd out the conversation itself.
STICKY_BUDGET_SHARE = 0.2


def _sticky_notes(items: list[Item], budget: int) -> list[str]:
    """The sticky items as note lines, oldest first, each said once. Past
    :data:`STICKY_BUDGET_SHARE` of the budget, what the user asked to keep goes last, then
    the newest: the oldest of the rest are left out."""
    lines = list(dict.fromkeys(_sticky_line(item) for item in items))
    limit = max(64, int(budget * STICKY_BUDGET_SHARE))
    if count_tokens("\n".join(lines)) <= limit:
        return lines
    asked = {_sticky_line(i) for i in items if i.meta and _asked_to_keep(i.meta.get("sticky"))}
    ranked = sorted(range(len(lines)), key=lambda n: (lines[n] in asked, n), reverse=True)
    kept: set[int] = set()
    used = 0
    for n in ranked:
        cost = count_tokens(lines[n]) + 1
        if used + cost <= limit:
            kept.add(n)
            used += cost
    return [line for n, line in enumerate(lines) if n in kept]


def _asked_to_keep(facts: object) -> bool:
    return isinstance(facts, list) and any(str(f).startswith("keep:") for f in facts)


def _sticky_line(item: Item) -> str:
    if item.kind == "tool_call":
        return f"- {item.role} called {item.tool_name}({item.content})"
    if item.kind == "tool_result":
        return f"- result of {item.tool_name or item.tool_call_id}: {item.content}"
    if item.role == "user":
        facts = item.meta.get("sticky") if item.meta else None
        shown = [str(f) for f in facts] if isinstance(facts, list) else None
        return f"- user: {sticky_line(item.content, shown)}"
    return f"- {item.role}: {item.content}"


_INFRA_FAILURES = frozenset({"error", "timeout"})


def _convert(
    window: list[Item],
) -> tuple[list[Message], list[int], dict[str, Item], int, set[int]]:
    """Window items → messages without tool results, plus each message's tokens (-1: count it
    once its content is final), the result items by call id, the repairs and the ``id()`` of
    the messages of sticky user items.

    Consecutive assistant items (text and tool calls) become one assistant message. Summary and
    state items are log markers, not conversation, and are skipped.
    """
    sticky: set[int] = set()
    messages: list[Message] = []
    costs: list[int] = []
    results: dict[str, Item] = {}
    call_ids: set[str] = set()
    repaired = 0
    assistant: Message | None = None
    for item in window:
        kind = item.kind
        if kind == "tool_call" or (kind == "text" and item.role == "assistant"):
            if kind == "text" and item.meta and item.meta.get("outcome") in _INFRA_FAILURES:
                # The agent's own apology for a failed model server or a timeout is for the
                # person, not the model: it would prime an apology and leak server details.
                continue
            if assistant is None:
                assistant = {"role": "assistant", "content": None}
                messages.append(assistant)
                costs.append(MESSAGE_OVERHEAD)
            if not _add_to_assistant(assistant, item, costs, call_ids):
                repaired += 1  # a duplicated call id would make the pairing ambiguous
            continue
        if kind in ("summary", "state"):
            continue
        if kind == "text" and item.meta and item.meta.get("outcome") in _INFRA_FAILURES:
            continue  # as above
        assistant = None
        if kind == "tool_result":
            call_id = item.tool_call_id
            if call_id and call_id not in results:
                results[call_id] = item
            else:  # no id, or a second result for the same call
                repaired += 1
        elif item.role in ("user", "system"):
            message = {"role": item.role, "content": item.content}
            messages.append(message)
            tokens = item.tokens
            costs.append(tokens if tokens >= 0 else _item_tokens(item))
            if item.sticky and item.role == "user":
                sticky.add(id(message))
        else:  # a text item with role "tool" has no call to answer
            repaired += 1
    return messages, costs, results, repaired, sticky


def _add_to_assistant(assistant: Message, item: Item, costs: list[int], call_ids: set[str]) -> bool:
    """Add a text or a call to the assistant message (the last of ``costs``); False when the
    call's id was seen before and the call is left out."""
    if item.kind == "text":
        previous = assistant["content"]
        if previous is None:
            assistant["content"] = item.content
            if costs[-1] >= 0:
                costs[-1] += item.tokens if item.tokens >= 0 else _item_tokens(item)
        else:  # texts joined: counted once the joined text is whole
            assistant["content"] = previous + "\n" + item.content
            costs[-1] = -1
        return True
    call_id = item.tool_call_id or f"call_{item.seq}"
    if call_id in call_ids:
        return False
    call_ids.add(call_id)
    function = {"name": item.tool_name or "unknown", "arguments": item.content or "{}"}
    assistant.setdefault("tool_calls", []).append(
        {"id": call_id, "type": "function", "function": function}
    )
    if costs[-1] >= 0:
        costs[-1] += item.tokens if item.tokens >= 0 else _item_tokens(item)
    return True


def _item_tokens(item: Item) -> int:
    """What ``item`` adds to the tokens of the message it becomes part of, counted once and
    kept on the item (``Item.tokens``): the store keeps a live session's window in memory, so
    the same items come back turn after turn. A user or system text: its whole message; an
    assistant text: its text; a call: its entry in ``tool_calls``; a result: its whole tool
    message. Exactly what :func:`~hermes.session.tokens.message_tokens` counts for them."""
    tokens = item.tokens
    if tokens < 0:
        kind = item.kind
        if kind == "tool_call":
            tokens = (
                TOOL_CALL_OVERHEAD
                + count_tokens(item.tool_name or "unknown")
                + count_tokens(item.content or "{}")
            )
        elif kind == "tool_result":
            tokens = (
                MESSAGE_OVERHEAD
                + count_tokens(item.content)
                + count_tokens(item.tool_call_id or "")
            )
        elif item.role == "assistant":
            tokens = count_tokens(item.content)
        else:
            tokens = MESSAGE_OVERHEAD + count_tokens(item.content)
        item.tokens = tokens
    return tokens


def _rounds(window: list[Item]) -> tuple[list[list[Message]], int, set[int], int]:
    """The window as rounds of messages, each call followed by its result (seed 001 §2.3),
    the repairs made, the ``id()`` of sticky user messages and the messages' tokens."""
    converted, costs, results, repaired, sticky = _convert(window)
    rounds: list[list[Message]] = []
    current: list[Message] = []
    total = 0
    for message, cost in zip(converted, costs, strict=True):
        role = message["role"]
        if role == "user" and current:
            rounds.append(current)
            current = []
        calls = message.get("tool_calls")
        if role == "assistant" and not calls and message["content"] is None:
            continue  # every call of it was a duplicate
        if message.get("content") is None:
            message["content"] = ""  # never null: real servers refuse it (llama.cpp#13471)
        current.append(message)
        total += cost if cost >= 0 else message_tokens(message)
        for call in calls or ():
            result = results.pop(call["id"], None)
            if result is None:
                repaired += 1
                answer = {"role": "tool", "tool_call_id": call["id"], "content": MISSING_RESULT}
                total += message_tokens(answer)
            else:
                answer = {"role": "tool", "tool_call_id": call["id"], "content": result.content}
                total += result.tokens if result.tokens >= 0 else _item_tokens(result)
            current.append(answer)
    if current:
        rounds.append(current)
    repaired += len(results)  # results whose call is not in the window are dropped
    return rounds, repaired, sticky, total


def fit_messages(messages: list[Message], total: int, budget_tokens: int) -> tuple[int, int]:
    """Fit ``messages`` (in place) to ``budget_tokens`` when a turn's own tool results outgrow
    it between model calls, in the order of sacrifice of :func:`hermes.session.fitting.fit`:
    older results to their summaries, older rounds, this turn's earlier results, and the newest
    result last. Returns the new total and how many results were shortened."""
    if total <= budget_tokens:
        return total, 0
    fitted = fit(messages, total, budget_tokens)
    return fitted.tokens, fitted.truncated
