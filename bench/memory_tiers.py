"""Costs of the three memory tiers (seed 000 §2.4, §3.5): L1 get/put, L2 writes and queries at
100,000 recorded calls, L3 put/get of 1 KB and 100 KB blobs, and the facade end to end.

Method. Everything runs in one process on real files in a temp directory (SQLite WAL,
``synchronous=NORMAL``; blobs on the same filesystem). Times are wall-clock
``perf_counter_ns``.

- **L1**: a ``MemoryCache`` of 10,000 entries, full. Sub-microsecond operations cannot be
  timed one by one (the timer costs ~50 ns), so each sample is the mean of a batch of 1,000
  operations; p50/p95 are over 300 batches. Keys are drawn at random (hits) or absent (misses);
  ``put`` overwrites live keys and inserts new ones (which evicts the least recently used).
- **L2 writes**: 100,000 ``SQLiteToolCallIndex.record`` calls, each its own commit, as the tiers do
  per tool call; then the same 100,000 through ``record_many`` in batches of 1,000. The data:
  1,000 sessions, 200 users, 50 tools, ~5,000 distinct inputs, timestamps spread over 30 days,
  20% reusable, ~150 bytes of metadata each.
- **L2 queries** on those 100,000 rows, interleaved so noise hits all alike, each timed alone:
  a session's last 50 calls; a tool's calls in one day (≤100); a session's calls of one tool;
  all calls in one hour (≤100); the reuse lookup (hit and miss).
- **L3**: JSON blobs (compressible, like tool outputs) of ~1 KB and ~100 KB; ``put`` of new
  content (compress + temp file + rename), ``put`` of existing content (hash + stat), ``get``
  (read + decompress + verify sha256). zlib level 1, durability "os" (no fsync); a few
  "fsync" puts for context.
- **Facade**: ``ToolMemory.record_call`` of a 1 KB ok result with a reuse TTL (archive + L2
  row + L1), ``find_reusable`` answered by L1, and by L2 + L3 (L1 cleared before each).

Run: ``.venv/bin/python bench/memory_tiers.py [--calls 100000] [--queries 2000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hermes.memory.cache import TOOL_RESULTS, MemoryCache
from hermes.memory.hashing import canonical_bytes, content_hash
from hermes.memory.index import NewToolCall, ToolCallIndex
from hermes.memory.tiers import ToolMemory
from hermes.storage.files.archive import LocalArchive
from hermes.storage.sqlite.tool_calls import SQLiteToolCallIndex
from hermes.tools.base import ToolResult
from hermes.tools.policies.cache import ResultCache

DAY = 86_400.0
T0 = 1_800_000_000.0


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def row(name: str, samples_us: list[float], unit: str = "µs") -> None:
    p50, p95 = statistics.median(samples_us), pct(samples_us, 0.95)
    scale, fmt = (1000.0, ".1f") if unit == "ns" else (1.0, ".1f")
    print(f"  {name:<44}{p50 * scale:>10{fmt}}{p95 * scale:>10{fmt}} {unit}")


def machine() -> None:
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}")
    print(f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}")


# -- L1 ----------------------------------------------------------------------------------------


def bench_l1(batches: int = 300, batch: int = 1000) -> None:
    cache = MemoryCache(10_000)
    baseline = ResultCache(10_000)  # the executor's in-process result cache today
    plain: dict[tuple[str, str], Any] = {}
    keys = [f"key-{i}" for i in range(10_000)]
    for key in keys:
        cache.put(TOOL_RESULTS, key, ("value", key))
        baseline.put(("tool", 0, "user", key), key, None, 600)
        plain[(TOOL_RESULTS, key)] = ("value", key)
    rng = random.Random(1)
    results: dict[str, list[float]] = {
        "get (hit)": [],
        "get (miss)": [],
        "put (half new keys: evicts)": [],
        "baseline: dict.get (no TTL, no lock)": [],
        "baseline: executor ResultCache.get (hit)": [],
    }
    fresh = 0
    for _ in range(batches):
        picks = [rng.choice(keys) for _ in range(batch)]
        start = time.perf_counter_ns()
        for key in picks:
            cache.get(TOOL_RESULTS, key)
        results["get (hit)"].append((time.perf_counter_ns() - start) / batch / 1000)
        start = time.perf_counter_ns()
        for key in picks:
            plain.get((TOOL_RESULTS, key))
        results["baseline: dict.get (no TTL, no lock)"].append(
            (time.perf_counter_ns() - start) / batch / 1000
        )
        start = time.perf_counter_ns()
        for key in picks:
            baseline.get(("tool", 0, "user", key))
        results["baseline: executor ResultCache.get (hit)"].append(
            (time.perf_counter_ns() - start) / batch / 1000
        )
        start = time.perf_counter_ns()
        for key in picks:
            cache.get(TOOL_RESULTS, key + "-absent")
        results["get (miss)"].append((time.perf_counter_ns() - start) / batch / 1000)
        # half overwrite a live key, half insert a new one (evicting the oldest)
        new_keys = [f"new-{fresh + i}" for i in range(batch // 2)]
        fresh += len(new_keys)
        mixed = [k for pair in zip(picks[: batch // 2], new_keys, strict=True) for k in pair]
        start = time.perf_counter_ns()
        for key in mixed:
            cache.put(TOOL_RESULTS, key, ("value", key))
        results["put (half new keys: evicts)"].append(
            (time.perf_counter_ns() - start) / len(mixed) / 1000
        )
        keys = keys[batch // 2 :] + new_keys  # keep drawing hits from keys still held
        for key in new_keys:
            plain[(TOOL_RESULTS, key)] = ("value", key)
            baseline.put(("tool", 0, "user", key), key, None, 600)
    print("\nL1 MemoryCache (10,000 entries, full; mean of 1,000-op batches)   p50       p95")
    for name, samples in results.items():
        row(name, samples, "ns")


# -- L2 ----------------------------------------------------------------------------------------


def make_calls(count: int, seed: int = 7) -> list[NewToolCall]:
    rng = random.Random(seed)
    inputs = [content_hash({"q": i}) for i in range(5000)]
    outputs = [content_hash({"r": i}) for i in range(5000)]
    calls = []
    for i in range(count):
        ok = rng.random() < 0.9
        calls.append(
            NewToolCall(
                session_id=f"session-{rng.randrange(1000):04d}",
                user_id=f"user-{rng.randrange(200):03d}",
                tool_name=f"tool_{rng.randrange(50):02d}",
                input_hash=rng.choice(inputs),
                output_hash=rng.choice(outputs) if ok else None,
                status="ok" if ok else "error",
                timestamp=T0 + i * (30 * DAY / count),
                metadata={
                    "ok": ok,
                    "error_type": None if ok else "timeout",
                    "duration_ms": round(rng.random() * 200, 3),
                    "attempts": 1,
                    "cached": False,
                    "archived": ok,
                    "output_bytes": rng.randrange(100, 5000),
                    "call_id": f"call-{i}",
                },
                reusable=ok and rng.random() < 0.2,
            )
        )
    return calls


async def bench_l2(directory: Path, count: int, queries: int) -> None:
    calls = make_calls(count)
    index = SQLiteToolCallIndex(directory / "one-by-one.db")
    per_write: list[float] = []
    start = time.perf_counter()
    for new in calls:
        t = time.perf_counter_ns()
        await index.record(new)
        per_write.append((time.perf_counter_ns() - t) / 1000)
    elapsed = time.perf_counter() - start
    batched = SQLiteToolCallIndex(directory / "batched.db")
    batch_start = time.perf_counter()
    for i in range(0, count, 1000):
        await batched.record_many(calls[i : i + 1000])
    batch_elapsed = time.perf_counter() - batch_start
    await batched.close()
    print(f"\nL2 SQLiteToolCallIndex writes ({count:,} calls, 7 indexes)            p50       p95")
    row("record (one commit each)", per_write)
    print(f"  throughput, one commit each:       {count / elapsed:>10,.0f} writes/s")
    print(f"  throughput, record_many ×1,000:    {count / batch_elapsed:>10,.0f} writes/s")
    await bench_queries(index, calls, queries)
    await index.close()
    size = (directory / "one-by-one.db").stat().st_size
    print(f"  file: {size / 1e6:.1f} MB for {count:,} calls")


async def bench_queries(index: ToolCallIndex, calls: list[NewToolCall], queries: int) -> None:
    rng = random.Random(3)
    span = calls[-1].timestamp - calls[0].timestamp
    reusable = [c for c in calls if c.reusable]

    def pick_time() -> float:
        return T0 + rng.random() * span

    def reuse_hit() -> Awaitable[Any]:
        c = rng.choice(reusable)
        assert c.input_hash is not None
        return index.latest_reusable(
            c.tool_name, c.input_hash, user_id=c.user_id, max_age=30 * DAY, now=c.timestamp + 1
        )

    kinds: dict[str, Callable[[], Awaitable[Any]]] = {
        "session's last 50 calls": lambda: index.by_session(
            f"session-{rng.randrange(1000):04d}", limit=50
        ),
        "tool's calls in one day (≤100)": lambda: index.by_tool(
            f"tool_{rng.randrange(50):02d}", since=(t := pick_time()), until=t + DAY
        ),
        "session + tool (≤20)": lambda: index.query(
            session_id=f"session-{rng.randrange(1000):04d}",
            tool_name=f"tool_{rng.randrange(50):02d}",
            limit=20,
        ),
        "all calls in one hour (≤100)": lambda: index.in_range(
            (t := pick_time()), t + 3600, limit=100
        ),
        "reuse lookup (hit)": reuse_hit,
        "reuse lookup (miss)": lambda: index.latest_reusable(
            "tool_00",
            content_hash({"absent": rng.random()}),
            user_id="user-000",
            max_age=600,
            now=pick_time(),
        ),
    }
    samples: dict[str, list[float]] = {name: [] for name in kinds}
    for _ in range(queries):
        for name, make in kinds.items():
            t = time.perf_counter_ns()
            await make()
            samples[name].append((time.perf_counter_ns() - t) / 1000)
    print(f"L2 queries at {len(calls):,} calls ({queries:,} each, interleaved)      p50       p95")
    for name, values in samples.items():
        row(name, values)


# -- L3 ----------------------------------------------------------------------------------------


def json_blob(target: int, salt: int) -> bytes:
    """Canonical JSON of about ``target`` bytes: rows like a tool's query result."""
    rng = random.Random(salt)
    rows: list[dict[str, Any]] = []
    size = 10
    while size < target:
        item = {
            "id": len(rows) + salt * 1_000_000,
            "name": f"customer-{rng.randrange(10**6)}",
            "city": rng.choice(["北京", "上海", "Shenzhen", "Hangzhou"]),
            "amount": round(rng.random() * 10_000, 2),
            "ok": rng.random() < 0.9,
        }
        rows.append(item)
        size += len(canonical_bytes(item)) + 1
    return canonical_bytes({"rows": rows})


async def bench_l3(directory: Path) -> None:
    print("\nL3 LocalArchive (zlib level 1, no fsync)                          p50       p95")
    for label, size, count in (("1 KB", 1024, 1000), ("100 KB", 100 * 1024, 200)):
        archive = LocalArchive(directory / f"archive-{label.replace(' ', '')}")
        blobs = [json_blob(size, salt) for salt in range(count)]
        puts, again, gets = [], [], []
        for data in blobs:
            t = time.perf_counter_ns()
            digest = await archive.put(data)
            puts.append((time.perf_counter_ns() - t) / 1000)
            t = time.perf_counter_ns()
            await archive.put(data)
            again.append((time.perf_counter_ns() - t) / 1000)
            t = time.perf_counter_ns()
            await archive.get(digest)
            gets.append((time.perf_counter_ns() - t) / 1000)
        stored = sum(p.stat().st_size for p in archive.root.rglob("*") if p.is_file())
        raw = sum(len(b) for b in blobs)
        row(f"{label}: put (new)", puts)
        row(f"{label}: put (already stored)", again)
        row(f"{label}: get (verified)", gets)
        print(f"  {label}: compressed to {stored / raw:.0%} of {raw / len(blobs) / 1024:.1f} KB")
    durable = LocalArchive(directory / "archive-fsync", durability="fsync")
    fsynced = []
    for salt in range(30):
        data = json_blob(1024, 10_000 + salt)
        t = time.perf_counter_ns()
        await durable.put(data)
        fsynced.append((time.perf_counter_ns() - t) / 1000)
    row("1 KB: put (new), durability='fsync'", fsynced)


# -- the facade ----------------------------------------------------------------------------------


async def bench_facade(directory: Path, count: int = 1000) -> None:
    memory = ToolMemory.open(directory / "facade")
    output = json.loads(json_blob(1024, 42))
    records, l1_hits, l3_hits = [], [], []
    keys = [
        memory.key("get_report", {"n": i}, user_id="user-1", session_id="session-0001")
        for i in range(count)
    ]
    for i, key in enumerate(keys):
        result = ToolResult(ok=True, output={**output, "n": i}, duration_ms=5.0)
        t = time.perf_counter_ns()
        await memory.record_call(key, result, reuse_ttl=600, call_id=f"c{i}")
        records.append((time.perf_counter_ns() - t) / 1000)
    for key in keys:
        t = time.perf_counter_ns()
        hit = await memory.find_reusable(key, ttl=600)
        l1_hits.append((time.perf_counter_ns() - t) / 1000)
        assert hit is not None
        assert hit.tier == "l1"
    for key in keys:
        memory.cache.clear(TOOL_RESULTS)
        t = time.perf_counter_ns()
        hit = await memory.find_reusable(key, ttl=600)
        l3_hits.append((time.perf_counter_ns() - t) / 1000)
        assert hit is not None
        assert hit.tier == "l3"
    await memory.close()
    print(f"\nToolMemory facade (1 KB outputs, {count:,} calls)                  p50       p95")
    row("record_call (L3 put + L2 row + L1)", records)
    row("find_reusable answered by L1", l1_hits)
    row("find_reusable answered by L2 + L3", l3_hits)


async def main(calls: int, queries: int) -> None:
    machine()
    with tempfile.TemporaryDirectory(prefix="hermes-bench-memory-") as tmp:
        directory = Path(tmp)
        print(f"files under {directory}")
        bench_l1()
        await bench_l2(directory, calls, queries)
        await bench_l3(directory)
        await bench_facade(directory)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=2000)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.queries))
