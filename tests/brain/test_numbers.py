"""Reading numbers exactly (``hermes.models.brain.numbers``) and showing results
(``hermes.models.brain.arith.present``): every written form, and what is refused."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.models.brain.arith import present
from hermes.models.brain.numbers import (
    format_exact,
    read_chinese_number,
    read_digits,
    read_english_number,
)


@pytest.mark.parametrize(
    ("text", "value", "shown"),
    [
        ("三点五", Fraction(7, 2), "3.5"),
        ("零点五", Fraction(1, 2), "0.5"),
        ("3点5", Fraction(7, 2), "3.5"),
        ("三点一四", Fraction(314, 100), "3.14"),
        ("五分之一", Fraction(1, 5), "1/5"),
        ("四分之三", Fraction(3, 4), "3/4"),
        ("二十分之三", Fraction(3, 20), "3/20"),
        ("三又二分之一", Fraction(7, 2), "3.5"),
        ("百分之十", Fraction(1, 10), "10%"),
        ("百分之三点五", Fraction(7, 200), "3.5%"),
        ("千分之五", Fraction(1, 200), "5/1000"),
        ("负三", Fraction(-3), "-3"),
        ("负5", Fraction(-5), "-5"),
        ("一万二", Fraction(12_000), "12000"),
        ("两千零五", Fraction(2005), "2005"),
        ("一百零八", Fraction(108), "108"),
        ("3.5万", Fraction(35_000), "35000"),
        ("三点五万", Fraction(35_000), "35000"),
        ("100万", Fraction(1_000_000), "1000000"),
        ("1.2亿", Fraction(120_000_000), "120000000"),
    ],
)
def test_chinese_numbers_are_read_exactly(text: str, value: Fraction, shown: str) -> None:
    number = read_chinese_number(text)
    assert number is not None
    assert (number.value, number.shown) == (value, shown)


@pytest.mark.parametrize(
    "text", ["三四百", "一点", "负负三", "3百5", "点五", "五分之", "零分之一", "万一"]
)
def test_what_is_not_a_whole_number_is_refused_not_guessed(text: str) -> None:
    assert read_chinese_number(text) is None


@pytest.mark.parametrize(
    ("words", "value", "size"),
    [
        ("three and a half", Fraction(7, 2), 4),
        ("twelve", Fraction(12), 1),
        ("one hundred and five", Fraction(105), 4),
        ("twenty one", Fraction(21), 2),
        ("a quarter", Fraction(1, 4), 2),
        ("three quarters", Fraction(3, 4), 2),
        ("two thirds", Fraction(2, 3), 2),
        ("three halves", Fraction(3, 2), 2),
        ("point five", Fraction(1, 2), 2),
        ("one point two five", Fraction(5, 4), 4),
        ("a hundred", Fraction(100), 2),
        ("a dozen", Fraction(12), 2),
        ("one thousand and five", Fraction(1005), 4),
        ("three thousand two hundred", Fraction(3200), 4),
        ("one and two", Fraction(1), 1),  # a list, not a number: only "one" is read
        ("one thirds", Fraction(1), 1),  # "thirds" is left for the caller to call unknown
    ],
)
def test_english_number_words_are_read_exactly(words: str, value: Fraction, size: int) -> None:
    found = read_english_number(words.split())
    assert found is not None
    number, used = found
    assert (number.value, used) == (value, size)


def test_digits_with_a_unit() -> None:
    assert read_digits("1.2", "k").value == 1200
    assert read_digits("3.5", "万").value == 35_000


@pytest.mark.parametrize(
    ("value", "shown", "rounded"),
    [
        (Fraction(7), "7", False),
        (Fraction(3, 10), "0.3", False),
        (Fraction(-17, 8), "-2.125", False),
        (Fraction(1, 3), "0.333333", True),
        (Fraction(2, 3), "0.666667", True),
        (Fraction(100, 3), "33.333333", True),
        (Fraction(1, 7000), "0.000142857", True),
        (Fraction(2**70), str(2**70), False),
        (Fraction(1, 2**60), "0.000000000000000000867362", True),
    ],
)
def test_results_are_shown_exactly_or_marked_rounded(
    value: Fraction, shown: str, rounded: bool
) -> None:
    assert present(value) == (shown, rounded)


@given(st.fractions(max_denominator=10_000))
def test_an_exact_decimal_reads_back_as_the_same_value(value: Fraction) -> None:
    text = format_exact(value)
    if text is not None:
        assert Fraction(text) == value
