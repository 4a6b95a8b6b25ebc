"""open_store: what ``store=`` may be."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.errors import ConfigError
from hermes.session.store import Store
from hermes.storage.open import open_store
from hermes.storage.sqlite.sessions import SQLiteStore


def _opened(spec: object, **kwargs: object) -> SQLiteStore:
    store = open_store(spec, **kwargs)  # type: ignore[arg-type]
    assert isinstance(store, SQLiteStore)
    store.close_sync()
    return store


def test_none_opens_the_default_file_under_base_dir(tmp_path: Path):
    store = _opened(None, base_dir=tmp_path)
    assert Path(store.path) == tmp_path / ".hermes" / "hermes.db"
    assert Path(store.path).is_file()


def test_none_without_base_dir_uses_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    store = _opened(None)
    assert Path(store.path).resolve() == (tmp_path / ".hermes" / "hermes.db").resolve()


def test_a_path_string_opens_that_file(tmp_path: Path):
    store = _opened(str(tmp_path / "x.db"))
    assert Path(store.path) == tmp_path / "x.db"


def test_a_pathlike_opens_that_file(tmp_path: Path):
    store = _opened(tmp_path / "y.db")
    assert Path(store.path) == tmp_path / "y.db"


def test_a_relative_path_is_taken_from_base_dir(tmp_path: Path):
    store = _opened("data/z.db", base_dir=tmp_path)
    assert Path(store.path) == tmp_path / "data" / "z.db"


def test_a_sqlite_url_opens_its_file(tmp_path: Path):
    store = _opened(f"sqlite://{tmp_path}/u.db")
    assert Path(store.path) == tmp_path / "u.db"


def test_memory_opens_an_in_memory_database():
    store = _opened(":memory:")
    assert store.path == ":memory:"


def test_a_ready_store_is_returned_as_is(tmp_path: Path):
    ready = SQLiteStore(tmp_path / "r.db")
    try:
        assert open_store(ready) is ready
        assert isinstance(ready, Store)
    finally:
        ready.close_sync()


@pytest.mark.parametrize("spec", ["postgresql://localhost/hermes", "postgres://h/db", "  ", 42])
def test_unusable_specs_raise_config_error(spec: object):
    with pytest.raises(ConfigError):
        open_store(spec)  # type: ignore[arg-type]


def test_idempotency_records_live_beside_a_store_file_and_per_workspace_without_one(
    tmp_path: Path,
) -> None:
    from hermes.storage.open import idempotency_path

    on_file = open_store(str(tmp_path / "data" / "hermes.db"))
    in_memory = open_store(":memory:")
    try:
        assert idempotency_path(on_file) == str(tmp_path / "data" / "idempotency.db")
        assert idempotency_path(in_memory) is None
    finally:
        on_file.close_sync()
        in_memory.close_sync()


# -- tool-call records and archive -----------------------------------------------------------


async def test_a_directory_opens_the_tool_call_index_and_the_archive_inside_it(
    tmp_path: Path,
) -> None:
    from hermes.agent.compose import open_tool_memory_backends
    from hermes.memory.archive import Archive
    from hermes.memory.index import ToolCallIndex
    from hermes.storage.files.archive import LocalArchive
    from hermes.storage.sqlite.tool_calls import SQLiteToolCallIndex

    index, archive = open_tool_memory_backends(tmp_path / ".hermes", debug=True)
    try:
        assert isinstance(index, ToolCallIndex)
        assert isinstance(archive, Archive)
        assert isinstance(index, SQLiteToolCallIndex)
        assert isinstance(archive, LocalArchive)
        assert Path(index.path) == tmp_path / ".hermes" / "memory.db"
        assert index.debug
        assert archive.root == tmp_path / ".hermes" / "archive"
        assert not archive.root.exists()  # made on its first write
    finally:
        await index.close()


def test_the_lexicon_is_asked_for_through_the_composition_root() -> None:
    from hermes.agent.compose import lexicon_building, load_lexicon
    from hermes.memory.lexicon import Lexicon

    found = load_lexicon()  # the suite built it (tests/conftest.py)
    assert isinstance(found, Lexicon)
    assert load_lexicon(wait=False) is found
    assert not lexicon_building()


# -- end of tool-call records and archive ------------------------------------------------------
