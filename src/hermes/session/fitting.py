"""Fit one model call's messages to its token budget, in a fixed order of sacrifice (seed 001
§2.2–2.3, §6.2: the result the model just asked for is what this call is for).

The messages are read as: the *head* (the leading system messages: instructions, summary,
sticky notes, recalled memories), the *older rounds* (each starts at a user message) and *this
turn* (from the last user message on). Over budget, they give way in this order, each step
only as far as needed:

1. older rounds' tool results, oldest first, down to their ``summary`` (a result without one
   keeps its first and last :data:`OLDER_FLOOR_TOKENS` tokens);
2. whole older rounds, oldest first — their system messages stay, and a sticky user message
   of a dropped round moves into the sticky notes (``hermes.session.sticky``); the rolling
   summary keeps folding them as it always does;
3. this turn's earlier results, oldest first, down to their summary (else the first and last
   :data:`EARLIER_FLOOR_TOKENS` tokens);
4. this turn's newest results (those of its last tool step), longest first, never below their
   ``summary`` — or, for a result without one, below its first and last
   :data:`FRESH_FLOOR_TOKENS` tokens.

A request whose head, user message and results at their floors exceed the budget goes out over
it: an honest failure later beats a result the model can no longer read. A shortened result
stays one JSON object when it was one (``output_excerpt`` with the start and the end of the
output, ``output_chars`` the original length, a ``note`` saying what happened), so it reads
the same however many times it is shortened. Python strings index code points: a cut never
splits a Chinese character.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from hermes.session.sticky import STICKY_HEADER, sticky_facts, sticky_line
from hermes.session.tokens import count_tokens, message_tokens

Message = dict[str, Any]

#: The newest result of a turn without a ``summary`` keeps at least its first and last this
#: many tokens of output.
FRESH_FLOOR_TOKENS: Final = 500
#: This turn's earlier results without a summary keep their first and last this many tokens.
EARLIER_FLOOR_TOKENS: Final = 100
#: Older rounds' results without a summary keep their first and last this many tokens.
OLDER_FLOOR_TOKENS: Final = 50
#: Spare tokens asked for per cut, so an estimate that rounds the other way needs no retry;
#: also how close to its floor a result counts as being at it.
_MARGIN: Final = 8
#: The note between the start and the end of a shortened plain-text result.
_LEFT_OUT_NOTE: Final = "\n[… {} of {} characters left out to fit the context …]\n"
_LEFT_OUT: Final = re.compile(r"\n\[… (\d+) of (\d+) characters left out to fit the context …\]\n")


@dataclass(slots=True)
class Fitted:
    """What fitting did: the new token estimate, the older rounds dropped, the results
    shortened (``truncated``) and, of those, the older ones reduced to their summary."""

    tokens: int
    dropped_rounds: int = 0
    truncated: int = 0
    summarized: int = 0
    #: The newest results of the turn had to be shortened too (every earlier step was spent).
    fresh_shortened: int = 0


def fit(
    messages: list[Message],
    total: int,
    budget: int,
    *,
    sticky: Callable[[Message], bool] | None = None,
) -> Fitted:
    """Shorten and drop in ``messages`` (in place) until ``total`` tokens fit ``budget``, in
    the module's order of sacrifice. ``sticky`` says which user messages are sticky (default:
    :func:`hermes.session.sticky.sticky_facts` of their text)."""
    fitted = Fitted(total)
    if total <= budget:
        return fitted
    older, turn = _layout(messages)
    for start, end in older:  # 1. older results down to their summaries, oldest first
        for i in range(start, end):
            if fitted.tokens <= budget:
                return fitted
            if messages[i].get("role") == "tool" and _cut(
                messages, i, fitted, 0, OLDER_FLOOR_TOKENS
            ):
                fitted.summarized += 1
                fitted.truncated += 1
    if fitted.tokens > budget and older:  # 2. whole older rounds, oldest first
        _drop_rounds(messages, older, fitted, budget, sticky or _sticky_text)
        _, turn = _layout(messages)
    tools = [i for i in range(turn, len(messages)) if messages[i].get("role") == "tool"]
    newest = _newest(messages, turn, tools)
    for i in (t for t in tools if t not in newest):  # 3. this turn's earlier results
        cut = False
        while fitted.tokens > budget and _cut(
            messages, i, fitted, fitted.tokens - budget, EARLIER_FLOOR_TOKENS
        ):
            cut = True
        fitted.truncated += cut
    fresh: set[int] = set()
    while fitted.tokens > budget:  # 4. this turn's newest results, longest first
        ranked = sorted(newest, key=lambda i: -message_tokens(messages[i]))
        excess = fitted.tokens - budget
        cut_at = next(
            (i for i in ranked if _cut(messages, i, fitted, excess, FRESH_FLOOR_TOKENS)), None
        )
        if cut_at is None:
            break
        fresh.add(cut_at)
    fitted.fresh_shortened = len(fresh)
    fitted.truncated += len(fresh)
    return fitted


def _sticky_text(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, str) and bool(sticky_facts(content))


def _layout(messages: list[Message]) -> tuple[list[tuple[int, int]], int]:
    """(the older rounds as [start, end) spans, oldest first; the index where this turn starts:
    its user message). Messages before the first user message, after the head, belong to the
    first older round."""
    head = 0
    while head < len(messages) and messages[head].get("role") == "system":
        head += 1
    users = [i for i in range(head, len(messages)) if messages[i].get("role") == "user"]
    if not users:
        return [], head
    turn = users[-1]
    starts = [head, *users[1:-1]] if users[0] > head else users[:-1]
    if not starts:
        return [], turn
    spans = [(s, e) for s, e in zip(starts, [*starts[1:], turn], strict=True) if s < e]
    return spans, turn


def _newest(messages: list[Message], turn: int, tools: list[int]) -> list[int]:
    """The tool messages after the turn's last assistant message with calls (its last step)."""
    last_call = max(
        (i for i in range(turn, len(messages)) if messages[i].get("tool_calls")), default=turn
    )
    return [i for i in tools if i > last_call]


def _drop_rounds(
    messages: list[Message],
    older: list[tuple[int, int]],
    fitted: Fitted,
    budget: int,
    is_sticky: Callable[[Message], bool],
) -> None:
    """Drop the oldest rounds until the total fits (system messages stay; sticky user
    messages move into the sticky notes)."""
    doomed: set[int] = set()
    carried: list[str] = []
    for start, end in older:
        if fitted.tokens <= budget:
            break
        for i in range(start, end):
            message = messages[i]
            if message.get("role") == "system":
                continue
            doomed.add(i)
            fitted.tokens -= message_tokens(message)
            if message.get("role") == "user" and is_sticky(message):
                carried.append(f"- user: {sticky_line(str(message.get('content') or ''), None)}")
        fitted.dropped_rounds += 1
    messages[:] = [m for i, m in enumerate(messages) if i not in doomed]
    if carried:
        _carry_sticky(messages, carried, fitted)


def _carry_sticky(messages: list[Message], lines: list[str], fitted: Fitted) -> None:
    """Add ``lines`` to the head's sticky notes (a new notes message when there is none)."""
    head = 0
    while head < len(messages) and messages[head].get("role") == "system":
        content = messages[head].get("content")
        if isinstance(content, str) and content.startswith(STICKY_HEADER):
            before = message_tokens(messages[head])
            messages[head] = {**messages[head], "content": content + "\n" + "\n".join(lines)}
            fitted.tokens += message_tokens(messages[head]) - before
            return
        head += 1
    notes: Message = {"role": "system", "content": STICKY_HEADER + "\n".join(lines)}
    messages.insert(head, notes)  # the end of the head: after the instructions and summary
    fitted.tokens += message_tokens(notes)


# -- shortening one result ----------------------------------------------------------------------


@dataclass(slots=True)
class _Result:
    """A tool message's text read for shortening: its JSON payload (when it is one), its
    summary, and the output text that can be cut (with its original length)."""

    payload: dict[str, Any] | None
    summary: str | None
    body: str
    original: int

    @classmethod
    def read(cls, content: str) -> _Result:
        payload: dict[str, Any] | None = None
        if content.startswith("{"):
            try:
                loaded = json.loads(content)
            except ValueError:
                loaded = None
            payload = loaded if isinstance(loaded, dict) else None
        if payload is None:
            cut = _LEFT_OUT.search(content)
            if cut is None:
                return cls(None, None, content, len(content))
            # Shortened before: the start and the end, around the note that says so.
            return cls(None, None, content[: cut.start()] + content[cut.end() :], int(cut[2]))
        summary = payload.get("summary")
        body = ""
        for key in ("output", "output_excerpt", "output_truncated"):
            if key in payload:
                value = payload[key]
                body = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                break
        original = payload.get("output_chars")
        return cls(
            payload,
            summary if isinstance(summary, str) and summary.strip() else None,
            body,
            original if isinstance(original, int) and original >= len(body) else len(body),
        )

    def shortened(self, keep_tokens: int) -> str:
        """The result with ``keep_tokens`` tokens of its output (start and end); 0 keeps only
        the summary."""
        body_tokens = max(1, count_tokens(self.body))
        keep = int(len(self.body) * min(1.0, keep_tokens / body_tokens)) if keep_tokens > 0 else 0
        head = self.body[: (keep + 1) // 2]
        tail = self.body[len(self.body) - keep // 2 :] if keep // 2 else ""
        if self.payload is None:
            left_out = self.original - len(head) - len(tail)
            return f"{head}{_LEFT_OUT_NOTE.format(left_out, self.original)}{tail}"
        payload = {
            k: v for k, v in self.payload.items()
            if k not in ("output", "output_excerpt", "output_truncated", "output_chars", "note")
        }  # fmt: skip
        if keep:
            payload["output_excerpt"] = f"{head} … {tail}" if tail else head
            payload["output_chars"] = self.original
            payload["note"] = (
                f"output shortened to fit the context: the start and the end, {keep} of "
                f"{self.original} characters; call the tool again if you need the rest"
            )
        else:
            payload["note"] = (
                f"output ({self.original} characters) left out to fit the context; the summary "
                "above is what it said; call the tool again if you need it"
            )
        return json.dumps(payload, ensure_ascii=False)


def _cut(messages: list[Message], index: int, fitted: Fitted, excess: int, floor: int) -> bool:
    """Shorten the tool message at ``index`` by about ``excess`` tokens (0: as far as it
    goes), never below its summary or, without one, ``floor`` tokens at each end. Updates
    ``fitted.tokens``; False when it cannot get shorter."""
    message = messages[index]
    content = message.get("content")
    if not isinstance(content, str) or not content:
        return False
    result = _Result.read(content)
    if not result.body:
        return False
    body_tokens = count_tokens(result.body)
    lowest = 0 if result.summary is not None else 2 * floor
    if body_tokens <= lowest + _MARGIN and result.summary is None:
        return False
    target = lowest if excess <= 0 else max(lowest, body_tokens - excess - _MARGIN)
    before = message_tokens(message)
    # With a summary, the summary-only form is the floor: an excerpt of a few tokens (and the
    # note that comes with it) can cost more than that form, so it is never kept instead.
    floor_form = result.shortened(0) if result.summary is not None else None
    floor_tokens = message_tokens({**message, "content": floor_form}) if floor_form else 0
    for _ in range(4):  # the token estimate of a cut is close, rarely exact: at most a retry
        text = result.shortened(target)
        after = message_tokens({**message, "content": text})
        if floor_form is not None and after >= floor_tokens:
            text, after = floor_form, floor_tokens
        if after < before or target <= lowest:
            break
        target = max(lowest, target - (after - before) - _MARGIN)
    if after >= before:
        return False
    messages[index] = {**message, "content": text}
    fitted.tokens += after - before
    return True
