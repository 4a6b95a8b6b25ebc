"""The Hermes side of ``openai_load.py``: ``hermes serve``'s app (the OpenAI-compatible façade
among its routes) over an agent whose model is an OpenAI-compatible server (``--model-url``,
the fake one of ``fake_model_server.py``), a SQLite store in ``--dir`` and one API key.

Prints ``{"port": N}`` on stdout, then runs until SIGTERM. Run by ``openai_load.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
from pathlib import Path

import uvicorn

from hermes import Agent
from hermes.channels.http.app import create_app
from hermes.config.server import ApiKeyConfig, ServerConfig
from hermes.models.openai_compat import OpenAICompatModel


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--model-url", required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args()
    model = OpenAICompatModel(base_url=args.model_url, model="fake-model", api_key="sk-fake")
    agent = Agent(model=model, store=args.dir / "hermes.db")
    settings = ServerConfig(api_keys=(ApiKeyConfig(key=args.key, user="bench"),))
    app = create_app(agent, settings)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app, log_config=None, access_log=False, log_level="warning", backlog=2048
    )
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        await agent.aclose()


if __name__ == "__main__":
    asyncio.run(main())
