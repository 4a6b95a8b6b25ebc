"""Memory candidates from the user's message: offline rules (zh/en) and the model extractor."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hermes.errors import ModelError
from hermes.memory.extract import (
    DEFAULT_THRESHOLD,
    EXTRACTION_PROMPT,
    MAX_CANDIDATE_CHARS,
    MemoryCandidate,
    ModelExtractor,
    RuleExtractor,
    detect_sensitive,
    extract_candidates,
    parse_model_output,
)
from hermes.models.base import ModelRequest, ModelResponse
from hermes.testing import FunctionModel, ScriptedModel, say

# Friday 2025-01-10, 09:00 in Shanghai.
NOW = datetime(2025, 1, 10, 9, 0, tzinfo=timezone(timedelta(hours=8)))


def one(text: str, **kwargs: object) -> MemoryCandidate:
    found = extract_candidates(text, now=NOW, **kwargs)  # type: ignore[arg-type]
    assert len(found) == 1, found
    return found[0]


# -- explicit requests ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("记住我喜欢喝美式咖啡", "用户喜欢喝美式咖啡。"),
        ("请记住：我的车牌是沪A12345", "用户的车牌是沪A12345。"),
        ("帮我记一下公司WiFi叫Hermes-5G", "公司WiFi叫Hermes-5G。"),
        ("你能记住我喜欢绿茶吗？", "用户喜欢绿茶。"),
        ("Remember that my wife's name is Ann", "The user's wife's name is Ann."),
        ("please remember I prefer short answers", "The user prefers short answers."),
        ("Don't forget that I'm vegetarian", "The user is vegetarian."),
    ],
)
def test_explicit_requests_are_kept_with_high_confidence(text: str, content: str) -> None:
    found = one(text)
    assert found.content == content
    assert found.confidence == 0.95


def test_explicit_request_about_a_day_becomes_an_event_on_that_date() -> None:
    found = one("帮我记一下明天下午三点开会")
    assert found.kind == "event"
    assert found.content == "用户2025-01-11下午三点开会。"
    english = one("Please remember I have a dentist appointment tomorrow")
    assert english.kind == "event"
    assert english.content == "The user has a dentist appointment on 2025-01-11."


def test_a_birthday_is_a_fact_and_its_date_is_not_pinned_to_this_year() -> None:
    found = one("请记住：我的生日是5月3日")
    assert found.kind == "fact"
    assert found.content == "用户的生日是5月3日。"


def test_relative_dates_stay_as_written_without_now() -> None:
    (found,) = extract_candidates("记住我明天要出差")
    assert "明天" in found.content


@pytest.mark.parametrize(
    "text",
    ["记住这个", "remember to buy milk", "你还记得我喜欢什么吗？", "记住了吗？", "remember me?"],
)
def test_explicit_words_without_a_statement_give_nothing(text: str) -> None:
    assert extract_candidates(text, now=NOW) == []


@pytest.mark.parametrize(
    "text",
    ["notes", "Notes", "noted", "notes?", "remembered", "memorized", "notebook", "noteworthy"],
)
def test_a_word_that_only_starts_like_a_request_states_nothing(text: str) -> None:
    # "notes" once became the memory "S." (the verb "note" and a body "s").
    assert extract_candidates(text, now=NOW) == []


@pytest.mark.parametrize(
    ("text", "content"),
    [("note: my locker is 42", "The user's locker is 42."), ("notebook is on the desk", None)],
)
def test_note_is_a_request_only_as_a_whole_word(text: str, content: str | None) -> None:
    found = extract_candidates(text, now=NOW)
    assert [c.content for c in found if c.confidence == 0.95] == ([content] if content else [])


# -- preferences, facts, habits, instructions ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "content"),
    [
        ("我喜欢爬山", "preference", "用户喜欢爬山。"),
        ("我不喜欢香菜", "preference", "用户不喜欢香菜。"),
        ("我最喜欢的颜色是蓝色", "preference", "用户最喜欢的颜色是蓝色。"),
        ("我叫小明", "fact", "用户叫小明。"),
        ("我住在上海", "fact", "用户住在上海。"),
        ("我在华为工作", "fact", "用户在华为工作。"),
        ("我是程序员", "fact", "用户是程序员。"),
        ("我的城市是北京", "fact", "用户的城市是北京。"),
        ("我女儿叫小红", "fact", "用户的女儿叫小红。"),
        ("我每天早上喝咖啡", "habit", "用户每天早上喝咖啡。"),
        ("以后回答简短一点", "preference", "用户要求：以后回答简短一点。"),
        ("以后叫我老王", "preference", "用户希望被称呼为老王。"),
        ("I like green tea", "preference", "The user likes green tea."),
        ("I love hiking in the Alps", "preference", "The user loves hiking in the Alps."),
        ("I don't like cilantro", "preference", "The user doesn't like cilantro."),
        ("I hate my commute", "preference", "The user hates their commute."),
        ("my favorite color is blue", "preference", "The user's favorite color is blue."),
        ("My name is Alice", "fact", "The user's name is Alice."),
        ("I'm a software engineer", "fact", "The user is a software engineer."),
        ("I work at Acme Corp", "fact", "The user works at Acme Corp."),
        ("I live in Berlin", "fact", "The user lives in Berlin."),
        ("I'm 30 years old", "fact", "The user is 30 years old."),
        ("I usually run in the morning", "habit", "The user usually runs in the morning."),
        ("From now on, answer in English", "preference",
         "The user asked: from now on, answer in English."),
        ("call me Bob", "preference", "The user wants to be called Bob."),
    ],
)  # fmt: skip
def test_clear_statements_become_candidates(text: str, kind: str, content: str) -> None:
    found = one(text)
    assert (found.kind, found.content) == (kind, content)
    assert DEFAULT_THRESHOLD <= found.confidence < 0.95
    assert found.source == "rules"


def test_each_statement_of_a_message_is_a_candidate() -> None:
    found = extract_candidates("我叫小明，我住在上海。我喜欢喝茶", now=NOW)
    assert [c.content for c in found] == ["用户叫小明。", "用户住在上海。", "用户喜欢喝茶。"]


def test_my_x_is_y_keeps_x_as_the_topic() -> None:
    assert one("我的城市是北京").topic == "城市"
    assert one("my home city is Lyon").topic == "home city"


def test_a_statement_followed_by_a_question_keeps_the_statement() -> None:
    assert [c.content for c in extract_candidates("我喜欢猫，你呢？")] == ["用户喜欢猫。"]
    assert [c.content for c in extract_candidates("I like cats, do you?")] == [
        "The user likes cats."
    ]


# -- what is not a memory ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "我喜欢什么？",
        "我喜欢什么",
        "我住在哪里你知道吗",
        "do you remember my name?",
        "What do I like?",
        "Do I like jazz?",
        "如果我喜欢猫呢",
        "要是下雨，我喜欢待在家",
        "假如我住在北京，你会推荐什么",
        "If I liked jazz, what would you recommend?",
        "他说我喜欢猫",
        "My sister thinks I like opera",
        "我没说我喜欢咖啡",
        "I never said I like coffee",
        "我是说你搞错了",
        "我爱你",
        "I love you",
        "I like it",
        "我的问题是怎么安装",
        "以后再说吧",
        "我爱人是医生",
        "I'd like a coffee",
        "帮我查一下上海的天气",
        "2+3等于多少",
        "",
        "   ",
    ],
)
def test_questions_hypotheticals_and_other_talk_give_nothing(text: str) -> None:
    assert extract_candidates(text, now=NOW) == []


@pytest.mark.parametrize(
    "text", ["我可能喜欢爵士乐", "I think I like jazz", "maybe I prefer tea", "我好像住在北京"]
)
def test_hedged_statements_get_low_confidence_below_the_threshold(text: str) -> None:
    assert extract_candidates(text, now=NOW) == []
    (low,) = extract_candidates(text, now=NOW, threshold=0.5)
    assert low.confidence < DEFAULT_THRESHOLD


def test_i_dont_know_if_i_like_gives_nothing() -> None:
    assert extract_candidates("I don't know if I like sushi", threshold=0.0) == []
    assert extract_candidates("我不知道我喜不喜欢寿司", threshold=0.0) == []


def test_threshold_filters_candidates() -> None:
    assert extract_candidates("我喜欢爬山", threshold=0.9) == []
    assert extract_candidates("记住我喜欢爬山", threshold=0.9) != []
    assert extract_candidates("记住我喜欢爬山", threshold=0.99) == []


# -- changes of mind -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("我现在更喜欢喝茶了", "喜欢喝茶"),
        ("我现在喜欢喝茶，而不是咖啡", "咖啡"),
        ("我不再喜欢咖啡了", "咖啡"),
        ("I now prefer tea over coffee", "coffee"),
        ("I no longer like coffee", "coffee"),
        ("my city is now Beijing", "city"),
        ("我的城市现在是北京", "城市"),
        ("我搬到了北京", None),
    ],
)
def test_changes_of_mind_carry_a_supersedes_hint(text: str, hint: str | None) -> None:
    found = extract_candidates(text, now=NOW)
    assert found, text
    assert found[0].supersedes_hint == hint


def test_plain_statements_supersede_nothing() -> None:
    assert one("我喜欢喝茶").supersedes_hint is None
    assert one("I prefer tea over coffee").supersedes_hint is None


# -- sensitive content ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("我对花生过敏", "health"),
        ("I have diabetes", "health"),
        ("我的月薪是两万", "finance"),
        ("my salary is 90k", "finance"),
        ("我的银行卡密码是123456", "credentials"),
        ("my password is hunter2", "credentials"),
        ("身份证 110101199003071234", "credentials"),
        ("我的手机号是13812345678", "phone"),
        ("call me at +1 415 555 0100", "phone"),
        ("我家地址是南京路100号", "address"),
        ("I live at 221 Baker Street", "address"),
        ("我信佛", "religion"),
        ("I am a practicing Catholic", "religion"),
        ("我是党员", "politics"),
        ("I voted for the Greens", "politics"),
    ],
)
def test_sensitive_topics_are_detected(text: str, category: str) -> None:
    topic = detect_sensitive(text)
    assert topic is not None
    assert topic.split()[0] == category


@pytest.mark.parametrize("text", ["我喜欢喝茶", "I like green tea", "我住在上海", "周一开会"])
def test_ordinary_content_is_not_sensitive(text: str) -> None:
    assert detect_sensitive(text) is None


def test_sensitive_candidates_are_flagged_with_a_topic() -> None:
    found = one("记住我对花生过敏")
    assert found.sensitive
    assert found.topic is not None
    assert found.topic.startswith("health 健康")
    secret = one("我的银行卡密码是123456")
    assert secret.sensitive
    assert secret.topic is not None
    assert "credentials" in secret.topic
    assert secret.topic.split().count("密码") == 1


def test_candidate_converts_to_a_memory_draft() -> None:
    found = one("记住我对花生过敏")
    draft = found.to_draft(source_session="s-1")
    assert (draft.content, draft.kind, draft.confidence) == (found.content, "fact", 0.95)
    assert (draft.sensitive, draft.topic, draft.source_session) == (True, found.topic, "s-1")


# -- properties ----------------------------------------------------------------------------


def _well_formed(candidate: MemoryCandidate, threshold: float) -> None:
    assert candidate.content.strip()
    assert len(candidate.content) <= MAX_CANDIDATE_CHARS
    assert threshold <= candidate.confidence <= 1.0
    assert candidate.kind in ("preference", "fact", "habit", "event")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    for candidate in extract_candidates(text, now=NOW):  # rarely any: see the next test
        _well_formed(candidate, DEFAULT_THRESHOLD)
    detect_sensitive(text)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["记住", "我", "喜欢", "不", "如果", "的", "是", "？", "，", "。", "I", " like ", "my ",
             " is ", "remember ", "?", "明天", "ORD123", "以后", "😀", "\n", "現在"]
        ),
        max_size=12,
    ).map("".join)
)  # fmt: skip
def test_rule_like_fragments_give_well_formed_candidates(text: str) -> None:
    for candidate in extract_candidates(text, now=NOW, threshold=0.0):
        _well_formed(candidate, 0.0)


def test_a_long_model_memory_is_clipped() -> None:
    (model,) = parse_model_output(
        json.dumps({"memories": [{"kind": "fact", "content": "x " * 800, "confidence": 0.9}]})
    ) or [None]
    assert model is not None
    assert len(model.content) <= MAX_CANDIDATE_CHARS


def test_huge_input_is_bounded() -> None:
    text = "我喜欢喝茶。" * 20_000
    found = extract_candidates(text)
    assert [c.content for c in found] == ["用户喜欢喝茶。"]


# -- the model extractor -------------------------------------------------------------------


def memories(*entries: dict[str, object]) -> ModelResponse:
    return say(json.dumps({"memories": list(entries)}, ensure_ascii=False))


async def test_model_extractor_sends_the_fixed_prompt_and_only_the_user_text() -> None:
    model = ScriptedModel(
        [memories({"kind": "preference", "content": "用户喜欢绿茶。", "confidence": 0.9})]
    )
    found = await ModelExtractor(model).extract(
        "我喜欢绿茶", now=NOW, user_id="u1", session_id="s1", trace_id="t1"
    )
    assert found == [MemoryCandidate("preference", "用户喜欢绿茶。", 0.9, source="model")]
    (request,) = model.requests
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert request.messages[0]["content"].startswith(EXTRACTION_PROMPT)
    assert "2025-01-10" in request.messages[0]["content"]
    assert request.messages[1]["content"] == "我喜欢绿茶"
    assert request.tools == []
    assert (request.user_id, request.session_id, request.trace_id) == ("u1", "s1", "t1")
    model.assert_complete()


async def test_model_extractor_uses_its_own_scratch() -> None:
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        request.scratch["touched"] = True
        return memories()

    assert await ModelExtractor(FunctionModel(answer)).extract("I like tea") == []
    assert seen[0].scratch == {"touched": True}  # a fresh dict, owned by this call only


async def test_model_output_in_a_code_fence_with_lenient_json_is_read() -> None:
    text = "```json\n{memories: [{'kind': 'fact', 'content': 'The user lives in Oslo.', " \
        "'confidence': 0.85, 'topic': 'city', 'supersedes': 'city',}]}\n```"  # fmt: skip
    found = await ModelExtractor(ScriptedModel([say(text)])).extract("I moved to Oslo")
    assert found == [
        MemoryCandidate(
            "fact", "The user lives in Oslo.", 0.85, topic="city", supersedes_hint="city",
            source="model",
        )
    ]  # fmt: skip


async def test_invalid_model_entries_are_dropped_and_valid_ones_kept() -> None:
    model = ScriptedModel(
        [
            memories(
                {"kind": "opinion", "content": "x", "confidence": 0.9},
                {"kind": "fact", "content": "", "confidence": 0.9},
                {"kind": "fact", "content": 42, "confidence": 0.9},
                {"kind": "fact", "content": "no confidence"},
                {"kind": "fact", "content": "string confidence", "confidence": "0.9"},
                {"kind": "fact", "content": "too confident", "confidence": 1.5},
                {"kind": "fact", "content": "boolean confidence", "confidence": True},
                {"kind": "fact", "content": "unsure", "confidence": 0.3},
                {"kind": "habit", "content": "The user jogs daily.", "confidence": 0.8},
            )
        ]
    )
    found = await ModelExtractor(model).extract("I jog every day")
    assert [c.content for c in found] == ["The user jogs daily."]


async def test_model_entries_that_are_sensitive_are_flagged_even_if_the_model_says_no() -> None:
    model = ScriptedModel(
        [memories({"kind": "fact", "content": "用户对青霉素过敏。", "confidence": 0.95,
                   "sensitive": False, "topic": "药物"})]
    )  # fmt: skip
    (found,) = await ModelExtractor(model).extract("记住我对青霉素过敏")
    assert found.sensitive
    assert found.topic is not None
    assert found.topic.startswith("药物 health")


@pytest.mark.parametrize(
    "failure",
    [ModelError("server down", retryable=True), RuntimeError("bug in a plugin model")],
)
async def test_model_failures_fall_back_to_the_rules(failure: Exception) -> None:
    model = ScriptedModel([failure])
    found = await ModelExtractor(model).extract("记住我喜欢爬山", now=NOW)
    assert found == extract_candidates("记住我喜欢爬山", now=NOW)
    assert found[0].source == "rules"


@pytest.mark.parametrize("answer", ["Sure! You like hiking.", "", '{"memories": "none"}', "[1,"])
async def test_unreadable_model_output_falls_back_to_the_rules(answer: str) -> None:
    found = await ModelExtractor(ScriptedModel([say(answer)])).extract("I live in Berlin")
    assert [c.content for c in found] == ["The user lives in Berlin."]


async def test_a_slow_model_times_out_into_the_rules() -> None:
    async def slow(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(5)
        return memories()

    extractor = ModelExtractor(FunctionModel(slow), timeout=0.05)
    found = await extractor.extract("I live in Berlin")
    assert [c.content for c in found] == ["The user lives in Berlin."]


async def test_messages_without_any_cue_do_not_call_the_model() -> None:
    model = ScriptedModel([])
    assert await ModelExtractor(model).extract("2+3等于多少") == []
    assert await ModelExtractor(model).extract("What's the weather in Paris?") == []
    assert model.requests == []


async def test_rule_extractor_has_the_same_api() -> None:
    found = await RuleExtractor(threshold=0.9).extract("记住我喜欢爬山", now=NOW)
    assert [c.content for c in found] == ["用户喜欢爬山。"]
    assert await RuleExtractor(threshold=0.9).extract("我喜欢爬山") == []


def test_parse_model_output_accepts_a_bare_list() -> None:
    text = '[{"kind": "fact", "content": "The user is left-handed.", "confidence": 0.9}]'
    assert parse_model_output(text) == [
        MemoryCandidate("fact", "The user is left-handed.", 0.9, source="model")
    ]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_parse_model_output_never_raises(text: str) -> None:
    result = parse_model_output(text)
    assert result is None or all(isinstance(c, MemoryCandidate) for c in result)


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(
        st.sampled_from(["kind", "content", "confidence", "sensitive", "topic", "supersedes",
                         "memories", "x"]),
        children,
        max_size=6,
    ),
    max_leaves=20,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_parse_model_output_never_raises_on_any_json_shape(value: object) -> None:
    result = parse_model_output(json.dumps({"memories": value}))
    assert result is None or all(0.0 <= c.confidence <= 1.0 for c in result)


model_entries = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["fact", "preference", "habit", "event", "opinion", 3]),
        "content": st.one_of(st.text(min_size=1, max_size=700), st.just("   "), st.none()),
        "confidence": st.one_of(
            st.floats(min_value=-1, max_value=2), st.booleans(), st.text(max_size=3)
        ),
    }
)


@settings(max_examples=300, deadline=None)
@example([{"kind": "fact", "content": "The user is left-handed.", "confidence": 0.95}])
@given(st.lists(model_entries, max_size=12))
def test_model_entries_are_kept_only_when_valid(entries: list[dict[str, Any]]) -> None:
    found = parse_model_output(json.dumps({"memories": entries}))
    assert found is not None
    for candidate in found:
        _well_formed(candidate, DEFAULT_THRESHOLD)
    valid = {
        " ".join(e["content"].split())[:MAX_CANDIDATE_CHARS]
        for e in entries[:20]
        if e["kind"] in ("fact", "preference", "habit", "event")
        and isinstance(e["content"], str)
        and e["content"].strip()
        and isinstance(e["confidence"], float)
        and DEFAULT_THRESHOLD <= e["confidence"] <= 1.0
    }
    # Contents are tidied before duplicates are dropped, so only bounds can be exact.
    assert len(found) <= min(len(valid), 10)
    assert bool(found) == bool(valid)


def test_telling_the_assistant_is_not_reported_speech() -> None:
    assert [c.content for c in extract_candidates("我跟你说我喜欢猫")] == ["用户喜欢猫。"]


@pytest.mark.parametrize(
    "text",
    ["嗯" * 3000 + "x", "嗯，" * 1500 + "我喜欢", "1" * 4000, "a." * 2000, "我现在" * 1000 + "喜欢",
     "I really " * 400 + "?", "okay, " * 600, "my " * 1300 + "is x", "记住" * 2000],
)  # fmt: skip
def test_pathological_input_finishes(text: str) -> None:
    # A catastrophic regex would never return; a daemon thread lets the test fail instead.
    done = threading.Event()

    def work() -> None:
        extract_candidates(text, now=NOW)
        detect_sensitive(text)
        done.set()

    threading.Thread(target=work, daemon=True).start()
    assert done.wait(timeout=20), "extraction did not finish: catastrophic backtracking?"


def test_statements_joined_by_but_are_each_kept() -> None:
    found = extract_candidates("我不喜欢吃辣，但是我喜欢川菜")
    assert [c.content for c in found] == ["用户不喜欢吃辣。", "用户喜欢川菜。"]
    english = extract_candidates("I don't like rain, but I love snow")
    assert [c.content for c in english] == ["The user doesn't like rain.", "The user loves snow."]


def test_a_standing_instruction_to_remember_is_kept_as_one() -> None:
    assert one("记住：以后回答用英文").content == "用户要求：以后回答用英文。"


def test_explicit_requests_are_marked_explicit_and_reach_the_draft() -> None:
    from hermes.memory.extract import extract_candidates

    (asked,) = extract_candidates("请记住我对花生过敏")
    assert asked.explicit
    assert asked.to_draft(source_session="s-1").explicit
    plain = extract_candidates("我喜欢喝美式咖啡")
    assert plain
    assert not plain[0].explicit
