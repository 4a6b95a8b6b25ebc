"""A fake OpenAI-compatible model server for ``openai_load.py``: every chat completion is the
same fixed answer, at once (plain, or streamed with ``stream: true``), so what a load measures
is the agents in front of it, not a model.

Serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on 127.0.0.1 with uvicorn; prints
``{"port": N}`` on stdout, counts the requests it answered (``GET /stats``), runs until
SIGTERM. Run by ``openai_load.py``; not a user command.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

ANSWER = "ok"
MODEL = "fake-model"
_served = {"requests": 0}


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}


async def completions(request: Request) -> Response:
    body: dict[str, Any] = await request.json()
    _served["requests"] += 1
    ident = f"chatcmpl-{_served['requests']}"
    created = int(time.time())
    if body.get("stream"):
        return StreamingResponse(_chunks(ident, created, body), media_type="text/event-stream")
    return JSONResponse(
        {
            "id": ident,
            "object": "chat.completion",
            "created": created,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": ANSWER},
                    "finish_reason": "stop",
                }
            ],
            "usage": _usage(),
        }
    )


async def _chunks(ident: str, created: int, body: dict[str, Any]) -> AsyncIterator[bytes]:
    base = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": MODEL}
    for delta, finish in (({"role": "assistant", "content": ANSWER}, None), ({}, "stop")):
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        yield f"data: {json.dumps({**base, 'choices': [choice]})}\n\n".encode()
    if (body.get("stream_options") or {}).get("include_usage"):
        yield f"data: {json.dumps({**base, 'choices': [], 'usage': _usage()})}\n\n".encode()
    yield b"data: [DONE]\n\n"


async def models(request: Request) -> Response:
    return JSONResponse({"object": "list", "data": [{"id": MODEL, "object": "model"}]})


async def stats(request: Request) -> Response:
    return JSONResponse(_served)


app = Starlette(
    routes=[
        Route("/v1/chat/completions", completions, methods=["POST"]),
        Route("/v1/models", models),
        Route("/stats", stats),
    ]
)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_config=None, access_log=False, backlog=2048)
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    asyncio.run(main())
