"""The backends every conformance suite runs on (DESIGN.md, "Scale-out": one conformance suite
per protocol, run on every backend).

A backend gives a fresh, empty storage per test and can open it again. ``durable`` says whether
data survives that (a ``:memory:`` database does not: the tests of a reopen skip it). SQLite (a
file, and ``:memory:``) is here today; PostgreSQL and Redis plug in by adding an entry to
``STORE_BACKENDS`` / ``LOCKS_BACKENDS`` / ``MEMORY_BACKENDS`` / ``TOOL_CALL_INDEX_BACKENDS`` /
``ARCHIVE_BACKENDS`` / ``IDEMPOTENCY_BACKENDS`` / ``NOTES_BACKENDS`` — a factory of the test's
``tmp_path``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from hermes.channels.dedupe import EventDedupe
from hermes.channels.http.request_keys import RequestKeys  # idemkey
from hermes.memory.archive import DEFAULT_MAX_BLOB_BYTES, Archive, blob_key
from hermes.memory.index import ToolCallIndex
from hermes.memory.store import MemoryStore
from hermes.scheduler.runs import JobRuns
from hermes.session.locks import LocalSessionLocks, SessionLocks
from hermes.session.store import Store
from hermes.storage.files.archive import LocalArchive
from hermes.storage.open import PLAN_RESULT_MAX_BYTES, PLAN_RESULTS_DIR
from hermes.storage.sqlite.event_dedupe import SQLiteEventDedupe
from hermes.storage.sqlite.idempotency import SQLiteIdempotencyRecords
from hermes.storage.sqlite.job_runs import SQLiteJobRuns
from hermes.storage.sqlite.leases import Clock
from hermes.storage.sqlite.memories import SQLiteMemoryStore
from hermes.storage.sqlite.notes import SQLiteNotes
from hermes.storage.sqlite.plan_runs import SQLitePlanRuns
from hermes.storage.sqlite.request_keys import SQLiteRequestKeys  # idemkey
from hermes.storage.sqlite.session_locks import FileSessionLocks
from hermes.storage.sqlite.sessions import SQLiteStore
from hermes.storage.sqlite.tool_calls import SQLiteToolCallIndex
from hermes.tools.builtin.notes_store import LocalNotes, NotesStore
from hermes.tools.pipeline.idempotency_records import IdempotencyRecords
from hermes.tools.plan_runs import PlanRuns
from hermes.tools.policies import LocalIdempotencyRecords

if TYPE_CHECKING:
    from hermes.memory.embed import Embedder


class Backend(Protocol):
    name: str
    durable: bool

    def open(self) -> Store:
        """A store on this test's storage; calling it again reopens the same data (when
        ``durable``)."""
        ...


@dataclass
class SQLiteFileBackend:
    path: Path
    name: str = "sqlite-file"
    durable: bool = True

    def open(self) -> Store:
        return SQLiteStore(self.path)


@dataclass
class SQLiteMemoryBackend:
    name: str = "sqlite-memory"
    durable: bool = False

    def open(self) -> Store:
        return SQLiteStore(":memory:")


STORE_BACKENDS: dict[str, Callable[[Path], Backend]] = {
    "sqlite-file": lambda tmp_path: SQLiteFileBackend(tmp_path / "hermes.db"),
    "sqlite-memory": lambda tmp_path: SQLiteMemoryBackend(),
}


class LocksBackend(Protocol):
    """Claims on one set of sessions: each ``open()`` is another locks object on them (another
    Agent on the same store); ``close()`` releases every object it opened."""

    def open(self) -> SessionLocks: ...

    def close(self) -> None: ...


@dataclass
class SharedLocalLocks:
    """In-process locks: every Agent of one ``:memory:`` store shares the one object."""

    shared: LocalSessionLocks

    def open(self) -> SessionLocks:
        return self.shared

    def close(self) -> None:
        self.shared.close()


@dataclass
class FileLocks:
    """OS file locks beside a SQLite file: byte ranges (Linux) or one file per session."""

    path: Path
    ranges: bool

    def __post_init__(self) -> None:
        self.made: list[SessionLocks] = []

    def open(self) -> SessionLocks:
        locks = FileSessionLocks(self.path, ranges=self.ranges)
        self.made.append(locks)
        return locks

    def close(self) -> None:
        for locks in self.made:
            locks.close()


#: Byte-range locks need Linux (``F_OFD_SETLK``): the fixture skips them elsewhere.
LOCKS_BACKENDS: dict[str, Callable[[Path], LocksBackend]] = {
    "local": lambda tmp_path: SharedLocalLocks(LocalSessionLocks(cross_process=True)),
    "sqlite-file-ranges": lambda tmp_path: FileLocks(tmp_path / "h.db", ranges=True),
    "sqlite-file-per-session": lambda tmp_path: FileLocks(tmp_path / "h.db", ranges=False),
}


class MemoryBackend(Protocol):
    """A long-term memory store (the ``hermes.memory.store.MemoryStore`` protocol, which is also
    the ``HabitStore``; keyword search only: no embedder, no lexicon) on one test's storage;
    ``open()`` again reopens it (``durable``). ``embedder`` turns vector search on (the
    conformance suite hands in a deterministic one)."""

    name: str
    durable: bool

    def open(self, *, embedder: Embedder | None = None) -> MemoryStore: ...


@dataclass
class SQLiteMemoryFile:
    path: Path
    name: str = "sqlite-file"
    durable: bool = True

    def open(self, *, embedder: Embedder | None = None) -> MemoryStore:
        return SQLiteMemoryStore(self.path, embedder=embedder, lexicon=None)


@dataclass
class SQLiteMemoryInMemory:
    name: str = "sqlite-memory"
    durable: bool = False

    def open(self, *, embedder: Embedder | None = None) -> MemoryStore:
        return SQLiteMemoryStore(":memory:", embedder=embedder, lexicon=None)


#: The backends of the memory protocols (``hermes.memory.store.MemoryStore`` and its
#: ``hermes.memory.habits.HabitStore`` side).
MEMORY_BACKENDS: dict[str, Callable[[Path], MemoryBackend]] = {
    "sqlite-file": lambda tmp_path: SQLiteMemoryFile(tmp_path / "memory.db"),
    "sqlite-memory": lambda tmp_path: SQLiteMemoryInMemory(),
}


# -- tool-call records and archive -----------------------------------------------------------


class ToolCallIndexBackend(Protocol):
    """The L2 tool-call index (``hermes.memory.index.ToolCallIndex``) on one test's storage:
    each ``open()`` is another index on the same records (a restart, another worker) when
    ``durable``; a non-durable one (``:memory:``) is private to its object."""

    name: str
    durable: bool

    def open(self, *, debug: bool = False) -> ToolCallIndex: ...


@dataclass
class SQLiteToolCallFile:
    path: Path
    name: str = "sqlite-file"
    durable: bool = True

    def open(self, *, debug: bool = False) -> ToolCallIndex:
        return SQLiteToolCallIndex(self.path, debug=debug)


@dataclass
class SQLiteToolCallInMemory:
    name: str = "sqlite-memory"
    durable: bool = False

    def open(self, *, debug: bool = False) -> ToolCallIndex:
        return SQLiteToolCallIndex(":memory:", debug=debug)


TOOL_CALL_INDEX_BACKENDS: dict[str, Callable[[Path], ToolCallIndexBackend]] = {
    "sqlite-file": lambda tmp_path: SQLiteToolCallFile(tmp_path / "state" / "memory.db"),
    "sqlite-memory": lambda tmp_path: SQLiteToolCallInMemory(),
}


class ArchiveBackend(Protocol):
    """The L3 archive (``hermes.memory.archive.Archive``) on one test's storage: each
    ``open()`` is another archive on the same blobs. ``read_raw``/``write_raw`` reach a stored
    object past the protocol (``None``: there is none), so the suite can damage one the way
    a torn write, a bad disk or a person would."""

    name: str

    def open(self, *, max_bytes: int = DEFAULT_MAX_BLOB_BYTES) -> Archive: ...

    def read_raw(self, digest: str) -> bytes | None: ...

    def write_raw(self, digest: str, blob: bytes) -> None: ...


@dataclass
class FilesArchive:
    root: Path
    name: str = "files"

    def open(self, *, max_bytes: int = DEFAULT_MAX_BLOB_BYTES) -> Archive:
        return LocalArchive(self.root, max_bytes=max_bytes)

    def read_raw(self, digest: str) -> bytes | None:
        path = self.root / blob_key(digest)
        return path.read_bytes() if path.exists() else None

    def write_raw(self, digest: str, blob: bytes) -> None:
        path = self.root / blob_key(digest)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(blob)


ARCHIVE_BACKENDS: dict[str, Callable[[Path], ArchiveBackend]] = {
    "files": lambda tmp_path: FilesArchive(tmp_path / "archive"),
}


# -- end of tool-call records and archive ------------------------------------------------------


# -- event dedupe, job runs, plan runs --


class RunsBackend(Protocol):
    """The backends of ``EventDedupe``, ``JobRuns`` and ``PlanRuns`` on one test's storage.

    Each ``open_*`` is another handle on the same data (another worker); ``clock`` replaces
    the time source (a fake one: windows and leases without sleeping). ``durable``: the data
    survives a reopen. ``cross_process``: another process can open it too (``spawn`` pickles
    the backend object and calls ``open_*`` there), so the race tests run on it.
    ``plan_results``: where the plan runs keep their nodes' results (an archive the suite can
    damage as a lost disk, a torn write or a person would), ``None`` when they stay in the
    records (a ``:memory:`` database: the tests of archived results skip it).
    """

    name: str
    durable: bool
    cross_process: bool
    plan_results: ArchiveBackend | None

    def open_event_dedupe(self, clock: Clock | None = None) -> EventDedupe: ...

    def open_job_runs(self, clock: Clock | None = None) -> JobRuns: ...

    def open_plan_runs(self, clock: Clock | None = None) -> PlanRuns: ...


@dataclass
class SQLiteRunsFiles:
    """One SQLite file per protocol in a test's directory, as beside a session database."""

    directory: Path
    name: str = "sqlite-file"
    durable: bool = True
    cross_process: bool = True

    @property
    def plan_results(self) -> ArchiveBackend:
        return FilesArchive(self.directory / PLAN_RESULTS_DIR)

    def open_event_dedupe(self, clock: Clock | None = None) -> EventDedupe:
        return SQLiteEventDedupe(self.directory / "events.db", clock=clock or time.time)

    def open_job_runs(self, clock: Clock | None = None) -> JobRuns:
        return SQLiteJobRuns(self.directory / "jobs.db", clock=clock or time.time)

    def open_plan_runs(self, clock: Clock | None = None) -> PlanRuns:
        return SQLitePlanRuns(
            self.directory / "plans.db",
            archive=self.plan_results.open(max_bytes=PLAN_RESULT_MAX_BYTES),
            clock=clock or time.time,
        )


@dataclass
class SQLiteRunsInMemory:
    """``:memory:`` databases, private to one object: every open of a test hands out the same
    object until it is closed (two "workers" of one process share it; closing it twice is
    harmless; an open after the close starts empty)."""

    name: str = "sqlite-memory"
    durable: bool = False
    cross_process: bool = False
    plan_results: ArchiveBackend | None = None

    def __post_init__(self) -> None:
        self.opened: dict[str, Any] = {}

    def open_event_dedupe(self, clock: Clock | None = None) -> EventDedupe:
        made = self.opened.get("events")
        if made is None or made._closed:
            made = self.opened["events"] = SQLiteEventDedupe(":memory:", clock=clock or time.time)
        return cast(EventDedupe, made)

    def open_job_runs(self, clock: Clock | None = None) -> JobRuns:
        made = self.opened.get("jobs")
        if made is None or made._closed:
            made = self.opened["jobs"] = SQLiteJobRuns(":memory:", clock=clock or time.time)
        return cast(JobRuns, made)

    def open_plan_runs(self, clock: Clock | None = None) -> PlanRuns:
        made = self.opened.get("plans")
        if made is None or made._closed:
            made = self.opened["plans"] = SQLitePlanRuns(
                ":memory:", archive=None, clock=clock or time.time
            )
        return cast(PlanRuns, made)


#: The backends of the event dedupe, job runs and plan runs suites.
RUNS_BACKENDS: dict[str, Callable[[Path], RunsBackend]] = {
    "sqlite-file": SQLiteRunsFiles,
    "sqlite-memory": lambda tmp_path: SQLiteRunsInMemory(),
}


# -- end of event dedupe, job runs, plan runs --


# -- idempotency records and notes -----------------------------------------------------------------


class IdempotencyBackend(Protocol):
    """Idempotency records (``hermes.tools.pipeline.idempotency_records``) on one test's
    storage. ``open(clock)`` again is another process's view of the same records when
    ``shared`` (``location`` then names them for a child process: see
    :func:`open_idempotency_location`); ``durable``: they survive ``close``."""

    name: str
    durable: bool
    shared: bool
    location: str | None

    def open(self, clock: Clock = time.time) -> IdempotencyRecords: ...

    async def close(self) -> None: ...


@dataclass
class SQLiteIdempotencyFile:
    path: Path
    name: str = "sqlite-file"
    durable: bool = True
    shared: bool = True
    made: list[SQLiteIdempotencyRecords] = field(default_factory=list)

    @property
    def location(self) -> str:
        return f"sqlite-file:{self.path}"

    def open(self, clock: Clock = time.time) -> IdempotencyRecords:
        records = SQLiteIdempotencyRecords(self.path, clock=clock)
        self.made.append(records)
        return records

    async def close(self) -> None:
        for records in self.made:
            await records.close()


@dataclass
class InProcessIdempotency:
    """The in-process default of a bare executor (``LocalIdempotencyRecords``): one object is
    all there is — ``open`` makes a fresh, empty one (nothing survives, nothing is shared)."""

    name: str = "in-process"
    durable: bool = False
    shared: bool = False
    location: str | None = None

    def open(self, clock: Clock = time.time) -> IdempotencyRecords:
        return LocalIdempotencyRecords(clock=clock)

    async def close(self) -> None:
        return None


IDEMPOTENCY_BACKENDS: dict[str, Callable[[Path], IdempotencyBackend]] = {
    "sqlite-file": lambda tmp_path: SQLiteIdempotencyFile(tmp_path / "idempotency.db"),
    "in-process": lambda tmp_path: InProcessIdempotency(),
}


def open_idempotency_location(location: str) -> IdempotencyRecords:
    """The records a backend's ``location`` names, opened in a child process."""
    engine, _, where = location.partition(":")
    if engine == "sqlite-file":
        return SQLiteIdempotencyRecords(where)
    raise ValueError(f"no backend can be opened from {location!r}")


class NotesBackend(Protocol):
    """A notes store (``hermes.tools.builtin.notes_store.NotesStore``) on one test's storage;
    ``open()`` again reopens the same entries when ``durable``."""

    name: str
    durable: bool

    def open(self) -> NotesStore: ...


@dataclass
class SQLiteNotesFile:
    path: Path
    name: str = "sqlite-file"
    durable: bool = True

    def open(self) -> NotesStore:
        return SQLiteNotes(self.path)


@dataclass
class InProcessNotes:
    """The in-process default of the module-level notes tools (``LocalNotes``)."""

    name: str = "in-process"
    durable: bool = False

    def open(self) -> NotesStore:
        return LocalNotes()


NOTES_BACKENDS: dict[str, Callable[[Path], NotesBackend]] = {
    "sqlite-file": lambda tmp_path: SQLiteNotesFile(tmp_path / "notes.db"),
    "in-process": lambda tmp_path: InProcessNotes(),
}


# -- end of idempotency records and notes ----------------------------------------------------------


# --- idemkey: HTTP Idempotency-Key records ---


class RequestKeysBackend(Protocol):
    """The backends of ``RequestKeys`` (``hermes.channels.http.request_keys``) on one test's
    storage: ``open_request_keys(clock)`` is another handle on the same records (another worker;
    a restart when ``durable``); ``cross_process`` as for :class:`RunsBackend` (the race tests
    of ``tests.storage.conformance.racers`` run on it)."""

    name: str
    durable: bool
    cross_process: bool

    def open_request_keys(self, clock: Clock | None = None) -> RequestKeys: ...


@dataclass
class SQLiteRequestKeysFile:
    """``requests.db`` in a test's directory, as beside a session database."""

    directory: Path
    name: str = "sqlite-file"
    durable: bool = True
    cross_process: bool = True

    def open_request_keys(self, clock: Clock | None = None) -> RequestKeys:
        return SQLiteRequestKeys(self.directory / "requests.db", clock=clock or time.time)


@dataclass
class SQLiteRequestKeysInMemory:
    """A ``:memory:`` database: every open hands out the same object until it is closed."""

    name: str = "sqlite-memory"
    durable: bool = False
    cross_process: bool = False
    made: SQLiteRequestKeys | None = None

    def open_request_keys(self, clock: Clock | None = None) -> RequestKeys:
        if self.made is None or self.made._closed:
            self.made = SQLiteRequestKeys(":memory:", clock=clock or time.time)
        return self.made


REQUEST_KEYS_BACKENDS: dict[str, Callable[[Path], RequestKeysBackend]] = {
    "sqlite-file": SQLiteRequestKeysFile,
    "sqlite-memory": lambda tmp_path: SQLiteRequestKeysInMemory(),
}


# --- end idemkey ---
