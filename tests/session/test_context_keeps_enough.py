"""The context builder keeps as much as the budget allows (seed 001 §2.2): a budget one token
larger keeps the next round or result, one token smaller gives it away; and the sticky notes of
tool items, summaries and ordinary messages read as documented."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.session.context import (
    STICKY_BUDGET_SHARE,
    STICKY_HEADER,
    BuiltContext,
    build_messages,
    fit_messages,
)
from hermes.session.items import ContextSlice, Item
from hermes.session.sticky import sticky_facts
from hermes.session.tokens import count_tokens, message_tokens, messages_tokens
from tests.session.helpers import call, result, rounds, say, summary, user

BIG = 1_000_000


def _numbered(items: list[Item]) -> list[Item]:
    for seq, item in enumerate(items, start=1):
        item.seq = seq
    return items


def _build(
    window: list[Item],
    budget: int = BIG,
    *,
    sticky: list[Item] | None = None,
    system_prompt: str | None = None,
) -> BuiltContext:
    return build_messages(
        ContextSlice(sticky=_numbered(sticky or []), summary=None, window=_numbered(window)),
        system_prompt=system_prompt,
        budget_tokens=budget,
    )


def _round_costs(built: BuiltContext) -> list[int]:
    """The tokens of each round of ``built`` (a round starts at a user message)."""
    costs: list[int] = []
    for message in built.messages:
        if message["role"] == "system":
            continue
        if message["role"] == "user":
            costs.append(0)
        costs[-1] += message_tokens(message)
    return costs


def _notes(built: BuiltContext) -> str:
    (notes,) = [m["content"] for m in built.messages if m["content"].startswith(STICKY_HEADER)]
    return str(notes)


# -- whole rounds: exactly as many as needed -------------------------------------------------


def test_a_budget_equal_to_the_whole_context_keeps_all_of_it() -> None:
    full = _build(rounds(4), system_prompt="You are Hermes.")
    exact = _build(rounds(4), full.tokens, system_prompt="You are Hermes.")
    assert exact.messages == full.messages
    assert (exact.tokens, exact.dropped_rounds, exact.truncated) == (full.tokens, 0, 0)


def test_one_token_less_drops_exactly_the_oldest_round() -> None:
    full = _build(rounds(4), system_prompt="You are Hermes.")
    first = _round_costs(full)[0]
    tight = _build(rounds(4), full.tokens - 1, system_prompt="You are Hermes.")
    assert tight.dropped_rounds == 1
    assert tight.tokens == full.tokens - first
    assert tight.messages == [full.messages[0], *full.messages[5:]]


@settings(max_examples=40, deadline=None)
@given(count=st.integers(2, 6), data=st.data())
def test_the_budget_of_k_fewer_rounds_drops_k_and_one_token_less_drops_one_more(
    count: int, data: st.DataObject
) -> None:
    full = _build(rounds(count))
    costs = _round_costs(full)
    k = data.draw(st.integers(0, count - 2), label="rounds to drop")
    budget = full.tokens - sum(costs[:k])
    fitted = _build(rounds(count), budget)
    assert fitted.dropped_rounds == k
    assert fitted.tokens == budget
    one_less = _build(rounds(count), budget - 1)
    assert one_less.dropped_rounds == k + 1
    assert one_less.tokens == budget - costs[k]


def test_the_last_round_stays_when_every_older_one_is_gone() -> None:
    full = _build(rounds(3))
    last = _round_costs(full)[-1]
    built = _build(rounds(3), 1)
    assert built.dropped_rounds == 2
    assert built.tokens == last + 3  # the reply priming
    assert built.messages[0]["content"] == "question 2"


# -- older results: summarized one by one, only as far as needed -----------------------------


def _summarized_result(call_id: str) -> Item:
    body = {"ok": True, "summary": f"sum {call_id}", "output": "x" * 2000}
    return result(call_id, json.dumps(body))


def _rounds_with_big_results(count: int) -> list[Item]:
    items: list[Item] = []
    for n in range(count):
        items += [user(f"question {n}"), call(f"c{n}"), _summarized_result(f"c{n}")]
        items.append(say(f"answer {n}."))
    return items


def test_older_results_go_to_their_summaries_one_at_a_time() -> None:
    full = _build(_rounds_with_big_results(3))
    one = _build(_rounds_with_big_results(3), full.tokens - 1)
    assert (one.dropped_rounds, one.truncated) == (0, 1)
    tool_messages = [m for m in one.messages if m["role"] == "tool"]
    assert "output" not in json.loads(tool_messages[0]["content"])
    assert json.loads(tool_messages[1]["content"])["output"] == "x" * 2000
    # exactly that budget: the same; one token less: the next older result gives way too
    same = _build(_rounds_with_big_results(3), one.tokens)
    assert same.messages == one.messages
    two = _build(_rounds_with_big_results(3), one.tokens - 1)
    assert (two.dropped_rounds, two.truncated) == (0, 2)
    assert json.loads([m for m in two.messages if m["role"] == "tool"][1]["content"])[
        "summary"
    ] == ("sum c1")
    # the newest result (this turn's) stays whole while only older ones were cut
    assert json.loads([m for m in two.messages if m["role"] == "tool"][2]["content"])["output"] == (
        "x" * 2000
    )


def test_a_summarized_result_says_it_was_left_out_and_keeps_its_other_fields() -> None:
    full = _build(_rounds_with_big_results(2))
    built = _build(_rounds_with_big_results(2), full.tokens - 1)
    first = json.loads(next(m["content"] for m in built.messages if m["role"] == "tool"))
    assert first["ok"] is True
    assert first["summary"] == "sum c0"
    assert first["note"] == (
        "output (2000 characters) left out to fit the context; the summary above is what it "
        "said; call the tool again if you need it"
    )


def test_fit_messages_leaves_a_context_within_budget_alone() -> None:
    built = _build(_rounds_with_big_results(2))
    messages = [dict(m) for m in built.messages]
    assert fit_messages(messages, built.tokens, built.tokens) == (built.tokens, 0)
    assert messages == built.messages
    total, truncated = fit_messages(messages, built.tokens, built.tokens - 1)
    assert truncated == 1
    assert total == messages_tokens(messages) < built.tokens


# -- sticky user messages of dropped rounds --------------------------------------------------


def test_a_sticky_user_item_of_a_dropped_round_moves_into_the_notes() -> None:
    window = [user("my order id is ORD-00042", sticky=True), say("noted."), *rounds(2)]
    full = _build(window)
    built = _build(window, full.tokens - 1)
    assert built.dropped_rounds == 1
    assert "ORD-00042" in _notes(built)
    assert built.messages[0]["content"].startswith(STICKY_HEADER)  # the end of the empty head
    assert built.tokens == messages_tokens(built.messages)


def test_a_dropped_user_message_not_marked_sticky_is_not_carried_by_the_builder() -> None:
    # The builder trusts the items' sticky flag; only fit_messages (no items) reads the text.
    text = "my order id is ORD-00042"
    assert sticky_facts(text)
    window = [user(text), say("noted."), *rounds(2)]
    full = _build(window)
    built = _build(window, full.tokens - 1)
    assert built.dropped_rounds == 1
    assert not any(m["content"].startswith(STICKY_HEADER) for m in built.messages)
    messages = [dict(m) for m in full.messages]
    fit_messages(messages, full.tokens, full.tokens - 1)
    assert messages[0]["content"].startswith(STICKY_HEADER)
    assert "ORD-00042" in messages[0]["content"]


def test_carried_notes_join_the_existing_notes_message() -> None:
    older = user("my order id is ORD-00001", sticky=True)
    window = [user("my order id is ORD-00042", sticky=True), say("noted."), *rounds(2)]
    full = _build(window, sticky=[older], system_prompt="Be brief.")
    built = _build(window, full.tokens - 1, sticky=[older], system_prompt="Be brief.")
    assert [m["role"] for m in built.messages[:2]] == ["system", "system"]
    notes = _notes(built)
    assert notes.index("ORD-00001") < notes.index("ORD-00042")
    assert built.tokens == messages_tokens(built.messages)


# -- the sticky notes of older items ---------------------------------------------------------


def test_sticky_notes_of_tool_items_name_the_tool_and_say_it_once() -> None:
    anonymous = Item(
        role="tool", kind="tool_result", content="42", tool_call_id="c9", tool_name=None
    )
    sticky = [
        call("c1", "lookup", '{"id": "A-7"}'),
        result("c1", '{"ok": true, "output": "found"}', "lookup"),
        result("c1", '{"ok": true, "output": "found"}', "lookup"),
        anonymous,
        say("the id is A-7"),
        summary("older things", 3),
    ]
    built = _build([user("hi")], sticky=sticky, system_prompt="Be brief.")
    assert built.messages[1] == {
        "role": "system",
        "content": STICKY_HEADER
        + "\n".join(
            [
                '- assistant called lookup({"id": "A-7"})',
                '- result of lookup: {"ok": true, "output": "found"}',
                "- result of c9: 42",
                "- assistant: the id is A-7",
            ]
        ),
    }


def test_no_sticky_items_no_notes_message() -> None:
    built = _build([user("hi")], sticky=[summary("only a summary", 2)], system_prompt="S")
    assert [m["content"] for m in built.messages] == ["S", "hi"]


def _stated(n: int) -> Item:
    return user(f"my order id is ORD-{n:05d}", sticky=True, meta={"sticky": [f"order ORD-{n:05d}"]})


def _lines_cost(built: BuiltContext) -> int:
    return count_tokens(_notes(built)[len(STICKY_HEADER) :])


def test_sticky_notes_within_their_share_are_all_kept() -> None:
    items = [_stated(n) for n in range(10)]
    built = _build([user("hi")], 10_000, sticky=items)
    assert _notes(built).count("ORD-") == 10
    assert _lines_cost(built) <= 10_000 * STICKY_BUDGET_SHARE


def test_sticky_notes_fill_their_share_and_no_more() -> None:
    items = [_stated(n) for n in range(40)]
    whole = _build([user("hi")], BIG, sticky=items)
    need = _lines_cost(whole)
    budget = int(need / STICKY_BUDGET_SHARE) + 5  # a share just enough for all of them
    assert _notes(_build([user("hi")], budget, sticky=items)).count("ORD-") == 40
    smaller = _build([user("hi")], int((need - 30) / STICKY_BUDGET_SHARE), sticky=items)
    kept = _notes(smaller).count("ORD-")
    assert 30 < kept < 40
    assert "ORD-00039" in _notes(smaller)  # the newest stay
    assert "ORD-00000" not in _notes(smaller)
    # greedy to the brim: the kept lines fit the share, and one more line would not
    limit = int(int((need - 30) / STICKY_BUDGET_SHARE) * STICKY_BUDGET_SHARE)
    lines = _notes(smaller)[len(STICKY_HEADER) :].split("\n")
    used = sum(count_tokens(line) + 1 for line in lines)
    assert used <= limit < used + count_tokens(lines[0]) + 1


def test_a_small_budget_still_allows_64_tokens_of_notes() -> None:
    items = [_stated(n) for n in range(40)]
    built = _build([user("hi")], 10, sticky=items)
    cost = _lines_cost(built)
    assert 40 < cost <= 64
    assert "ORD-00039" in _notes(built)


def test_tool_items_in_the_window_are_messages_not_notes() -> None:
    window: list[Item] = [user("q"), call("c1"), result("c1"), say("a")]
    built = _build(window)
    assert [m["role"] for m in built.messages] == ["user", "assistant", "tool", "assistant"]
    assert built.messages[1]["tool_calls"][0]["function"] == {
        "name": "add",
        "arguments": '{"a": 1, "b": 2}',
    }
    assert built.messages[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": '{"ok": true, "output": 3}',
    }


def test_the_agents_apology_for_a_failed_server_is_left_out() -> None:
    window: list[Item] = [
        user("q"),
        say("sorry, the model server failed", meta={"outcome": "error"}),
        say("sorry, it timed out", meta={"outcome": "timeout"}),
        say("a real answer", meta={"outcome": "ok"}),
        user("again"),
    ]
    contents = [m["content"] for m in _build(window).messages]
    assert contents == ["q", "a real answer", "again"]


def test_a_long_sticky_user_message_is_noted_by_its_stored_facts() -> None:
    long_text = "my order id is ORD-00042 " + "and some more words " * 20
    item = user(long_text, sticky=True, meta={"sticky": ["keep: gate 7", "order: ORD-00042"]})
    built = _build([user("hi")], sticky=[item])
    assert _notes(built) == STICKY_HEADER + "- user: keep: gate 7; order: ORD-00042"
    short = user("call me Ada", sticky=True, meta={"sticky": ["name: Ada"]})
    assert _notes(_build([user("hi")], sticky=[short])) == STICKY_HEADER + "- user: call me Ada"


def test_two_carried_sticky_messages_make_one_new_notes_message() -> None:
    window = [
        user("my order id is ORD-00042", sticky=True),
        user("my order id is ORD-00043", sticky=True),
        say("noted."),
        *rounds(1),
    ]
    full = _build(window, system_prompt="Be brief.")
    budget = full.tokens - _round_costs(full)[0] - 1
    built = _build(window, budget, system_prompt="Be brief.")
    assert built.dropped_rounds == 2
    assert built.messages[1] == {
        "role": "system",
        "content": STICKY_HEADER
        + "- user: my order id is ORD-00042\n- user: my order id is ORD-00043",
    }
    assert built.tokens == messages_tokens(built.messages)


def test_carried_lines_join_notes_that_follow_a_summary() -> None:
    older = user("call me Ada", sticky=True)
    window = [
        user("my order id is ORD-00042", sticky=True),
        user("my order id is ORD-00043", sticky=True),
        say("noted."),
        *rounds(1),
    ]

    def build(budget: int) -> BuiltContext:
        return build_messages(
            ContextSlice(
                sticky=_numbered([older]),
                summary=summary("earlier talk", 1),
                window=_numbered(list(window)),
            ),
            system_prompt="Be brief.",
            budget_tokens=budget,
        )

    full = build(BIG)
    built = build(full.tokens - _round_costs(full)[0] - 1)
    assert [m["role"] for m in built.messages[:3]] == ["system", "system", "system"]
    assert built.messages[2]["content"] == (
        STICKY_HEADER
        + "- user: call me Ada\n- user: my order id is ORD-00042\n"
        + "- user: my order id is ORD-00043"
    )
    assert built.tokens == messages_tokens(built.messages)
