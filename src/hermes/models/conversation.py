"""Chat messages in the one shape every OpenAI-compatible server and chat template accepts.

Real servers are stricter than OpenAI: llama-cpp-python's request model refuses an assistant
message whose ``content`` is null (llama.cpp's own server has the same trap,
ggml-org/llama.cpp#13471), and strict chat templates (Gemma, Qwen3, Mistral …) raise when a
``system`` message appears anywhere but first. So what Hermes sends has:

* exactly one system message, at the start — the instructions, the summary, the sticky notes,
  the turn's memory and correction notes, in that order, as one text (a template that has no
  system role at all folds the first message into the first user turn, which still works);
* ``content: ""`` — never null — on an assistant message that only carries tool calls, and a
  string on every tool message.

:func:`with_notes` builds a turn's first messages that way; :func:`wire_messages` is applied
to every request at the edge (``OpenAICompatModel``), so that history imported from elsewhere
(``Agent.import_history``) cannot break a request either.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["SYSTEM_JOINER", "wire_messages", "with_notes"]

Message = dict[str, Any]

#: Between the parts of the one system message.
SYSTEM_JOINER = "\n\n"


def with_notes(messages: list[Message], notes: Iterable[str]) -> list[Message]:
    """``messages`` as :func:`wire_messages` makes them, the one system message ending with
    ``notes`` (the turn's memory and correction notes). The input is not modified."""
    return wire_messages(messages, notes)


def wire_messages(messages: list[Message], notes: Iterable[str] = ()) -> list[Message]:
    """``messages`` as sent to a server: one system message at the start (then ``notes``),
    no null content. The input is not modified."""
    out = _one_system_message(messages, [note for note in notes if note])
    for index, message in enumerate(out):
        role = message.get("role")
        if role in ("assistant", "tool") and message.get("content") is None:
            out[index] = {**message, "content": ""}
    return out


def _one_system_message(messages: list[Message], notes: list[str]) -> list[Message]:
    parts: list[str] = []
    rest: list[Message] = []
    for message in messages:
        if message.get("role") == "system":
            text = _text(message.get("content"))
            if text:
                parts.append(text)
        else:
            rest.append(message)
    parts.extend(notes)
    if not parts:
        return rest if len(rest) != len(messages) else list(messages)
    return [{"role": "system", "content": SYSTEM_JOINER.join(parts)}, *rest]


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)
