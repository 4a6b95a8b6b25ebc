"""The worker processes of the side-by-side benchmarks (``ab_turn.py``, ``ab_recall.py``): one
per source tree, each importing ``hermes`` from its tree, driven by one JSON line in and one
JSON line out, so the driver can alternate small batches between them; and :func:`run_child`,
one measuring run of a script against a tree (``parse_tool_calls.py``, ``real_schemas.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any


def start(script: str, tree: str) -> subprocess.Popen[str]:
    """``script --worker`` with ``hermes`` imported from ``tree``; returns once it is ready."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
    process = subprocess.Popen(
        [sys.executable, script, "--worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    assert json.loads(process.stdout.readline()) == {"ready": True}
    return process


def ask(process: subprocess.Popen[str], **command: Any) -> Any:
    """Send one command to a worker and return its answer."""
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(json.dumps(command) + "\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline())


def stop(process: subprocess.Popen[str], timeout: float = 120.0) -> None:
    """Close a worker's input (it ends its loop) and wait for it."""
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=timeout)


def run_child(script: str, src: str, repeat: int) -> dict[str, Any]:
    """``script --child --repeat N`` with ``hermes`` imported from ``src``: its JSON answer."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, script, "--child", "--repeat", str(repeat)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(json.loads(out))
