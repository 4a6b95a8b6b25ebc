"""Isolated directories for configuration tests: nothing is read from the real cwd or home."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hermes.config import LoadedConfig, load_config


@dataclass
class Place:
    """A fake run directory, home directory and environment."""

    cwd: Path
    home: Path
    environ: dict[str, str] = field(default_factory=dict)

    def write(self, relative: str, text: str) -> Path:
        path = self.cwd / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def load(self, path: str | Path | None = None) -> LoadedConfig:
        return load_config(path, cwd=self.cwd, environ=self.environ, home=self.home)


@pytest.fixture
def place(tmp_path: Path) -> Place:
    cwd = tmp_path / "run"
    home = tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    return Place(cwd=cwd, home=home)


@pytest.fixture
def load_text(place: Place) -> Callable[..., LoadedConfig]:
    """Write ./hermes.yaml with the given text and load it."""

    def load(text: str, environ: Mapping[str, str] | None = None) -> LoadedConfig:
        place.write("hermes.yaml", text)
        if environ is not None:
            place.environ.update(environ)
        return place.load()

    return load
