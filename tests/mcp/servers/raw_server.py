"""A hand-written stdio MCP server that misbehaves on purpose (plain Python, no SDK import).

``python raw_server.py MODE [PIDS_FILE]``; every mode offers the tool ``ping`` (answers
``pong``) unless it breaks before:

* ``crash_after_list`` — answers ``initialize`` and ``tools/list``, then exits;
* ``bad_schema`` — lists ``ping`` with two tools the SDK's listing validation rejects (one
  whose ``required`` is a number, one without a name) and one whose schema is not valid JSON
  Schema (Hermes' own check);
* ``garbage_init`` — answers ``initialize`` with lines that are not JSON-RPC;
* ``garbage_call`` — answers ``tools/call`` with a line that is not JSON-RPC;
* ``hang`` — ignores SIGTERM and the end of its input, starts a child that does the same,
  writes ``"<its pid> <child pid>"`` to ``PIDS_FILE`` and never answers;
* ``paged_resources`` — offers resources too: ``PAGED_RESOURCES`` (``test://item/0`` …)
  listed ``PAGE_SIZE`` at a time, each page but the last with a ``nextCursor``, no templates.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

PING = {"name": "ping", "inputSchema": {"type": "object", "properties": {}}}
BAD_TOOLS = [
    {"name": "bad_required", "inputSchema": {"type": "object", "required": 5}},
    {"description": "a tool without a name", "inputSchema": {"type": "object"}},
    {"name": "bad_type", "inputSchema": {"type": "object", "properties": {"x": {"type": "nope"}}}},
]
PAGED_RESOURCES = [{"uri": f"test://item/{i}", "name": f"item-{i}"} for i in range(12)]
PAGE_SIZE = 5
_STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request_id: Any, result: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def hang(pids_file: str) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", _STUBBORN])
    with open(pids_file, "w", encoding="ascii") as handle:
        handle.write(f"{os.getpid()} {child.pid}\n")
    while True:
        time.sleep(60)


def resource_page(request_id: Any, params: dict[str, Any] | None) -> None:
    """Answer resources/list with the page ``params.cursor`` (``"from:<index>"``) names."""
    cursor = (params or {}).get("cursor")
    start = 0 if cursor is None else int(str(cursor).removeprefix("from:"))
    end = start + PAGE_SIZE
    result: dict[str, Any] = {"resources": PAGED_RESOURCES[start:end]}
    if end < len(PAGED_RESOURCES):
        result["nextCursor"] = f"from:{end}"
    answer(request_id, result)


def serve(mode: str) -> None:
    tools = [PING, *BAD_TOOLS] if mode == "bad_schema" else [PING]
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            if mode == "garbage_init":
                sys.stdout.write("this is not json\n{broken\n")
                sys.stdout.flush()
                continue
            version = message["params"]["protocolVersion"]
            info = {"name": "raw", "version": "0"}
            capabilities: dict[str, Any] = {"tools": {}}
            if mode == "paged_resources":
                capabilities["resources"] = {}
            result = {"protocolVersion": version, "capabilities": capabilities, "serverInfo": info}
            answer(request_id, result)
        elif method == "tools/list":
            answer(request_id, {"tools": tools})
            if mode == "crash_after_list":
                sys.exit(0)
        elif method == "tools/call":
            if mode == "garbage_call":
                sys.stdout.write("<<<garbage>>>\n")
                sys.stdout.flush()
                continue
            answer(request_id, {"content": [{"type": "text", "text": "pong"}]})
        elif method == "resources/list" and mode == "paged_resources":
            resource_page(request_id, message.get("params"))
        elif method == "resources/templates/list" and mode == "paged_resources":
            answer(request_id, {"resourceTemplates": []})
        elif request_id is not None:
            answer(request_id, {})


def main() -> None:
    mode = sys.argv[1]
    if mode == "hang":
        hang(sys.argv[2])
    serve(mode)


if __name__ == "__main__":
    main()
