"""Versioned schemas of Hermes's SQLite files: the one way a schema moves up.

A schema is a sequence of steps; ``steps[i]`` upgrades a database from version ``i`` to
``i + 1`` (the session schema: ``hermes.storage.sqlite.session_migrations``; the memory
tables and the tool-call index have their own). By default the version lives in
``PRAGMA user_version``. Each step runs in its own ``BEGIN IMMEDIATE`` transaction together
with the version bump, so a crash leaves the database at a whole version. Steps are append-only:
never edit a released step, add a new one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from hermes.errors import StoreError
from hermes.storage.sqlite.support import write_transaction

#: One schema step: SQL statements, or functions of the connection run in its transaction.
Migration = Sequence[str | Callable[[sqlite3.Connection], None]]


def schema_version(conn: sqlite3.Connection) -> int:
    """The schema version recorded in the database (0 for a new, empty file)."""
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def apply_migrations(
    conn: sqlite3.Connection,
    where: str,
    steps: Sequence[Migration],
    *,
    read_version: Callable[[sqlite3.Connection], int] = schema_version,
    write_version: Callable[[sqlite3.Connection, int], None] | None = None,
    what: str = "the database {where}",
) -> int:
    """Bring the database up to ``len(steps)``, one transaction per step; return the version.

    A step is SQL statements or functions of the connection. By default the version is
    ``PRAGMA user_version``; another schema in the same file (the memory tables) passes its own
    ``read_version``/``write_version`` and names itself in errors with ``what``. ``conn`` must
    be in autocommit mode (``isolation_level=None``). Raises ``StoreError`` when the database
    was written by a newer Hermes (a newer schema than ``steps`` knows), naming ``where`` (the
    file). ``sqlite3.Error`` from a step propagates after a rollback.
    """
    target = len(steps)
    write = write_version or _write_user_version
    version = read_version(conn)
    while version < target:
        with write_transaction(conn):
            # Re-read under the write lock: another process may have migrated meanwhile.
            version = read_version(conn)
            if version < target:
                for statement in steps[version]:
                    if callable(statement):
                        statement(conn)
                    else:
                        conn.execute(statement)
                version += 1
                write(conn, version)
    if version > target:
        raise StoreError(
            f"{what.format(where=where)} has schema version {version}, newer than this Hermes "
            f"supports ({target}); upgrade Hermes or use another database file",
            path=where,
            version=version,
        )
    return version


def _write_user_version(conn: sqlite3.Connection, version: int) -> None:
    conn.execute(f"PRAGMA user_version = {version:d}")
