"""``calculator(expression)``: arithmetic for the model, evaluated safely.

The expression is parsed with :func:`ast.parse` and walked by a small interpreter that knows only
numbers, arithmetic operators, a fixed list of math functions and two constants. Nothing is ever
compiled or run by Python (no ``eval``/``exec``), names and attributes resolve to nothing, and
every operation that could take unbounded time or memory is refused *before* it runs
(``9**9**9`` would otherwise build a 370-million-digit integer).
"""

from __future__ import annotations

import ast
import math
import operator
import unicodedata
from collections.abc import Callable
from typing import Any

from hermes.errors import FieldProblem, ToolArgumentError, ToolExecutionError
from hermes.tools.decorator import tool

__all__ = ["CalculationError", "calculator", "evaluate"]

Number = int | float

#: Longest accepted expression (characters, after trimming).
MAX_EXPRESSION_CHARS = 1000
#: AST limits: a 1000-character expression has at most ~1000 nodes; 100 levels of nesting is
#: far beyond hand-written arithmetic and keeps the recursive walk shallow.
MAX_NODES = 1000
MAX_DEPTH = 100
#: Integer results are capped at ~4000 decimal digits (13,300 bits): still exact and printable
#: (Python refuses to print ints over 4300 digits) and cheap to compute.
MAX_INT_BITS = 13_300
#: Largest exponent accepted for integer powers (2**10000 has 3011 digits).
MAX_EXPONENT = 10_000
MAX_FUNCTION_ARGS = 100

_SYMBOLS = {"×": "*", "÷": "/", "·": "*", "−": "-", "–": "-", "^": "**", "π": "pi"}


class CalculationError(ToolExecutionError):
    """The expression is well formed but cannot be computed (division by zero, too large …)."""


def _fail(english: str, chinese: str) -> CalculationError:
    return CalculationError(f"{english} ({chinese})")


def _bad_expression(english: str, chinese: str) -> ToolArgumentError:
    return ToolArgumentError([FieldProblem("expression", f"{english} ({chinese})")])


def _sqrt(x: Number) -> float:
    if x < 0:
        raise _fail("square root of a negative number", "负数不能开平方")
    return math.sqrt(x)


def _log(x: Number, base: Number | None = None) -> float:
    if x <= 0:
        raise _fail("logarithm of a non-positive number", "对数的真数必须大于零")
    if base is None:
        return math.log(x)
    if base <= 0 or base == 1:
        raise _fail("logarithm base must be positive and not 1", "对数的底必须大于零且不等于1")
    return math.log(x, base)


def _log10(x: Number) -> float:
    return _log(x, 10)


def _round(x: Number, digits: Number | None = None) -> Number:
    if digits is None:
        return round(x)
    if not isinstance(digits, int) or abs(digits) > 100:
        raise _fail("round() digits must be an integer between -100 and 100", "保留位数无效")
    return round(x, digits)


def _extreme(pick: Callable[..., Number]) -> Callable[..., Number]:
    def choose(*values: Number) -> Number:
        if not values:
            raise _fail(f"{pick.__name__}() needs at least one number", "至少需要一个数")
        return pick(values)

    return choose


_FUNCTIONS: dict[str, tuple[Callable[..., Number], int, int]] = {
    # name: (implementation, min args, max args)
    "sqrt": (_sqrt, 1, 1),
    "abs": (abs, 1, 1),
    "round": (_round, 1, 2),
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "log": (_log, 1, 2),
    "log10": (_log10, 1, 1),
    "exp": (math.exp, 1, 1),
    "sin": (math.sin, 1, 1),
    "cos": (math.cos, 1, 1),
    "tan": (math.tan, 1, 1),
    "min": (_extreme(min), 1, MAX_FUNCTION_ARGS),
    "max": (_extreme(max), 1, MAX_FUNCTION_ARGS),
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}


def normalize(expression: str) -> str:
    """Full-width characters to ASCII (NFKC), and × ÷ ^ π − to their Python spelling."""
    text = unicodedata.normalize("NFKC", expression).strip()
    for symbol, replacement in _SYMBOLS.items():
        text = text.replace(symbol, replacement)
    return text.rstrip("=?").strip()  # "15*27=" and "15*27?" are questions, not syntax


def evaluate(expression: str) -> Number:
    """The value of ``expression``; ``ToolArgumentError`` if it is not accepted arithmetic,
    :class:`CalculationError` if it cannot be computed."""
    if not isinstance(expression, str) or not expression.strip():
        raise _bad_expression("expression is empty", "表达式为空")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise _bad_expression(
            f"expression is longer than {MAX_EXPRESSION_CHARS} characters", "表达式过长"
        )
    text = normalize(expression)
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise _bad_expression("not a valid arithmetic expression", "不是有效的算术表达式") from None
    _check_size(tree)
    return _present(_Evaluator().visit(tree.body))


def _check_size(tree: ast.AST) -> None:
    count = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES or depth > MAX_DEPTH:
            raise _bad_expression("expression is too complex", "表达式过于复杂")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _present(value: Number) -> Number:
    """Ints stay exact; floats keep 12 significant digits (0.1+0.2 → 0.3, 10/2 → 5)."""
    if isinstance(value, int):
        return value
    if not math.isfinite(value):
        raise _fail("result is too large", "结果太大")
    rounded = float(f"{value:.12g}")
    if rounded.is_integer() and abs(rounded) < 1e15:
        return int(rounded)
    return rounded


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


class _Evaluator:
    """Walks the few AST nodes arithmetic needs; any other node is refused by name."""

    def visit(self, node: ast.AST) -> Number:
        if isinstance(node, ast.Constant):
            return self._constant(node)
        if isinstance(node, ast.BinOp):
            return self._binary(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
            value = self.visit(node.operand)
            return -value if isinstance(node.op, ast.USub) else +value
        if isinstance(node, ast.Name):
            if node.id in _CONSTANTS:
                return _CONSTANTS[node.id]
            raise _bad_expression(f"unknown name {node.id!r}", "不认识的名称")
        if isinstance(node, ast.Call):
            return self._call(node)
        raise _bad_expression(f"unsupported syntax: {type(node).__name__}", "不支持的语法")

    def _constant(self, node: ast.Constant) -> Number:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _bad_expression("only numbers are allowed", "只允许数字")
        if (isinstance(value, int) and value.bit_length() > MAX_INT_BITS) or (
            isinstance(value, float) and not math.isfinite(value)
        ):
            raise _fail("number is too large", "数字太大")
        return value

    def _binary(self, node: ast.BinOp) -> Number:
        operation = _BINARY.get(type(node.op))
        if operation is None:
            raise _bad_expression(
                f"unsupported operator: {type(node.op).__name__}", "不支持的运算符"
            )
        left, right = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        elif (
            isinstance(node.op, ast.Mult)
            and isinstance(left, int)
            and isinstance(right, int)
            and left.bit_length() + right.bit_length() > MAX_INT_BITS + 1
        ):
            raise _fail("result is too large", "结果太大")
        return _checked(lambda: operation(left, right))

    def _call(self, node: ast.Call) -> Number:
        if not isinstance(node.func, ast.Name):
            raise _bad_expression(f"unsupported syntax: {type(node.func).__name__}", "不支持的语法")
        if node.func.id not in _FUNCTIONS:
            raise _bad_expression(f"unknown function {node.func.id!r}", "不支持的函数")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise _bad_expression("functions take plain numbers only", "函数只接受数字参数")
        function, least, most = _FUNCTIONS[node.func.id]
        if not least <= len(node.args) <= most:
            raise _bad_expression(
                f"{node.func.id}() takes {least}-{most} arguments", "函数参数个数不对"
            )
        args = [self.visit(arg) for arg in node.args]
        return _checked(lambda: function(*args))


def _check_power(base: Number, exponent: Number) -> None:
    if isinstance(base, int) and isinstance(exponent, int):
        if abs(exponent) > MAX_EXPONENT and abs(base) > 1:
            raise _fail(
                f"exponent is too large (limit {MAX_EXPONENT})", f"指数太大，上限 {MAX_EXPONENT}"
            )
        if exponent > 0 and abs(base) > 1 and exponent * math.log2(abs(base)) > MAX_INT_BITS:
            raise _fail("result is too large", "结果太大")
    elif isinstance(base, (int, float)) and base < 0 and not float(exponent).is_integer():
        raise _fail("fractional power of a negative number", "负数不能开非整数次方")


def _checked(compute: Callable[[], Number]) -> Number:
    try:
        value = compute()
    except ZeroDivisionError:
        raise _fail("division by zero", "除数不能为零") from None
    except OverflowError:
        raise _fail("result is too large", "结果太大") from None
    except ValueError as exc:  # math domain errors, e.g. floor(inf)
        raise _fail(f"math error: {exc}", "数学运算错误") from None
    if isinstance(value, complex):
        raise _fail("result is not a real number", "结果不是实数")
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail("result is too large", "结果太大")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise _fail("result is too large", "结果太大")
    return value


@tool(summary=lambda out: f"{out['expression']} = {out['result']}", timeout=5.0, side_effects=False)
async def calculator(expression: str) -> dict[str, Any]:
    """Evaluate an arithmetic expression exactly and safely.

    Supports + - * / // % ** (also × ÷ ^ and full-width digits), parentheses, sqrt, abs,
    round, floor, ceil, log, log10, exp, sin, cos, tan, min, max and the constants pi and e.

    Args:
        expression: The arithmetic to compute, e.g. "15*27" or "sqrt(2) * (3 + 4)".
    """
    # Async on purpose: evaluation is pure CPU work bounded to well under a millisecond by the
    # limits above, so it runs on the event loop instead of paying for a worker thread.
    result = evaluate(expression)
    return {"expression": expression.strip(), "result": result}
