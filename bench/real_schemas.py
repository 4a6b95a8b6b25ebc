"""validate_arguments on the real-schema corpus (tests/tools/corpus): what it accepts and refuses.

    python bench/real_schemas.py                      # this checkout
    python bench/real_schemas.py --baseline ../main   # and another checkout, side by side

For each checkout: schemas, valid calls accepted, minimal calls (every optional field left out)
accepted, broken twins refused, and the median cost of one validation over the whole corpus.
With ``--baseline`` both run in turns (A B A B …, separate processes: two versions of one
package cannot share a process) and the cost is also given as a ratio.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from pathlib import Path
from typing import Any

from ab_workers import run_child  # bench/ is the script's path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "tools" / "corpus" / "real_schemas.jsonl"


def measure(repeat: int) -> dict[str, Any]:
    """One checkout's figures (runs inside the process whose ``hermes`` is measured)."""
    from hermes.tools import ToolArgumentError, validate_arguments

    entries = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    counts = {"schemas": len(entries), "valid": 0, "valid_ok": 0, "minimal": 0, "minimal_ok": 0}
    counts |= {"broken": 0, "broken_refused": 0}
    calls: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def accepts(schema: dict[str, Any], args: dict[str, Any]) -> bool:
        calls.append((schema, args))
        try:
            validate_arguments(schema, args)
        except ToolArgumentError:
            return False
        return True

    for entry in entries:
        schema = entry["schema"]
        required = set(schema.get("required", ()))
        for call in entry["valid"]:
            counts["valid"] += 1
            counts["valid_ok"] += accepts(schema, call)
        counts["minimal"] += 1
        minimal = {k: v for k, v in entry["valid"][0].items() if k in required}
        counts["minimal_ok"] += accepts(schema, minimal)
        for twin in entry["broken"]:
            counts["broken"] += 1
            counts["broken_refused"] += not accepts(schema, twin["args"])
    per_call = []
    for _ in range(repeat):
        started = time.perf_counter()
        for schema, args in calls:
            with contextlib.suppress(ToolArgumentError):
                validate_arguments(schema, args)
        per_call.append((time.perf_counter() - started) / len(calls) * 1e6)
    counts["median_us"] = round(statistics.median(per_call), 2)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.repeat)))
        return
    checkouts = {"this checkout": ROOT / "src"}
    if args.baseline is not None:
        checkouts["baseline"] = args.baseline.resolve() / "src"
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in checkouts}
    for _ in range(args.rounds):
        for name, src in checkouts.items():
            results[name].append(run_child(__file__, str(src), args.repeat))
    print("| checkout | schemas | valid accepted | minimal accepted | broken refused | median µs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    medians = {}
    for name, runs in results.items():
        first = runs[0]
        medians[name] = statistics.median(r["median_us"] for r in runs)
        print(
            f"| {name} | {first['schemas']} | {first['valid_ok']} / {first['valid']} | "
            f"{first['minimal_ok']} / {first['minimal']} | "
            f"{first['broken_refused']} / {first['broken']} | {medians[name]:.2f} |"
        )
    if "baseline" in medians:
        ratio = medians["this checkout"] / medians["baseline"]
        print(f"\ncost per validation, this checkout / baseline: {ratio:.2f}")


if __name__ == "__main__":
    main()
