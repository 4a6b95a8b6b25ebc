"""A tiny ``hermes serve`` for the SIGTERM tests: the chat test agent (a slow tool) on a SQLite
file, served by :class:`GracefulServer` on 127.0.0.1 (a port it binds and prints).

    python -m tests.channels.http.serve_app DB GRACE_SECONDS
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from hermes.channels.cli.serve_cmd import bind
from hermes.channels.http.app import create_app
from hermes.channels.http.shutdown import graceful_server
from hermes.config.server import ServerConfig
from tests.channels.http.chat_support import make_agent


async def main(db: Path, grace: float) -> None:
    agent = make_agent(db)
    try:
        app = create_app(agent, ServerConfig(shutdown_grace_seconds=grace))
        sock = bind("127.0.0.1", 0)
        server = graceful_server(app, log_level="warning")
        print(sock.getsockname()[1], flush=True)
        await server.serve(sockets=[sock])
    finally:
        await agent.aclose()
    print("closed", flush=True)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), float(sys.argv[2])))
