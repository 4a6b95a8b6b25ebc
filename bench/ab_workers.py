"""The worker processes of the side-by-side benchmarks (``ab_turn.py``, ``ab_executor.py``,
``ab_recall.py``): one per source tree, each importing ``hermes`` from its tree, driven by one
JSON line in and one JSON line out, so the driver can alternate small batches between them
(:func:`alternate`) and print each side's medians and the ratios (:func:`print_medians`); and
:func:`run_child`, one measuring run of a script against a tree (``parse_tool_calls.py``,
``real_schemas.py``)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

Worker = subprocess.Popen[str]
#: The times of one run: (side, case) -> every measured time, in the workers' unit.
Times = dict[tuple[str, str], list[float]]


def ab_parser(description: str, *, rounds: int, batch: int) -> argparse.ArgumentParser:
    """The options of every side-by-side script: the two trees, the rounds, the batch size and
    the hidden ``--worker`` (how :func:`start` runs the script as one side)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--a", help="the tree to compare against (e.g. main's src)")
    parser.add_argument("--b", help="the tree measured (e.g. this checkout's src)")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--batch", type=int, default=batch)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return parser


def start(script: str, tree: str, *options: str) -> subprocess.Popen[str]:
    """``script --worker [options]`` with ``hermes`` imported from ``tree``; returns once it is
    ready."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
    process = subprocess.Popen(
        [sys.executable, script, "--worker", *options],
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


def alternate(
    sides: Mapping[str, Worker], cases: Mapping[str, Sequence[str]], args: argparse.Namespace
) -> Times:
    """One warm-up batch per case and side, then ``args.rounds`` rounds of a batch per case and
    side (A B A B …, so a noisy machine slows every side alike): each worker is asked
    ``{"case": CASE, "count": args.batch}`` and answers a list of times. ``cases`` maps a case
    to the sides that run it (a peer may run only some). The workers are stopped at the end,
    whatever happens."""
    times: Times = {}
    try:
        for warm_up in (True, *([False] * args.rounds)):
            for case, names in cases.items():
                for name in names:
                    answer = ask(sides[name], case=case, count=args.batch)
                    if not warm_up:
                        times.setdefault((name, case), []).extend(answer)
    finally:
        for side in sides.values():
            stop(side)
    print(f"A = {args.a}\nB = {args.b}\n{args.rounds} rounds x {args.batch} per case and side")
    return times


def print_medians(times: Times, cases: Mapping[str, Sequence[str]], unit: str) -> dict[str, Any]:
    """A table of each side's median per case and the ratio of every side to the first one
    (``B/A``, ``SDK/A`` …); returns the medians as ``{case: {side: median}}``."""
    sides = list(dict.fromkeys(name for names in cases.values() for name in names))
    base, others = sides[0], sides[1:]
    width = max(len(case) for case in cases) + 2
    head = "".join(f"{f'{s} median {unit}':>15}" for s in sides)
    print(f"{'case':{width}}{head}" + "".join(f"{f'{s}/{base}':>9}" for s in others))
    medians: dict[str, Any] = {}
    for case, names in cases.items():
        medians[case] = {s: round(statistics.median(times[(s, case)]), 1) for s in names}
        row = "".join(f"{medians[case][s]:15.1f}" if s in names else f"{'-':>15}" for s in sides)
        ratios = "".join(
            f"{medians[case][s] / medians[case][base]:9.3f}"
            if s in names and base in names
            else f"{'-':>9}"
            for s in others
        )
        print(f"{case:{width}}{row}{ratios}")
    return medians


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
