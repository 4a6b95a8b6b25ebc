"""Numbers as people write them in a chat, read exactly (``fractions.Fraction``).

Chinese: ``三点五`` 3.5, ``零点五``, ``3点5``, ``五分之一`` 1/5, ``四分之三``, ``三又二分之一`` 3.5,
``百分之十`` 10%, ``负三`` -3, ``一万二`` 12000, ``两千零五``, ``一百零八``, ``3.5万``, ``1.2亿``.
English: ``three and a half``, ``twelve``, ``one hundred and five``, ``twenty-one``, ``a quarter``,
``three quarters``, ``two thirds``, ``point five``, ``ten percent``, ``1.2k``, ``a dozen``.

Every reader returns ``None`` for text that is not a whole, well-formed number — never a part
of it: "三四百" (three or four hundred) is not 300, so the caller can say it could not read it
instead of computing with a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from hermes.text.numerals import DIGITS, chinese_to_int

__all__ = [
    "EN_NUMBER_WORDS",
    "ZH_NUMBER_CHARS",
    "Number",
    "format_exact",
    "read_chinese_number",
    "read_digits",
    "read_english_number",
]

#: Characters a Chinese number phrase may contain (besides ASCII digits and ".").
ZH_NUMBER_CHARS = "零〇一二两三四五六七八九十百千万亿点分之又"
_ZH_UNITS = {"万": 10_000, "亿": 100_000_000, "千": 1000, "百": 100}
_DIGIT_SUFFIX = {"k": 1000, **_ZH_UNITS}
_PLAIN_DIGITS = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class Number:
    """A number read from text: its exact value and how to show it (``3.5``, ``1/5``, ``10%``)."""

    value: Fraction
    shown: str
    percent: bool = False


def format_exact(value: Fraction) -> str | None:
    """``value`` as an exact decimal (``7``, ``0.3``, ``-2.125``); ``None`` when it has no
    finite decimal expansion (1/3) or needs more than 15 decimal places."""
    if value.denominator == 1:
        return str(value.numerator)
    denominator, twos, fives = value.denominator, 0, 0
    while denominator % 2 == 0:
        denominator, twos = denominator // 2, twos + 1
    while denominator % 5 == 0:
        denominator, fives = denominator // 5, fives + 1
    places = max(twos, fives)
    if denominator != 1 or places > 15:
        return None
    scaled = abs(value) * 10**places
    whole, fraction = divmod(int(scaled), 10**places)
    text = f"{whole}.{fraction:0{places}d}".rstrip("0").rstrip(".")
    return "-" + text if value < 0 else text


def _shown(value: Fraction) -> str:
    exact = format_exact(value)
    return exact if exact is not None else f"{value.numerator}/{value.denominator}"


# -- digits -----------------------------------------------------------------------------------


def read_digits(digits: str, suffix: str | None = None) -> Number:
    """``3.5`` / ``3.5万`` / ``1.2k`` (``digits`` is ``\\d+(\\.\\d+)?``, ``suffix`` a unit)."""
    value = Fraction(digits)
    if suffix:
        value *= _DIGIT_SUFFIX[suffix.lower()]
    return Number(value, _shown(value))


# -- Chinese ----------------------------------------------------------------------------------


def read_chinese_number(text: str) -> Number | None:
    """A whole Chinese number phrase (Chinese numerals, possibly mixed with ASCII digits)."""
    if not text:
        return None
    if text.startswith("负"):
        inner = read_chinese_number(text[1:])
        if inner is None or inner.value == 0 or inner.shown.startswith("-"):
            return None
        return Number(-inner.value, "-" + inner.shown, inner.percent)
    whole, sep, rest = text.partition("又")
    if sep:  # 三又二分之一 = 3 + 1/2
        base, part = _zh_plain(whole), _zh_fraction(rest)
        if base is None or part is None or part.percent or base.denominator != 1:
            return None
        mixed = base + part.value
        return Number(mixed, _shown(mixed))
    if "分之" in text:
        return _zh_fraction(text)
    value = _zh_plain(text)
    return None if value is None else Number(value, _shown(value))


def _zh_fraction(text: str) -> Number | None:
    """``五分之一`` = 1/5, ``百分之十`` = 10%, ``千分之五`` = 5/1000."""
    below, sep, above = text.partition("分之")
    if not sep or "分之" in above:
        return None
    numerator = _zh_plain(above)
    if numerator is None:
        return None
    if below == "百":
        value = numerator / 100
        return Number(value, (format_exact(numerator) or _shown(numerator)) + "%", percent=True)
    denominator = Fraction(_ZH_UNITS[below]) if below in ("千", "万") else _zh_plain(below)
    if denominator is None or denominator == 0:
        return None
    value = numerator / denominator
    numerator_shown = format_exact(numerator) or _shown(numerator)
    denominator_shown = format_exact(denominator) or _shown(denominator)
    return Number(value, f"{numerator_shown}/{denominator_shown}")


def _zh_plain(text: str) -> Fraction | None:
    """An integer or decimal in Chinese numerals or digits: 三点五, 3点5, 三点五万, 3.5万."""
    if not text:
        return None
    unit = 1
    if text[-1] in "万亿" and ("点" in text or "." in text):
        unit, text = _ZH_UNITS[text[-1]], text[:-1]  # 三点五万 = 3.5 × 10000
    integer_text, sep, decimals_text = text.replace(".", "点").partition("点")
    integer = _zh_integer(integer_text)
    if integer is None:
        return None
    if not sep:
        return Fraction(integer * unit)
    decimals = _zh_digit_string(decimals_text)
    if decimals is None:
        return None
    return Fraction(f"{integer}.{decimals}") * unit


def _zh_integer(text: str) -> int | None:
    if not text:
        return None
    if text.isascii():
        return int(text) if text.isdigit() else None
    if text[-1] in _ZH_UNITS and text[:-1].isdigit():  # 5千, 3万 (digits with a unit)
        return int(text[:-1]) * _ZH_UNITS[text[-1]]
    if any(ch.isdigit() for ch in text):
        return None  # "3百5" and the like: not a way numbers are written
    return chinese_to_int(text)


def _zh_digit_string(text: str) -> str | None:
    """The digits after 点, read one by one (三点一四 = 3.14)."""
    if not text:
        return None
    if text.isascii():
        return text if text.isdigit() else None
    if all(ch in DIGITS for ch in text):
        return "".join(str(DIGITS[ch]) for ch in text)
    return None


# -- English ----------------------------------------------------------------------------------

_ONES = {
    "zero": 0, "oh": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES = {"thousand": 1000, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_DENOMINATORS = {
    "half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4, "fourth": 4,
    "fourths": 4, "fifth": 5, "fifths": 5, "sixth": 6, "sixths": 6, "seventh": 7, "sevenths": 7,
    "eighth": 8, "eighths": 8, "ninth": 9, "ninths": 9, "tenth": 10, "tenths": 10,
    "hundredth": 100, "hundredths": 100, "thousandth": 1000, "thousandths": 1000,
}  # fmt: skip
#: Every word that can start or continue an English number phrase.
EN_NUMBER_WORDS = frozenset(
    [*_ONES, *_TENS, *_SCALES, *_DENOMINATORS, "hundred", "a", "an", "and", "point", "dozen"]
)
#: Words that make a number phrase by themselves (not "a", "and", "point"…).
EN_NUMBER_STARTS = frozenset([*_ONES, *_TENS, "a", "an", "half", "point", "dozen"])


def read_english_number(words: list[str]) -> tuple[Number, int] | None:
    """The longest number phrase at the start of ``words`` (lowercase words, hyphenated tens
    split: "twenty-one" → "twenty", "one") and how many words it took; ``None`` if none."""
    for size in range(min(len(words), 12), 0, -1):
        phrase = words[:size]
        value = _en_phrase(phrase)
        if value is None:
            continue
        fraction = phrase[-1] in _DENOMINATORS and "and" not in phrase
        shown = f"{value.numerator}/{value.denominator}" if fraction else _shown(value)
        return Number(value, shown), size
    return None


def _en_phrase(words: list[str]) -> Fraction | None:
    if not words or words[-1] in ("and", "a", "an", "point"):
        return None
    if "point" in words:
        at = words.index("point")
        whole = _en_cardinal(words[:at]) if at else 0
        digits = [_ONES.get(w) for w in words[at + 1 :]]
        if whole is None or not digits or any(d is None or d > 9 for d in digits):
            return None
        return Fraction(f"{whole}.{''.join(str(d) for d in digits)}")
    if "and" in words:  # "three and a half", "one hundred and five"
        at = len(words) - 1 - words[::-1].index("and")
        fraction = _en_fraction(words[at + 1 :])
        if fraction is not None:
            whole = _en_cardinal(words[:at])
            return None if whole is None else whole + fraction
    fraction = _en_fraction(words)
    if fraction is not None:
        return fraction
    cardinal = _en_cardinal(words)
    return None if cardinal is None else Fraction(cardinal)


def _en_fraction(words: list[str]) -> Fraction | None:
    """``a half``, ``half``, ``three quarters``, ``two thirds``, ``one fifth``, ``three halves``."""
    if not words or words[-1] not in _DENOMINATORS:
        return None
    word = words[-1]
    count = words[:-1]
    if not count:
        return Fraction(1, 2) if word == "half" else None
    numerator = 1 if count in (["a"], ["an"]) else _en_cardinal(count)
    if numerator is None or numerator == 0 or (numerator == 1) == word.endswith("s"):
        return None  # "one thirds", "two third"
    return Fraction(numerator, _DENOMINATORS[word])


def _en_cardinal(words: list[str]) -> int | None:
    """``one hundred and five``, ``twenty one``, ``three thousand two hundred``, ``a dozen``."""
    if words in (["a", "dozen"], ["one", "dozen"], ["dozen"]):
        return 12
    if len(words) > 1 and words[0] in ("a", "an") and words[1] in ("hundred", *_SCALES):
        words = ["one", *words[1:]]  # a hundred, a thousand
    total, group, last_scale = 0, None, 10**15
    for index, word in enumerate(words):
        if word in _ONES or word in _TENS:
            value = _ONES.get(word, _TENS.get(word, 0))
            group = _add_to_group(group, value)
            if group is None:
                return None
        elif word == "hundred":
            if group is None or not 1 <= group <= 99:
                return None
            group *= 100
        elif word == "and":
            # Only "hundred and five" / "thousand and five" (British); "one and two" is a list.
            hundreds = group is not None and group >= 100 and group % 100 == 0
            after_scale = group is None and total > 0
            if not (hundreds or after_scale) or index + 1 == len(words):
                return None
        elif word in _SCALES:
            scale = _SCALES[word]
            if group is None or group == 0 or scale >= last_scale:
                return None
            total, group, last_scale = total + group * scale, None, scale
        else:
            return None
    if group is None and total == 0:
        return None
    return total + (group or 0)


def _add_to_group(group: int | None, value: int) -> int | None:
    """``group`` (below 1000) continued by a ones/tens word, or ``None`` if that is no number."""
    if group is None:
        return value
    if group % 100 == 0 and group >= 100 and value < 100:
        return group + value  # one hundred five
    tens = group % 100
    if tens >= 20 and tens % 10 == 0 and 1 <= value <= 9:
        return group + value  # twenty one
    return None
