"""Chinese numerals → integers, for the offline brain's calculator and number slots and for
memory's scans of free text (quantities in a remembered statement).

Covers the everyday forms a person types into a chat: ``十五``, ``一百零五``, ``两千三``
(= 2300, the colloquial short form), ``三万五千``, ``一亿两千万``, and digit-by-digit readings
such as ``二零二四``. Financial capitals (壹贰叁…) and fractions are out of scope.
"""

from __future__ import annotations

from collections.abc import Callable

DIGITS: dict[str, int] = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
# Units inside a section (below 万) and the section markers that multiply a whole section.
SMALL_UNITS: dict[str, int] = {"十": 10, "百": 100, "千": 1000}
SECTION_UNITS: dict[str, int] = {"万": 10_000, "亿": 100_000_000}

#: Every character a Chinese numeral may contain (for building tokenizer character classes).
NUMERAL_CHARS = "".join(DIGITS) + "".join(SMALL_UNITS) + "".join(SECTION_UNITS)
_ALL = frozenset(NUMERAL_CHARS)
_Parser = Callable[[str], "int | None"]


def chinese_to_int(text: str) -> int | None:
    """The value of a Chinese numeral, or ``None`` when ``text`` is not a well-formed one.

    ``None`` (rather than an exception) because the caller scans free text and simply skips
    runs of numeral characters that do not form a number (``万一`` in a sentence, for example).
    """
    if not text or any(ch not in _ALL for ch in text):
        return None
    if all(ch in DIGITS for ch in text):
        # A digit-by-digit reading (二零二四 = 2024); a single digit is the same thing.
        return int("".join(str(DIGITS[ch]) for ch in text))
    return _split_section(text, "亿", _below_yi)


def _below_yi(text: str) -> int | None:
    return _split_section(text, "万", _parse_section)


def _split_section(text: str, marker: str, parse_lower: _Parser) -> int | None:
    """``<high>marker<low>``: high and low are parsed by ``parse_lower``; no marker → lower only."""
    if marker not in text:
        return parse_lower(text)
    high_text, _, low_text = text.partition(marker)
    if not high_text or marker in low_text:
        return None
    high = parse_lower(high_text)
    if high is None:
        return None
    unit = SECTION_UNITS[marker]
    if low_text in DIGITS and DIGITS[low_text] != 0:
        # Colloquial short form: 三万五 = 35000, the lone digit counts in the next lower unit.
        return high * unit + DIGITS[low_text] * unit // 10
    low = parse_lower(low_text) if low_text else 0
    return None if low is None else high * unit + low


def _parse_section(text: str) -> int | None:
    """A number below 10,000 written with 十/百/千 (and 零 for skipped units)."""
    value = 0
    digit: int | None = None
    last_unit = 10_000  # units must strictly decrease: 百十 or 千千 are not numbers
    after_zero = False
    for index, ch in enumerate(text):
        if ch in DIGITS:
            if digit is not None:
                return None  # two digits in a row (三四百) is not a number
            if DIGITS[ch] == 0:
                after_zero = True
            else:
                digit = DIGITS[ch]
            continue
        if ch not in SMALL_UNITS:
            return None
        unit = SMALL_UNITS[ch]
        if unit >= last_unit:
            return None
        if digit is None:
            # Only 十 stands alone, and only first or after 零 (十五 = 15, 一千零十 = 1010).
            if unit != 10 or not (index == 0 or after_zero):
                return None
            digit = 1
        value += digit * unit
        digit, last_unit, after_zero = None, unit, False
    if digit is not None:
        if last_unit in (100, 1000) and not after_zero:
            value += digit * last_unit // 10  # 两千三 = 2300, 一百一 = 110
        else:
            value += digit
    return value
