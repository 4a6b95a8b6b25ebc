"""The Store contract (``hermes.session.store``): every backend
(``tests.storage.backends.STORE_BACKENDS``) must pass every test here."""

from __future__ import annotations

import asyncio

import pytest

from hermes.errors import ClaimLostError, InvalidIdError, SessionAccessError, StoreError
from hermes.session.items import Item, SessionState
from hermes.session.store import Store, begin_turn
from tests.session.helpers import call, result, rounds, say, summary, user
from tests.storage.backends import Backend

SID = "session-0001"


async def _seqs(store: Store, session_id: str = SID) -> list[int]:
    return [item.seq for item in await store.read_items(session_id, limit=1_000_000)]


# -- sessions: identity and state -----------------------------------------------------------


async def test_ensure_session_creates_a_session_with_identity_and_default_state(store: Store):
    record = await store.ensure_session(SID, "u1", "Weather chat")
    assert (record.session_id, record.user_id, record.title) == (SID, "u1", "Weather chat")
    assert (record.item_count, record.last_seq) == (0, 0)
    assert record.state == SessionState()
    assert record.created_at > 0
    assert record.last_active >= record.created_at


async def test_load_session_returns_none_for_an_unknown_session(store: Store):
    assert await store.load_session("no-such-session") is None


async def test_ensure_session_returns_an_existing_session_unchanged(store: Store):
    first = await store.ensure_session(SID, "u1", "title")
    again = await store.ensure_session(SID, "u1", "another title")
    assert again.created_at == first.created_at
    assert again.title == "title"


async def test_ensure_session_binds_an_unowned_session_to_the_first_user(store: Store):
    await store.ensure_session(SID, None)
    record = await store.ensure_session(SID, "u1")
    assert record.user_id == "u1"
    with pytest.raises(SessionAccessError):
        await store.ensure_session(SID, "u2")


async def test_ensure_session_refuses_a_session_of_another_user(store: Store):
    await store.ensure_session(SID, "alice")
    with pytest.raises(SessionAccessError, match="another user") as caught:
        await store.ensure_session(SID, "mallory")
    assert "alice" not in caught.value.message


async def test_an_owned_session_is_refused_to_an_anonymous_caller(store: Store):
    await store.ensure_session(SID, "alice")
    with pytest.raises(SessionAccessError, match="say which user"):
        await store.ensure_session(SID, None)
    assert (await store.ensure_session(SID, "alice")).user_id == "alice"


@pytest.mark.parametrize(
    "session_id",
    ["", "short", "has space 1", "a/b/c/d/e", "-leading-dash", "x" * 129, "会话编号一二三四"],
)
async def test_ensure_session_rejects_a_malformed_session_id(store: Store, session_id: str):
    with pytest.raises(InvalidIdError):
        await store.ensure_session(session_id, "u1")
    assert await store.list_sessions() == []


async def test_ensure_session_rejects_a_malformed_user_id(store: Store):
    with pytest.raises(InvalidIdError, match="user id"):
        await store.ensure_session(SID, "bad user")


async def test_ensure_session_rejects_a_user_id_used_as_the_session_id(store: Store):
    with pytest.raises(InvalidIdError, match="equals the user id"):
        await store.ensure_session("user-12345", "user-12345")


async def test_saving_state_leaves_the_identity_unchanged(store: Store):
    created = await store.ensure_session(SID, "u1", "title")
    state = SessionState("executing_tool", 12.5, {"pending": "city"}, 321)
    await store.save_state(SID, state)
    record = await store.load_session(SID)
    assert record is not None
    assert (record.session_id, record.user_id, record.title) == (SID, "u1", "title")
    assert record.created_at == created.created_at
    assert record.state == state


async def test_save_state_of_an_unknown_session_raises_store_error(store: Store):
    with pytest.raises(StoreError, match="does not exist"):
        await store.save_state("no-such-session", SessionState())


# -- append ---------------------------------------------------------------------------------


async def test_append_assigns_contiguous_seqs_starting_at_one(store: Store):
    await store.ensure_session(SID, "u1")
    first = await store.append(SID, [user("hi"), say("hello")])
    second = await store.append(SID, [user("again")])
    assert [i.seq for i in first + second] == [1, 2, 3]
    assert await _seqs(store) == [1, 2, 3]
    record = await store.load_session(SID)
    assert record is not None
    assert (record.item_count, record.last_seq) == (3, 3)


async def test_append_returns_stored_copies_and_leaves_the_inputs_unchanged(store: Store):
    await store.ensure_session(SID, "u1")
    original = user("hi", trace_id="t-1", meta={"channel": "cli"}, sticky=True)
    (stored,) = await store.append(SID, [original])
    assert original.seq == 0
    assert original.created_at == 0.0
    assert stored.seq == 1
    assert stored.created_at > 0
    (read,) = await store.read_items(SID)
    assert read == stored


async def test_append_keeps_every_field_of_an_item(store: Store):
    await store.ensure_session(SID, "u1")
    items = [call("c1", "search", '{"q": "x"}'), result("c1", "found", "search")]
    await store.append(SID, items)
    read = await store.read_items(SID)
    assert [(i.role, i.kind, i.content, i.tool_call_id, i.tool_name) for i in read] == [
        ("assistant", "tool_call", '{"q": "x"}', "c1", "search"),
        ("tool", "tool_result", "found", "c1", "search"),
    ]


async def test_append_with_state_saves_items_and_state_together(store: Store):
    await store.ensure_session(SID, "u1")
    state = SessionState("awaiting_feedback", 3.0, {"k": [1, 2]}, 99)
    await store.append(SID, [user("hi")], state)
    record = await store.load_session(SID)
    assert record is not None
    assert record.state == state
    assert record.last_seq == 1


async def test_a_failing_append_writes_neither_items_nor_state(store: Store):
    await store.ensure_session(SID, "u1")
    await store.append(SID, [user("kept")])
    broken = SessionState(fsm_state=None)  # type: ignore[arg-type]  # violates NOT NULL
    with pytest.raises(StoreError):
        await store.append(SID, [user("lost 1"), user("lost 2")], broken)
    assert await _seqs(store) == [1]
    record = await store.load_session(SID)
    assert record is not None
    assert (record.last_seq, record.item_count, record.state.fsm_state) == (1, 1, "idle")
    (stored,) = await store.append(SID, [user("next")])
    assert stored.seq == 2


async def test_append_refuses_a_value_that_cannot_be_stored(store: Store):
    await store.ensure_session(SID, "u1")
    with pytest.raises(StoreError, match="not JSON-serializable"):
        await store.append(SID, [user("hi", meta={"when": object()})])
    with pytest.raises(StoreError, match="scratch"):
        await store.save_state(SID, SessionState(scratch={"x": {1, 2}}))
    assert await _seqs(store) == []


async def test_append_to_an_unknown_session_raises_store_error(store: Store):
    with pytest.raises(StoreError, match="ensure_session"):
        await store.append("no-such-session", [user("hi")])


async def test_appending_nothing_is_a_no_op(store: Store):
    await store.ensure_session(SID, "u1")
    assert await store.append(SID, []) == []
    assert await _seqs(store) == []


async def test_concurrent_appends_to_one_session_lose_and_duplicate_nothing(store: Store):
    await store.ensure_session(SID, "u1")

    async def writer(n: int) -> list[Item]:
        return await store.append(SID, [user(f"w{n}-a"), say(f"w{n}-b"), say(f"w{n}-c")])

    batches = await asyncio.gather(*(writer(n) for n in range(40)))
    assert await _seqs(store) == list(range(1, 121))
    for batch in batches:  # each append is one transaction: its seqs stay together
        seqs = [item.seq for item in batch]
        assert seqs == list(range(seqs[0], seqs[0] + 3))
    record = await store.load_session(SID)
    assert record is not None
    assert (record.item_count, record.last_seq) == (120, 120)


async def test_concurrent_appends_to_many_sessions_keep_each_log_contiguous(store: Store):
    ids = [f"session-{n:04d}" for n in range(8)]
    for sid in ids:
        await store.ensure_session(sid, "u1")

    async def writer(sid: str, n: int) -> None:
        await store.append(sid, [user(f"{sid}-{n}")])

    await asyncio.gather(*(writer(sid, n) for n in range(15) for sid in ids))
    for sid in ids:
        assert await _seqs(store, sid) == list(range(1, 16))


async def test_non_ascii_text_round_trips(store: Store):
    await store.ensure_session(SID, "u1", "天气 ☀️ 대화")
    text = "北京明天天气怎么样？🌧 내일 날씨 — ünïcødé"
    await store.append(
        SID,
        [user(text, meta={"城市": "北京"})],
        SessionState(scratch={"待填参数": "城市", "emoji": "🌧", "nested": {"列表": ["一", 2]}}),
    )
    record = await store.load_session(SID)
    assert record is not None
    assert record.title == "天气 ☀️ 대화"
    assert record.state.scratch == {"待填参数": "城市", "emoji": "🌧", "nested": {"列表": ["一", 2]}}
    (item,) = await store.read_items(SID)
    assert (item.content, item.meta) == (text, {"城市": "北京"})


# -- persistence ----------------------------------------------------------------------------


async def test_sessions_items_and_state_survive_a_reopen(backend: Backend):
    if not backend.durable:
        pytest.skip(f"{backend.name} keeps nothing once closed")
    first = backend.open()
    await first.ensure_session(SID, "u1", "title")
    await first.append(SID, [user("hi"), say("hello")], SessionState("idle", 1.0, {"a": 1}, 7))
    await first.close()
    second = backend.open()
    try:
        record = await second.load_session(SID)
        assert record is not None
        assert (record.user_id, record.title, record.last_seq) == ("u1", "title", 2)
        assert record.state.scratch == {"a": 1}
        assert [i.content for i in await second.read_items(SID)] == ["hi", "hello"]
        (next_item,) = await second.append(SID, [user("more")])
        assert next_item.seq == 3
    finally:
        await second.close()


async def test_a_closed_store_raises_store_error(backend: Backend):
    closed = backend.open()
    await closed.close()
    await closed.close()  # closing twice is harmless
    with pytest.raises(StoreError, match="closed"):
        await closed.load_session(SID)


# -- reads ----------------------------------------------------------------------------------


async def test_read_items_returns_the_items_strictly_between_the_bounds(store: Store):
    await store.ensure_session(SID, "u1")
    await store.append(SID, [user(f"m{n}") for n in range(1, 11)])
    assert [i.seq for i in await store.read_items(SID, after_seq=3, before_seq=7)] == [4, 5, 6]
    assert [i.seq for i in await store.read_items(SID, after_seq=8)] == [9, 10]
    assert [i.seq for i in await store.read_items(SID, limit=2)] == [1, 2]
    assert await store.read_items(SID, limit=0) == []
    assert await store.read_items(SID, after_seq=5, before_seq=6) == []


async def test_read_items_of_an_unknown_session_is_empty(store: Store):
    assert await store.read_items("no-such-session") == []


async def test_list_sessions_puts_the_most_recently_active_first(store: Store):
    for sid in ("session-aaaa", "session-bbbb", "session-cccc"):
        await store.ensure_session(sid, "u1")
    await store.ensure_session("session-dddd", "u2")
    await store.append("session-aaaa", [user("touch")])  # now the most recent of u1
    mine = await store.list_sessions("u1")
    assert mine[0].session_id == "session-aaaa"
    assert {r.session_id for r in mine} == {"session-aaaa", "session-bbbb", "session-cccc"}
    assert len(await store.list_sessions()) == 4
    assert len(await store.list_sessions(limit=2)) == 2
    assert await store.list_sessions("nobody") == []


# -- context slice (seed 001 §2.2) -----------------------------------------------------------


async def test_context_slice_of_an_unknown_session_is_empty(store: Store):
    got = await store.context_slice("no-such-session", 12)
    assert (got.window, got.sticky, got.summary, got.backlog) == ([], [], None, 0)


async def test_context_slice_window_starts_at_the_nth_last_user_message(store: Store):
    await store.ensure_session(SID, "u1")
    await store.append(SID, rounds(10))  # 40 items, round n starts at seq 4n + 1
    got = await store.context_slice(SID, 3)
    assert got.window_start == 29
    assert [i.seq for i in got.window] == list(range(29, 41))
    assert got.window[0].content == "question 7"
    assert (got.backlog, got.backlog_from) == (28, 1)


async def test_context_slice_with_fewer_rounds_than_asked_returns_everything(store: Store):
    await store.ensure_session(SID, "u1")
    await store.append(SID, [say("welcome"), *rounds(2)])
    got = await store.context_slice(SID, 12)
    assert got.window_start == 1
    assert len(got.window) == 9
    assert got.backlog == 0


async def test_context_slice_returns_the_latest_summary_and_the_backlog_after_it(store: Store):
    await store.ensure_session(SID, "u1")
    await store.append(SID, rounds(5))  # seqs 1..20
    await store.append(SID, [summary("old", covers_until=8)])  # seq 21
    await store.append(SID, rounds(5, start=5))  # seqs 22..41
    await store.append(SID, [summary("new", covers_until=16)])  # seq 42
    await store.append(SID, rounds(3, start=10))  # seqs 43..54
    got = await store.context_slice(SID, 2)
    assert got.summary is not None
    assert got.summary.content == "new"
    assert got.window_start == 47
    # backlog: seqs 17..46 minus the summary item at 21 and the one at 42
    assert (got.backlog_from, got.backlog) == (17, 28)


async def test_context_slice_sticky_items_are_only_those_older_than_the_window(store: Store):
    await store.ensure_session(SID, "u1")
    await store.append(SID, [user("我叫张三", sticky=True), say("你好")])
    await store.append(SID, rounds(4))
    await store.append(SID, [user("in the window", sticky=True), say("ok")])
    got = await store.context_slice(SID, 1)
    assert [i.content for i in got.sticky] == ["我叫张三"]
    assert got.window[0].content == "in the window"


async def test_context_slice_backlog_is_zero_once_everything_old_is_summarized(store: Store):
    await store.ensure_session(SID, "u1")
    await store.append(SID, rounds(6))  # seqs 1..24; the last 2 rounds start at 17
    await store.append(SID, [summary("all", covers_until=16)])
    got = await store.context_slice(SID, 3)  # window now starts at 13: overlaps the summary
    assert got.backlog == 0
    got = await store.context_slice(SID, 2)
    assert (got.window_start, got.backlog) == (17, 0)


async def test_context_slice_refuses_fewer_than_one_round(store: Store):
    await store.ensure_session(SID, "u1")
    with pytest.raises(ValueError, match="rounds"):
        await store.context_slice(SID, 0)


# -- bulk import ----------------------------------------------------------------------------


async def test_bulk_import_writes_ten_thousand_items_with_contiguous_seqs(store: Store):
    items = (user(f"m{n}", created_at=1000.0 + n) for n in range(10_000))
    assert store.bulk_import(SID, "u1", items) == 10_000
    record = await store.load_session(SID)
    assert record is not None
    assert (record.user_id, record.item_count, record.last_seq) == ("u1", 10_000, 10_000)
    tail = await store.read_items(SID, after_seq=9_998)
    assert [(i.seq, i.content, i.created_at) for i in tail] == [
        (9_999, "m9998", 10_998.0),
        (10_000, "m9999", 10_999.0),
    ]
    (after,) = await store.append(SID, [user("live")])
    assert after.seq == 10_001


async def test_bulk_import_refuses_a_session_of_another_user(store: Store):
    await store.ensure_session(SID, "alice")
    with pytest.raises(SessionAccessError):
        store.bulk_import(SID, "mallory", [user("x")])
    assert await _seqs(store) == []


async def test_bulk_import_rejects_malformed_ids(store: Store):
    with pytest.raises(InvalidIdError):
        store.bulk_import("bad id", "u1", [user("x")])


# -- deleting a session ---------------------------------------------------------------------


async def test_delete_session_removes_the_session_and_its_whole_log(store: Store):
    await store.ensure_session(SID, "u1")
    await store.append(SID, [user("hi"), say("hello"), user("again")])
    assert await store.delete_session(SID) is True
    assert await store.load_session(SID) is None
    assert await store.read_items(SID) == []
    assert await store.list_sessions() == []
    # The id is free again: a new session under it starts an empty log at seq 1.
    await store.ensure_session(SID, "u2")
    (first,) = await store.append(SID, [user("new")])
    assert first.seq == 1


async def test_delete_session_leaves_other_sessions_alone(store: Store):
    await store.ensure_session(SID, "u1")
    await store.ensure_session("session-0002", "u1")
    await store.append("session-0002", [user("kept")])
    assert await store.delete_session(SID)
    assert [r.session_id for r in await store.list_sessions()] == ["session-0002"]
    assert [i.content for i in await store.read_items("session-0002")] == ["kept"]


async def test_delete_session_of_an_unknown_session_is_false(store: Store):
    assert await store.delete_session("no-such-session") is False


async def test_delete_session_rejects_a_malformed_id(store: Store):
    with pytest.raises(InvalidIdError):
        await store.delete_session("bad id")


# -- the fence (hermes.session.locks: every write of a turn carries its claim's token) --------


async def test_a_write_with_an_older_claim_token_is_refused_and_writes_nothing(store: Store):
    await store.ensure_session(SID, None)
    await store.append(SID, [Item("user", "text", "newer turn")], fence=200)
    busy = SessionState(fsm_state="parsing_intent", state_entered_at=1.0)
    with pytest.raises(ClaimLostError) as caught:
        await store.append(SID, [Item("assistant", "text", "stale")], busy, fence=100)
    assert caught.value.code == "session_busy"
    items = await store.read_items(SID)
    assert [i.content for i in items] == ["newer turn"]
    record = await store.load_session(SID)
    assert record is not None
    assert record.state.fsm_state == "idle"  # the stale state was not saved either
    assert record.last_seq == 1


async def test_the_claimant_keeps_writing_and_a_newer_claim_takes_over(store: Store):
    await store.ensure_session(SID, None)
    await store.append(SID, [Item("user", "text", "a")], fence=10)
    await store.append(SID, [Item("assistant", "text", "a2")], fence=10)
    await store.append(SID, [Item("user", "text", "b")], fence=11)
    with pytest.raises(ClaimLostError):
        await store.append(SID, [Item("assistant", "text", "a3")], fence=10)
    await store.append(SID, [], SessionState(fsm_state="idle"), fence=11)
    # Writes without a fence (imports, tools of older callers) are not fenced.
    await store.append(SID, [Item("system", "text", "note")])
    assert [i.content for i in await store.read_items(SID)] == ["a", "a2", "b", "note"]


async def test_a_fenced_write_to_a_missing_session_is_a_store_error(store: Store):
    with pytest.raises(StoreError, match="does not exist"):
        await store.append("session-missing", [Item("user", "text", "x")], fence=1)


# -- beginning a turn (hermes.session.store.begin_turn: one call where the backend offers it) --


class _StepByStep:
    """The store with only the ``Store`` methods: ``begin_turn`` takes its fallback path."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> object:
        if name == "begin_turn":
            raise AttributeError(name)
        return getattr(self._store, name)


@pytest.fixture(params=["one call", "step by step"])
def starter(request: pytest.FixtureRequest, store: Store) -> Store:
    return store if request.param == "one call" else _StepByStep(store)  # type: ignore[return-value]


_WORKING = SessionState(fsm_state="parsing_intent", state_entered_at=42.0, scratch={"k": "v"})


def _always(state: SessionState) -> SessionState:
    return _WORKING


async def test_begin_turn_creates_the_session_and_stores_the_message(starter: Store):
    start = await begin_turn(starter, SID, "u1", user("hello"), rounds=3, fence=7, opening=_always)
    assert start.record.session_id == SID
    assert start.record.user_id == "u1"
    assert start.record.state.fsm_state == "idle"
    assert start.slice is not None
    assert start.slice.window == []
    assert start.stored is not None
    assert (start.stored.seq, start.stored.content) == (1, "hello")
    assert start.stored.created_at > 0
    assert [i.content for i in await starter.read_items(SID)] == ["hello"]
    record = await starter.load_session(SID)
    assert record is not None
    assert (record.state.fsm_state, record.state.scratch) == ("parsing_intent", {"k": "v"})


async def test_begin_turn_reads_the_context_before_the_message(starter: Store):
    await starter.ensure_session(SID, "u1")
    await starter.append(SID, rounds(4))
    expected = await starter.context_slice(SID, 2)
    start = await begin_turn(
        starter, SID, "u1", user("next"), rounds=2, fence=None, opening=_always
    )
    assert start.slice is not None
    assert start.stored is not None
    assert [i.seq for i in start.slice.window] == [i.seq for i in expected.window]
    assert (start.slice.backlog, start.slice.window_start) == (
        expected.backlog,
        expected.window_start,
    )
    assert start.stored.seq == expected.window[-1].seq + 1
    window = (await starter.context_slice(SID, 2)).window
    assert window[-1].content == "next"  # the next read holds it


async def test_begin_turn_stores_the_message_with_the_opening_state(starter: Store):
    await starter.ensure_session(SID, "u1")
    kept = SessionState(fsm_state="awaiting_feedback", state_entered_at=5.0, scratch={"a": 1})
    await starter.save_state(SID, kept)
    seen: list[SessionState] = []

    def opening(state: SessionState) -> SessionState:
        seen.append(state)
        return SessionState("parsing_intent", 6.0, {**state.scratch, "b": 2}, 7, None)

    start = await begin_turn(starter, SID, "u1", user("x"), rounds=1, fence=1, opening=opening)
    assert [(s.fsm_state, s.scratch) for s in seen[-1:]] == [("awaiting_feedback", {"a": 1})]
    assert start.record.state.scratch == {"a": 1}  # the record is the session as found
    record = await starter.load_session(SID)
    assert record is not None
    assert (record.state.fsm_state, record.state.state_entered_at) == ("parsing_intent", 6.0)
    assert (record.state.scratch, record.state.token_estimate) == ({"a": 1, "b": 2}, 7)
    assert record.last_seq == 1


async def test_begin_turn_writes_nothing_when_the_opening_says_not_to_go_on(starter: Store):
    await starter.ensure_session(SID, "u1")
    waiting = SessionState(fsm_state="executing_tool", state_entered_at=1.0)
    await starter.save_state(SID, waiting)
    seen: list[str] = []

    def opening(state: SessionState) -> SessionState | None:
        seen.append(state.fsm_state)
        return None

    start = await begin_turn(starter, SID, "u1", user("x"), rounds=1, fence=1, opening=opening)
    assert seen[-1:] == ["executing_tool"]
    assert (start.slice, start.stored) == (None, None)
    assert start.record.state.fsm_state == "executing_tool"
    assert await starter.read_items(SID) == []
    record = await starter.load_session(SID)
    assert record is not None
    assert record.state.fsm_state == "executing_tool"  # nothing saved either


async def test_begin_turn_refuses_another_users_session_and_stores_nothing(starter: Store):
    await starter.ensure_session(SID, "u1")
    with pytest.raises(SessionAccessError):
        await begin_turn(starter, SID, "u2", user("mine"), rounds=1, fence=1, opening=_always)
    with pytest.raises(InvalidIdError):
        await begin_turn(starter, "bad id", "u1", user("x"), rounds=1, fence=1, opening=_always)
    assert await starter.read_items(SID) == []


async def test_begin_turn_under_an_older_claim_is_refused_and_stores_nothing(starter: Store):
    await starter.ensure_session(SID, "u1")
    await starter.append(SID, [user("newer")], fence=20)
    with pytest.raises(ClaimLostError):
        await begin_turn(starter, SID, "u1", user("stale"), rounds=1, fence=10, opening=_always)
    assert [i.content for i in await starter.read_items(SID)] == ["newer"]


# -- listing in pages (keyset cursor) and sessions awaiting approval -------------------------


async def test_list_sessions_pages_after_a_cursor_without_gaps_or_repeats(store: Store):
    for n in range(7):
        await store.ensure_session(f"session-page-{n}", "u1")
    await store.ensure_session("session-other", "u2")
    whole = [r.session_id for r in await store.list_sessions("u1", limit=100)]
    seen: list[str] = []
    after = None
    while True:
        page = await store.list_sessions("u1", limit=3, after=after)
        seen.extend(r.session_id for r in page)
        if len(page) < 3:
            break
        after = (page[-1].last_active, page[-1].session_id)
    assert seen == whole
    assert len(seen) == 7


async def test_list_sessions_breaks_ties_of_last_active_by_session_id(store: Store):
    # Sessions created within one clock tick share ``last_active``: the id orders them.
    for sid in ("session-tie-b", "session-tie-a", "session-tie-c"):
        await store.ensure_session(sid, "u1")
    listed = await store.list_sessions("u1")
    keys = [(-r.last_active, r.session_id) for r in listed]
    assert keys == sorted(keys)
    last = listed[-1]
    assert await store.list_sessions("u1", after=(last.last_active, last.session_id)) == []


async def test_list_sessions_can_keep_only_those_awaiting_approval(store: Store):
    await store.ensure_session("session-wait-1", "u1")
    await store.ensure_session("session-idle-1", "u1")
    await store.ensure_session("session-wait-2", "u2")
    pending = {"approval_id": "ap-0123456789", "calls": []}
    await store.save_state("session-wait-1", SessionState(approval=pending))
    await store.save_state("session-wait-2", SessionState(approval=pending))
    mine = await store.list_sessions("u1", awaiting_approval=True)
    assert [r.session_id for r in mine] == ["session-wait-1"]
    assert mine[0].state.approval == pending
    everyone = await store.list_sessions(awaiting_approval=True)
    assert {r.session_id for r in everyone} == {"session-wait-1", "session-wait-2"}
    await store.save_state("session-wait-1", SessionState())
    assert await store.list_sessions("u1", awaiting_approval=True) == []
