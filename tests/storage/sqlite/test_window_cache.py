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

from hermes.session.items import Item
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
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.sampled_from(["store", "other"]), st.integers(1, 3)),
            st.tuples(st.just("slice"), st.integers(1, 4), st.just(0)),
            st.tuples(st.just("read"), st.integers(0, 12), st.integers(1, 14)),
            st.tuples(st.just("recreate"), st.just(""), st.just(0)),
        ),
        max_size=25,
    )
)
@example(  # deleted and created again by another process: the old items are never served
    steps=[("append", "store", 2), ("slice", 4, 0), ("recreate", "", 0), ("append", "other", 1),
           ("read", 0, 5), ("slice", 2, 0)]
)  # fmt: skip
async def test_reads_through_the_cache_equal_reads_from_the_file(tmp_path: Path, steps) -> None:
    """Whatever this store and another writer do, in any order, a window or a range of items
    this store serves (from its cache where it can) is what a store without a cache reads."""
    db = tmp_path / f"p{abs(hash(str(steps)))}.db"
    async with SQLiteStore(db) as store, SQLiteStore(db) as other:
        await store.ensure_session("session-1", "u1")
        written = 0
        for op, a, b in steps:
            if op == "append":
                writer = store if a == "store" else other
                await writer.append("session-1", _rounds(b, start=written))
                written += b
                continue
            if op == "recreate":
                await other.delete_session("session-1")
                await other.ensure_session("session-1", "u1")
                continue
            async with SQLiteStore(db) as fresh:
                if op == "slice":
                    got = await store.context_slice("session-1", a)
                    want = await fresh.context_slice("session-1", a)
                    assert _seen(got.window) == _seen(want.window)
                    assert (got.backlog, got.backlog_from) == (want.backlog, want.backlog_from)
                else:
                    got_items = await store.read_items("session-1", a, before_seq=a + b)
                    want_items = await fresh.read_items("session-1", a, before_seq=a + b)
                    assert _seen(got_items) == _seen(want_items)


def _seen(items: list[Item]) -> list[tuple[int, str]]:
    return [(i.seq, i.content) for i in items]
