"""``hermes serve`` under load, and the HTTP path's overhead over the same turn in process.

1. **Load**: ``--sessions`` (200) concurrent clients, each its own session, each sending
   ``--turns`` (20) turns one after another to ``POST /v1/chat`` of a real server process
   (``http_server.py``: ``create_app`` + uvicorn, SQLite, a zero-latency scripted model).
   Reported: errors (must be 0), turns/s over the wall time, per-turn p50/p99; then every
   session is read back (``GET /v1/sessions/{id}``) and checked: 20 user items in the order
   sent, each followed by its reply, nothing lost, nothing reordered, nothing of another session.
2. **Overhead**: one client, the same turn (same model, same store kind) through HTTP and
   in process (``Agent.run``), alternated in small batches so a noisy machine slows both alike;
   reported as medians, the difference and the ratio.

The client runs on the same 2-core machine as the server, so turns/s is a floor, not the
server's capacity. Run: ``.venv/bin/python bench/http_load.py [--sessions 200 --turns 20]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from hermes import Agent
from hermes.testing import FunctionModel, say

HERE = Path(__file__).resolve().parent


def _start_server(directory: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "http_server.py"), "--dir", str(directory)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    port = json.loads(line)["port"]
    return proc, f"http://127.0.0.1:{port}"


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def _wait_ready(client: httpx.AsyncClient) -> None:
    for _ in range(200):
        try:
            if (await client.get("/healthz")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.05)
    raise SystemExit("the server did not become ready")


class Connection:
    """One keep-alive HTTP/1.1 connection posting JSON: the load's client.

    Hand-written rather than httpx because the client shares the machine with the server:
    httpx spent 6.7 ms of CPU per request here (26.7 s for 4,000), three times the server's
    whole turn, so with it the load measured the client. This one parses only what the
    server sends (a status line, headers, a ``content-length`` body) at ~0.1 ms.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, body: dict[str, object]) -> tuple[int, dict[str, object]]:
        if self._streams is None:
            self._streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self._streams
        payload = json.dumps(body).encode()
        writer.write(
            f"POST {path} HTTP/1.1\r\nhost: {self.host}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        status = int((await reader.readline()).split()[1])
        headers: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        data = json.loads(await reader.readexactly(int(headers["content-length"])))
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return status, data

    async def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


async def _session(
    base: str, index: int, turns: int, latencies: list[float], errors: list[str]
) -> None:
    session_id = f"load-{index:04d}"
    host, port = base.removeprefix("http://").split(":")
    connection = Connection(host, int(port))
    try:
        for turn in range(turns):
            body = {"session_id": session_id, "user_id": "bench", "message": f"s{index} t{turn}"}
            started = time.perf_counter()
            try:
                status, data = await connection.post("/v1/chat", body)
            except (OSError, asyncio.IncompleteReadError, ValueError, KeyError) as exc:
                errors.append(f"{session_id} t{turn}: {type(exc).__name__}: {exc}")
                await connection.close()
                continue
            latencies.append(time.perf_counter() - started)
            if status != 200 or "error" in data:
                errors.append(f"{session_id} t{turn}: {status} {str(data)[:200]}")
    finally:
        await connection.close()


async def _check_session(client: httpx.AsyncClient, index: int, turns: int) -> list[str]:
    """Problems with one session's stored items: lost, reordered, foreign or unanswered."""
    session_id = f"load-{index:04d}"
    items: list[dict[str, object]] = []
    cursor: str | None = None
    while True:
        params = {"limit": "1000", **({"cursor": cursor} if cursor else {})}
        page = (await client.get(f"/v1/sessions/{session_id}", params=params)).json()
        items.extend(page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    texts = [i for i in items if i["kind"] == "text"]
    users = [i["content"] for i in texts if i["role"] == "user"]
    expected = [f"s{index} t{turn}" for turn in range(turns)]
    problems = []
    if users != expected:
        problems.append(f"{session_id}: user items {users[:3]}… != {expected[:3]}…")
    roles = [i["role"] for i in texts]
    if roles != ["user", "assistant"] * turns:
        problems.append(f"{session_id}: roles not alternating user/assistant")
    seqs = [i["seq"] for i in items]
    if seqs != sorted(seqs) or len(set(seqs)) != len(seqs):
        problems.append(f"{session_id}: seq not strictly rising")
    return problems


def _cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user + system) of this process, or of process ``pid`` (from /proc)."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def load(base: str, sessions: int, turns: int, server_pid: int) -> dict[str, object]:
    # httpx only to wait for the server and to read the sessions back (outside the timing).
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        await _wait_ready(client)
        latencies: list[float] = []
        errors: list[str] = []
        started = time.perf_counter()
        cpu_client, cpu_server = _cpu_seconds(), _cpu_seconds(server_pid)
        await asyncio.gather(
            *(_session(base, i, turns, latencies, errors) for i in range(sessions))
        )
        wall = time.perf_counter() - started
        cpu_client, cpu_server = _cpu_seconds() - cpu_client, _cpu_seconds(server_pid) - cpu_server
        problems: list[str] = []
        for i in range(sessions):
            problems.extend(await _check_session(client, i, turns))
    ordered = sorted(latencies)
    return {
        "sessions": sessions,
        "turns_per_session": turns,
        "turns": len(latencies),
        "errors": len(errors),
        "first_errors": errors[:5],
        "session_problems": len(problems),
        "first_problems": problems[:5],
        "wall_s": round(wall, 2),
        "turns_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(1000 * ordered[len(ordered) // 2], 2) if ordered else None,
        "p99_ms": round(1000 * ordered[int(len(ordered) * 0.99)], 2) if ordered else None,
        "client_cpu_s": round(cpu_client, 2),
        "server_cpu_s": round(cpu_server, 2),
        "server_cpu_ms_per_turn": round(1000 * cpu_server / max(1, len(latencies)), 2),
    }


async def in_process_load(directory: Path, sessions: int, turns: int) -> dict[str, object]:
    """The same load on one ``Agent`` in process (no HTTP): where the tail comes from."""
    agent = Agent(model=FunctionModel(lambda r: say("ok")), tools=[], store=directory / "ip.db")
    latencies: list[float] = []

    async def one(index: int) -> None:
        for turn in range(turns):
            started = time.perf_counter()
            await agent.run(f"s{index} t{turn}", session_id=f"inproc-{index:04d}", user_id="bench")
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(sessions)))
    wall = time.perf_counter() - started
    await agent.aclose()
    ordered = sorted(latencies)
    return {
        "turns": len(latencies),
        "wall_s": round(wall, 2),
        "turns_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(1000 * ordered[len(ordered) // 2], 2),
        "p99_ms": round(1000 * ordered[int(len(ordered) * 0.99)], 2),
    }


async def overhead(base: str, directory: Path, rounds: int, batch: int) -> dict[str, object]:
    """Median per-turn time through HTTP (one client) and in process, alternated."""
    agent = Agent(model=FunctionModel(lambda r: say("ok")), tools=[], store=directory / "in.db")
    http_times: list[float] = []
    local_times: list[float] = []
    host, port = base.removeprefix("http://").split(":")
    connection = Connection(host, int(port))
    for r in range(rounds):
        for i in range(batch):
            body = {"session_id": f"over-{r:03d}-{i:02d}", "message": "hello"}
            t = time.perf_counter()
            status, data = await connection.post("/v1/chat", body)
            http_times.append(time.perf_counter() - t)
            assert status == 200, data
        for i in range(batch):
            t = time.perf_counter()
            await agent.run("hello", session_id=f"over-{r:03d}-{i:02d}")
            local_times.append(time.perf_counter() - t)
    await connection.close()
    await agent.aclose()
    h = statistics.median(http_times) * 1000
    local = statistics.median(local_times) * 1000
    return {
        "http_median_ms": round(h, 3),
        "in_process_median_ms": round(local, 3),
        "overhead_ms": round(h - local, 3),
        "ratio": round(h / local, 2),
        "turns_each": len(http_times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=30, help="overhead: alternated batches")
    parser.add_argument("--batch", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-http-load-") as tmp:
        directory = Path(tmp)
        proc, base = _start_server(directory)
        try:
            result = {
                "machine": f"{os.cpu_count()} cores, Python {sys.version.split()[0]}",
                "load": asyncio.run(load(base, args.sessions, args.turns, proc.pid)),
                "in_process_load": asyncio.run(
                    in_process_load(directory, args.sessions, args.turns)
                ),
                "overhead": asyncio.run(overhead(base, directory, args.rounds, args.batch)),
            }
        finally:
            _stop(proc)
    print(json.dumps(result, indent=2))
    failed = result["load"]["errors"] or result["load"]["session_problems"]  # type: ignore[index]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
