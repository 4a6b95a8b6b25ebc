"""The calculator built-in: correct arithmetic, and abuse refused quickly and clearly."""

from __future__ import annotations

import ast
import inspect
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.errors import ToolArgumentError, ToolExecutionError
from hermes.models.base import ToolCall
from hermes.tools import BUILTIN_TOOLS, ToolContext, ToolRegistry, execute_tool_call, get_builtin
from hermes.tools.builtin import calculator as calculator_module
from hermes.tools.builtin.calculator import CalculationError, evaluate


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("15*27", 405),
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("7 // 2", 3),
        ("7 % 3", 1),
        ("2 ** 10", 1024),
        ("-2 ** 2", -4),
        ("+5 - -5", 10),
        ("1_000 * 3", 3000),
        ("1e3 + 1", 1001),
        ("2.5e-3 * 1000", 2.5),
        ("10 / 4", 2.5),
        ("10 / 2", 5),
        ("0.1 + 0.2", 0.3),
        ("1 / 3", 0.333333333333),
        ("2 ** 100", 2**100),
        ("2 ** -1", 0.5),
        ("15×27", 405),
        ("100÷8", 12.5),
        ("（１２＋３）×４", 60),
        ("2^10", 1024),
        ("15*27=", 405),
        ("sqrt(16)", 4),
        ("sqrt(2)", 1.41421356237),
        ("abs(-3)", 3),
        ("round(2.567, 2)", 2.57),
        ("round(2.5)", 2),
        ("floor(-2.5)", -3),
        ("ceil(2.1)", 3),
        ("log(8, 2)", 3),
        ("log(e)", 1),
        ("log10(1000)", 3),
        ("exp(0)", 1),
        ("sin(0) + cos(0)", 1),
        ("tan(0)", 0),
        ("min(4, 2, 8)", 2),
        ("max(4, 2, 8)", 8),
        ("pi", 3.14159265359),
        ("2 * π", 6.28318530718),
        ("2 ** 10000 // 2 ** 9999", 2),
    ],
)
def test_correct_results(expression: str, expected: Any) -> None:
    assert evaluate(expression) == expected


def test_redundant_parentheses_are_fine() -> None:
    assert evaluate("(" * 150 + "1" + ")" * 150) == 1


def test_integer_results_are_exact_ints() -> None:
    result = evaluate("123456789 * 987654321")
    assert result == 121932631112635269
    assert type(result) is int


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os')", "unknown function '__import__'"),
        ("__import__('os').system('true')", "unsupported syntax: Attribute"),
        ("().__class__.__bases__", "unsupported syntax: Attribute"),
        ("(1).__class__", "unsupported syntax: Attribute"),
        ("lambda: 1", "unsupported syntax: Lambda"),
        ("(1,) * 10**9", "unsupported syntax: Tuple"),
        ("[1] * 10**9", "unsupported syntax: List"),
        ("'a' * 10**9", "only numbers are allowed"),
        ("True + 1", "only numbers are allowed"),
        ("1j * 2", "only numbers are allowed"),
        ("x + 1", "unknown name 'x'"),
        ("open('/etc/passwd')", "unknown function 'open'"),
        ("abs(x=1)", "functions take plain numbers only"),
        ("max(*[1, 2])", "functions take plain numbers only"),
        ("max()", "max() takes 1-100 arguments"),
        ("1 if 1 else 2", "unsupported syntax: IfExp"),
        ("1 < 2", "unsupported syntax: Compare"),
        ("1 << 100", "unsupported operator: LShift"),
        ("[x for x in range(10)]", "unsupported syntax: ListComp"),
        ("(y := 3)", "unsupported syntax: NamedExpr"),
        ("1 +", "not a valid arithmetic expression"),
        ("import os", "not a valid arithmetic expression"),
        ("", "expression is empty"),
        ("   ", "expression is empty"),
        ("1" * 1001, "longer than 1000 characters"),
        ("1+" * 400 + "1", "too complex"),
        ("-" * 900 + "1", "too complex"),
        ("(" * 250 + "1" + ")" * 250, "not a valid arithmetic expression"),
    ],
)
def test_malformed_or_dangerous_expressions_are_invalid_arguments(
    expression: str, message: str
) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        evaluate(expression)
    assert caught.value.problems[0].path == "expression"
    assert message in caught.value.problems[0].message


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("9**9**9", "exponent is too large"),
        ("10**10**10", "exponent is too large"),
        ("2**-20000", "exponent is too large"),
        ("3**10000", "result is too large"),
        ("99999**9999", "result is too large"),
        ("7**5000 * 7**5000", "result is too large"),
        ("10**4000 / 3", "result is too large"),
        ("1e308 * 10", "result is too large"),
        ("1e999", "number is too large"),
        ("exp(1000)", "result is too large"),
        ("2.0 ** 100000", "result is too large"),
        ("1/0", "division by zero"),
        ("1//0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("0 ** -1", "division by zero"),
        ("sqrt(-1)", "square root of a negative number"),
        ("log(0)", "non-positive"),
        ("log(8, 1)", "base"),
        ("(-8) ** (1/3)", "fractional power of a negative number"),
        ("round(1, 1000)", "digits"),
    ],
)
def test_uncomputable_expressions_raise_calculation_errors(expression: str, message: str) -> None:
    with pytest.raises(CalculationError, match=message) as caught:
        evaluate(expression)
    assert isinstance(caught.value, ToolExecutionError)
    assert caught.value.code == "execution_error"


def test_errors_are_bilingual() -> None:
    with pytest.raises(CalculationError, match=r"division by zero \(除数不能为零\)"):
        evaluate("1/0")


def test_calculator_source_never_evaluates_code() -> None:
    tree = ast.parse(inspect.getsource(calculator_module))
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not called & {"eval", "exec", "compile", "__import__"}


@settings(max_examples=200)
@given(st.text(max_size=60))
def test_any_text_gives_a_number_or_a_tool_error(text: str) -> None:
    try:
        result = evaluate(text)
    except (ToolArgumentError, ToolExecutionError):
        return
    assert isinstance(result, (int, float))


@settings(max_examples=200)
@given(st.integers(-(10**12), 10**12), st.integers(-(10**12), 10**12))
def test_integer_arithmetic_matches_python(a: int, b: int) -> None:
    assert evaluate(f"({a}) + ({b}) * 3") == a + b * 3
    if b:
        assert evaluate(f"({a}) // ({b})") == a // b


def test_is_registered_as_a_builtin() -> None:
    built = BUILTIN_TOOLS["calculator"]
    assert get_builtin("calculator") is built
    assert built.parameters["required"] == ["expression"]
    assert built.is_async is True


async def test_through_the_executor_with_summary() -> None:
    registry = ToolRegistry([BUILTIN_TOOLS["calculator"]])
    call = ToolCall("c1", "calculator", {"expression": "15*27"})
    result = await execute_tool_call(registry, call, ToolContext())
    assert result.ok is True
    assert result.output == {"expression": "15*27", "result": 405}
    assert result.summary == "15*27 = 405"


async def test_through_the_executor_errors_become_results() -> None:
    registry = ToolRegistry([BUILTIN_TOOLS["calculator"]])
    for expression, error_type in (
        ("1/0", "execution_error"),
        ("os.system(1)", "invalid_arguments"),
    ):
        call = ToolCall("c1", "calculator", {"expression": expression})
        result = await execute_tool_call(registry, call, ToolContext())
        assert result.error is not None
        assert result.error.type == error_type
