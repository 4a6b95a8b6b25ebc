"""The window cache of the SQLite store (``storage/sqlite/window_cache.py``): a window read
after another process wrote to the session holds that process's items (never a stale window),
and a session deleted and created again is not served its old items."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hermes.session.items import ContextSlice, Item, SessionState
from hermes.session.store import begin_turn
from hermes.storage.sqlite.sessions import SQLiteStore

# One side: turns on one session, one per line of stdin ("msg-N"); prints the user messages
# the model saw in the request (the window the turn read from the store).
_SIDE = """
import asyncio, json, sys
from hermes import Agent
from hermes.testing import FunctionModel, say

seen = []

def model(request):
    seen[:] = [m["content"] for m in request.messages if m["role"] == "user"]
    return say("ok")

async def main():
    agent = Agent(model=FunctionModel(model), store=sys.argv[1])
    print("ready", flush=True)
    for line in sys.stdin:
        await agent.run(line.strip(), session_id="shared-1", user_id="u1")
        print(json.dumps(seen), flush=True)
    await agent.aclose()

asyncio.run(main())
"""


def _side(db: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _SIDE, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _turn(proc: subprocess.Popen[str], text: str) -> list[str]:
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(text + "\n")
    proc.stdin.flush()
    seen: list[str] = json.loads(proc.stdout.readline())
    return seen


def test_two_processes_alternating_turns_on_one_session_never_read_a_stale_window(
    tmp_path: Path,
) -> None:
    db = tmp_path / "shared.db"
    sides = [_side(db), _side(db)]
    try:
        sent: list[str] = []
        for n in range(8):
            text = f"msg-{n}"
            sent.append(text)
            # Each side's cache holds the window of its own last turn; the other side wrote
            # a turn since, which this read must see, in order, with nothing left out.
            assert _turn(sides[n % 2], text) == sent
    finally:
        for proc in sides:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=30)


async def test_a_session_deleted_and_created_again_is_not_served_its_old_items(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    async with SQLiteStore(db) as store, SQLiteStore(db) as other:
        await store.ensure_session("session-1", "u1")
        await store.append("session-1", [Item("user", "text", "old")])
        assert [i.content for i in (await store.context_slice("session-1", 3)).window] == ["old"]
        # Another process deletes the session and creates it again with one new item.
        assert await other.delete_session("session-1")
        await other.ensure_session("session-1", "u1")
        await other.append("session-1", [Item("user", "text", "new")])
        assert [i.content for i in (await store.context_slice("session-1", 3)).window] == ["new"]


async def test_the_cache_extends_with_own_writes_and_reads_other_writers_rows(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    async with SQLiteStore(db) as store, SQLiteStore(db) as other:
        await store.ensure_session("session-1", "u1")
        await store.append("session-1", [Item("user", "text", "a")])
        await store.context_slice("session-1", 3)
        await store.append("session-1", [Item("assistant", "text", "b")])
        await other.append("session-1", [Item("user", "text", "c")])
        await store.append("session-1", [Item("assistant", "text", "d")])
        window = (await store.context_slice("session-1", 3)).window
        assert [(i.seq, i.content) for i in window] == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]


def _rounds(count: int, start: int = 0) -> list[Item]:
    items: list[Item] = []
    for n in range(start, start + count):
        items += [Item("user", "text", f"q{n}"), Item("assistant", "text", f"a{n}")]
    return items


async def test_the_backlog_before_the_window_is_served_from_the_cache(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    async with SQLiteStore(db) as store:
        await store.ensure_session("session-1", "u1")
        await store.append("session-1", _rounds(3))
        first = await store.context_slice("session-1", 3)
        await store.append("session-1", _rounds(1, start=3))
        moved = await store.context_slice("session-1", 3)  # round 0 left the window
        assert moved.backlog == 2
        backlog = await store.read_items(
            "session-1", moved.backlog_from - 1, before_seq=moved.window_start
        )
        assert [i.content for i in backlog] == ["q0", "a0"]
        assert all(a is b for a, b in zip(backlog, first.window[:2], strict=True))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(
                st.just("append"), st.sampled_from(["store", "other"]), st.integers(1, 3),
                st.booleans(),
            ),
            st.tuples(st.just("begin"), st.just(""), st.integers(1, 4), st.booleans()),
            st.tuples(st.just("summary"), st.sampled_from(["store", "other"]), st.integers(0, 9),
                      st.just(False)),
            st.tuples(st.just("slice"), st.just(""), st.integers(1, 4), st.just(False)),
            st.tuples(st.just("read"), st.integers(0, 12), st.integers(1, 14), st.booleans()),
            st.tuples(st.just("recreate"), st.just(""), st.just(0), st.just(False)),
        ),
        max_size=25,
    )
)  # fmt: skip
@example(  # another process wrote after the entry: those rows come from the file
    steps=[("append", "store", 2, False), ("slice", "", 4, False), ("append", "other", 1, False),
           ("read", 0, 12, False)]
)  # fmt: skip
@example(  # deleted and created again by another process: the old items are never served
    steps=[("append", "store", 2, False), ("slice", "", 4, False), ("recreate", "", 0, False),
           ("append", "other", 1, False), ("read", 0, 5, False), ("slice", "", 2, False)]
)  # fmt: skip
async def test_reads_through_the_cache_equal_reads_from_the_file(tmp_path: Path, steps) -> None:
    """Whatever this store and another writer do, in any order — rounds (sticky or not),
    summaries, turns begun in one call, a session deleted and made again — a slice or a range
    of items this store serves (from its cache where it can) is what a store without a cache
    reads: the window, the sticky items, the summary, the backlog, a ``limit`` too."""
    db = tmp_path / f"p{abs(hash(str(steps)))}.db"
    async with SQLiteStore(db) as store, SQLiteStore(db) as other:
        await store.ensure_session("session-1", "u1")
        written = 0
        for op, a, b, flag in steps:
            if op in ("append", "begin", "summary", "recreate"):
                written = await _write(store, other, (op, a, b, flag), written)
                continue
            async with SQLiteStore(db) as fresh:
                if op == "slice":
                    got = await store.context_slice("session-1", b)
                    want = await fresh.context_slice("session-1", b)
                    assert _sliced(got) == _sliced(want)
                else:
                    limit = 3 if flag else 200
                    got_items = await store.read_items("session-1", a, a + b, limit)
                    want_items = await fresh.read_items("session-1", a, a + b, limit)
                    assert _seen(got_items) == _seen(want_items)


async def _write(
    store: SQLiteStore, other: SQLiteStore, step: tuple[str, object, int, bool], written: int
) -> int:
    op, who, count, flag = step
    writer = store if who == "store" else other
    if op == "append":
        made = _rounds(count, start=written)
        made[0].sticky = flag
        await writer.append("session-1", made)
        return written + count
    if op == "begin":
        opened = SessionState(fsm_state="parsing_intent", state_entered_at=1.0)
        await begin_turn(
            store, "session-1", "u1", Item("user", "text", f"q{written}", sticky=flag),
            rounds=count, fence=None, opening=lambda state: opened,
        )  # fmt: skip
        await store.append("session-1", [Item("assistant", "text", f"a{written}")])
        return written + 1
    if op == "summary":
        covers = {"covers_until": count} if count else None
        await writer.append("session-1", [Item("system", "summary", f"s{written}", meta=covers)])
        return written
    await other.delete_session("session-1")
    await other.ensure_session("session-1", "u1")
    return written


def _sliced(sliced: ContextSlice) -> tuple[object, ...]:
    summary = None if sliced.summary is None else (sliced.summary.seq, sliced.summary.content)
    return (
        _seen(sliced.window),
        _seen(sliced.sticky),
        summary,
        sliced.backlog,
        sliced.backlog_from,
        sliced.window_start,
    )


def _seen(items: list[Item]) -> list[tuple[int, str]]:
    return [(i.seq, i.content) for i in items]


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    turns=st.lists(
        st.tuples(
            st.sampled_from(["turn", "turn", "turn", "sticky", "summary", "other", "recreate"]),
            st.integers(1, 5),
        ),
        min_size=1,
        max_size=30,
    ),
    limits=st.tuples(st.integers(0, 3), st.sampled_from([6, 2000])),
)
@example(  # a later read asks for more rounds than the one that filled the entry
    turns=[("sticky", 1), ("turn", 1), ("turn", 1), ("turn", 1), ("sticky", 1), ("summary", 4),
           ("turn", 1)],
    limits=(1, 6),
)  # fmt: skip
async def test_a_live_session_served_from_memory_reads_as_the_file(
    tmp_path: Path, turns: list[tuple[str, int]], limits: tuple[int, int]
) -> None:
    """A session this store keeps writing (turns, sticky messages, summaries folding any
    backlog), read after every write with any number of rounds and small sticky and window
    limits, while another writer and a delete-and-create now and then invalidate what it
    holds: every slice it serves whole from memory is the one a store without memory reads."""
    sticky_limit, window_limit = limits
    db = tmp_path / f"l{abs(hash(str((turns, limits))))}.db"
    opened = {"sticky_limit": sticky_limit, "window_limit": window_limit}
    async with SQLiteStore(db, **opened) as store, SQLiteStore(db, **opened) as other:
        await store.ensure_session("session-1", "u1")
        for n, (op, rounds) in enumerate(turns):
            if op == "other":
                await other.append("session-1", _rounds(1, start=1000 + n))
            elif op == "recreate":
                await other.delete_session("session-1")
                await other.ensure_session("session-1", "u1")
            elif op == "summary":
                last = await store.load_session("session-1")
                covered = 0 if last is None else max(0, last.last_seq - 2 * rounds)
                await store.append(
                    "session-1",
                    [Item("system", "summary", f"s{n}", meta={"covers_until": covered})],
                )
            else:
                made = _rounds(1, start=n)
                made[0].sticky = op == "sticky"
                await store.append("session-1", made)
            async with SQLiteStore(db, **opened) as fresh:
                for asked in (rounds, 1, 5, rounds):
                    got = await store.context_slice("session-1", asked)
                    want = await fresh.context_slice("session-1", asked)
                    assert _sliced(got) == _sliced(want), (op, asked)


async def test_a_live_sessions_next_window_costs_one_query(tmp_path: Path) -> None:
    """Once read, a session this store writes to is served from memory: its next slice asks
    the file only for the session's latest seq (to know nobody else wrote) — with its backlog
    folded as a turn folds it (a long unfolded backlog is counted by the file)."""
    async with SQLiteStore(tmp_path / "s.db") as store:
        await store.ensure_session("session-1", "u1")
        await store.append("session-1", _rounds(20))
        folded = Item("system", "summary", "s", meta={"covers_until": 16})  # rounds 0-7
        await store.append("session-1", [folded])
        await store.context_slice("session-1", 12)
        for n in range(3):  # turns: written by this store, each followed by the next read
            await store.append("session-1", _rounds(1, start=20 + n))
            statements: list[str] = []
            assert store._conn is not None
            store._conn.set_trace_callback(statements.append)
            try:
                sliced = await store.context_slice("session-1", 12)
            finally:
                store._conn.set_trace_callback(None)
            assert len(statements) == 1, statements
            assert "last_seq" in statements[0]
            assert sliced.window[-1].content == f"a{20 + n}"
