"""Sessions: identity, append-only items, the Store protocol (backends: ``hermes.storage``), the
bounded context and the state machine."""

from hermes.session.items import ContextSlice, Item, SessionRecord, SessionState
from hermes.session.store import Store

__all__ = ["ContextSlice", "Item", "SessionRecord", "SessionState", "Store"]
