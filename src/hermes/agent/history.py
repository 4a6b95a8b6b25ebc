"""Import an existing chat-format conversation into a session (``agent.import_history``;
DESIGN.md, "Public contracts").

The messages are converted to items and written in one bulk transaction; history older than
the context window is folded into one summary at import time, so the first turn after an
import of 100,000 messages costs what a turn in a short session costs (DESIGN principle 5).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from hermes.errors import InvalidInputError
from hermes.models.json_repair import loads_lenient
from hermes.session.items import Item
from hermes.session.privacy import redact_secrets
from hermes.session.store import Store
from hermes.session.summary import ExtractiveSummarizer

T = TypeVar("T")

_ROLES = {"system", "user", "assistant", "tool", "function"}


def import_chat_history(
    store: Store,
    session_id: str,
    user_id: str | None,
    messages: Sequence[dict[str, Any]],
    *,
    rounds: int,
) -> int:
    """Blocking import; returns the number of items stored (summary included)."""
    items = chat_history_items(messages)
    return _run_blocking(_import(store, session_id, user_id, items, rounds))


def chat_history_items(messages: Sequence[dict[str, Any]]) -> list[Item]:
    """Chat-format ``messages`` as session items (``InvalidInputError`` naming a malformed
    one by its index)."""
    return [item for i, m in enumerate(messages) for item in _convert(i, m)]


async def import_items(
    store: Store, session_id: str, user_id: str | None, items: list[Item], *, rounds: int
) -> int:
    """:func:`import_chat_history` of converted items, from a running event loop (a turn
    that seeds its new session holds the session's claim)."""
    return await _import(store, session_id, user_id, list(items), rounds)


async def _import(
    store: Store, session_id: str, user_id: str | None, items: list[Item], rounds: int
) -> int:
    """Append the converted items; fold what falls before the window into one summary.

    Into a session that already has a conversation, the import goes after it, and the new
    summary also takes in the session's earlier summary and its unfolded items (the newest
    ``_EARLIER_LIMIT`` of them), so nothing the model could see before is dropped. Do not
    import into a session while one of its turns is running.
    """
    existing = await store.load_session(session_id)
    if existing is not None and user_id is None:
        user_id = existing.user_id  # an import is the application's act, on the owner's behalf
    record = await store.ensure_session(session_id, user_id)
    base = record.last_seq
    window_start = _window_start(items, rounds)
    if window_start > 0:
        previous, earlier = await _earlier_history(store, session_id, base)
        text = await ExtractiveSummarizer().summarize(previous, earlier + items[:window_start])
        items.append(
            Item(
                "system",
                "summary",
                text,
                meta={"covers_until": base + window_start, "imported": True},
            )
        )
    return await asyncio.to_thread(store.bulk_import, session_id, user_id, items)


_EARLIER_LIMIT = 400


async def _earlier_history(
    store: Store, session_id: str, last_seq: int
) -> tuple[str | None, list[Item]]:
    """The session's latest summary and the items after it (bounded), before an import."""
    if last_seq == 0:
        return None, []
    current = await store.context_slice(session_id, 1)
    previous = current.summary.content if current.summary is not None else None
    earlier = await store.read_items(
        session_id,
        after_seq=max(current.backlog_from - 1, last_seq - _EARLIER_LIMIT),
        before_seq=last_seq + 1,
        limit=_EARLIER_LIMIT,
    )
    return previous, [i for i in earlier if i.kind != "summary"]


def _window_start(items: list[Item], rounds: int) -> int:
    """Index of the first item of the last ``rounds`` rounds (0 if there are fewer)."""
    seen = 0
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item.role == "user" and item.kind == "text":
            seen += 1
            if seen == rounds:
                return index
    return 0


def _text(index: int, content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        parts = [
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        ]
        return "\n".join(str(p) for p in parts)
    raise InvalidInputError(f"messages[{index}].content must be a string or a list of parts")


def _convert(index: int, message: Any) -> list[Item]:
    """One chat-format message as items; a malformed message is named by its index."""
    if not isinstance(message, dict):
        raise InvalidInputError(f"messages[{index}] is not an object")
    role = message.get("role")
    if role not in _ROLES:
        raise InvalidInputError(
            f"messages[{index}].role is {role!r}; expected one of {sorted(_ROLES)}"
        )
    created = _timestamp(message.get("timestamp"))
    text = _text(index, message.get("content"))
    if role in ("system", "user", "assistant"):  # the session log never keeps a secret
        text = redact_secrets(text).text
    if role in ("system", "user"):
        return [Item(role, "text", text, sticky=role == "system", created_at=created)]
    if role in ("tool", "function"):
        call_id = message.get("tool_call_id") or f"imported-{index}"
        return [
            Item(
                "tool",
                "tool_result",
                text,
                tool_call_id=str(call_id),
                tool_name=message.get("name"),
                created_at=created,
            )
        ]
    items = [Item("assistant", "text", text, created_at=created)] if text else []
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {}) if isinstance(call, dict) else {}
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f"messages[{index}].tool_calls: a call has no function name")
        items.append(
            Item(
                "assistant",
                "tool_call",
                _arguments(fn.get("arguments")),
                tool_call_id=str(call.get("id") or f"imported-{index}"),
                tool_name=name,
                created_at=created,
            )
        )
    return items


def _arguments(raw: Any) -> str:
    if isinstance(raw, dict):
        return json.dumps(raw, ensure_ascii=False)
    if isinstance(raw, str):
        try:
            value = loads_lenient(raw)
        except ValueError:
            return json.dumps({}, ensure_ascii=False)
        return json.dumps(value if isinstance(value, dict) else {}, ensure_ascii=False)
    return "{}"


def _timestamp(value: Any) -> float:
    if isinstance(value, int | float) and value > 0:
        return float(value)
    return 0.0


def _run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, also when a loop runs in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


__all__ = ["chat_history_items", "import_chat_history", "import_items"]
