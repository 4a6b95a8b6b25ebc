"""Rolling summaries: the extractive and model summarizers and folding the backlog."""

from __future__ import annotations

from hermes.errors import ModelError
from hermes.models.base import ModelRequest, ModelResponse
from hermes.session.items import Item
from hermes.session.store import Store
from hermes.session.summary import ExtractiveSummarizer, ModelSummarizer, fold_backlog
from tests.session.helpers import a_round, call, result, rounds, say, user

SID = "session-0001"


class FakeModel:
    """A model that answers with a fixed text or raises, and records what it was asked."""

    def __init__(self, answer: str | None = "summary", error: ModelError | None = None) -> None:
        self.answer = answer
        self.error = error
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return "fake"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        return ModelResponse(content=self.answer)


class RecordingSummarizer:
    def __init__(self) -> None:
        self.calls: list[tuple[str | None, list[Item]]] = []

    async def summarize(self, previous: str | None, items: list[Item]) -> str:
        self.calls.append((previous, items))
        return f"folded {len(items)}"


# -- extractive -------------------------------------------------------------------------------


async def test_extractive_summary_has_one_line_group_per_round():
    items = [
        user("北京明天天气怎么样？"),
        call("c1", "get_weather"),
        result("c1", '{"ok": true, "output": "晴"}'),
        say("明天北京晴。气温 26 度。"),
        user("And 2+3?"),
        call("c2", "add"),
        result("c2", '{"ok": false, "error": {"type": "timeout"}}'),
        say("Sorry, the calculator timed out. Try again later."),
    ]
    text = await ExtractiveSummarizer().summarize(None, items)
    assert text.splitlines() == [
        "用户/User: 北京明天天气怎么样？",
        "tools: get_weather → ok",
        "assistant: 明天北京晴。",
        "用户/User: And 2+3?",
        "tools: add → failed",
        "assistant: Sorry, the calculator timed out.",
    ]


async def test_extractive_summary_keeps_the_previous_summary_first():
    text = await ExtractiveSummarizer().summarize("用户/User: 我叫张三", a_round(1))
    assert text.splitlines()[0] == "用户/User: 我叫张三"
    assert "用户/User: question 1" in text


async def test_extractive_summary_is_deterministic():
    summarizer = ExtractiveSummarizer()
    first = await summarizer.summarize("prev", rounds(30))
    assert first == await summarizer.summarize("prev", rounds(30))


async def test_extractive_summary_is_bounded_and_drops_the_oldest_lines_first():
    summarizer = ExtractiveSummarizer(max_chars=300)
    text = await summarizer.summarize("very old line", rounds(50))
    assert len(text) <= 300
    assert "very old line" not in text
    assert text.splitlines()[-1] == "assistant: answer 49."


async def test_extractive_summary_cuts_long_chinese_text_on_character_boundaries():
    text = await ExtractiveSummarizer(line_chars=20).summarize(None, [user("天气" * 100)])
    assert text == "用户/User: " + "天气" * 9 + "天…"


async def test_a_single_huge_line_is_cut_to_the_bound():
    text = await ExtractiveSummarizer(max_chars=50, line_chars=500).summarize(
        None, [user("字" * 400)]
    )
    assert len(text) == 50
    assert text.endswith("…")


async def test_a_tool_result_with_ok_false_in_meta_counts_as_failed():
    failed = Item(role="tool", kind="tool_result", content="boom", tool_call_id="c1",
                  meta={"ok": False})  # fmt: skip
    text = await ExtractiveSummarizer().summarize(None, [user("q"), call("c1", "shell"), failed])
    assert "tools: shell → failed" in text


async def test_a_call_without_a_result_is_reported_as_such():
    text = await ExtractiveSummarizer().summarize(None, [user("q"), call("c1", "shell")])
    assert "tools: shell → no result" in text


async def test_nothing_to_summarize_gives_the_previous_summary():
    assert await ExtractiveSummarizer().summarize("kept", []) == "kept"
    assert await ExtractiveSummarizer().summarize(None, []) == ""


# -- model ------------------------------------------------------------------------------------


async def test_the_model_summarizer_returns_the_models_answer():
    model = FakeModel("  用户想知道北京的天气。  ")
    text = await ModelSummarizer(model).summarize("previous gist", a_round(1))
    assert text == "用户想知道北京的天气。"
    (request,) = model.requests
    system, prompt = request.messages
    assert system["role"] == "system"
    assert "summary" in system["content"]
    assert "摘要" in system["content"]
    assert "previous gist" in prompt["content"]
    assert "user: question 1" in prompt["content"]
    assert "assistant called add(" in prompt["content"]


async def test_the_model_summarizer_falls_back_on_a_model_error():
    model = FakeModel(error=ModelError("server down", retryable=True))
    text = await ModelSummarizer(model).summarize(None, a_round(1))
    assert text.splitlines()[0] == "用户/User: question 1"


async def test_the_model_summarizer_falls_back_on_an_empty_answer():
    fallback = RecordingSummarizer()
    text = await ModelSummarizer(FakeModel("   "), fallback).summarize("p", a_round(1))
    assert text == "folded 4"
    assert fallback.calls[0][0] == "p"


async def test_the_model_summary_is_bounded():
    text = await ModelSummarizer(FakeModel("长" * 5_000), max_chars=100).summarize(None, [])
    assert len(text) == 100


async def test_the_model_is_sent_a_bounded_transcript():
    model = FakeModel()
    await ModelSummarizer(model, max_input_chars=2_000).summarize(None, rounds(500))
    prompt = model.requests[0].messages[1]["content"]
    assert len(prompt) < 2_500
    assert "question 499" in prompt
    assert "question 0\n" not in prompt


# -- folding the backlog -------------------------------------------------------------------------


async def test_a_small_backlog_is_not_folded(store: Store):
    await store.ensure_session(SID, "u1")
    await store.append(SID, rounds(3))
    sliced = await store.context_slice(SID, 2)
    assert sliced.backlog == 4
    folded = await fold_backlog(store, SID, sliced, ExtractiveSummarizer(), min_backlog=8)
    assert folded is None
    assert (await store.context_slice(SID, 2)).summary is None


async def test_folding_appends_a_summary_covering_everything_before_the_window(store: Store):
    await store.ensure_session(SID, "u1")
    await store.append(SID, rounds(10))  # 40 items
    sliced = await store.context_slice(SID, 2)  # window starts at 33
    folded = await fold_backlog(store, SID, sliced, ExtractiveSummarizer())
    assert folded is not None
    assert (folded.role, folded.kind, folded.seq) == ("system", "summary", 41)
    assert folded.meta is not None
    assert folded.meta["covers_until"] == 32
    assert "用户/User: question 0" in folded.content
    assert "answer 7" in folded.content
    assert "question 8" not in folded.content  # inside the window, not folded
    after = await store.context_slice(SID, 2)
    assert after.summary == folded
    assert after.backlog == 0


async def test_the_next_fold_starts_from_the_previous_summary(store: Store):
    await store.ensure_session(SID, "u1")
    summarizer = RecordingSummarizer()
    await store.append(SID, rounds(10))
    await fold_backlog(store, SID, await store.context_slice(SID, 2), summarizer)
    await store.append(SID, rounds(3, start=10))
    sliced = await store.context_slice(SID, 2)
    assert sliced.backlog == 12  # 33..45 minus the summary item at 41
    await fold_backlog(store, SID, sliced, summarizer)
    previous, items = summarizer.calls[1]
    assert previous == "folded 32"
    assert [i.seq for i in items] == [33, 34, 35, 36, 37, 38, 39, 40, 42, 43, 44, 45]


async def test_folding_a_huge_backlog_reads_only_the_newest_items(store: Store):
    store.bulk_import(SID, "u1", rounds(1_000))  # 4,000 items
    sliced = await store.context_slice(SID, 1)
    summarizer = RecordingSummarizer()
    folded = await fold_backlog(store, SID, sliced, summarizer, max_items=100)
    assert folded is not None
    (_, items) = summarizer.calls[0]
    assert [i.seq for i in items] == list(range(3_897, 3_997))
    assert folded.content.startswith("(3896 earlier messages not summarized")
    assert folded.meta is not None
    assert folded.meta["covers_until"] == 3_996
    assert (await store.context_slice(SID, 1)).backlog == 0


async def test_a_summarizer_that_changes_its_items_changes_nothing_stored(tmp_path) -> None:
    """The store may hand out the items it keeps for its next reads (its window cache): a
    pluggable summarizer gets copies, so whatever it does to them stays with it."""
    from hermes.storage.sqlite.sessions import SQLiteStore

    class Scribbler:
        async def summarize(self, previous: str | None, items: list[Item]) -> str:
            for item in items:
                item.content = "scribbled"
                if item.meta is not None:
                    item.meta["scribbled"] = True
            return "summary"

    async with SQLiteStore(tmp_path / "s.db") as store:
        await store.ensure_session(SID, None)
        await store.append(SID, [Item("user", "text", "noted", meta={"k": 1}), *rounds(1)])
        await store.context_slice(SID, 2)  # the store keeps this window …
        await store.append(SID, rounds(2))
        sliced = await store.context_slice(SID, 2)  # … and serves the backlog from it
        assert sliced.backlog > 0
        await fold_backlog(store, SID, sliced, Scribbler(), min_backlog=1)
        again = await store.read_items(SID, limit=1000)
        assert "scribbled" not in [i.content for i in again]
        assert all("scribbled" not in (i.meta or {}) for i in again)
