"""The fenced code blocks of README.md and docs/*.md, and what the docs test does with each.

Why not ``pytest-examples`` (pydantic-ai's choice): it finds and runs only Python blocks (and
brings black along), while these pages are as much shell sessions and ``hermes.yaml`` snippets.
One small parser for every language keeps one rule for all of them:

- a block runs by its language — ``python`` (a script, in a fresh folder), ``yaml`` (loaded by
  the real config loader), ``console`` (each ``$ command`` runs in one fresh folder, in order),
  ``bash``/``sh`` (one script, ``set -e``);
- any other block (output samples, diagrams) and any block that cannot run here needs a
  directive on the line just before its fence, saying why::

      <!-- docs-test: skip: needs a model server at 127.0.0.1:8000 -->

- ``<!-- docs-test: output -->`` before a ``console`` block also checks that every line shown
  after a command appears in what that command printed (``/tmp/hdoc`` in the page stands for
  the block's own folder), and then a command may fail (the page shows its error); without it
  every command must exit 0. ``<!-- docs-test: run -->`` says "run it", for a reader.

In ``console`` blocks ``$ cat FILE`` followed by lines writes FILE with those lines (that is
how the pages show a file and then use it). A block right after a line naming a file
(`` `deploy-intents.yaml`: ``, `` `hermes.yaml` beside it: ``) is that file: it is written into
the folder of every later block of its page. A ``yaml`` block with top-level ``intents:`` is
checked by the offline brain's intent parser instead of the config loader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
RUNNABLE = frozenset({"python", "yaml", "console", "bash", "sh"})

_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w+-]*)\s*$")
_NAMES_FILE = re.compile(r"^`(?P<name>[\w-]+\.[A-Za-z]+)`[^`]*:$")
_DIRECTIVE = re.compile(
    r"^<!--\s*docs-test:\s*(?P<what>skip|output|run)\s*(?::\s*(?P<why>.*?))?\s*-->$"
)


@dataclass(frozen=True, slots=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    directive: str | None = None  # skip | output | run
    reason: str | None = None
    file: str | None = None  # the file of the page this block is

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, with the directive before it, if any."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent = len(opening["indent"])
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        code = "\n".join(line[indent:] for line in lines[i + 1 : end]) + "\n"
        above = [lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()][:2]
        directive = _DIRECTIVE.match(above[0]) if above else None
        named = [_NAMES_FILE.match(line) for line in above[1 if directive else 0 :][:1]]
        found.append(
            Block(
                page,
                i + 1,
                opening["lang"] or "",
                code,
                None if directive is None else directive["what"],
                None if directive is None else directive["why"],
                named[0]["name"] if named and named[0] else None,
            )
        )
        i = end + 1
    return found


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in blocks(page)]


def console_steps(code: str) -> list[tuple[str, list[str]]]:
    """``(command, shown output lines)`` for each ``$ `` line of a console block."""
    steps: list[tuple[str, list[str]]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return steps
