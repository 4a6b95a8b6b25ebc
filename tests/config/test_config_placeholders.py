"""Properties of the placeholder expander (a parser: checked with generated inputs)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.config.placeholders import expand_placeholders, expand_tree
from hermes.errors import ConfigError

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)
plain = st.text(alphabet=st.characters(blacklist_characters="$"), max_size=40)
values = st.text(max_size=30)


@given(plain)
def test_text_without_dollar_is_unchanged(text):
    assert expand_placeholders(text, {}, key="k") == text


@given(plain, names, values, plain)
def test_set_variable_is_substituted_once_and_verbatim(before, name, value, after):
    text = before + "${" + name + "}" + after
    assert expand_placeholders(text, {name: value}, key="k") == before + value + after


@given(plain, names, plain)
def test_escaped_placeholder_becomes_literal(before, name, after):
    text = before + "$${" + name + "}" + after
    assert expand_placeholders(text, {name: "x"}, key="k") == before + "${" + name + "}" + after


@given(names, st.text(alphabet=st.characters(blacklist_characters="}"), max_size=20))
def test_default_applies_when_unset(name, default):
    assert expand_placeholders("${" + name + ":-" + default + "}", {}, key="k") == default


@given(names)
def test_unset_variable_without_default_raises_naming_it(name):
    with pytest.raises(ConfigError) as caught:
        expand_placeholders("${" + name + "}", {}, key="a.b", file="f.yaml")
    assert name in str(caught.value)
    assert caught.value.key == "a.b"
    assert caught.value.file == "f.yaml"


@given(st.text(max_size=40))
def test_any_text_either_expands_or_raises_config_error(text):
    try:
        result = expand_placeholders(text, {"A": "1"}, key="k")
    except ConfigError:
        return
    assert isinstance(result, str)


@pytest.mark.parametrize("text", ["${", "${}", "${1A}", "${A B}", "x ${A", "${A:default}"])
def test_malformed_placeholders_raise(text):
    with pytest.raises(ConfigError, match="malformed"):
        expand_placeholders(text, {"A": "1"}, key="k")


def test_tree_expansion_leaves_keys_and_non_strings_alone():
    data = {"${K}": {"n": 1, "b": True, "none": None, "s": "${V}"}, "l": ["${V}", 2]}
    assert expand_tree(data, {"V": "v"}) == {
        "${K}": {"n": 1, "b": True, "none": None, "s": "v"},
        "l": ["v", 2],
    }
