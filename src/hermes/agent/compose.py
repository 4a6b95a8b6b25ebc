"""The composition root's storage half: the one module outside ``storage/`` that imports it
(DESIGN.md, "Layers": only the agent factory imports storage; STYLE.md §11).

The agent (``Agent(store=...)``), the factory (``build_agent``) and the CLI's session views ask
here for the backends of a store setting; ``hermes.storage.open`` turns the URL or path into
them. A PostgreSQL or Redis backend joins there, and nothing above this module changes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from hermes.channels.dedupe import EventDedupe
from hermes.scheduler.runs import JobRuns
from hermes.session.locks import SessionLocks
from hermes.session.store import Store
from hermes.storage import open as storage_open
from hermes.tools.builtin.notes_store import NotesStores
from hermes.tools.pipeline.idempotency_records import IdempotencyRecords, RecordsPerWorkspace
from hermes.tools.plan_runs import PlanRuns

if TYPE_CHECKING:  # memory's protocols, for the annotations only: an agent without memory
    # never loads the memory package (tests/agent/test_turn_memory.py)
    from hermes.channels.http.request_keys import RequestKeys  # idemkey
    from hermes.memory.archive import Archive
    from hermes.memory.embed import Embedder
    from hermes.memory.index import ToolCallIndex
    from hermes.memory.lexicon import Lexicon
    from hermes.memory.store import MemoryStore


def open_store(
    spec: str | os.PathLike[str] | Store | None, *, base_dir: Path | None = None
) -> Store:
    """The session store ``spec`` names (``None``: ``.hermes/hermes.db`` under ``base_dir``);
    a ready ``Store`` is returned as is. See :func:`hermes.storage.open.open_store`."""
    return storage_open.open_store(spec, base_dir=base_dir)


def open_locks(store: Store) -> SessionLocks:
    """The session claims that go with ``store`` (OS file locks beside a SQLite file,
    in-process locks otherwise). See :func:`hermes.storage.open.open_locks`."""
    return storage_open.open_locks(store)


def check_store_backend(spec: str | os.PathLike[str], *, file: str | None = None) -> None:
    """Raise ``ConfigError`` (key ``store.path``) when ``spec`` names a backend this build does
    not have, before anything else is opened.

    See :func:`hermes.storage.open.check_store_backend`."""
    storage_open.check_store_backend(spec, file=file)


# -- tool-call records and archive -----------------------------------------------------------


def open_tool_memory_backends(
    directory: str | os.PathLike[str], *, debug: bool = False
) -> tuple[ToolCallIndex, Archive]:
    """The L2 tool-call index and the L3 archive under ``directory`` (``memory.db`` and
    ``archive/`` of a ``.hermes/`` directory), what ``ToolMemory.open`` is built on. See
    :func:`hermes.storage.open.open_tool_memory_backends`."""
    return storage_open.open_tool_memory_backends(directory, debug=debug)


# -- end of tool-call records and archive ------------------------------------------------------


# -- the lexicon's cache file ------------------------------------------------------------------


def load_lexicon(*, wait: bool = True) -> Lexicon | None:
    """The process-wide Chinese↔English lexicon (``wait=False``: ``None`` while its cache file
    is being built); ``None`` without the dictionary. See
    :func:`hermes.storage.open.load_lexicon`."""
    return storage_open.load_lexicon(wait=wait)


def lexicon_building() -> bool:
    """Whether this process is building the lexicon now (a command may say it waits)."""
    return storage_open.lexicon_building()


# -- end of the lexicon's cache file -----------------------------------------------------------


# -- long-term memories --


def open_memory_store(
    spec: str | os.PathLike[str],
    *,
    embedder: Embedder | Literal["auto"] | None = "auto",
    lexicon: Lexicon | Literal["auto"] | None = "auto",
) -> MemoryStore:
    """The long-term memory store on ``spec`` (a ``memory.db`` path or ``":memory:"``): what
    ``Memory.open`` and ``hermes.memory.open.open_memory_store`` ask for (they import this
    inside the function: memory/ never imports storage/). ``embedder`` and ``lexicon`` as for
    :func:`hermes.storage.open.open_memory_store`."""
    return storage_open.open_memory_store(spec, embedder=embedder, lexicon=lexicon)


# -- event dedupe, job runs, plan runs --


def open_event_dedupe(
    where: Store | str | os.PathLike[str], *, base_dir: Path | None = None
) -> EventDedupe:
    """The durable event dedupe that goes with ``where`` (a session store, or a file path):
    ``events.db`` beside a SQLite store's file. See :func:`hermes.storage.open.runs_path`."""
    return storage_open.open_event_dedupe(where, base_dir=base_dir)


def open_job_runs(
    where: Store | str | os.PathLike[str], *, base_dir: Path | None = None
) -> JobRuns:
    """The record of job runs that goes with ``where``: ``jobs.db`` beside a SQLite store's
    file. See :func:`hermes.storage.open.runs_path`."""
    return storage_open.open_job_runs(where, base_dir=base_dir)


def open_plan_runs(
    where: Store | str | os.PathLike[str], *, base_dir: Path | None = None
) -> PlanRuns:
    """The record of plan runs that goes with ``where``: ``plans.db`` beside a SQLite store's
    file. See :func:`hermes.storage.open.runs_path`."""
    return storage_open.open_plan_runs(where, base_dir=base_dir)


# -- end of event dedupe, job runs, plan runs --


# -- idempotency records and notes -----------------------------------------------------------------


def idempotency_records(store: Store) -> IdempotencyRecords | RecordsPerWorkspace:
    """The idempotency records of an agent on ``store`` (durable; beside its database file,
    else per workspace). See :func:`hermes.storage.open.open_idempotency_records`."""
    return storage_open.open_idempotency_records(store)


def notes_stores(store: Store) -> NotesStores:
    """The notes stores of an agent on ``store`` (``<workspace>/.hermes/notes.db``). See
    :func:`hermes.storage.open.open_notes`."""
    return storage_open.open_notes(store)


# -- end of idempotency records and notes ----------------------------------------------------------


# --- idemkey: HTTP Idempotency-Key records ---


def open_request_keys(
    where: Store | str | os.PathLike[str], *, base_dir: Path | None = None
) -> RequestKeys:
    """The durable ``Idempotency-Key`` records of ``hermes serve`` that go with ``where`` (a
    session store, or a file path): ``requests.db`` beside a SQLite store's file. See
    :func:`hermes.storage.open.open_request_keys`."""
    return storage_open.open_request_keys(where, base_dir=base_dir)


# --- end idemkey ---
