"""Streamed text on its way to the user, with tool calls kept out of it (see :class:`TextRelay`)."""

from __future__ import annotations

from collections.abc import Callable

from hermes.models.call_parser import CALL_OPEN, parse_tool_calls

__all__ = ["TextRelay"]


class TextRelay:
    """Passes streamed text to ``on_text``.

    With the offered tool names (``names``) it keeps calls out of what the user sees: it stops
    for good where a call tag starts (``<tool_call>``, ``<function``, ``<tools>`` …), holding
    back a possible partial marker until it is decided; it holds a code fence until it closes
    and drops it when it holds a call; and it holds an answer that opens with ``{`` or ``[``
    to the end (it may be a whole-message call: see :meth:`flush`).
    """

    __slots__ = (
        "_fence",
        "_held",
        "_json",
        "_names",
        "_on_text",
        "_started",
        "_stopped",
        "forwarded",
    )

    def __init__(
        self, on_text: Callable[[str], None] | None, *, names: frozenset[str] = frozenset()
    ) -> None:
        self._on_text = on_text
        self._names = names
        self._held = ""
        self._stopped = on_text is None
        self._json = False
        self._fence = False
        #: Without tools every piece goes straight through.
        self._started = not names
        self.forwarded = False

    def feed(self, piece: str) -> None:
        if self._stopped:
            return
        if not self._names or (
            self._started and not (self._held or self._json) and not _may_mark(piece)
        ):
            self._emit(piece)
            return
        text = self._held + piece
        self._held = ""
        if not self._started:
            if not text.strip():
                self._held = text  # leading blanks: the first visible character decides
                return
            self._started = True
            self._json = text.lstrip()[:1] in ("{", "[")
        if self._json:
            self._held = text
            return
        self._scan(text)

    def _scan(self, text: str) -> None:
        while text:
            if self._fence:
                close = text.find("```", text.find("\n") + 1 if "\n" in text else len(text))
                if close < 0:
                    self._held = text
                    return
                fence, text = text[: close + 3], text[close + 3 :]
                self._fence = False
                if not parse_tool_calls(fence, tool_names=self._names).tool_calls:
                    self._emit(fence)  # an ordinary code block
                continue
            tag = min((i for m in _STREAM_MARKERS if (i := text.find(m)) >= 0), default=-1)
            fence_at = text.find("```")
            if fence_at >= 0 and (tag < 0 or fence_at < tag):
                self._emit(text[:fence_at])
                self._fence = True
                text = text[fence_at:]
                continue
            if tag >= 0:
                self._stopped = True
                self._emit(text[:tag])
                return
            keep = _partial_marker_length(text)
            self._held = text[len(text) - keep :] if keep else ""
            self._emit(text[: len(text) - keep])
            return

    def flush(self, *, release: bool = True) -> None:
        """The stream ended: release the text held back (a possible marker start, an unclosed
        fence, a JSON answer) unless ``release`` is false (the answer held a call)."""
        if not self._stopped and self._held and release:
            self._emit(self._held)
        self._held = ""

    def _emit(self, text: str) -> None:
        if text and self._on_text is not None:
            self.forwarded = True
            self._on_text(text)


def _may_mark(piece: str) -> bool:
    """Whether ``piece`` may hold (the start of) a call marker or a fence."""
    return "<" in piece or "[" in piece or "`" in piece


#: Where a call starts in streamed text (the shapes of hermes.models.call_parser); the
#: fence opening is a marker too, so that a partial one is held back.
_STREAM_MARKERS = (CALL_OPEN, "<function", "<tools>", "[TOOL_CALLS]", "<|python_tag|>")
_PARTIAL_MARKERS = (*_STREAM_MARKERS, "```")


def _partial_marker_length(text: str) -> int:
    """Length of the longest end of ``text`` that is a proper prefix of a marker."""
    longest = max(len(m) for m in _PARTIAL_MARKERS)
    for size in range(min(len(text), longest - 1), 0, -1):
        tail = text[-size:]
        if any(m.startswith(tail) and m != tail for m in _PARTIAL_MARKERS):
            return size
    return 0
