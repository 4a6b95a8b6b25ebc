"""Where the command line writes, and how.

stdout belongs to what the person or the program asked for: a reply as plain text, or exactly
one JSON object per line with ``--json`` (UTF-8, no colour, no markup, whatever the terminal).
Everything else (status, spinners, errors for people) goes to stderr through ``err``.

Text that came from outside (replies, message contents, ids, file names) is never parsed as
rich markup or emoji codes: a reply reading ``[/b] :smile:`` is printed as written.
"""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from hermes.errors import HermesError

#: Rich output for people (tables, the REPL); ``emoji=False`` so ``:x:`` in a reply stays text.
out = Console(highlight=False, soft_wrap=True, emoji=False)
#: Status lines, spinners and error sentences.
err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)

#: Exit code of a command that was refused (bad input, bad config, unknown session).
EXIT_USAGE = 2


def write_json(data: Any) -> None:
    """Print ``data`` as one compact JSON line on stdout, encoded as UTF-8.

    Bypasses rich (which colours and re-indents JSON) and the locale's encoding (JSON is UTF-8
    by definition); a lone surrogate, which only invalid input can produce, is escaped.
    """
    line = json.dumps(data, ensure_ascii=False) + "\n"
    stream = sys.stdout
    buffer = getattr(stream, "buffer", None)
    if buffer is None:  # a text-only stream (an embedding application's capture)
        stream.write(line)
        stream.flush()
        return
    stream.flush()
    buffer.write(line.encode("utf-8", errors="backslashreplace"))
    buffer.flush()


def write_text(text: str) -> None:
    """Print ``text`` and a newline on stdout exactly as written (no markup, no wrapping)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def note(text: str, style: str = "dim") -> None:
    """A status line for people on stderr; ``text`` is shown literally."""
    err.print(Text(text, style=style))


def report_warning(message: str) -> None:
    """One ``warning: ...`` line on stderr; ``message`` is shown literally."""
    err.print(Text.assemble(("warning: ", "bold yellow"), message))


def report_error(message: str) -> None:
    """One ``error: ...`` sentence on stderr; ``message`` is shown literally."""
    err.print(Text.assemble(("error: ", "bold red"), message))


def fail(exc: HermesError, as_json: bool = False) -> NoReturn:
    """Report a HermesError and exit with code 2.

    With ``as_json`` stdout gets ``{"error": {"type", "message"}}`` (programs parse stdout);
    otherwise stderr gets one sentence. Never a traceback.
    """
    if as_json:
        write_json({"error": exc.to_dict()})
    else:
        report_error(exc.message)
    raise typer.Exit(code=EXIT_USAGE)
