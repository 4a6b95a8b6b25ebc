"""The messages a live session's rounds keep on their items (``Item.memo``): exactly the
window converted whole, and never shared with what a turn is handed (seed 001 §2.3)."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.session.context import _rounds, _rounds_whole, build_messages
from hermes.session.items import ContextSlice, Item
from tests.session.helpers import call, result, rounds, say, user
from tests.session.test_context_builder import _item

BIG = 1_000_000


def _fresh(items: list[Item]) -> list[Item]:
    """The same items as new objects, with no memo."""
    return [copy.copy(item) for item in items]


def _same(window: list[Item]) -> None:
    got, repaired, sticky, tokens = _rounds(window)
    want, want_repaired, want_sticky, want_tokens = _rounds_whole(_fresh(window))
    assert got == want
    assert (repaired, tokens, len(sticky)) == (want_repaired, want_tokens, len(want_sticky))
    flat = [m for r in got for m in r]
    assert {id(m) for m in flat if id(m) in sticky} == sticky


@settings(max_examples=300, deadline=None)
@given(st.lists(_item, max_size=40), st.integers(min_value=0, max_value=40))
def test_rounds_from_memos_are_the_window_converted_whole(items: list[Item], cut: int):
    for seq, item in enumerate(items, start=1):
        item.seq = seq
    _same(items)  # memos built
    _same(items)  # memos used
    _same(items[cut:])  # the window slid: the oldest rounds left it
    _same([*items, user("next"), call("n1"), result("n1"), say("done.")])


def test_a_call_id_in_two_rounds_is_paired_as_in_the_whole_window():
    window = [user("a"), call("x"), result("x"), say("1"), user("b"), call("x"), result("x")]
    _rounds(window)
    _same(window)


def test_what_a_turn_changes_in_its_messages_never_reaches_the_next_turn():
    window = rounds(3)
    for seq, item in enumerate(window, start=1):
        item.seq = seq
    first = build_messages(ContextSlice([], None, window), system_prompt="s", budget_tokens=BIG)
    pristine = copy.deepcopy(first.messages)
    for message in first.messages:  # a model adapter that rewrites what it is handed
        message["content"] = "changed"
        for tool_call in message.get("tool_calls") or ():
            tool_call["id"] = "changed"
            tool_call["function"]["arguments"] = "changed"
    again = build_messages(ContextSlice([], None, window), system_prompt="s", budget_tokens=BIG)
    assert again.messages == pristine
