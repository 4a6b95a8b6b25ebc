"""Declaring policies with ``@tool(...)``: defaults, shorthands and mistakes caught early."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.tools import Tool, tool
from hermes.tools.decorator import make_tool
from hermes.tools.policies import BreakerPolicy, RetryPolicy, canonical_json, idempotency_key


def order(order_id: str, amount: float = 0.0) -> str:
    return order_id


def build(**options: Any) -> Tool:
    return make_tool(order, **options)


def test_a_plain_tool_has_every_policy_off() -> None:
    plain = build()
    assert (plain.retry, plain.circuit_breaker, plain.idempotency_key, plain.cache_ttl) == (
        None,
        None,
        None,
        None,
    )
    assert (plain.permissions, plain.requires_approval, plain.sandbox) == ((), False, "none")
    assert (plain.max_output_chars, plain.parser, plain.post_validate) == (None, None, None)
    assert (plain.timeout, plain.idempotency_ttl) == (10.0, 86_400.0)


def test_shorthands_expand_to_policies() -> None:
    declared = build(retry=4, circuit_breaker=True, permissions="orders:write")
    assert declared.retry == RetryPolicy(max_attempts=4)
    assert declared.circuit_breaker == BreakerPolicy()
    assert declared.permissions == ("orders:write",)


def test_retry_true_is_the_default_policy_and_one_attempt_is_none() -> None:
    assert build(retry=True).retry == RetryPolicy()
    assert build(retry=1).retry is None


def test_idempotency_declarations() -> None:
    assert build(idempotent=True).idempotency_key == ()
    assert build(idempotency_key="order_id").idempotency_key == ("order_id",)
    assert build(idempotency_key=["order_id", "amount"]).idempotency_key == ("order_id", "amount")
    assert build(idempotent=True, idempotency_ttl=60).idempotency_ttl == 60.0


def test_the_decorator_accepts_the_same_options() -> None:
    @tool(retry=RetryPolicy(max_attempts=2), requires_approval=True, sandbox="process")
    def refund(order_id: str) -> str:
        return order_id

    declared: Tool = refund.__hermes_tool__  # type: ignore[attr-defined]
    assert (declared.retry.max_attempts, declared.requires_approval, declared.sandbox) == (  # type: ignore[union-attr]
        2,
        True,
        "process",
    )
    assert refund("A-1") == "A-1"  # still the original function


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"retries": 3}, TypeError, "unknown option(s) retries"),
        ({"retry": 0}, ValueError, "retry=n needs n >= 1"),
        ({"retry": "3"}, TypeError, "retry must be"),
        ({"circuit_breaker": 5}, TypeError, "circuit_breaker must be"),
        ({"idempotency_key": ()}, TypeError, "idempotency_key must name"),
        ({"idempotency_key": ("nope",)}, ValueError, "unknown arguments ['nope']"),
        ({"idempotent": "yes"}, TypeError, "idempotent must be True or False"),
        ({"idempotency_ttl": -1}, ValueError, "idempotency_ttl must be a positive"),
        ({"cache_ttl": float("inf")}, ValueError, "cache_ttl must be a positive"),
        ({"permissions": ["ok", ""]}, TypeError, "permissions must be non-empty strings"),
        ({"requires_approval": 1}, TypeError, "requires_approval must be True or False"),
        ({"sandbox": "docker"}, ValueError, 'sandbox must be "none" or "process"'),
        ({"max_output_chars": 0}, ValueError, "max_output_chars must be a positive integer"),
        ({"max_output_chars": True}, ValueError, "max_output_chars must be a positive integer"),
        ({"parser": "json"}, TypeError, "parser must be a callable"),
        ({"post_validate": 42}, TypeError, "post_validate must be a callable"),
        ({"timeout": 0}, ValueError, "timeout must be a positive number"),
    ],
)
def test_mistakes_are_raised_at_declaration_naming_the_tool(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        build(**options)
    assert str(caught.value).startswith("tool 'order': ")
    assert message in str(caught.value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=4), json_values, max_size=5))
def test_key_order_never_changes_a_cache_or_idempotency_key(arguments: dict[str, Any]) -> None:
    reversed_order = dict(reversed(list(arguments.items())))
    assert canonical_json(arguments) == canonical_json(reversed_order)
    assert idempotency_key("u1", canonical_json(arguments)) == idempotency_key(
        "u1", canonical_json(reversed_order)
    )


@given(st.text(max_size=8), st.text(max_size=8))
def test_idempotency_keys_differ_per_user(first: str, second: str) -> None:
    material = canonical_json({"order_id": "A-1"})
    same_key = idempotency_key(first, material) == idempotency_key(second, material)
    assert same_key is (first == second)
