"""Rolling summaries: fold the items that left the window into one summary item (seed 001 §2.2).

"History summary + the last N rounds in full": items older than the window are folded, a batch
at a time, into a ``summary`` item whose ``meta["covers_until"]`` is the last seq it covers. The
next context slice reads only that item instead of the history, so a turn's cost does not grow
with the session (DESIGN principle 5).
"""

from __future__ import annotations

import json
import re
from typing import Protocol, runtime_checkable

from hermes.errors import ModelError
from hermes.models.base import Model, ModelRequest
from hermes.observe.logging import get_logger
from hermes.session.items import ContextSlice, Item
from hermes.session.store import Store

log = get_logger("session")

_SENTENCE_END = re.compile(r"[。！？!?]|\.(?=\s|$)")
_WHITESPACE = re.compile(r"\s+")

SUMMARY_INSTRUCTION = (
    "You keep the running summary of a conversation between a user and an assistant. Merge the "
    "previous summary and the new messages into one concise summary: the user's goals, facts and "
    "preferences they stated, decisions taken, tool results that matter, open questions. Keep "
    "names, numbers and ids exactly. Write in the language the user writes in. Reply with the "
    "summary only, at most {max_chars} characters.\n"
    "你负责维护用户与助手之间对话的滚动摘要。请把之前的摘要与新的消息合并为一份简洁的摘要："
    "用户的目标、陈述过的事实与偏好、已做出的决定、重要的工具结果、尚未解决的问题。"
    "名称、数字和编号保持原样。使用用户所用的语言，只输出摘要本身，不超过 {max_chars} 个字符。"
)


@runtime_checkable
class Summarizer(Protocol):
    """Folds items into a summary, given the previous summary (or None)."""

    async def summarize(self, previous: str | None, items: list[Item]) -> str: ...


def clip(text: str, limit: int) -> str:
    """``text`` on one line (each run of whitespace one space), at most ``limit`` characters
    (code points: CJK-safe), cut with "…" when longer. Reads only a bounded head of a long
    text, unless that head is nearly all whitespace."""
    window = limit * 4
    flat = " ".join(text[:window].split())
    if len(flat) <= limit and len(text) > window:
        flat = " ".join(text.split())  # the head folded to too little: the rest may show
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)] + "…"


def _first_sentence(text: str, limit: int) -> str:
    flat = _WHITESPACE.sub(" ", text[: limit * 4]).strip()
    end = _SENTENCE_END.search(flat)
    return clip(flat[: end.end()] if end else flat, limit)


def _result_ok(item: Item) -> bool:
    """Whether a tool result reports success: ``meta["ok"]``, else an ``"ok"`` JSON field."""
    if item.meta and isinstance(item.meta.get("ok"), bool):
        return bool(item.meta["ok"])
    content = item.content.lstrip()
    if content.startswith("{") and len(content) <= 20_000:
        try:
            data = json.loads(content)
        except ValueError:
            return True
        return not (isinstance(data, dict) and data.get("ok") is False)
    return True


class ExtractiveSummarizer:
    """A deterministic, offline summarizer: the previous summary's lines plus, per folded round,
    ``用户/User: …``, ``tools: name → ok/failed`` and ``assistant: <first sentence>``.

    The result is at most ``max_chars`` characters: the oldest lines go first.
    """

    def __init__(self, max_chars: int = 1500, line_chars: int = 160) -> None:
        self.max_chars = max(1, max_chars)
        self.line_chars = max(8, line_chars)

    async def summarize(self, previous: str | None, items: list[Item]) -> str:
        return self.summarize_now(previous, items)

    def summarize_now(self, previous: str | None, items: list[Item]) -> str:
        """The same as :meth:`summarize`, synchronously."""
        lines = (previous or "").splitlines()
        if not all(map(str.strip, lines)):  # C-speed check; the builder's own have no blanks
            lines = [line for line in lines if line.strip()]
        lines.extend(self._round_lines(items))
        return self._bounded(lines)

    def _round_lines(self, items: list[Item]) -> list[str]:
        lines: list[str] = []
        names: dict[str, str] = {}
        outcomes: list[tuple[str, str | None]] = []  # (name, "ok"/"failed"/None)
        answer: str | None = None

        def flush() -> None:
            if outcomes:
                shown = ", ".join(
                    f"{name} → {outcome or 'no result'}" for name, outcome in outcomes
                )
                lines.append(clip("tools: " + shown, self.line_chars))
            if answer:
                lines.append("assistant: " + _first_sentence(answer, self.line_chars))
            outcomes.clear()

        for item in items:
            if item.kind == "text" and item.role == "user":
                flush()
                answer = None
                lines.append("用户/User: " + clip(item.content, self.line_chars))
            elif item.kind == "text" and item.role == "assistant" and item.content.strip():
                answer = item.content
            elif item.kind == "tool_call":
                name = item.tool_name or "unknown"
                names[item.tool_call_id or ""] = name
                outcomes.append((name, None))
            elif item.kind == "tool_result":
                self._record_outcome(outcomes, names.get(item.tool_call_id or ""), item)
        flush()
        return lines

    @staticmethod
    def _record_outcome(
        outcomes: list[tuple[str, str | None]], name: str | None, item: Item
    ) -> None:
        outcome = "ok" if _result_ok(item) else "failed"
        name = name or item.tool_name or "unknown"
        for i, (called, seen) in enumerate(outcomes):
            if called == name and seen is None:
                outcomes[i] = (called, outcome)
                return
        outcomes.append((name, outcome))  # its call was folded earlier

    def _bounded(self, lines: list[str]) -> str:
        size = sum(map(len, lines)) + len(lines) - 1
        start = 0
        while size > self.max_chars and len(lines) - start > 1:
            size -= len(lines[start]) + 1
            start += 1
        text = "\n".join(lines[start:])
        return text if len(text) <= self.max_chars else text[: self.max_chars - 1] + "…"


def _transcript(items: list[Item], item_chars: int, max_chars: int) -> str:
    """The items as plain text lines, newest kept when over ``max_chars``."""
    lines: list[str] = []
    for item in items:
        if item.kind == "tool_call":
            line = f"assistant called {item.tool_name}({clip(item.content, item_chars)})"
        elif item.kind == "tool_result":
            line = f"tool result: {clip(item.content, item_chars)}"
        elif item.kind == "text":
            line = f"{item.role}: {clip(item.content, item_chars)}"
        else:
            continue
        lines.append(line)
    size, start = sum(len(line) + 1 for line in lines), 0
    while size > max_chars and start < len(lines) - 1:
        size -= len(lines[start]) + 1
        start += 1
    return "\n".join(lines[start:])


class ModelSummarizer:
    """Asks ``model`` for the summary; on :class:`ModelError` or an empty answer it falls back
    to ``fallback`` (an :class:`ExtractiveSummarizer` when not given), so folding never fails
    because a model server is down."""

    def __init__(
        self,
        model: Model,
        fallback: Summarizer | None = None,
        *,
        max_chars: int = 2000,
        max_input_chars: int = 16_000,
    ) -> None:
        self.model = model
        self.fallback: Summarizer = fallback or ExtractiveSummarizer()
        self.max_chars = max_chars
        self.max_input_chars = max_input_chars

    def request(self, previous: str | None, items: list[Item]) -> ModelRequest:
        """The request sent to the model (exposed so callers can log or test it)."""
        transcript = _transcript(items, 600, self.max_input_chars)
        user = (
            f"Previous summary / 之前的摘要:\n{previous or '(none / 无)'}\n\n"
            f"New messages / 新的消息:\n{transcript}"
        )
        return ModelRequest(
            messages=[
                {"role": "system", "content": SUMMARY_INSTRUCTION.format(max_chars=self.max_chars)},
                {"role": "user", "content": user},
            ]
        )

    async def summarize(self, previous: str | None, items: list[Item]) -> str:
        try:
            response = await self.model.complete(self.request(previous, items))
        except ModelError as exc:
            log.warning("summary_fallback", model=self.model.name, reason=exc.message)
            return await self.fallback.summarize(previous, items)
        except Exception as exc:  # noqa: BLE001 - a summary must never cost the user's turn
            log.warning("summary_fallback", model=self.model.name, reason=type(exc).__name__)
            return await self.fallback.summarize(previous, items)
        text = (response.content or "").strip()
        if not text:
            log.warning("summary_fallback", model=self.model.name, reason="empty answer")
            return await self.fallback.summarize(previous, items)
        return text if len(text) <= self.max_chars else text[: self.max_chars - 1] + "…"


async def fold_backlog(
    store: Store,
    session_id: str,
    slice: ContextSlice,
    summarizer: Summarizer,
    *,
    min_backlog: int = 8,
    max_items: int = 400,
    trace_id: str | None = None,
    fence: int | None = None,
) -> Item | None:
    """Fold the slice's backlog into a new summary item once it holds ``min_backlog`` items:
    :func:`summarize_backlog`, then the item appended under the claim ``fence``
    (``Store.append``) and returned stored; None when there is not enough to fold."""
    summary = await summarize_backlog(
        store, session_id, slice, summarizer,
        min_backlog=min_backlog, max_items=max_items, trace_id=trace_id,
    )  # fmt: skip
    if summary is None:
        return None
    (stored,) = await store.append(session_id, [summary], fence=fence)
    return stored


async def summarize_backlog(
    store: Store,
    session_id: str,
    slice: ContextSlice,
    summarizer: Summarizer,
    *,
    min_backlog: int = 8,
    max_items: int = 400,
    trace_id: str | None = None,
) -> Item | None:
    """The summary item folding the slice's backlog (not stored yet), once the backlog holds
    ``min_backlog`` items; None when there is not enough to fold.

    Reads at most ``max_items`` of the newest backlog items (older ones are named in the summary
    as not summarized), so the cost is bounded whatever the session's length. The item has role
    ``system``, ``meta["covers_until"] = window_start - 1`` and carries ``trace_id``, the turn
    that folded it. A summary is derived data: one lost before it is stored (a turn that dies
    first) is folded again by the next turn.
    """
    if slice.backlog < max(1, min_backlog):
        return None
    covered = slice.backlog_from - 1
    after = max(covered, slice.window_start - 1 - max_items)
    fetched = await store.read_items(
        session_id, after_seq=after, before_seq=slice.window_start, limit=max_items
    )
    # Copies: a summarizer is pluggable code, and the store's items must never change.
    items = [_copy(item) for item in fetched if item.kind != "summary"]
    skipped = max(0, slice.backlog - len(items))
    previous = slice.summary.content if slice.summary is not None else None
    text = await summarizer.summarize(previous, items)
    if skipped:
        note = (
            f"({skipped} earlier messages not summarized / 另有 {skipped} 条更早的消息未纳入摘要)"
        )
        text = f"{note}\n{text}"
    return Item(
        role="system",
        kind="summary",
        content=text,
        trace_id=trace_id,
        meta={"covers_until": slice.window_start - 1, "folded": len(items), "skipped": skipped},
    )


def _copy(item: Item) -> Item:
    """``item`` with its own ``meta`` (the store's object stays as it was)."""
    return Item(
        item.role,
        item.kind,
        item.content,
        item.tool_call_id,
        item.tool_name,
        item.sticky,
        item.trace_id,
        None if item.meta is None else dict(item.meta),
        item.seq,
        item.created_at,
    )
