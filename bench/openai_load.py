"""The OpenAI-compatible façade under load, beside Nous Research's ``hermes-agent`` API server.

``--sessions`` (200) concurrent clients, each its own session (``X-Hermes-Session-Id``, which
both servers take), each sending ``--turns`` (20) chat completions one after another over real
HTTP, resending the whole conversation each time as a chat front end does. Both agents point
at the same fake OpenAI-compatible model server (``fake_model_server.py``: a fixed answer at
once), so the figures are the agents' own cost. Reported side by side in one run: errors,
per-turn p50/p99, wall time, and Hermes's figures as ratios of Nous's.

Nous's server runs from a separate virtualenv (``--nous-venv``, default ``/tmp/nousvenv``:
``python -m venv /tmp/nousvenv && /tmp/nousvenv/bin/pip install "hermes-agent[messaging]"``),
never from the project's; it is started as ``hermes gateway run`` with ``API_SERVER_ENABLED``
and a ``HERMES_HOME`` whose ``config.yaml`` points its model at the fake server. Without that
venv only Hermes is measured. ``--nous-sessions``/``--nous-turns`` shrink Nous's load when the
full one would take too long (then the table says so).

Run: ``.venv/bin/python bench/openai_load.py [--sessions 200 --turns 20]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
KEY = "sk-bench-openai-load-0001"
NOUS_PORT = 18642


@dataclass
class Load:
    name: str
    sessions: int
    turns: int
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wall: float = 0.0

    def p(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0


def _spawn(cmd: list[str], **kw: object) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, **kw)  # type: ignore[call-overload]
    assert proc.stdout is not None
    return proc, int(json.loads(proc.stdout.readline())["port"])


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def _ready(url: str, path: str) -> None:
    async with httpx.AsyncClient(timeout=5) as client:
        for _ in range(1200):
            try:
                if (await client.get(url + path)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise SystemExit(f"{url} did not become ready")


async def _session(client: httpx.AsyncClient, load: Load, prefix: str, index: int) -> None:
    headers = {"Authorization": f"Bearer {KEY}", "X-Hermes-Session-Id": f"{prefix}-{index:04d}"}
    history: list[dict[str, str]] = []
    for turn in range(load.turns):
        history.append({"role": "user", "content": f"session {index} turn {turn}"})
        body = {"model": "hermes", "messages": history}
        started = time.perf_counter()
        try:
            response = await client.post("/v1/chat/completions", json=body, headers=headers)
        except httpx.HTTPError as exc:
            load.errors.append(f"{type(exc).__name__}: {exc}")
            return
        load.latencies.append(time.perf_counter() - started)
        if response.status_code != 200:
            load.errors.append(f"{response.status_code}: {response.text[:200]}")
            return
        answer = response.json()["choices"][0]["message"]["content"]
        history.append({"role": "assistant", "content": answer})


async def _run(load: Load, url: str, prefix: str) -> None:
    # Pooled connections expire before the servers' keep-alive timeout (uvicorn: 5 s), so a
    # request never goes out on a connection the server is closing (a ReadError, not a turn).
    limits = httpx.Limits(
        max_connections=load.sessions, max_keepalive_connections=load.sessions, keepalive_expiry=2
    )
    async with httpx.AsyncClient(base_url=url, timeout=3600, limits=limits) as client:
        # One warm-up turn each side (imports, first connections), not measured.
        warm = Load(load.name, 1, 1)
        await _session(client, warm, f"{prefix}-warm", 0)
        if warm.errors:
            raise SystemExit(f"{load.name}: warm-up failed: {warm.errors[0]}")
        started = time.perf_counter()
        await asyncio.gather(*(_session(client, load, prefix, i) for i in range(load.sessions)))
        load.wall = time.perf_counter() - started


def _nous_env(venv: Path, home: Path, model_url: str) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(
        "model:\n  provider: custom\n"
        f"  base_url: {model_url}\n  default: fake-model\n  api_key: sk-fake\n"
        # Its API server refuses more than 10 concurrent runs by default (429); 0: no limit.
        "gateway:\n  api_server:\n    max_concurrent_runs: 0\n"
    )
    return {
        **os.environ,
        "HERMES_HOME": str(home),
        "API_SERVER_ENABLED": "true",
        "API_SERVER_KEY": KEY,
        "API_SERVER_HOST": "127.0.0.1",
        "API_SERVER_PORT": str(NOUS_PORT),
        "OPENAI_API_KEY": "sk-fake",
        "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}",
    }


async def _hermes(directory: Path, model_url: str, load: Load) -> None:
    cmd = [sys.executable, str(HERE / "openai_server.py"), "--dir", str(directory)]
    proc, port = _spawn([*cmd, "--model-url", model_url, "--key", KEY])
    try:
        url = f"http://127.0.0.1:{port}"
        await _ready(url, "/healthz")
        await _run(load, url, "hermes")
    finally:
        _stop(proc)


async def _nous(venv: Path, directory: Path, model_url: str, load: Load) -> None:
    env = _nous_env(venv, directory / "nous-home", model_url)
    log = (directory / "nous-gateway.log").open("w")
    proc = subprocess.Popen(  # noqa: ASYNC220 - started once, before the load
        [str(venv / "bin" / "hermes"), "gateway", "run"], env=env, stdout=log, stderr=log
    )
    try:
        url = f"http://127.0.0.1:{NOUS_PORT}"
        await _ready(url, "/health")
        await _run(load, url, "nous")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _report(loads: list[Load], served: int) -> None:
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    print(f"fake model server answered {served} requests")
    print("| server | sessions × turns | errors | p50 ms | p99 ms | wall s | turns/s |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for load in loads:
        rate = len(load.latencies) / load.wall if load.wall else 0.0
        print(
            f"| {load.name} | {load.sessions} × {load.turns} | {len(load.errors)} | "
            f"{load.p(0.5):.1f} | {load.p(0.99):.1f} | {load.wall:.1f} | {rate:.1f} |"
        )
    if len(loads) == 2 and all(x.latencies for x in loads):
        hermes, nous = loads
        same = (hermes.sessions, hermes.turns) == (nous.sessions, nous.turns)
        print(
            f"Hermes / Nous: p50 {hermes.p(0.5) / nous.p(0.5):.3f}, "
            f"p99 {hermes.p(0.99) / nous.p(0.99):.3f}"
            + (f", wall {hermes.wall / nous.wall:.3f}" if same else " (wall: loads differ)")
        )
    for load in loads:
        for error in load.errors[:3]:
            print(f"{load.name} error: {error}")
        if load.latencies:
            print(f"{load.name} mean ms: {statistics.fmean(load.latencies) * 1000:.1f}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--nous-sessions", type=int, default=None)
    parser.add_argument("--nous-turns", type=int, default=None)
    parser.add_argument("--nous-venv", type=Path, default=Path("/tmp/nousvenv"))
    parser.add_argument("--skip-nous", action="store_true")
    args = parser.parse_args()
    fake, fake_port = _spawn([sys.executable, str(HERE / "fake_model_server.py")])
    model_url = f"http://127.0.0.1:{fake_port}/v1"
    loads = [Load("Hermes façade", args.sessions, args.turns)]
    try:
        await _ready(f"http://127.0.0.1:{fake_port}", "/stats")
        with tempfile.TemporaryDirectory(prefix="openai-load-") as tmp:
            await _hermes(Path(tmp), model_url, loads[0])
            if not args.skip_nous and (args.nous_venv / "bin" / "hermes").exists():
                nous = Load(
                    "Nous hermes-agent API server",
                    args.nous_sessions or args.sessions,
                    args.nous_turns or args.turns,
                )
                loads.append(nous)
                await _nous(args.nous_venv, Path(tmp), model_url, nous)
        async with httpx.AsyncClient() as client:
            served = (await client.get(f"http://127.0.0.1:{fake_port}/stats")).json()["requests"]
    finally:
        _stop(fake)
    _report(loads, served)


if __name__ == "__main__":
    asyncio.run(main())
