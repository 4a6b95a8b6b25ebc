"""The ``hermes`` command line (typer + rich): the console-script entry point.

    hermes [--config FILE] run TEXT [--session ID] [--user ID] [--json]
    hermes --version | init [--force]
    hermes chat | demo | sessions list|show|export|delete | tools list
    hermes mcp list | call SERVER TOOL --args JSON | serve [--transport stdio|http]
    hermes memory add|search|list|forget|export|upkeep --user U ...
    hermes trace TRACE_ID [--json]
    hermes jobs list [--json] | run NAME [--json]
    hermes plan validate FILE | run FILE|TEMPLATE [--param K=V] | list | resume RUN_ID

stdout carries what a person or a program asked for (the reply, or one JSON object with
``--json``); errors go to stderr as one clear sentence, never a traceback. Exit codes:

- 0: done. A turn that ended in an honest failure (unreachable model, timeout) is done too:
  its reply says so and ``run --json`` adds ``"error": {"type", "message"}``;
- 2: refused before a turn could run (bad input, id or configuration, an unusable store, a
  usage error); with ``--json`` stdout holds ``{"error": {"type", "message"}}``;
- 3: ``hermes mcp call`` ran the call and it failed (server unreachable, tool error);
  ``hermes plan run|resume``: the run failed or was compensated;
- 130: interrupted (Ctrl-C);
- 1: an internal error, reported in one line (``HERMES_DEBUG=1`` shows its traceback).
"""

from __future__ import annotations

import io
import os
import sys

# Importing the command modules registers their commands on ``app``.
from hermes.channels.cli import (
    browse,
    chat,
    init_cmd,
    jobs_cmd,
    mcp_cmd,
    memory_cmd,
    plan_cmd,
    run,
    serve_cmd,
    sessions_cmd,
    trace_cmd,
)
from hermes.channels.cli.app import app
from hermes.channels.cli.output import report_error

__all__ = ["app", "main"]

DEBUG_ENV_VAR = "HERMES_DEBUG"
EXIT_INTERNAL_ERROR = 1

del browse, chat, init_cmd, jobs_cmd, mcp_cmd, memory_cmd, plan_cmd, run, serve_cmd, sessions_cmd
del trace_cmd


def main() -> None:
    """Console-script entry point."""
    _tolerate_unencodable_output()
    try:
        app()
    except Exception as exc:  # the last line of defence: reported, exit code 1
        if os.environ.get(DEBUG_ENV_VAR):
            raise
        report_error(
            f"internal error (a bug in Hermes, please report it): {type(exc).__name__}: {exc}"
            f" — set {DEBUG_ENV_VAR}=1 to see the traceback"
        )
        raise SystemExit(EXIT_INTERNAL_ERROR) from None


def _tolerate_unencodable_output() -> None:
    """Never crash on a reply the terminal's encoding cannot show (e.g. Chinese under latin-1).

    JSON output bypasses this: it is always written as UTF-8 bytes.
    """
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
