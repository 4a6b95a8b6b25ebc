"""Templates: whole values keep their JSON type, indexes and paths, clear errors (property
tests)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.tools.plans.templates import (
    Ref,
    TemplateError,
    TemplateSyntaxError,
    lookup_path,
    parse_ref,
    references,
    render,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
keys = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,10}", fullmatch=True)


def _resolver(results: dict[str, Any], params: dict[str, Any] | None = None) -> Any:
    def resolve(ref: Ref) -> Any:
        if ref.node is None:
            return lookup_path(params or {}, ref, what="the plan's params")
        return lookup_path(results[ref.node], ref, what=f"the result of node {ref.node}")

    return resolve


@given(value=json_values, key=keys)
def test_a_whole_value_template_keeps_the_json_type(value: Any, key: str) -> None:
    resolved = render({"arg": f"{{{{n1.result.{key}}}}}"}, _resolver({"n1": {key: value}}))
    assert resolved == {"arg": value}
    assert type(resolved["arg"]) is type(value)


@given(items=st.lists(json_values, min_size=1, max_size=6), data=st.data())
def test_an_index_in_range_picks_that_item(items: list[Any], data: st.DataObject) -> None:
    index = data.draw(st.integers(-len(items), len(items) - 1))
    assert (
        render(f"{{{{n1.result.rooms[{index}]}}}}", _resolver({"n1": {"rooms": items}}))
        == (items[index])
    )


@given(items=st.lists(json_values, max_size=6), extra=st.integers(0, 50))
def test_an_index_out_of_range_is_a_clear_error(items: list[Any], extra: int) -> None:
    index = len(items) + extra
    with pytest.raises(TemplateError, match=r"out of range .* has \d+ item"):
        render(f"{{{{n1.result.rooms[{index}]}}}}", _resolver({"n1": {"rooms": items}}))


@given(result=st.dictionaries(keys, json_values, max_size=5), key=keys)
def test_a_missing_field_is_a_clear_error_naming_it(result: dict[str, Any], key: str) -> None:
    if key in result:
        return
    with pytest.raises(TemplateError, match=f"no field '{key}'"):
        render(f"{{{{n1.result.{key}}}}}", _resolver({"n1": result}))


@given(scalar=st.none() | st.booleans() | st.integers() | st.text(), key=keys)
def test_a_step_into_a_scalar_is_a_clear_error(scalar: Any, key: str) -> None:
    with pytest.raises(TemplateError, match="not an object"):
        render(f"{{{{n1.result.{key}}}}}", _resolver({"n1": scalar}))


@given(value=json_values, prefix=st.text(max_size=10), suffix=st.text(max_size=10))
def test_a_template_inside_text_becomes_text(value: Any, prefix: str, suffix: str) -> None:
    if "{{" in prefix + suffix or "}}" in prefix + suffix or "{" in prefix[-1:] + suffix[:1]:
        return
    if "}" in prefix[-1:] or "}" in suffix[:1]:
        return
    text = render(prefix + "{{n1.result}}" + suffix + "!", _resolver({"n1": value}))
    shown = (
        value
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    )
    assert text == prefix + shown + suffix + "!"


def test_two_templates_in_one_string_are_two_values() -> None:
    resolve = _resolver({}, {"a": 41, "b": 1})
    assert render("{{params.a}} + {{params.b}}", resolve) == "41 + 1"
    assert render("{{params.a}}{{params.b}}", resolve) == "411"
    assert render("{{params.a}}", resolve) == 41


def test_params_and_quoted_keys() -> None:
    resolve = _resolver({"n1": {"a b": [1, {"c": True}]}}, {"city": "北京"})
    assert render('{{ n1.result["a b"][1].c }}', resolve) is True
    assert render("{{params.city}}", resolve) == "北京"
    assert render(["{{params.city}}", {"k": 1}], resolve) == ["北京", {"k": 1}]


def test_references_find_templates_in_nested_values() -> None:
    found = list(references({"a": ["x {{n1.result.id}}", {"b": "{{params.p}}"}], "c": 3}))
    assert sorted((r.node or "", r.path) for r in found) == [("", ("p",)), ("n1", ("id",))]


@pytest.mark.parametrize("inner", ["n1", "n1.output", "params", "params[0]", " ", "n1.result..x"])
def test_malformed_templates_are_syntax_errors(inner: str) -> None:
    with pytest.raises(TemplateSyntaxError):
        parse_ref(inner)
