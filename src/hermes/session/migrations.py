"""Moved: the schema steps of SQLite files live in ``hermes.storage.sqlite.migrations`` and the
session schema in ``hermes.storage.sqlite.session_migrations`` (DESIGN.md, "Layers": backends
in storage/).

Kept as a re-export for the memory tables and the tool-call index (``memory/index.py``,
``memory/longterm_schema.py``) until their own move into ``storage/sqlite/``.
"""

from __future__ import annotations

from hermes.storage.sqlite.migrations import Migration, apply_migrations, schema_version
from hermes.storage.sqlite.session_migrations import MIGRATIONS, SCHEMA_VERSION

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "apply_migrations", "schema_version"]
