"""Properties of reading arithmetic in words: random expressions rendered into Chinese and
English words give exactly Python's value (``fractions.Fraction``), and a rendering with a word
the brain does not know is never answered with a number.

The renderings are written by this test's own small writers (independent of the brain's
readers): integers, decimals (三点一四, "three point one four"), fractions (五分之三, "two
thirds"), percentages (百分之十, "ten percent"), negatives (负三, "negative three"), joined by
加/减/乘以/除以 or plus/minus/times/"divided by", with the usual precedence — or, in Chinese,
as 先…再… stages, which apply in order.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from fractions import Fraction

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hermes.models.brain import RuleBrain

from .harness import ALL_TOOLS, Conversation
from .test_parsing import int_to_chinese

BRAIN = RuleBrain()
_ZH_DIGITS = "零一二三四五六七八九"
_EN_ONES = [
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    *("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen"),
    *("eighteen", "nineteen"),
]
_EN_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_EN_DENOMINATORS = {2: "half", 3: "third", 4: "quarter", 5: "fifth", 8: "eighth", 10: "tenth"}
_OPS_ZH = {"+": "加", "-": "减", "*": "乘以", "/": "除以"}
_OPS_EN = {"+": "plus", "-": "minus", "*": "times", "/": "divided by"}
_UNKNOWN_ZH = ["苹果", "打", "个", "几", "某", "香蕉"]
_UNKNOWN_EN = ["apples", "blah", "foo", "cats", "bananas", "somewhat"]


def en_int(number: int) -> str:
    """English words for 0 ≤ number < 1,000,000 (test-side writer)."""
    if number < 20:
        return _EN_ONES[number]
    if number < 100:
        tens, ones = divmod(number, 10)
        return _EN_TENS[tens] + ("" if ones == 0 else "-" + _EN_ONES[ones])
    if number < 1000:
        hundreds, rest = divmod(number, 100)
        return f"{_EN_ONES[hundreds]} hundred" + ("" if rest == 0 else " and " + en_int(rest))
    thousands, rest = divmod(number, 1000)
    return f"{en_int(thousands)} thousand" + ("" if rest == 0 else " " + en_int(rest))


@dataclass(frozen=True)
class Term:
    """A number and how it is written in each language."""

    value: Fraction
    zh: str
    en: str


def _integer(number: int) -> Term:
    return Term(Fraction(number), int_to_chinese(number), en_int(number))


def _decimal(whole: int, digits: str) -> Term:
    zh = int_to_chinese(whole) + "点" + "".join(_ZH_DIGITS[int(d)] for d in digits)
    en = en_int(whole) + " point " + " ".join(_EN_ONES[int(d)] for d in digits)
    return Term(Fraction(f"{whole}.{digits}"), zh, en)


def _fraction(numerator: int, denominator: int) -> Term:
    zh = int_to_chinese(denominator) + "分之" + int_to_chinese(numerator)
    word = _EN_DENOMINATORS[denominator]
    if numerator == 1:
        en = f"one {word}"
    else:
        en = f"{en_int(numerator)} {'halves' if word == 'half' else word + 's'}"
    return Term(Fraction(numerator, denominator), zh, en)


def _percent(number: int) -> Term:
    return Term(
        Fraction(number, 100), "百分之" + int_to_chinese(number), f"{en_int(number)} percent"
    )


def _negative(term: Term) -> Term:
    return Term(-term.value, "负" + term.zh, "negative " + term.en)


_POSITIVE = st.one_of(
    st.integers(0, 99_999).map(_integer),
    st.builds(_decimal, st.integers(0, 999), st.from_regex(r"[0-9]{0,2}[1-9]", fullmatch=True)),
    st.builds(
        _fraction,
        st.integers(1, 9),
        st.sampled_from(sorted(_EN_DENOMINATORS)),
    ).filter(lambda t: t.value < 1 or t.value.denominator == 2),
    st.integers(1, 200).map(_percent),
)
_TERMS = st.one_of(_POSITIVE, _POSITIVE.filter(lambda t: t.value > 0).map(_negative))
_EXPRESSIONS = st.integers(2, 4).flatmap(
    lambda n: st.tuples(
        st.lists(_TERMS, min_size=n, max_size=n),
        st.lists(st.sampled_from("+-*/"), min_size=n - 1, max_size=n - 1),
    )
)


def python_value(terms: list[Term], ops: list[str]) -> Fraction:
    """Python's value of the expression, precedence as in Python (Fractions: exact)."""
    source = "".join(
        f"Fraction({t.value.numerator}, {t.value.denominator})" + (op or "")
        for t, op in zip(terms, [*ops, None], strict=True)
    )
    value = eval(source, {"Fraction": Fraction})
    assert isinstance(value, Fraction)
    return value


def render(terms: list[Term], ops: list[str], lang: str) -> str:
    words = _OPS_ZH if lang == "zh" else _OPS_EN
    pieces = [getattr(terms[0], lang)]
    for op, term in zip(ops, terms[1:], strict=True):
        pieces += [words[op], getattr(term, lang)]
    return ("" if lang == "zh" else " ").join(pieces)


def _divides_by_zero(terms: list[Term], ops: list[str]) -> bool:
    return any(op == "/" and term.value == 0 for op, term in zip(ops, terms[1:], strict=True))


def _reply(text: str) -> tuple[str, list[tuple[str, dict[str, object]]]]:
    chat = Conversation(BRAIN, ALL_TOOLS)
    reply = asyncio.run(chat.turn(text))
    return reply.content or "", chat.calls


def _expected_ending(value: Fraction) -> str:
    """How the reply ends: "= 7", "= 0.3" for an exact decimal (at most 15 places), else
    "≈" and the value rounded to 6 decimals (6 significant digits below 1)."""
    places = _decimal_places(value)
    if places is not None and places <= 15:
        return " = " + _decimal_text(value, places)
    magnitude, leading = abs(value), 0
    while magnitude < 1 and magnitude * 10 ** (leading + 1) < 1:
        leading += 1
    digits = 6 if magnitude >= 1 else leading + 6
    rounded = Fraction(round(value * 10**digits), 10**digits)
    return " ≈ " + _decimal_text(rounded, digits)


def _decimal_places(value: Fraction) -> int | None:
    """Decimal places of ``value`` written out exactly; None when it never ends (1/3)."""
    denominator, twos, fives = value.denominator, 0, 0
    while denominator % 2 == 0:
        denominator, twos = denominator // 2, twos + 1
    while denominator % 5 == 0:
        denominator, fives = denominator // 5, fives + 1
    return max(twos, fives) if denominator == 1 else None


def _decimal_text(value: Fraction, places: int) -> str:
    whole, fraction = divmod(int(abs(value) * 10**places), 10**places)
    text = f"{whole}.{fraction:0{places}d}".rstrip("0").rstrip(".") if places else str(whole)
    return "-" + text if value < 0 and text != "0" else text


@settings(max_examples=150, deadline=None)
@given(_EXPRESSIONS, st.sampled_from(["zh", "en"]))
def test_words_give_exactly_pythons_value(
    expression: tuple[list[Term], list[str]], lang: str
) -> None:
    terms, ops = expression
    assume(not _divides_by_zero(terms, ops))
    expected = python_value(terms, ops)
    text = render(terms, ops, lang)
    reply, calls = _reply(text)
    assert [name for name, _ in calls] == ["calculator"], text
    assert reply.endswith(_expected_ending(expected)), (text, reply)


@settings(max_examples=100, deadline=None)
@given(st.lists(_POSITIVE, min_size=3, max_size=3), st.sampled_from("+-*"))
def test_first_then_stages_apply_in_order(terms: list[Term], op: str) -> None:
    first, second, third = terms
    text = f"先算{first.zh}加{second.zh}，再{_OPS_ZH[op]}{third.zh}"
    expected = python_value([Term(first.value + second.value, "", ""), third], [op])
    reply, _calls = _reply(text)
    assert reply.endswith(_expected_ending(expected)), (text, reply)


@settings(max_examples=150, deadline=None)
@given(
    _EXPRESSIONS,
    st.sampled_from(["zh", "en"]),
    st.integers(0, 20),
    st.integers(0, len(_UNKNOWN_EN) - 1),
)
def test_a_rendering_with_an_unknown_word_is_never_answered_with_a_number(
    expression: tuple[list[Term], list[str]], lang: str, where: int, which: int
) -> None:
    terms, ops = expression
    text = render(terms, ops, lang)
    if lang == "zh":
        word = _UNKNOWN_ZH[which % len(_UNKNOWN_ZH)]
        at = where % (len(text) + 1)
    else:
        word = " " + _UNKNOWN_EN[which] + " "
        gaps = [m.start() for m in re.finditer(" ", text)] + [0, len(text)]
        at = gaps[where % len(gaps)]
    text = text[:at] + word + text[at:]
    reply, calls = _reply(text.strip())
    assert "calculator" not in [name for name, _ in calls], text
    assert "=" not in reply, (text, reply)
    assert "≈" not in reply, (text, reply)
