"""The reference line of a memory note, read back by a model (the offline brain): what
``hermes.memory.working.Reference.describe`` writes, ``note_reference`` reads — property-tested
over labels, values, phrases and both languages."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hermes.memory.working import Fact, LastCall, Reference
from hermes.models.memory_notes import DATA_HEADER, note_reference

_LABELS = st.from_regex(r"[a-z][a-z_]{0,20}", fullmatch=True)
_VALUES = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=40
).filter(lambda v: v.strip() == v and v)
_PHRASES = st.sampled_from(
    ["上次订的会议室", "同一个订单", "那个链接", "the room I booked", "the same file", "my order"]
)
_SOURCES = st.sampled_from(["user", "tool_call", "tool_result"])


def _fact(label: str, value: str, source: str, origin: str) -> Fact:
    return Fact(label, value, source, origin, value, 1, "2026-12-04T10:00:00+00:00")  # type: ignore[arg-type]


def _note(line: str) -> str:
    return f"{DATA_HEADER}\n\nWorking memory of this session:\n- a line\n\n{line}"


@given(_LABELS, _VALUES, _PHRASES, _SOURCES, st.sampled_from(["zh", "en"]))
def test_a_fact_reference_reads_back(
    label: str, value: str, phrase: str, source: str, lang: str
) -> None:
    fact = _fact(label, value, source, "plan:book")
    line = Reference("fact", phrase, fact=fact).describe(lang)  # type: ignore[arg-type]
    found = note_reference(_note(line))
    assert found is not None
    assert found.phrase == phrase
    assert found.target is not None
    assert found.target.startswith(f"{label}: ")
    assert found.candidates == ()


@given(_LABELS, _VALUES, _VALUES, _PHRASES, st.sampled_from(["zh", "en"]))
def test_an_ambiguous_reference_lists_its_candidates(
    label: str, one: str, other: str, phrase: str, lang: str
) -> None:
    facts = (
        _fact(label, one, "user", "user"),
        _fact(label, other, "tool_result", "lookup"),
    )
    line = Reference("ambiguous", phrase, candidates=facts).describe(lang)  # type: ignore[arg-type]
    found = note_reference(_note(line))
    assert found is not None
    assert found.phrase == phrase
    assert found.target is None
    assert len(found.candidates) >= 2


def test_a_call_to_repeat_is_not_a_fact_and_a_line_outside_the_note_is_ignored() -> None:
    call = LastCall("stats", {"period": "上周"}, True, None, None, None, 1, "")
    repeat = Reference("repeat", "再跑一下", call=call).describe("zh")
    assert note_reference(_note(repeat)) is None
    fact = _fact("room_id", "R2", "tool_result", "book")
    line = Reference("fact", "上次订的会议室", fact=fact).describe("zh")
    assert note_reference(line) is None  # no memory note: a user's own text is never read
    assert note_reference(_note(line)) is not None
