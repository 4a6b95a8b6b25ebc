"""YAML aliases in hermes.yaml: reuse is fine, an alias bomb is one clear ConfigError, fast.

A "billion laughs" file is a few hundred bytes that nests aliases nine levels deep; expanding
``${VAR}`` through every copy took ~3 GB and never ended. The expanded size is counted (without
expanding) before anything is copied.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hermes.config import load_config
from hermes.errors import ConfigError


def bomb(levels: int = 9, width: int = 9) -> str:
    lines = ['a0: &a0 ["${HOME}", "lol"]']
    for level in range(1, levels + 1):
        items = ", ".join(f"*a{level - 1}" for _ in range(width))
        lines.append(f"a{level}: &a{level} [{items}]")
    return "agent:\n  instructions: hi\nx-bomb:\n" + "\n".join("  " + line for line in lines) + "\n"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hermes.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_an_alias_bomb_is_refused_quickly_with_one_config_error(tmp_path: Path) -> None:
    path = _write(tmp_path, bomb())
    started = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        load_config(path, cwd=tmp_path, environ={"HOME": "/root"})
    assert time.perf_counter() - started < 5.0
    message = caught.value.message
    assert str(path) in message
    assert "alias" in message
    assert "别名" in message


def test_a_bomb_of_nested_mappings_is_refused_too(tmp_path: Path) -> None:
    lines = ["  m0: &m0 {k: v}"]
    for level in range(1, 25):
        lines.append(f"  m{level}: &m{level} {{a: *m{level - 1}, b: *m{level - 1}}}")
    with pytest.raises(ConfigError, match="alias"):
        load_config(_write(tmp_path, "x-bomb:\n" + "\n".join(lines) + "\n"), cwd=tmp_path)


def test_a_self_referring_alias_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="alias"):
        load_config(_write(tmp_path, "x-loop: &loop [1, *loop]\n"), cwd=tmp_path)


def test_ordinary_reuse_through_aliases_still_works(tmp_path: Path) -> None:
    text = (
        "mcp_servers:\n"
        "  one: {command: echo, env: &env {API: '${KEY:-none}'}}\n"
        "  two: {command: echo, env: *env}\n"
    )
    loaded = load_config(_write(tmp_path, text), cwd=tmp_path, environ={"KEY": "k1"})
    servers = loaded.config.mcp_servers
    assert [s.env for s in servers.values()] == [{"API": "k1"}, {"API": "k1"}]
