"""Reading a tool's description and per-parameter descriptions from its docstring.

Supported: the first paragraph as the description; Google style (``Args:`` / ``Arguments:`` /
``Parameters:`` with ``name (type): text`` entries), reST (``:param name:`` /
``:param type name:``) and NumPy style (``Parameters`` underlined by dashes). Continuation
lines are joined with single spaces.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

_GOOGLE_ARGS = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$")
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_SECTION = re.compile(
    r"^(Returns?|Yields?|Raises?|Examples?|Notes?|Warnings?|See Also|Attributes|Todo)\s*:?\s*$"
)
_REST_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*)$")
_REST_FIELD = re.compile(r"^:[A-Za-z]")
_NUMPY_ENTRY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?::.*)?$")
_UNDERLINE = re.compile(r"^-{3,}\s*$")


@dataclass(slots=True)
class Docstring:
    """The parts of a docstring a tool schema uses."""

    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


def parse_docstring(doc: str | None) -> Docstring:
    """Description (first paragraph, lines joined) and parameter descriptions of ``doc``."""
    if not doc:
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    result = Docstring(description=_first_paragraph(lines))
    _parse_google(lines, result.params)
    _parse_rest(lines, result.params)
    _parse_numpy(lines, result.params)
    return result


def _first_paragraph(lines: list[str]) -> str:
    paragraph: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            if paragraph:
                break
            continue
        if _GOOGLE_ARGS.match(stripped) or _SECTION.match(stripped) or _REST_FIELD.match(stripped):
            break
        paragraph.append(stripped)
    return " ".join(paragraph)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _parse_google(lines: list[str], params: dict[str, str]) -> None:
    inside = False
    section_indent = 0
    entry_indent: int | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        if not inside:
            if _GOOGLE_ARGS.match(stripped):
                inside, section_indent, entry_indent, current = True, _indent(line), None, None
            continue
        if not stripped:
            continue
        indent = _indent(line)
        if indent <= section_indent:
            inside, current = False, None
            if _GOOGLE_ARGS.match(stripped):
                inside, section_indent, entry_indent = True, indent, None
            continue
        if entry_indent is None:
            entry_indent = indent
        entry = _GOOGLE_ENTRY.match(stripped) if indent == entry_indent else None
        if entry:
            current = entry.group(1)
            params[current] = entry.group(3).strip()
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()


def _parse_rest(lines: list[str], params: dict[str, str]) -> None:
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        match = _REST_PARAM.match(stripped)
        if match:
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif current and stripped and line[:1].isspace() and not _REST_FIELD.match(stripped):
            params[current] = f"{params[current]} {stripped}".strip()
        else:
            current = None


def _parse_numpy(lines: list[str], params: dict[str, str]) -> None:
    index = 0
    while index < len(lines) - 1:
        if lines[index].strip() in ("Parameters", "Params") and _UNDERLINE.match(
            lines[index + 1].strip()
        ):
            _numpy_section(lines[index + 2 :], params)
            return
        index += 1


def _numpy_section(lines: list[str], params: dict[str, str]) -> None:
    current: str | None = None
    for position, line in enumerate(lines):
        stripped = line.strip()
        following = lines[position + 1].strip() if position + 1 < len(lines) else ""
        if _UNDERLINE.match(following):
            return  # the next section starts
        if not stripped:
            continue
        if _indent(line) == 0:
            match = _NUMPY_ENTRY.match(stripped)
            current = match.group(1) if match else None
            if current:
                params.setdefault(current, "")
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
