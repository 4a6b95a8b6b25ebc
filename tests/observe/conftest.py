"""Every observe test starts and ends with logging off and structlog's global config restored."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from hermes.observe import clear_context, reset_logging


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    saved = structlog.get_config()
    reset_logging()
    clear_context()
    yield
    reset_logging()
    clear_context()
    structlog.configure(**saved)


@pytest.fixture
def log_file(tmp_path: Path) -> Path:
    return tmp_path / "logs" / "hermes.log"


@pytest.fixture
def read_lines(log_file: Path) -> Callable[[], list[dict[str, Any]]]:
    """Every line of the log file, parsed; [] when the file does not exist."""

    def read() -> list[dict[str, Any]]:
        if not log_file.exists():
            return []
        return [json.loads(line) for line in log_file.read_text(encoding="utf-8").splitlines()]

    return read
