"""What every SQLite file of Hermes needs (sessions, idempotency keys, notes): WAL mode that
survives a concurrent first open, one definition of "the database is busy", and
:class:`SQLiteWorker`, the fast-path-or-worker-thread connection owner the stores share."""

from __future__ import annotations

import abc
import asyncio
import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from hermes.errors import StoreError

P = ParamSpec("P")
T = TypeVar("T")


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` means another connection holds a lock (worth waiting for)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in str(exc)


def enable_wal(conn: sqlite3.Connection, busy_timeout: float) -> str:
    """Switch ``conn``'s database to WAL and return the journal mode it ended in.

    Switching a brand-new file while another process does the same can fail at once with
    SQLITE_BUSY — SQLite does not call the busy handler for this pragma — so wait by hand, up to
    ``busy_timeout`` seconds. (Blocking: call it where blocking is allowed.)
    """
    deadline = time.monotonic() + busy_timeout
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


class SQLiteWorker(abc.ABC):
    """One SQLite connection, used on the caller's thread when that cannot block and on one
    worker thread otherwise.

    Why not "always hand the work to a thread": a store call takes 10–80 µs and a hop to a
    worker thread and back costs 100–200 µs on these machines — the hop, not the disk, was
    most of an agent turn's overhead. So :meth:`_run` first tries the fast path: if the
    connection is free, it runs right away on the caller's thread with ``busy_timeout = 0``,
    which can never wait on another process's lock. Anything that could block goes to the
    worker thread instead (STYLE §7, blocking work off the event loop): a call that meets a lock
    held by another process (SQLITE_BUSY) is retried there with the real busy timeout, a call
    that finds the connection in use waits there, and :meth:`_maintain` (WAL checkpoints — the
    only step that fsyncs — and any cleanup) runs there every ``maintain_every`` row changes,
    holding the connection so fast-path calls queue on the worker meanwhile; automatic
    checkpoints, which would run inside some unlucky commit, are off. One ``threading.Lock``
    guards the connection, so a transaction never interleaves with another.

    Subclasses create their tables in :meth:`_prepare` (called once the file is open, in WAL
    mode, on the worker holding the lock) and turn sqlite3 errors into one clear ``StoreError``
    in :meth:`_error`.
    """

    #: Row changes between two runs of :meth:`_maintain` (a few MB of WAL).
    maintain_every = 500
    #: How errors name this store ("the store …", "the idempotency store …").
    kind = "store"

    def __init__(self, path: str, busy_timeout: float, *, thread_name: str) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        #: Held by whoever uses ``_conn`` (the caller's fast path or the worker thread).
        self._lock = threading.Lock()
        self._changes_at_maintenance = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name)

    # -- subclass hooks ------------------------------------------------------------------------
    @abc.abstractmethod
    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Create or migrate the schema (on the worker, holding the lock, busy timeout on)."""

    def _error(self, exc: sqlite3.Error, action: str) -> StoreError:
        """One clear sentence for a sqlite3 failure (never a raw traceback to the caller),
        naming this file by :attr:`kind`; a subclass may word its own."""
        name = getattr(exc, "sqlite_errorname", "") or ""
        text, path, kind = str(exc), self.path, self.kind
        if is_busy(exc):
            message = f"{kind} is locked (busy for {self.busy_timeout:g} s): {path}"
        elif name.startswith("SQLITE_CANTOPEN"):
            message = f"cannot open the {kind} file {path} (is its directory writable?)"
        elif name == "SQLITE_NOTADB" or "not a database" in text:
            message = f"{path} is not a database (or is encrypted or damaged)"
        elif name.startswith("SQLITE_CORRUPT"):
            message = f"the {kind} {path} is corrupt: {text}"
        elif name == "SQLITE_FULL":
            message = f"the disk is full, cannot write the {kind} {path}"
        elif name.startswith("SQLITE_READONLY"):
            message = f"the {kind} {path} is read-only"
        elif name.startswith("SQLITE_IOERR"):
            message = f"disk I/O error on the {kind} {path}: {text}"
        else:
            message = f"{action} failed on the {kind} {path}: {text}"
        return StoreError(
            message, path=path, action=action, sqlite_error=name or type(exc).__name__
        )

    def _maintain_connection(self, conn: sqlite3.Connection) -> None:
        """Periodic upkeep on the worker; by default a PASSIVE checkpoint of the WAL."""
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    # -- running work --------------------------------------------------------------------------
    def _closed_error(self) -> StoreError:
        return StoreError(f"the {self.kind} {self.path} is closed", path=self.path)

    async def _run(
        self,
        action: str,
        fn: Callable[Concatenate[sqlite3.Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run ``fn(conn, ...)`` now if that cannot block, else on the worker thread."""
        if not self._closed and self._conn is not None and self._lock.acquire(blocking=False):
            try:
                conn = self._conn
                if conn is not None:
                    try:
                        result = fn(conn, *args, **kwargs)
                    except sqlite3.Error as exc:
                        if not is_busy(exc):
                            raise self._error(exc, action) from exc
                        # Another process holds the write lock: wait for it on the worker.
                    else:
                        self._after_call(conn)
                        return result
            finally:
                self._lock.release()
        return await asyncio.wrap_future(self._submit(action, fn, *args, **kwargs))

    def _submit(
        self,
        action: str,
        fn: Callable[Concatenate[sqlite3.Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> Future[T]:
        """Run ``fn(conn, ...)`` on the worker with the real busy timeout."""
        if self._closed:
            raise self._closed_error()

        def job() -> T:
            with self._lock:
                conn = self._open_locked()
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000):d}")
                try:
                    result = fn(conn, *args, **kwargs)
                except sqlite3.Error as exc:
                    raise self._error(exc, action) from exc
                finally:
                    conn.execute("PRAGMA busy_timeout = 0")
                self._after_call(conn)
                return result

        try:
            return self._executor.submit(job)
        except RuntimeError as exc:  # the executor was shut down meanwhile
            raise self._closed_error() from exc

    def _connect(self) -> sqlite3.Connection:
        """Open the file: parent directories, WAL, :meth:`_prepare`; then the fast-path settings
        (``busy_timeout = 0``, automatic checkpoints off — see the class docstring)."""
        in_memory = self.path == ":memory:"
        if not in_memory:
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the directory of the {self.kind} {self.path}: "
                    f"{exc.strerror or exc}",
                    path=self.path,
                ) from exc
        try:
            conn = sqlite3.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._error(exc, "open") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000):d}")
            mode = enable_wal(conn, self.busy_timeout)
            if mode != "wal" and not in_memory:
                # e.g. a network filesystem without shared memory: still correct, but every
                # write blocks readers, and the fast path meets SQLITE_BUSY far more often.
                from hermes.observe import get_logger

                get_logger("store").warning("sqlite_not_wal", path=self.path, mode=mode)
            conn.execute("PRAGMA synchronous = NORMAL")
            self._prepare(conn)
            conn.execute("PRAGMA busy_timeout = 0")
            if not in_memory:
                conn.execute("PRAGMA wal_autocheckpoint = 0")
        except sqlite3.Error as exc:
            conn.close()
            raise self._error(exc, "open") from exc
        except BaseException:  # clean up, then re-raise unchanged
            conn.close()
            raise
        return conn

    def _open_locked(self) -> sqlite3.Connection:
        if self._conn is None:
            if self._closed:
                raise self._closed_error()
            self._conn = self._connect()
        return self._conn

    def _open_now(self) -> None:
        """Open the connection at once (blocking), so a bad file is reported at construction."""

        def job() -> None:
            with self._lock:
                self._open_locked()

        try:
            self._executor.submit(job).result()
        except BaseException:  # clean up, then re-raise unchanged
            self._closed = True
            self._executor.shutdown(wait=True)
            raise

    def _after_call(self, conn: sqlite3.Connection) -> None:
        if self.path == ":memory:" or self._closed:
            return
        if conn.total_changes - self._changes_at_maintenance < self.maintain_every:
            return
        self._changes_at_maintenance = conn.total_changes
        with contextlib.suppress(RuntimeError):  # closed meanwhile: nothing left to maintain
            self._executor.submit(self._maintain)

    def _maintain(self) -> None:
        with self._lock:
            conn = self._conn
            if conn is None:
                return
            try:
                self._maintain_connection(conn)
            except sqlite3.Error as exc:
                # Upkeep only delays WAL reuse (or cleanup); the next run retries.
                from hermes.observe import get_logger

                get_logger("store").warning("sqlite_maintenance_failed", error=str(exc))

    # -- closing -------------------------------------------------------------------------------
    def _close_connection(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error as exc:
                raise self._error(exc, "close") from exc

    async def close(self) -> None:
        """Close the connection on its thread and stop the worker; later calls raise."""
        if self._closed:
            return
        self._closed = True
        try:
            await asyncio.wrap_future(self._executor.submit(self._close_connection))
        finally:
            self._executor.shutdown(wait=False)

    def close_sync(self) -> None:
        """Blocking :meth:`close`, for code outside an event loop."""
        if self._closed:
            return
        self._closed = True
        try:
            self._executor.submit(self._close_connection).result()
        finally:
            self._executor.shutdown(wait=True)


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any exception (re-raised unchanged).

    IMMEDIATE takes the write lock up front, so a read-then-write inside cannot be overtaken
    by another connection (the one way every Hermes SQLite file writes).
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:  # clean up, then re-raise unchanged
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
