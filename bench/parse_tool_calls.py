"""parse_tool_calls on ordinary answers and on a megabyte of (broken) call text.

    python bench/parse_tool_calls.py                      # this checkout
    python bench/parse_tool_calls.py --baseline ../main   # and another checkout, side by side

Each case is parsed (after one warm-up) at least ``--repeat`` times and for at least 0.2 s,
in a child process per checkout (two versions of one
package cannot share a process), checkouts taking turns (A B A B …); the median of the rounds'
medians is reported, with the ratio to the baseline. Cases whose shape the baseline does not
know are still timed there (it reads them as text).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from ab_workers import run_child  # bench/ is the script's path

ROOT = Path(__file__).resolve().parent.parent
MB = 1_000_000
CALL = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'


def cases() -> dict[str, str]:
    return {
        "plain answer (60 chars)": "The weather in Paris is sunny, 21 °C, with a light breeze.",
        "one <tool_call>": f"Let me check.\n<tool_call>\n{CALL}\n</tool_call>",
        "<function=…> (other shape)": '<function=get_weather>{"city": "Paris"}</function>',
        "fenced call JSON (other shape)": f"Checking:\n```json\n{CALL}\n```",
        "1 MB argument, unclosed": '<tool_call>{"name": "get_weather", "arguments": {"text": "'
        + "a" * MB
        + '"}}',
        "1 MB truncated string": '<tool_call>{"name": "x", "arguments": {"t": "' + "a" * MB,
        "1 MB escapes, truncated": '<tool_call>{"name": "x", "arguments": {"t": "'
        + 'a\\"b,' * (MB // 5),
        "1 MB garbage body": "<tool_call>" + "x{y'z: " * (MB // 7),
        "1 MB of openers": "<tool_call>" * (MB // 11),
        "1 MB of objects": "<tool_call>" + '{"a":1},' * (MB // 8),
        "1 MB unclosed fence": "<tool_call>```json\n"
        + '{"name": "x", "arguments": {"t": "'
        + "a" * MB,
    }


def measure(repeat: int) -> dict[str, float]:
    import inspect

    from hermes.models.hermes_format import parse_tool_calls

    takes_names = "tool_names" in inspect.signature(parse_tool_calls).parameters
    names = ("get_weather", "x")

    def parse(text: str) -> None:
        if takes_names:
            parse_tool_calls(text, tool_names=names)
        else:
            parse_tool_calls(text)

    out: dict[str, float] = {}
    for name, text in cases().items():
        parse(text)  # warm-up: regexes compiled, caches filled
        times = []
        spent = 0.0
        while len(times) < repeat or (spent < 0.2 and len(times) < 2000):
            started = time.perf_counter()
            parse(text)
            times.append(time.perf_counter() - started)
            spent += times[-1]
        out[name] = statistics.median(times) * 1000
    return out


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
    checkouts = {"this": ROOT / "src"}
    if args.baseline is not None:
        checkouts["baseline"] = args.baseline.resolve() / "src"
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for _ in range(args.rounds):
        for name, src in checkouts.items():
            runs[name].append(run_child(__file__, str(src), args.repeat))
    medians: dict[str, dict[str, float]] = {
        name: {case: statistics.median(r[case] for r in results) for case in results[0]}
        for name, results in runs.items()
    }
    header = "| case | this checkout, ms |"
    if "baseline" in medians:
        header += " baseline, ms | ratio |"
    print(header)
    print("| --- | ---: |" + (" ---: | ---: |" if "baseline" in medians else ""))
    for case, this in medians["this"].items():
        row = f"| {case} | {this:.3f} |"
        if "baseline" in medians:
            base = medians["baseline"][case]
            row += f" {base:.3f} | {this / base:.3f} |"
        print(row)


if __name__ == "__main__":
    main()
