"""A fast, CJK-aware estimate of how many tokens a text or a chat message costs.

No tokenizer can be downloaded at run time (DESIGN: nothing is fetched from a hub), and the model
behind an OpenAI-compatible endpoint is unknown anyway, so this is an estimate, tuned to err on
the high side so a context built under a budget still fits:

- CJK ideographs, kana, hangul and full-width punctuation: 1 token per character. Tokenizers
  range from ~0.6 (Qwen, DeepSeek) through ~0.8 (o200k) to ~1.3 (cl100k) tokens per Chinese
  character; 1.0 sits in the middle, and over-counting Chinese only costs some window.
- Everything else: 1 token per 4 characters (the usual figure for English and code).
- A non-empty text costs at least 1 token.

The count is one C-level regex pass (no per-character Python loop), and pure ASCII — most
English and JSON — skips even that.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

#: Tokens every chat message costs besides its text (role, separators).
MESSAGE_OVERHEAD = 4
#: Tokens a tool call costs besides its name and arguments (id, type, braces).
TOOL_CALL_OVERHEAD = 8
#: Tokens that prime the reply after the last message.
REPLY_PRIMING = 3
#: What a non-text content part (an image) is counted as.
NON_TEXT_PART = 85

_CJK_RUNS = re.compile(
    "["
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi radicals
    "\u3000-\u303f"  # CJK symbols and punctuation (、。「」)
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u31ff"  # Bopomofo, Hangul compatibility Jamo, Katakana extensions
    "\u3200-\u33ff"  # Enclosed CJK letters, CJK compatibility
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\ua960-\ua97f"  # Hangul Jamo Extended-A
    "\uac00-\ud7ff"  # Hangul syllables, Jamo Extended-B
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\ufe30-\ufe4f"  # CJK compatibility forms
    "\uff00-\uffef"  # Half-width and full-width forms (，！？)
    "\U00020000-\U0003134f"  # CJK Extensions B-G
    "]+"
)


#: Counts of non-ASCII texts already seen: a session's window is counted again on every turn,
#: and its texts are the same string objects turn after turn (the store's window cache), whose
#: hash Python keeps, so a look-up costs less than the regex pass. Bounded in entries and size.
_SEEN: dict[str, int] = {}
_SEEN_ENTRIES = 8192
_SEEN_MAX_CHARS = 2048


def count_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (0 for an empty string, else at least 1)."""
    length = len(text)
    if length == 0:
        return 0
    if text.isascii():
        return (length + 3) // 4
    seen = _SEEN.get(text)
    if seen is not None:
        return seen
    cjk = length - len(_CJK_RUNS.sub("", text))
    count = max(1, cjk + (length - cjk + 3) // 4)
    if length <= _SEEN_MAX_CHARS:
        if len(_SEEN) >= _SEEN_ENTRIES:
            _SEEN.clear()
        _SEEN[text] = count
    return count


def _content_tokens(content: Any) -> int:
    if isinstance(content, str):
        return count_tokens(content)
    if isinstance(content, list):  # OpenAI content parts
        total = 0
        for part in content:
            text = part.get("text") if isinstance(part, Mapping) else None
            total += count_tokens(text) if isinstance(text, str) else NON_TEXT_PART
        return total
    return 0


def message_tokens(message: Mapping[str, Any]) -> int:
    """Estimated tokens of one OpenAI chat message, tool calls (names, arguments) included."""
    total = MESSAGE_OVERHEAD + _content_tokens(message.get("content"))
    name = message.get("name")
    if isinstance(name, str):
        total += count_tokens(name)
    call_id = message.get("tool_call_id")
    if isinstance(call_id, str):
        total += count_tokens(call_id)
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        total += (
            TOOL_CALL_OVERHEAD
            + count_tokens(str(function.get("name", "")))
            + count_tokens(arguments)
        )
    return total


def messages_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """Estimated tokens of a whole request's messages, reply priming included."""
    return REPLY_PRIMING + sum(message_tokens(m) for m in messages)
