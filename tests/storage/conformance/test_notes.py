"""The notes contract (``hermes.tools.builtin.notes_store.NotesStore``): entries per user and
kind, numbered per user, the limit kept atomically, to-dos marked done once, persistence on
reopen. Every backend (``tests.storage.backends.NOTES_BACKENDS``) must pass every test here."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from hermes.tools.builtin.notes_store import Entry, Kind, NotesStore
from tests.storage.backends import NotesBackend

T0, T1, T2 = "2025-01-10T09:00:00+00:00", "2025-01-10T09:05:00+00:00", "2025-01-10T09:09:00+00:00"


@pytest.fixture
def notes(notes_backend: NotesBackend) -> NotesStore:
    return notes_backend.open()


def add(notes: NotesStore, user: str, kind: Kind, text: str, limit: int = 1000) -> int | None:
    return notes.add(user, kind, text, created_at=T0, max_entries=limit)


def test_an_added_entry_is_listed_as_stored(notes: NotesStore) -> None:
    assert add(notes, "alice", "note", "Wi-Fi 密码在冰箱上") == 1
    total, entries = notes.entries("alice", "note", include_done=True, limit=10)
    assert (total, entries) == (1, [Entry(1, "Wi-Fi 密码在冰箱上", T0)])


def test_notes_are_listed_newest_first_and_todos_oldest_first(notes: NotesStore) -> None:
    for text in ("first", "second", "third"):
        add(notes, "alice", "note", text)
        add(notes, "alice", "todo", text)
    _, listed = notes.entries("alice", "note", include_done=True, limit=10)
    assert [e.number for e in listed] == [3, 2, 1]
    _, listed = notes.entries("alice", "todo", include_done=False, limit=10)
    assert [e.number for e in listed] == [1, 2, 3]


def test_one_user_never_sees_another_users_entries(notes: NotesStore) -> None:
    add(notes, "alice", "note", "alice's secret")
    add(notes, "alice", "todo", "alice's task")
    assert notes.entries("bob", "note", include_done=True, limit=10) == (0, [])
    assert notes.entries("bob", "todo", include_done=True, limit=10) == (0, [])
    assert notes.mark_done("bob", 1, done_at=T1) is None
    _, todos = notes.entries("alice", "todo", include_done=True, limit=10)
    assert [e.done for e in todos] == [False]


def test_numbers_count_per_user_and_per_kind(notes: NotesStore) -> None:
    assert [add(notes, "alice", "note", t) for t in ("a1", "a2")] == [1, 2]
    assert add(notes, "bob", "note", "b1") == 1
    assert add(notes, "alice", "todo", "t1") == 1
    assert add(notes, "alice", "note", "a3") == 3


def test_the_limit_refuses_and_writes_nothing(notes: NotesStore) -> None:
    assert [add(notes, "alice", "todo", f"t{i}", limit=3) for i in range(3)] == [1, 2, 3]
    assert add(notes, "alice", "todo", "one too many", limit=3) is None
    assert notes.entries("alice", "todo", include_done=True, limit=10)[0] == 3
    assert add(notes, "bob", "todo", "bob still has room", limit=3) == 1  # counted per user
    assert add(notes, "alice", "note", "notes count apart", limit=3) == 1  # and per kind


def test_done_todos_count_towards_the_limit(notes: NotesStore) -> None:
    add(notes, "alice", "todo", "t1", limit=1)
    assert notes.mark_done("alice", 1, done_at=T1) is not None
    assert add(notes, "alice", "todo", "t2", limit=1) is None


def test_a_list_is_capped_but_counts_everything(notes: NotesStore) -> None:
    for i in range(12):
        add(notes, "alice", "note", f"n{i}")
    total, listed = notes.entries("alice", "note", include_done=True, limit=5)
    assert total == 12
    assert [e.number for e in listed] == [12, 11, 10, 9, 8]


def test_a_done_todo_is_hidden_unless_asked_for(notes: NotesStore) -> None:
    add(notes, "alice", "todo", "renew passport")
    add(notes, "alice", "todo", "buy milk")
    done = notes.mark_done("alice", 1, done_at=T1)
    assert done == Entry(1, "renew passport", T0, done=True, done_at=T1)
    assert notes.entries("alice", "todo", include_done=False, limit=10) == (
        1,
        [Entry(2, "buy milk", T0)],
    )
    total, everything = notes.entries("alice", "todo", include_done=True, limit=10)
    assert (total, [(e.number, e.done) for e in everything]) == (2, [(1, True), (2, False)])


def test_marking_a_todo_done_twice_keeps_its_first_time(notes: NotesStore) -> None:
    add(notes, "alice", "todo", "task")
    notes.mark_done("alice", 1, done_at=T1)
    again = notes.mark_done("alice", 1, done_at=T2)
    assert again is not None
    assert (again.done, again.done_at) == (True, T1)


@pytest.mark.parametrize("number", [0, -1, 99])
def test_an_unknown_todo_is_none(notes: NotesStore, number: int) -> None:
    add(notes, "alice", "todo", "task")
    assert notes.mark_done("alice", number, done_at=T1) is None


def test_a_note_is_not_a_todo(notes: NotesStore) -> None:
    add(notes, "alice", "note", "a note")
    assert notes.mark_done("alice", 1, done_at=T1) is None


def test_concurrent_adds_get_distinct_numbers_within_the_limit(notes: NotesStore) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        numbers = list(
            pool.map(lambda i: add(notes, "alice", "todo", f"t{i}", limit=30), range(40))
        )
    assert sorted(n for n in numbers if n is not None) == list(range(1, 31))
    assert numbers.count(None) == 10
    assert notes.entries("alice", "todo", include_done=True, limit=100)[0] == 30


def test_entries_survive_reopening(notes_backend: NotesBackend) -> None:
    if not notes_backend.durable:
        pytest.skip(f"{notes_backend.name} notes end with their object")
    first = notes_backend.open()
    add(first, "alice", "note", "remember me")
    add(first, "alice", "todo", "task")
    first.mark_done("alice", 1, done_at=T1)
    seen: list[object] = []

    def reopen() -> None:  # another thread: another connection, reading what was committed
        again = notes_backend.open()
        seen.append(again.entries("alice", "note", include_done=True, limit=10))
        seen.append(again.entries("alice", "todo", include_done=True, limit=10))

    thread = threading.Thread(target=reopen)
    thread.start()
    thread.join()
    assert seen == [
        (1, [Entry(1, "remember me", T0)]),
        (1, [Entry(1, "task", T0, done=True, done_at=T1)]),
    ]
