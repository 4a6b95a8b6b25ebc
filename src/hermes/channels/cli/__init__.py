"""The terminal channel: the ``hermes`` command (Typer). ``main`` is the console script.

One module per command group (``run``, ``chat``, ``serve_cmd``, ``jobs_cmd`` …), registered on
``app`` (``hermes.channels.cli.app``) when ``hermes.channels.cli.main`` imports them.
"""

from hermes.channels.cli.main import DEBUG_ENV_VAR, app, main

__all__ = ["DEBUG_ENV_VAR", "app", "main"]
