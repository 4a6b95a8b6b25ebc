"""Arithmetic trees the brain reads from text: exact values, the calculator's input, the display.

A tree is built by :mod:`hermes.models.brain.expression` from what the user wrote. Three things
come out of it:

- :func:`exact_value` — the value as a ``Fraction`` (``None`` when it is not rational: square
  roots of non-squares, ``sin``, ``pi`` …), so 0.1 + 0.2 is 3/10 and 1/3 stays 1/3;
- :func:`calculator_text` — the same arithmetic for the ``calculator`` tool (digits,
  ``+ - * / ** ( )``, its function names; a non-decimal fraction as ``(1/3)``);
- :func:`display_text` — what the reply shows (``10%*50``, ``1/5+1``), with the fewest
  parentheses that keep its meaning.

:func:`present` turns a result into words-free text: ``7`` (never ``7.000000001``), ``0.3``,
and a rounded value marked as such (``≈ 0.333333``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from hermes.models.brain.numbers import Number, format_exact

__all__ = [
    "BinOp",
    "Call",
    "Const",
    "Neg",
    "Node",
    "Num",
    "Prev",
    "calculator_text",
    "continues",
    "display_text",
    "exact_value",
    "present",
    "present_float",
    "substitute",
]

#: Integer powers are computed exactly up to this exponent and this many bits of result (the
#: calculator's own limits are similar); past them the value is left to the calculator.
MAX_EXACT_EXPONENT = 10_000
MAX_EXACT_BITS = 13_300
#: Significant digits of a rounded result (1/3 ≈ 0.333333).
ROUNDED_DIGITS = 6

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "**": 4}
_UNARY, _ATOM = 3, 5


@dataclass(frozen=True, slots=True)
class Num:
    number: Number


@dataclass(frozen=True, slots=True)
class Const:
    name: str  # "pi"


@dataclass(frozen=True, slots=True)
class Neg:
    operand: Node


@dataclass(frozen=True, slots=True)
class BinOp:
    op: str  # + - * / **
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Call:
    name: str  # one of the calculator's functions
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Prev:
    """The previous result, where a follow-up ("再加100") continues it; see :func:`substitute`."""


Node = Num | Const | Neg | BinOp | Call | Prev


def substitute(node: Node, value: Node) -> Node:
    """``node`` with every :class:`Prev` replaced by ``value``."""
    if isinstance(node, Prev):
        return value
    if isinstance(node, Neg):
        return Neg(substitute(node.operand, value))
    if isinstance(node, BinOp):
        return BinOp(node.op, substitute(node.left, value), substitute(node.right, value))
    if isinstance(node, Call):
        return Call(node.name, tuple(substitute(arg, value) for arg in node.args))
    return node


def continues(node: Node) -> bool:
    """Whether ``node`` still contains a :class:`Prev` (it needs the previous result)."""
    if isinstance(node, Prev):
        return True
    if isinstance(node, Neg):
        return continues(node.operand)
    if isinstance(node, BinOp):
        return continues(node.left) or continues(node.right)
    if isinstance(node, Call):
        return any(continues(arg) for arg in node.args)
    return False


class _Inexact(Exception):
    """The value is not a (reasonably sized) rational number."""


def exact_value(node: Node) -> Fraction | None:
    """The exact value, or ``None`` when it is irrational, too large, or undefined (a division
    by zero: the calculator then reports it in its own words)."""
    try:
        return _exact(node)
    except (_Inexact, ZeroDivisionError, OverflowError):
        return None


def _exact(node: Node) -> Fraction:
    if isinstance(node, Num):
        return node.number.value
    if isinstance(node, Neg):
        return -_exact(node.operand)
    if isinstance(node, BinOp):
        left, right = _exact(node.left), _exact(node.right)
        if node.op == "+":
            return left + right
        if node.op == "-":
            return left - right
        if node.op == "*":
            return left * right
        if node.op == "/":
            return left / right
        return _power(left, right)
    if isinstance(node, Call) and node.name == "abs" and len(node.args) == 1:
        return abs(_exact(node.args[0]))
    if isinstance(node, Call) and node.name == "sqrt" and len(node.args) == 1:
        return _power(_exact(node.args[0]), Fraction(1, 2))
    raise _Inexact


def _power(base: Fraction, exponent: Fraction) -> Fraction:
    if exponent.denominator == 1:
        n = exponent.numerator
        if abs(n) > MAX_EXACT_EXPONENT:
            raise _Inexact
        bits = max(base.numerator.bit_length(), base.denominator.bit_length())
        if bits * abs(n) > MAX_EXACT_BITS:
            raise _Inexact
        return base**n
    if exponent == Fraction(1, 2) and base >= 0:
        top, bottom = math.isqrt(base.numerator), math.isqrt(base.denominator)
        if top * top == base.numerator and bottom * bottom == base.denominator:
            return Fraction(top, bottom)
    raise _Inexact


def calculator_text(node: Node) -> str:
    """The arithmetic as the ``calculator`` tool reads it."""
    return _render(node, _calc_atom)[0]


def display_text(node: Node) -> str:
    """The arithmetic as the reply shows it (``10%``, ``1/5`` as the user wrote them)."""
    return _render(node, _display_atom)[0]


def _calc_atom(number: Number) -> tuple[str, int]:
    value = number.value
    exact = format_exact(value)
    if exact is None:  # 1/3: the calculator divides, in parentheses so it stays one operand
        return f"({value.numerator}/{value.denominator})", _ATOM
    return exact, _UNARY if value < 0 else _ATOM


def _display_atom(number: Number) -> tuple[str, int]:
    shown = number.shown
    if shown.startswith("-"):
        return shown, _UNARY
    return shown, (_PRECEDENCE["/"] if "/" in shown else _ATOM)


def _render(node: Node, atom: Callable[[Number], tuple[str, int]]) -> tuple[str, int]:
    """Text and precedence of ``node`` (``atom`` renders a number)."""
    if isinstance(node, Num):
        return atom(node.number)
    if isinstance(node, Const):
        return node.name, _ATOM
    if isinstance(node, Prev):
        return "ans", _ATOM
    if isinstance(node, Neg):
        text, precedence = _render(node.operand, atom)
        plain = precedence >= _UNARY and not text.startswith("-")
        return "-" + (text if plain else f"({text})"), _UNARY
    if isinstance(node, Call):
        args = ",".join(_render(arg, atom)[0] for arg in node.args)
        return f"{node.name}({args})", _ATOM
    precedence = _PRECEDENCE[node.op]
    left, left_p = _render(node.left, atom)
    right, right_p = _render(node.right, atom)
    if node.op == "**":
        left = left if left_p == _ATOM else f"({left})"
        right = right if right_p >= _UNARY else f"({right})"
    else:
        left = left if left_p >= precedence else f"({left})"
        strict = node.op in ("-", "/")
        right_ok = right_p > precedence if strict else right_p >= precedence
        if precedence == 1 and right.startswith("-"):
            right_ok = False  # 5-(-3), not 5--3
        right = right if right_ok else f"({right})"
    return f"{left}{node.op}{right}", precedence


def present(value: Fraction) -> tuple[str, bool]:
    """``value`` as shown in a reply and whether it is rounded: ``("7", False)``,
    ``("0.3", False)``, ``("0.333333", True)``."""
    exact = format_exact(value)
    if exact is not None:
        return exact, False
    return _rounded(value), True


def present_float(value: float) -> tuple[str, bool]:
    """A result the brain could not compute exactly (the calculator's float): its text and
    whether it is rounded (any non-integer float is taken as rounded)."""
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value)), False
    return _rounded(Fraction(value)), True


def _rounded(value: Fraction) -> str:
    """``ROUNDED_DIGITS`` decimal places for |value| ≥ 1, else that many significant digits."""
    magnitude = abs(value)
    if magnitude >= 1 or magnitude == 0:
        places = ROUNDED_DIGITS
    else:
        # Digits needed to reach the first significant one, plus ROUNDED_DIGITS - 1 more.
        leading = -math.floor(math.log10(magnitude.numerator) - math.log10(magnitude.denominator))
        places = leading + ROUNDED_DIGITS - 1
    scaled = round(abs(value) * 10**places)
    whole, fraction = divmod(scaled, 10**places)
    text = f"{whole}.{fraction:0{places}d}".rstrip("0").rstrip(".")
    return "-" + text if value < 0 and text != "0" else text
