"""The server side of ``http_load.py``: ``hermes serve``'s app over a zero-latency model.

Builds the same application ``hermes serve`` runs (``create_app``) over an ``Agent`` with a
scripted model that answers at once (no tool call), a SQLite store in ``--dir``, and serves it
with uvicorn on 127.0.0.1. Prints ``{"port": N}`` on stdout once it accepts connections, then
runs until SIGTERM (uvicorn's graceful stop). Run by ``http_load.py``; not a user command.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from hermes import Agent
from hermes.channels.cli.serve_cmd import bind
from hermes.channels.http.app import create_app
from hermes.channels.http.shutdown import graceful_server
from hermes.config.server import ServerConfig
from hermes.testing import FunctionModel, say


def _answer(request: object) -> object:
    return say("ok")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path, required=True)
    args = parser.parse_args()
    agent = Agent(model=FunctionModel(_answer), tools=[], store=args.dir / "hermes.db")
    app = create_app(agent, ServerConfig())
    sock = bind("127.0.0.1", 0)  # hermes serve's own listening socket (TCP_NODELAY)
    # hermes serve's own server class and settings (keep-alive, graceful stop).
    server = graceful_server(app, log_config=None, access_log=False, log_level="warning")
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    try:
        await server.serve(sockets=[sock])
    finally:
        await agent.aclose()


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
