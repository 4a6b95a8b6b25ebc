"""The code blocks of README.md and docs/*.md run as tests, so the pages cannot rot
(``tests/docs/collect.py`` says which block runs how, and how a page marks one that cannot)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from hermes.config import load_config
from hermes.models.brain.intents import parse_intents
from tests.docs.collect import RUNNABLE, Block, all_blocks, console_steps

TIMEOUT_S = 180
BIN = Path(sys.executable).parent
BLOCKS = all_blocks()


_PLACEHOLDER = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)\}")


def _variables(text: str) -> dict[str, str]:
    """An environment in which every ``${VAR}`` a snippet needs (one without a default) is set,
    as a reader's would be."""
    return {m["name"]: "doc-value" for m in _PLACEHOLDER.finditer(text)}


def _env(home: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("HERMES_") or name == "HERMES_CACHE_DIR"
    }
    env["HOME"] = str(home)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', os.defpath)}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _shell(command: str, cwd: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command.replace(".venv/bin/", f"{BIN}/")],
        cwd=cwd,
        env=dict(env),
        input="",
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def test_every_block_runs_or_says_why_not() -> None:
    unmarked = [b.name for b in BLOCKS if b.lang not in RUNNABLE and b.directive != "skip"]
    assert unmarked == [], "blocks that neither run nor say why (<!-- docs-test: skip: … -->)"
    no_reason = [b.name for b in BLOCKS if b.directive == "skip" and not b.reason]
    assert no_reason == [], "a skip directive needs its reason"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang in RUNNABLE], ids=lambda b: b.name)
def test_block(block: Block, tmp_path: Path) -> None:
    if block.directive == "skip":
        pytest.skip(block.reason or "")
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    env = _env(home)
    for earlier in BLOCKS:  # the files the page wrote before this block
        if earlier.page == block.page and earlier.line < block.line and earlier.file:
            (work / earlier.file).write_text(earlier.code, encoding="utf-8")
    if block.lang == "python":
        script = work / "example.py"
        script.write_text(block.code, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(script)], cwd=work, env=env, input="", capture_output=True,
            text=True, timeout=TIMEOUT_S, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"{block.name}:\n{done.stdout}\n{done.stderr}"
    elif block.lang == "yaml" and re.search(r"^intents:", block.code, re.MULTILINE):
        assert parse_intents(block.code, origin=block.name)
    elif block.lang == "yaml":
        path = work / (block.file or "hermes.yaml")
        path.write_text(block.code, encoding="utf-8")
        load_config(path, cwd=work, environ=_variables(block.code), home=home)
    elif block.lang == "console":
        _run_console(block, work, env)
    else:
        done = _shell("set -e\n" + block.code, work, env)
        assert done.returncode == 0, f"{block.name}:\n{done.stdout}\n{done.stderr}"


def _run_console(block: Block, work: Path, env: Mapping[str, str]) -> None:
    rc = 0
    for command, shown in console_steps(block.code):
        if command.startswith("cat ") and shown and not (work / command[4:]).exists():
            (work / command[4:]).write_text("\n".join(shown) + "\n", encoding="utf-8")
            continue
        done = _shell(f"(exit {rc}); {command}", work, env)
        rc = done.returncode
        printed = (done.stdout + done.stderr).replace(str(work), "/tmp/hdoc")
        assert "Traceback" not in printed, f"{block.name}: $ {command}\n{printed}"
        if block.directive == "output":
            flat = " ".join(printed.split())
            for line in shown:
                assert " ".join(line.split()) in flat, f"{block.name}: $ {command}\n{printed}"
        else:
            assert rc == 0, f"{block.name}: $ {command} exited {rc}\n{printed}"
