"""The brain's parsers: Chinese numerals, arithmetic in free text, places in time questions."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.models.brain import (
    ParsedExpression,
    chinese_to_int,
    language_of,
    parse_expression,
    resolve_expression,
)
from hermes.models.brain.expression import MAX_TOKENS, format_number
from hermes.models.brain.extractors import extract_number, extract_timezone

_DIGITS = "零一二三四五六七八九"


def _section(number: int) -> str:
    """A number below 10,000 in standard Chinese (test-side reference writer)."""
    out, gap = "", False
    for value, unit in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit = number // value % 10
        if digit == 0:
            gap = gap or bool(out)
            continue
        out += ("零" if gap else "") + _DIGITS[digit] + unit
        gap = False
    return out


def int_to_chinese(number: int) -> str:
    """Standard Chinese for 0 ≤ number < 10^8 (一百零五, 十万, 一万零五…)."""
    if number == 0:
        return "零"
    high, low = divmod(number, 10_000)
    text = _section(low)
    if high:
        text = _section(high) + "万" + (("零" if low < 1000 else "") + _section(low) if low else "")
    return text[1:] if text.startswith("一十") else text


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("十", 10),
        ("十五", 15),
        ("二十", 20),
        ("一百零五", 105),
        ("一百一", 110),
        ("两千三", 2300),
        ("一千零十", 1010),
        ("三万五", 35_000),
        ("三万五千", 35_000),
        ("十万", 100_000),
        ("一万零五", 10_005),
        ("一亿两千万", 120_000_000),
        ("二零二四", 2024),
        ("两", 2),
        ("零", 0),
    ],
)
def test_chinese_numerals_read_as_integers(text: str, value: int) -> None:
    assert chinese_to_int(text) == value


@pytest.mark.parametrize("text", ["", "百", "万一", "三四百", "百十", "千千", "万万", "abc", "一x"])
def test_malformed_chinese_numerals_are_none(text: str) -> None:
    assert chinese_to_int(text) is None


@given(st.integers(min_value=0, max_value=99_999_999))
def test_every_number_up_to_a_hundred_million_round_trips(number: int) -> None:
    assert chinese_to_int(int_to_chinese(number)) == number


@given(st.text(alphabet="零〇一二两三四五六七八九十百千万亿", max_size=12))
def test_any_run_of_numeral_characters_parses_or_is_none(text: str) -> None:
    value = chinese_to_int(text)
    assert value is None or value >= 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("15乘以27等于多少？", ParsedExpression("15*27")),
        ("I have 3 cats, what is 4+5", ParsedExpression("4+5")),
        ("1,000 + 2,000", ParsedExpression("1000+2000")),
        ("1.5万加3千", ParsedExpression("15000+3000")),
        ("负五乘三", ParsedExpression("-5*3")),
        ("3*-5", ParsedExpression("3*-5")),
        ("9的平方根", ParsedExpression("9**0.5")),
        ("2 to the power of 10", ParsedExpression("2**10")),
        ("2^10", ParsedExpression("2**10")),
        ("15x27", ParsedExpression("15*27")),
        ("再加100呢？", ParsedExpression("+100", continues=True)),
        ("减去5呢", ParsedExpression("-5", continues=True)),
        ("平方呢", ParsedExpression("**2", continues=True)),
    ],
)
def test_arithmetic_is_found_in_free_text(text: str, expected: ParsedExpression) -> None:
    assert parse_expression(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "帮我算一下",
        "42",
        "-5",
        "(3+4",
        "3+4)",
        "15 27",
        "100平方米",
        "sometimes 5",
        "hello",
        "",
        "2024-05-01",
        "2024/5/1",
    ],
)
def test_text_without_a_well_formed_expression_gives_none(text: str) -> None:
    assert parse_expression(text) is None


def test_an_overlong_run_of_arithmetic_is_not_a_chat_calculation() -> None:
    assert parse_expression("1+" * MAX_TOKENS + "1") is None
    assert parse_expression("1+" * (MAX_TOKENS // 2 - 1) + "1") is not None


def test_a_continuation_needs_a_numeric_last_result() -> None:
    parsed = ParsedExpression("+100", continues=True)
    assert resolve_expression(parsed, 405) == "405+100"
    assert resolve_expression(parsed, 2.5) == "2.5+100"
    assert resolve_expression(parsed, -3) == "(-3)+100"
    assert resolve_expression(parsed, None) is None
    assert resolve_expression(parsed, True) is None
    assert resolve_expression(parsed, "not a number") is None


@pytest.mark.parametrize(
    ("value", "text"),
    [(405, "405"), (2.0, "2"), (0.1, "0.1"), (1e20, "100000000000000000000"), (float("nan"), None)],
)
def test_numbers_are_formatted_without_exponents(value: float, text: str | None) -> None:
    assert format_number(value) == text


_ARITHMETIC = st.text(
    alphabet=st.sampled_from(list("0123456789+-*/()x× .一二十百万加减乘以除的平方"))
    | st.characters(),
    max_size=40,
)


@given(_ARITHMETIC)
def test_a_found_expression_is_plain_python_arithmetic(text: str) -> None:
    parsed = parse_expression(text)
    if parsed is None:
        return
    resolved = resolve_expression(parsed, 7)
    assert resolved is not None
    assert set(resolved) <= set("0123456789+-*/().")
    tree = ast.parse(resolved, mode="eval")  # syntactically valid
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.operator, ast.unaryop)
    assert all(isinstance(node, allowed) for node in ast.walk(tree))


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("东京现在几点？", "东京"),
        ("现在几点", None),
        ("今天是什么日子", None),
        ("你好，现在几点", None),
        ("麻烦告诉我东京几点", "东京"),
        ("New York现在几点", "New York"),
        ("what time is it in London", "London"),
        ("what time is it at the moment", None),
        ("time in tokyo?", "tokyo"),
        ("what's the time in GMT-5", "GMT-5"),
    ],
)
def test_the_place_in_a_time_question_is_kept_as_written(text: str, place: str | None) -> None:
    assert extract_timezone(text) == place


def test_a_short_answer_to_which_city_is_the_place() -> None:
    assert extract_timezone("Paris", answering=True) == "Paris"
    assert extract_timezone("Paris") is None


def test_numbers_are_read_from_digits_or_chinese() -> None:
    assert extract_number("大概三十个") == 30
    assert extract_number("about 12.5 km") == 12.5
    assert extract_number("none at all") is None


@pytest.mark.parametrize(
    ("text", "lang"), [("hello", "en"), ("你好", "zh"), ("what is 你好", "zh"), ("", "en")]
)
def test_chinese_characters_make_the_reply_chinese(text: str, lang: str) -> None:
    assert language_of(text) == lang


@pytest.mark.parametrize(
    ("text", "expression"),
    [
        ("sqrt(2)*3", "sqrt(2)*3"),
        ("计算 sqrt(16)", "sqrt(16)"),
        ("what is log(100)?", "log(100)"),
        ("max(1, 2) + 1", "max(1,2)+1"),
        ("pi*2", "pi*2"),
    ],
)
def test_calculator_functions_reach_the_calculator_whole(text: str, expression: str) -> None:
    parsed = parse_expression(text)
    assert parsed is not None
    assert parsed.text == expression


@pytest.mark.parametrize("text", ["foo(2)*3", "evil(1)+1", "sqrtx(4)*2"])
def test_an_unknown_function_is_never_dropped_silently(text: str) -> None:
    # "foo(2)*3" must not become "(2)*3": that would be a wrong answer, not an honest one.
    assert parse_expression(text) is None
