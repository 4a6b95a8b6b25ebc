"""Small builders of conversation items for the session tests."""

from __future__ import annotations

from typing import Any

from hermes.session.items import Item


def user(text: str, **fields: Any) -> Item:
    return Item(role="user", kind="text", content=text, **fields)


def say(text: str, **fields: Any) -> Item:
    return Item(role="assistant", kind="text", content=text, **fields)


def call(call_id: str, name: str = "add", arguments: str = '{"a": 1, "b": 2}') -> Item:
    return Item(
        role="assistant", kind="tool_call", content=arguments, tool_call_id=call_id, tool_name=name
    )


def result(call_id: str, content: str = '{"ok": true, "output": 3}', name: str = "add") -> Item:
    return Item(
        role="tool", kind="tool_result", content=content, tool_call_id=call_id, tool_name=name
    )


def summary(text: str, covers_until: int) -> Item:
    return Item(role="system", kind="summary", content=text, meta={"covers_until": covers_until})


def a_round(n: int) -> list[Item]:
    """One round of four items: a question, a tool call, its result and the answer."""
    return [user(f"question {n}"), call(f"c{n}"), result(f"c{n}"), say(f"answer {n}.")]


def rounds(count: int, start: int = 0) -> list[Item]:
    return [item for n in range(start, start + count) for item in a_round(n)]
