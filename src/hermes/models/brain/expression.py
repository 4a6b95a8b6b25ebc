"""Arithmetic in free text (Chinese and English) → an expression for the ``calculator`` tool.

``parse_expression("15乘以27等于多少？")`` gives ``ParsedExpression("15*27")``;
``parse_expression("再加100呢？")`` gives ``ParsedExpression("+100", continues=True)``, which
:func:`resolve_expression` applies to the session's last result (seed 003 §3.1: "15乘以27等于
多少？" then "再加100呢？" → 405+100 = 505).

The scanner finds number and operator tokens; any other non-blank text between two tokens ends
an expression, so "I have 3 cats, what is 4+5" yields ``4+5`` and never ``3 4+5``. The longest
well-formed run that contains an operator wins. Only digits, ``+ - * / ** ( ) .`` ever reach the
calculator.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Literal

from hermes.models.brain.numerals import NUMERAL_CHARS, SECTION_UNITS, chinese_to_int

_CN = f"[{NUMERAL_CHARS}]"
_CN_SMALL = "[零〇一二两三四五六七八九十]"
_UNIT_VALUES = {"百": 100, "千": 1000, **SECTION_UNITS}

# One alternation, longest phrases first inside each group. English words need \b so that
# "sometimes" is not "times".
_TOKEN = re.compile(
    rf"""
    (?P<num>\d+(?:\.\d+)?)(?:\s*(?P<unit>[百千万亿]))?
    |的\s*(?P<pow_n>\d+|{_CN_SMALL}+)\s*次方
    |(?P<postfix>的?平方根|的?平方(?![米公厘千分])|的?立方(?![米公厘千分])|\bsquared\b|\bcubed\b)
    |(?P<pow>\*\*|\^|\b(?:raised\s+)?to\s+the\s+power\s+of\b)
    |(?P<word_op>加上|加|减去|减掉|减|乘以|乘上|乘|除以
        |\bplus\b|\bminus\b|\bmultiplied\s+by\b|\btimes\b|\bdivided\s+by\b)
    |(?P<sym_op>[-+*/×÷−]|(?<![a-z])x(?![a-z]))
    |(?P<fn>\b(?:sqrt|abs|round|floor|ceil|log10|log|exp|sin|cos|tan|min|max)\s*(?=\())
    |(?P<const>\bpi\b|π)
    |(?P<comma>,)
    |(?P<neg>负)
    |(?P<cn>{_CN}+)
    |(?P<lp>[(\[])
    |(?P<rp>[)\]])
    """,
    re.VERBOSE,
)
#: More tokens than this is not an arithmetic question typed into a chat.
MAX_TOKENS = 200
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
# A calendar date (2024-05-01, 2024/5/1) is not a subtraction or a division.
_DATE = re.compile(r"(?<![\d.])\d{4}([-/])\d{1,2}\1\d{1,2}(?![\d.])")
_WORD_OPS = {
    "加上": "+", "加": "+", "plus": "+",
    "减去": "-", "减掉": "-", "减": "-", "minus": "-",
    "乘以": "*", "乘上": "*", "乘": "*", "times": "*", "multiplied by": "*",
    "除以": "/", "divided by": "/",
}  # fmt: skip
_SYMBOL_OPS = {"-": "-", "−": "-", "+": "+", "*": "*", "/": "/", "×": "*", "÷": "/", "x": "*"}
_POSTFIX = {"平方根": "**0.5", "平方": "**2", "立方": "**3", "squared": "**2", "cubed": "**3"}

_Kind = Literal["num", "op", "postfix", "lp", "rp", "fn", "comma"]


@dataclass(frozen=True, slots=True)
class _Token:
    kind: _Kind
    text: str
    start: int
    end: int
    from_word: bool = False  # an operator written as a word (减去, minus): never a sign


@dataclass(frozen=True, slots=True)
class ParsedExpression:
    """An arithmetic expression found in text.

    ``continues`` is true when the text starts with an operator ("再加100", "times 2"): the
    expression continues the previous result and ``text`` starts with that operator.
    """

    text: str
    continues: bool = False


def parse_expression(text: str) -> ParsedExpression | None:
    """The best arithmetic expression in ``text``, or ``None`` if there is none.

    An expression needs at least one operator: a bare number is not something to calculate.
    """
    normalized = _THOUSANDS.sub("", unicodedata.normalize("NFKC", text).lower())
    normalized = _DATE.sub(" date ", normalized)
    tokens = _tokens(normalized)
    if tokens is None:
        return None
    best: ParsedExpression | None = None
    best_size = 0
    for run in _runs(tokens, normalized):
        if _glued_to_a_word(normalized, run[0].start):
            continue  # "foo(2)*3": an unknown function, never silently "(2)*3"
        parsed = _check_run(run)
        if parsed is not None and len(run) > best_size:
            best, best_size = parsed, len(run)
    return best


def resolve_expression(parsed: ParsedExpression, last_result: object) -> str | None:
    """The calculator expression: ``parsed.text``, or the last result + a continuation.

    ``None`` when the expression continues a previous result but there is none to continue.
    """
    if not parsed.continues:
        return parsed.text
    base = format_number(last_result)
    if base is None:
        return None
    if base.startswith("-"):
        base = f"({base})"  # (-5)**2, not -5**2
    return base + parsed.text


def format_number(value: object) -> str | None:
    """A number as calculator input text (no exponent notation); ``None`` for non-numbers."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        return None
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return None
    if not number.is_finite():
        return None
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(), "f")


def _tokens(text: str) -> list[_Token] | None:
    """The tokens of ``text``; ``None`` past :data:`MAX_TOKENS` (not a chat calculation, and
    scanning it would cost more than a whole turn should)."""
    tokens: list[_Token] = []
    for match in _TOKEN.finditer(text):
        token = _token_from(match)
        if token is not None:
            tokens.append(token)
            if len(tokens) > MAX_TOKENS:
                return None
    return tokens


def _token_from(match: re.Match[str]) -> _Token | None:
    start, end = match.span()
    group = match.lastgroup
    digits = match.group("num")
    if digits is not None:
        unit = match.group("unit")
        if unit is None and digits.isdigit():
            return _Token("num", str(int(digits)), start, end)  # the common case, no Decimal
        value = Decimal(digits) * (_UNIT_VALUES[unit] if unit else 1)
        return _Token("num", format_number(value) or "0", start, end)
    if match.group("pow_n") is not None:
        exponent = _number_text(match.group("pow_n"))
        return None if exponent is None else _Token("postfix", "**" + exponent, start, end)
    if group == "postfix":
        word = match.group("postfix").removeprefix("的")
        return _Token("postfix", _POSTFIX[word], start, end)
    if group == "pow":
        return _Token("op", "**", start, end)
    if group == "word_op":
        word = " ".join(match.group("word_op").split())
        return _Token("op", _WORD_OPS[word], start, end, from_word=True)
    if group == "sym_op":
        return _Token("op", _SYMBOL_OPS[match.group("sym_op")], start, end)
    if group == "neg":
        return _Token("op", "-", start, end)
    if group == "fn":
        return _Token("fn", match.group("fn").strip(), start, end)
    if group == "const":
        return _Token("num", "pi", start, end)
    if group == "comma":
        return _Token("comma", ",", start, end)
    if group == "cn":
        number = chinese_to_int(match.group("cn"))
        return None if number is None else _Token("num", str(number), start, end)
    if group == "lp":
        return _Token("lp", "(", start, end)
    return _Token("rp", ")", start, end)


def _number_text(text: str) -> str | None:
    if text.isdigit():
        return str(int(text))
    value = chinese_to_int(text)
    return None if value is None else str(value)


def _glued_to_a_word(text: str, start: int) -> bool:
    """Whether a run starts right after a letter (part of a name we do not know)."""
    return start > 0 and (text[start - 1].isascii() and text[start - 1].isalpha())


def _runs(tokens: list[_Token], text: str) -> list[list[_Token]]:
    """Split tokens into runs separated by anything but whitespace."""
    runs: list[list[_Token]] = []
    current: list[_Token] = []
    for token in tokens:
        if current and text[current[-1].end : token.start].strip():
            runs.append(current)
            current = []
        current.append(token)
    if current:
        runs.append(current)
    return runs


def _check_run(run: list[_Token]) -> ParsedExpression | None:
    """The run as an expression if it is well formed and has an operator."""
    first = run[0]
    continues = first.kind == "postfix" or (
        first.kind == "op" and (first.text != "-" or first.from_word)
    )
    # A continuation is checked as if an operand stood before it.
    expect_operand = not continues
    depth = 0
    has_operator = False
    for token in run:
        if expect_operand:
            if token.kind == "num":
                expect_operand = False
            elif token.kind == "lp":
                depth += 1
            elif token.kind == "fn":
                has_operator = True  # its "(" follows (the pattern looks ahead for it)
            elif not (token.kind == "op" and token.text in "+-"):  # a sign
                return None
            continue
        if token.kind == "comma" and depth > 0:
            expect_operand = True  # min(1, 2)
        elif token.kind == "op":
            expect_operand, has_operator = True, True
        elif token.kind == "postfix":
            has_operator = True
        elif token.kind == "rp" and depth > 0:
            depth -= 1
        else:
            return None  # "15 27", "3)", "(3+4)(5)"
    if expect_operand or depth or not (has_operator or continues):
        return None
    return ParsedExpression("".join(token.text for token in run), continues=continues)
