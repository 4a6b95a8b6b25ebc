"""The order of sacrifice when a model call's messages are over budget (seed 001 §2.2–2.3):
older results to their summaries, then whole older rounds, then this turn's earlier results,
and this turn's newest result last — never below its summary or its first and last 500 tokens."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.session import context, fitting
from hermes.session.context import (
    FRESH_FLOOR_TOKENS,
    STICKY_BUDGET_SHARE,
    STICKY_HEADER,
    build_messages,
    fit_messages,
)
from hermes.session.fitting import EARLIER_FLOOR_TOKENS, OLDER_FLOOR_TOKENS
from hermes.session.items import ContextSlice, Item
from hermes.session.tokens import count_tokens, messages_tokens
from tests.session.helpers import call, result, say, user

BIG = 10_000_000


def payload(size: int, *, summary: str | None = None, cjk: bool = False) -> str:
    """A tool message like ``ToolResult.to_model_text()``: ~``size`` tokens of output."""
    body = ("记录" * (size // 2)) if cjk else " ".join(f"w{i:03d}" for i in range(size * 4 // 5))
    data: dict[str, Any] = {"ok": True}
    if summary is not None:
        data["summary"] = summary
    data["output"] = {"events": body}
    return json.dumps(data, ensure_ascii=False)


def older_round(n: int, sizes: list[int], *, summaries: bool = True) -> list[Item]:
    items = [user(f"question {n}")]
    for k, size in enumerate(sizes):
        cid = f"old{n}-{k}"
        summary = f"record {n}.{k}: 3 events" if summaries else None
        items += [call(cid, "get_record"), result(cid, payload(size, summary=summary))]
    return [*items, say(f"answer {n}.")]


def numbered(items: list[Item]) -> list[Item]:
    for seq, item in enumerate(items, start=1):
        item.seq = seq
    return items


def build(items: list[Item], budget: int = BIG, **kw: Any) -> tuple[list[dict[str, Any]], int]:
    built = build_messages(
        ContextSlice(sticky=[], summary=None, window=numbered(items)),
        system_prompt=kw.get("system_prompt", "You are Hermes."),
        budget_tokens=budget,
    )
    return built.messages, built.tokens


def tool_contents(messages: list[dict[str, Any]]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}


def users(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user"]


def turn_with(results: list[str]) -> list[Item]:
    """This turn: the user's message, then one call and its result per step."""
    items = [user("check the records")]
    for k, content in enumerate(results):
        items += [call(f"now-{k}", "get_record"), result(f"now-{k}", content)]
    return items


# -- the order, case by case ------------------------------------------------------------------


def test_the_fresh_result_is_whole_while_older_rounds_can_give_way():
    history = [i for n in range(4) for i in older_round(n, [2000])]
    messages, total = build([*history, *turn_with([])])
    fresh = payload(2400, summary="record 9: 3 events")
    function = {"name": "get_record", "arguments": "{}"}
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "now-0", "type": "function", "function": function}
        ]},
        {"role": "tool", "tool_call_id": "now-0", "content": fresh},
    ]  # fmt: skip
    total = messages_tokens(messages)
    total, _ = fit_messages(messages, total, 6000)
    assert tool_contents(messages)["now-0"] == fresh
    assert total <= 6000
    assert total == messages_tokens(messages)


def test_older_results_go_to_their_summaries_before_any_round_is_dropped():
    history = [i for n in range(3) for i in older_round(n, [1500])]
    messages, total = build([*history, *turn_with([payload(1500, summary="now: fine")])], 4000)
    assert users(messages) == ["question 0", "question 1", "question 2", "check the records"]
    contents = tool_contents(messages)
    for n in range(2):  # the oldest first, only as many as needed
        older = json.loads(contents[f"old{n}-0"])
        assert older["summary"] == f"record {n}.0: 3 events"
        assert "output" not in older
        assert "output_excerpt" not in older
    assert contents["old2-0"] == payload(1500, summary="record 2.0: 3 events")
    assert contents["now-0"] == payload(1500, summary="now: fine")
    assert total <= 4000


def test_older_rounds_are_dropped_oldest_first_once_their_results_are_summaries():
    history = [i for n in range(6) for i in older_round(n, [600])]
    messages, total = build([*history, *turn_with([payload(2500, summary="now")])], 2900)
    kept = users(messages)
    assert kept[-1] == "check the records"
    assert kept[:-1] == [f"question {n}" for n in range(6)][6 - len(kept) + 1 :]
    assert len(kept) < 7
    assert tool_contents(messages)["now-0"] == payload(2500, summary="now")
    assert total <= 2900


def test_this_turns_earlier_results_give_way_before_the_newest():
    earlier = payload(2000, summary="first record")
    newest = payload(2000, summary="second record")
    messages, _ = build([*older_round(0, [300]), *turn_with([earlier, newest])], 2600)
    assert users(messages) == ["check the records"]  # the older round went first
    contents = tool_contents(messages)
    assert contents["now-1"] == newest
    assert contents["now-0"] != earlier
    assert json.loads(contents["now-0"])["summary"] == "first record"


def test_the_newest_result_keeps_its_summary_at_the_very_least():
    newest = payload(8000, summary="record 7: 31 events, last one delivered")
    messages, _ = build(turn_with([newest]), 80)
    kept = json.loads(tool_contents(messages)["now-0"])
    assert kept["summary"] == "record 7: 31 events, last one delivered"
    assert "left out to fit the context" in kept["note"]


def test_a_newest_result_without_summary_keeps_its_first_and_last_500_tokens():
    newest = "开头" + "数" * 20_000 + "结尾"
    messages, total = build(turn_with([newest]), 300)
    kept = tool_contents(messages)["now-0"]
    assert kept.startswith("开头" + "数" * (FRESH_FLOOR_TOKENS - 2))
    assert kept.endswith("数" * (FRESH_FLOOR_TOKENS - 2) + "结尾")
    assert "characters left out to fit the context" in kept
    assert total > 300  # an honest overrun rather than a result the model cannot use


def test_a_newest_result_is_cut_only_as_far_as_needed():
    newest = payload(4000)
    messages, total = build(turn_with([newest]), 3000)
    kept = json.loads(tool_contents(messages)["now-0"])
    assert 2600 < count_tokens(kept["output_excerpt"]) < 3000
    assert kept["output_chars"] == len(json.dumps(json.loads(newest)["output"]))
    assert total <= 3000


def test_a_result_shortened_twice_keeps_its_start_and_end_and_its_original_length():
    newest = payload(4000)
    messages, total = build(turn_with([newest]), 3000)
    first = json.loads(tool_contents(messages)["now-0"])
    total, _ = fit_messages(messages, total, 2000)
    second = json.loads(tool_contents(messages)["now-0"])
    assert second["output_chars"] == first["output_chars"]
    head = first["output_excerpt"][:200]
    tail = first["output_excerpt"][-200:]
    assert second["output_excerpt"].startswith(head)
    assert second["output_excerpt"].endswith(tail)


def test_a_result_with_a_summary_is_never_left_as_an_excerpt_dearer_than_its_summary():
    """A cut down to a few characters of output costs more (its note) than the summary-only
    form: a later fit of the same request goes to that form rather than stopping there."""
    small = payload(42, summary="summary of it")
    messages, _ = build(Conversation([], [[small, payload(155)]]).items(), 254)  # small is cut
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "now-9", "type": "function",
             "function": {"name": "get_record", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "now-9", "content": payload(1042)},
    ]  # fmt: skip
    fit_messages(messages, messages_tokens(messages), 254)
    kept = tool_contents(messages)["now-0-0"]
    summary_only = fitting._Result.read(small).shortened(0)
    assert count_tokens(kept) <= count_tokens(summary_only)
    assert json.loads(kept)["summary"] == "summary of it"


def test_a_dropped_rounds_sticky_message_moves_into_the_notes():
    sticky = user("记住我的订单号是ORD-20240611", sticky=True)
    history = [sticky, say("好的，记住了。"), *[i for n in range(5) for i in older_round(n, [800])]]
    messages, _ = build([*history, *turn_with([payload(2500, summary="now")])], 3000)
    assert "记住我的订单号是ORD-20240611" not in users(messages)
    notes = [
        m["content"] for m in messages if m["content"] and m["content"].startswith(STICKY_HEADER)
    ]
    assert notes == [STICKY_HEADER + "- user: 记住我的订单号是ORD-20240611"]


def test_system_messages_of_a_dropped_round_stay():
    history = [*older_round(0, [3000]), *older_round(1, [10])]
    window = numbered([*history, *turn_with([payload(3000, summary="now")])])
    built = build_messages(
        ContextSlice(sticky=[], summary=None, window=window), system_prompt=None, budget_tokens=3200
    )
    messages = built.messages
    note = {"role": "system", "content": "memory note"}
    messages.insert(len(messages) - 3, note)  # as the turn inserts it before the user message
    fit_messages(messages, messages_tokens(messages), 3300)
    assert note in messages


# -- the property -------------------------------------------------------------------------------


@dataclass
class Conversation:
    older: list[list[Item]]
    steps: list[list[str]]  # this turn: the results of each tool step

    def items(self) -> list[Item]:
        items = [i for r in self.older for i in r] + [user("check the records")]
        for s, results in enumerate(self.steps):
            ids = [f"now-{s}-{k}" for k in range(len(results))]
            items += [call(cid, "get_record") for cid in ids]
            items += [result(cid, content) for cid, content in zip(ids, results, strict=True)]
        return items


_result = st.builds(
    lambda size, summary, cjk, plain: (
        ("数" * size if cjk else "x" * (4 * size))
        if plain
        else payload(size, summary="summary of it" if summary else None, cjk=cjk)
    ),
    st.integers(0, 3000),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
_conversation = st.builds(
    Conversation,
    # Rounds are numbered by position: two rounds with one number would share call ids.
    st.lists(
        st.tuples(st.lists(st.integers(0, 3000), max_size=2), st.booleans()),
        max_size=5,
    ).map(lambda rounds: [older_round(n, s, summaries=b) for n, (s, b) in enumerate(rounds)]),
    st.lists(st.lists(_result, min_size=1, max_size=2), min_size=1, max_size=3),
)


def _body_tokens(content: str) -> int | None:
    """Tokens of a tool message's output, or None when it is a summary-only form."""
    try:
        data = json.loads(content)
    except ValueError:
        return count_tokens(content)
    if not isinstance(data, dict):
        return count_tokens(content)
    for key in ("output", "output_excerpt"):
        if key in data:
            value = data[key]
            return count_tokens(
                value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            )
    return None


def _at_floor(original: str, now: str, floor: int) -> bool:
    """Whether a result is as short as its kind of result may get (or never could be cut: a
    result smaller than the note a cut adds stays as it is)."""
    if now == original and count_tokens(original) <= 2 * floor + 64:
        return True
    has_summary = original.startswith("{") and "summary" in json.loads(original)
    body = _body_tokens(now)
    if has_summary:
        # Only the summary is left, or nothing to cut; or what is left is already no longer
        # than the summary-only form (whose note can outweigh a short excerpt).
        floor_form = fitting._Result.read(original).shortened(0)
        return body is None or body <= 2 or count_tokens(now) <= count_tokens(floor_form)
    return body is not None and body <= 2 * floor + 32  # the "left out" note counts too


def _check_order(
    conv: Conversation, messages: list[dict[str, Any]], total: int, budget: int
) -> None:
    older_users = [r[0].content for r in conv.older]
    kept_users = users(messages)
    assert kept_users[-1] == "check the records"
    kept_older = kept_users[:-1]
    assert kept_older == older_users[len(older_users) - len(kept_older) :]  # oldest go first
    dropped = len(older_users) - len(kept_older)
    originals = {
        i.tool_call_id: i.content for r in conv.older for i in r if i.kind == "tool_result"
    }
    for s, results in enumerate(conv.steps):
        for k, content in enumerate(results):
            originals[f"now-{s}-{k}"] = content
    now = tool_contents(messages)
    older_ids = [cid for cid in now if cid.startswith("old")]
    earlier = [f"now-{s}-{k}" for s, r in enumerate(conv.steps[:-1]) for k in range(len(r))]
    newest = [f"now-{len(conv.steps) - 1}-{k}" for k in range(len(conv.steps[-1]))]
    if dropped:  # rounds went only after every older result was down to its summary
        assert all(_at_floor(originals[c], now[c], OLDER_FLOOR_TOKENS) for c in older_ids)
    touched = [c for c in earlier + newest if now[c] != originals[c]]
    if touched:  # this turn gives way only once no older round is left
        assert kept_older == []
    if any(now[c] != originals[c] for c in newest):
        assert all(
            now[c] == originals[c] or _at_floor(originals[c], now[c], EARLIER_FLOOR_TOKENS)
            for c in earlier
        )
    for c in newest:  # never below the floor
        if now[c] == originals[c]:
            continue
        if originals[c].startswith("{") and "summary" in json.loads(originals[c]):
            assert json.loads(now[c])["summary"] == json.loads(originals[c])["summary"]
        else:
            kept = _body_tokens(now[c])
            assert kept is not None
            assert kept >= min(_body_tokens(originals[c]) or 0, 2 * FRESH_FLOOR_TOKENS) - 8
    if total > budget:
        assert kept_older == []


@settings(max_examples=150, deadline=None)
@given(_conversation, st.integers(min_value=200, max_value=20_000))
def test_the_order_of_sacrifice_holds_for_any_budget_and_result_sizes(
    conv: Conversation, budget: int
):
    messages, total = build(conv.items(), budget)
    assert total == messages_tokens(messages)
    _check_order(conv, messages, total, budget)


@settings(max_examples=100, deadline=None)
@given(_conversation, st.integers(min_value=200, max_value=20_000))
def test_the_order_holds_when_the_results_arrive_during_the_turn(conv: Conversation, budget: int):
    """As the turn does it: the request is built with the turn's first results, then each
    later step's results arrive and the request is fitted again."""
    first = Conversation(conv.older, conv.steps[:1])
    messages, total = build(first.items(), budget)
    for s, results in enumerate(conv.steps[1:], start=1):
        ids = [f"now-{s}-{k}" for k in range(len(results))]
        step = [{"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "get_record", "arguments": "{}"}}
            for cid in ids]}]  # fmt: skip
        step += [
            {"role": "tool", "tool_call_id": c, "content": r}
            for c, r in zip(ids, results, strict=True)
        ]
        messages += step
        total = messages_tokens(messages)
        total, _ = fit_messages(messages, total, budget)
    assert total == messages_tokens(messages)
    _check_order(conv, messages, total, budget)


def test_sticky_notes_take_at_most_their_share_and_keep_what_the_user_asked_to_keep():
    asked = user(
        "记住我的会员号是 VIP-30071",
        sticky=True,
        meta={"sticky": ["keep: 我的会员号是 VIP-30071", "account: VIP-30071"]},
    )
    stated = [
        user(
            f"my order id is ORD-{n:05d}", sticky=True, meta={"sticky": [f"order_id: ORD-{n:05d}"]}
        )
        for n in range(300)
    ]
    built = build_messages(
        ContextSlice(
            sticky=numbered([asked, *stated]), summary=None, window=numbered(turn_with([]))
        ),
        system_prompt=None,
        budget_tokens=3000,
    )
    (notes,) = [m["content"] for m in built.messages if m["content"].startswith(STICKY_HEADER)]
    assert count_tokens(notes) <= 3000 * STICKY_BUDGET_SHARE + 40
    assert "VIP-30071" in notes  # what the user asked to keep goes last
    assert "ORD-00299" in notes  # then the newest
    assert "ORD-00000" not in notes
    assert notes.index("VIP-30071") < notes.index("ORD-00299")  # still in the order said


# -- the edges of dropping a round and of the notes' share --------------------------------------


def _round_with_a_system_message() -> list[dict[str, Any]]:
    """The head, an older round with a system message inside it, and this turn's question."""
    return [
        {"role": "system", "content": "You are Hermes."},
        {"role": "user", "content": "question 0"},
        {"role": "system", "content": "memory note"},
        {"role": "assistant", "content": "x" * 4000},
        {"role": "user", "content": "question 1"},
    ]


def test_a_system_message_inside_a_dropped_round_stays():
    messages = _round_with_a_system_message()
    fitted = fitting.fit(messages, messages_tokens(messages), 100)
    assert fitted.dropped_rounds == 1
    assert {"role": "system", "content": "memory note"} in messages


def test_the_messages_after_a_system_message_of_a_dropped_round_go_with_it():
    messages = _round_with_a_system_message()
    fitting.fit(messages, messages_tokens(messages), 100)
    assert [m["content"] for m in messages] == ["You are Hermes.", "memory note", "question 1"]


def test_a_dropped_sticky_user_message_without_text_adds_an_empty_note_line():
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": None},
        {"role": "assistant", "content": "x" * 4000},
        {"role": "user", "content": "question 1"},
    ]
    fitting.fit(messages, messages_tokens(messages), 100, sticky=lambda m: m.get("content") is None)
    assert messages[0] == {"role": "system", "content": STICKY_HEADER + "- user: "}


def _notes_of(*lines: str) -> list[str]:
    """The sticky notes of one sticky assistant item per line, at a budget of 0 (whose share
    is below the notes' floor of 64 tokens)."""
    items = [Item("assistant", "text", line, sticky=True) for line in lines]
    return context._sticky_notes(items, 0)


def test_notes_of_exactly_64_tokens_fit_the_smallest_budget():
    text = "a" * (256 - len("- assistant: "))
    assert count_tokens(f"- assistant: {text}") == 64
    assert _notes_of(text) == [f"- assistant: {text}"]


def test_notes_of_65_tokens_do_not_fit_the_smallest_budget():
    text = "a" * (257 - len("- assistant: "))
    assert count_tokens(f"- assistant: {text}") == 65
    assert _notes_of(text) == []


def test_past_the_share_the_newest_note_that_fills_it_exactly_is_kept():
    # Each kept line costs its tokens + 1 (its newline): 63 + 1 = the floor of 64.
    newest = "n" * (252 - len("- assistant: "))
    assert count_tokens(f"- assistant: {newest}") == 63
    assert _notes_of("old", newest) == [f"- assistant: {newest}"]
