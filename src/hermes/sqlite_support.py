"""Moved: what every SQLite file of Hermes needs lives in ``hermes.storage.sqlite.support``
(DESIGN.md, "Layers": backends in storage/).

Kept as a re-export for the SQLite code not yet moved into ``storage/sqlite/`` (memory); it
goes when it has moved.
"""

from __future__ import annotations

from hermes.storage.sqlite.support import SQLiteWorker, enable_wal, is_busy, write_transaction

__all__ = ["SQLiteWorker", "enable_wal", "is_busy", "write_transaction"]
