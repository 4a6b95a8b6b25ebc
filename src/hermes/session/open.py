"""Moved: ``open_store``, ``open_locks`` and ``check_store_backend`` live in
``hermes.storage.open`` (DESIGN.md, "Layers": storage/open.py turns a URL into a backend).

Kept as a re-export for the importers the later storage moves will change (``memory/open.py``
checks a store URL with ``check_store_backend``); new code goes through the composition root,
``hermes.agent.compose``.
"""

from __future__ import annotations

from hermes.storage.open import check_store_backend, open_locks, open_store

__all__ = ["check_store_backend", "open_locks", "open_store"]
