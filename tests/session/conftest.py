"""Fixtures of the session tests: ``store`` runs a test on every store backend — the same
fixtures as the Store conformance suite (``tests.storage.conformance.conftest``)."""

from tests.storage.conformance.conftest import backend, store

__all__ = ["backend", "store"]
