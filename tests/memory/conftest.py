"""Shared pieces of the memory tests: deterministic embedders (also used by the MemoryStore
conformance suite, ``tests/storage/conformance/test_memory_store.py``) and long-term stores."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from hermes import Agent
from hermes.memory.embed import QueryVector
from hermes.memory.facade import Memory
from hermes.memory.keywords import tokenize
from hermes.storage.sqlite.memories import SQLiteMemoryStore
from hermes.testing import FunctionModel

#: Seconds a test waits for a worker thread before it fails (never reached).
WAIT = 5.0


class FakeEmbedder:
    """A deterministic embedder: hashed bag of tokens in 64 dimensions, cosine as similarity."""

    model_name = "fake-bag-of-tokens:1"

    def __init__(self) -> None:
        self.passages = 0

    def _vector(self, text: str) -> Any:
        import numpy

        vector = numpy.zeros(64, dtype=numpy.float32)
        tokens = tokenize(text)
        for token in (*tokens.terms, *tokens.chars):
            vector[int(hashlib.md5(token.encode()).hexdigest(), 16) % 64] += 1.0
        norm = float(numpy.linalg.norm(vector))
        return vector / norm if norm else vector

    def embed_passages(self, texts: Sequence[str]) -> tuple[Any, Any]:
        import numpy

        self.passages += len(texts)
        matrix = numpy.stack([self._vector(t) for t in texts]) if texts else numpy.zeros((0, 64))
        return matrix.astype(numpy.float32), numpy.zeros((len(texts), 1), dtype=numpy.float32)

    def embed_query(self, text: str) -> QueryVector:
        import numpy

        return QueryVector(self._vector(text), numpy.zeros(1, dtype=numpy.float32))

    def similarities(self, query: QueryVector, matrix: Any, calibration: Any) -> Any:
        import numpy

        return numpy.clip(matrix @ query.vector, 0.0, 1.0).astype(numpy.float32)


class GatedEmbedder(FakeEmbedder):
    """Blocks every ``embed_passages`` call until ``release`` is set; ``parties`` calls must
    all be inside before any may go on (so concurrent writers are provably in the same
    place: past their duplicate pre-check, before their insert)."""

    def __init__(self, parties: int = 1) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls = 0
        self._barrier = threading.Barrier(parties, timeout=WAIT)

    def embed_passages(self, texts: Sequence[str]) -> tuple[Any, Any]:
        self.calls += 1
        self.entered.set()
        self._barrier.wait()
        assert self.release.wait(WAIT), "the test never released the embedder"
        return super().embed_passages(texts)


class FailingEmbedder(FakeEmbedder):
    def embed_passages(self, texts: Sequence[str]) -> tuple[Any, Any]:
        raise RuntimeError("engine crashed")

    def embed_query(self, text: str) -> QueryVector:
        raise RuntimeError("engine crashed")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteMemoryStore]:
    memory = SQLiteMemoryStore(tmp_path / "memory.db", embedder=None)
    try:
        yield memory
    finally:
        await memory.close()


@pytest.fixture
async def vector_store(tmp_path: Path) -> AsyncIterator[SQLiteMemoryStore]:
    pytest.importorskip("numpy")
    memory = SQLiteMemoryStore(tmp_path / "memory.db", embedder=FakeEmbedder())
    try:
        yield memory
    finally:
        await memory.close()


Factory = Callable[..., Agent]


@pytest.fixture
async def agents(tmp_path: Path) -> AsyncIterator[Factory]:
    """Agents on one session database (``tmp_path/hermes.db``); each gets ``memory`` (default:
    a keyword-only Memory in ``tmp_path/mem``). A callable script becomes a FunctionModel.
    Every agent and memory is closed at the end."""
    made: list[Agent] = []
    memories: list[Memory] = []

    def factory(script: Any, memory: Memory | None = None, **kw: Any) -> Agent:
        if memory is None:
            memory = Memory.open(tmp_path / "mem", semantic=False)
        memories.append(memory)
        model = script if not callable(script) else FunctionModel(script)
        agent = Agent(model=model, store=tmp_path / "hermes.db", memory=memory, **kw)
        made.append(agent)
        return agent

    yield factory
    for agent in made:
        await agent.aclose()
    for memory in memories:
        await memory.aclose()
