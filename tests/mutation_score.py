"""The mutation score of the last ``make mutation`` run, per module (docs/testing.md).

Reads ``mutmut results --all true`` (one ``name: status`` line per mutant) and prints, per
module, the mutants killed (failing or hanging the tests) of those that are not equivalent: a
surviving mutant listed in ``tests/mutation_equivalent.txt`` (``name  reason``, checked by hand:
no test can tell it from the original) is left out of the denominator. Mutant names are
numbered per function, so the list must be checked again when a listed function changes.
Not a test: pytest does not collect it.

Run from the repository root: ``.venv/bin/python tests/mutation_score.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

EQUIVALENT_FILE = Path(__file__).with_name("mutation_equivalent.txt")
#: mutmut 3 names a mutant ``module.x_function__mutmut_N`` or ``module.xǁClassǁmethod__mutmut_N``.
_MODULE = re.compile(r"^(?P<module>.+?)\.x[_ǁ]")
#: A mutant that makes the tests hang (timeout) is caught as surely as one that fails them.
CAUGHT = frozenset({"killed", "timeout"})


def equivalent_names() -> set[str]:
    if not EQUIVALENT_FILE.exists():
        return set()
    names = set()
    for raw in EQUIVALENT_FILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            names.add(line.split()[0])
    return names


def main() -> int:
    mutmut = Path(sys.executable).with_name("mutmut")
    listing = subprocess.run(
        [str(mutmut), "results", "--all", "true"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    equivalent = equivalent_names()
    by_module: dict[str, Counter[str]] = defaultdict(Counter)
    for line in listing.splitlines():
        name, _, status = line.strip().rpartition(": ")
        match = _MODULE.match(name)
        if not match:
            continue
        counts = by_module[match["module"]]
        counts["total"] += 1
        if status in CAUGHT:
            counts["killed"] += 1
        elif name in equivalent:
            counts["equivalent"] += 1
        else:
            counts[status] += 1
    if not by_module:
        print("no mutants found: run `make mutation` first", file=sys.stderr)
        return 1
    header = (
        f"{'module':34} {'mutants':>7} {'equiv.':>6} {'killed':>6} {'survived':>8} {'other':>5} "
        f"{'unrun':>5}"
    )
    print(header + "  score")
    totals: Counter[str] = Counter()
    for module in sorted(by_module):
        counts = by_module[module]
        totals.update(counts)
        print(_row(module, counts))
    print(_row("all", totals))
    return 0


def _row(label: str, counts: Counter[str]) -> str:
    killed, survived, unrun = counts["killed"], counts["survived"], counts["not checked"]
    other = counts["total"] - counts["equivalent"] - killed - survived - unrun
    # A partial run (one module, or one stopped early) scores only the mutants it ran.
    judged = counts["total"] - counts["equivalent"] - unrun
    score = f"{killed / judged:6.1%}" if judged else "   n/a"
    return (
        f"{label:34} {counts['total']:7} {counts['equivalent']:6} {killed:6} {survived:8} "
        f"{other:5} {unrun:5}  {score}"
    )


if __name__ == "__main__":
    sys.exit(main())
