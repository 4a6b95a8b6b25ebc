"""The ``rbac:`` section and the plugin/toolset keys of ``tools:``: off by default, every
mistake named by its key."""

from __future__ import annotations

import graphlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from hermes.config import HermesConfig
from hermes.config.schema import RbacConfig, RoleConfig
from hermes.errors import ConfigError

RBAC = """\
rbac:
  enabled: true
  default_role: guest
  roles:
    guest: {scopes: [weather:read]}
    staff: {scopes: ["order:*"], inherits: [guest]}
    admin: {scopes: ["*"], inherits: [staff]}
  users:
    alice: {roles: [admin]}
    bob: {roles: [staff]}
  audit_log: logs/audit.jsonl
"""


def _error(load_text, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_text(text)
    return caught.value


def test_rbac_is_off_by_default_with_no_roles_or_users():
    rbac = HermesConfig().rbac
    assert rbac.enabled is False
    assert (rbac.roles, rbac.users, rbac.default_role) == ({}, {}, None)
    assert rbac.audit_log == ".hermes/audit.log"


def test_tools_plugin_and_toolset_keys_default_to_off_and_twenty():
    tools = HermesConfig().tools
    assert tools.plugins_dir is None
    assert tools.toolset_limit == 20


def test_a_full_rbac_section_loads(load_text):
    rbac = load_text(RBAC).config.rbac
    assert rbac.enabled is True
    assert rbac.default_role == "guest"
    assert rbac.roles["admin"].inherits == ["staff"]
    assert rbac.users["bob"].roles == ["staff"]
    assert rbac.audit_log == "logs/audit.jsonl"


def test_an_empty_rbac_section_means_the_defaults(load_text):
    assert load_text("rbac:\n").config.rbac == HermesConfig().rbac


def test_numeric_user_ids_are_read_as_strings(load_text):
    rbac = load_text("rbac:\n  roles: {r: {}}\n  users:\n    10086: {roles: [r]}\n").config.rbac
    assert list(rbac.users) == ["10086"]


def test_a_user_with_an_unknown_role_names_the_users_key_the_user_and_the_role(load_text):
    text = "rbac:\n  roles: {staff: {}}\n  users:\n    alice: {roles: [admn]}\n"
    error = _error(load_text, text)
    assert error.key == "rbac.users"
    assert "user 'alice' has unknown role 'admn'" in str(error)
    assert "defined roles: staff" in str(error)


def test_an_inherit_of_an_unknown_role_names_the_roles_key(load_text):
    error = _error(load_text, "rbac:\n  roles:\n    ops: {inherits: [ghost]}\n")
    assert error.key == "rbac.roles"
    assert "role 'ops' inherits unknown role 'ghost'" in str(error)


def test_an_unknown_default_role_names_its_key(load_text):
    error = _error(load_text, "rbac:\n  roles: {a: {}}\n  default_role: b\n")
    assert error.key == "rbac.default_role"
    assert "unknown role 'b'" in str(error)


@pytest.mark.parametrize(
    ("roles", "cycle"),
    [
        ("a: {inherits: [a]}", "a -> a"),
        ("a: {inherits: [b]}\n    b: {inherits: [a]}", "a -> b -> a"),
        (
            "a: {inherits: [b]}\n    b: {inherits: [c]}\n    c: {inherits: [d, a]}\n    d: {}",
            "a -> b -> c -> a",
        ),
    ],
)
def test_an_inheritance_cycle_is_refused_and_shown(load_text, roles, cycle):
    error = _error(load_text, f"rbac:\n  roles:\n    {roles}\n")
    assert error.key == "rbac.roles"
    assert f"roles inherit in a cycle: {cycle}" in str(error)


def test_a_diamond_of_inheritance_is_not_a_cycle(load_text):
    text = (
        "rbac:\n  roles:\n    base: {}\n    left: {inherits: [base]}\n"
        "    right: {inherits: [base]}\n    top: {inherits: [left, right]}\n"
    )
    assert set(load_text(text).config.rbac.roles) == {"base", "left", "right", "top"}


@pytest.mark.parametrize("scope", ["has space", "a::b", ":a", "a:", "a:*:b", "a*", "*:read", ""])
def test_a_malformed_scope_names_the_roles_scopes_key(load_text, scope):
    error = _error(load_text, f'rbac:\n  roles:\n    r: {{scopes: ["{scope}"]}}\n')
    assert error.key == "rbac.roles.r.scopes"
    assert "invalid scope" in str(error)


@pytest.mark.parametrize("scope", ["*", "order", "order:read", "order:*", "a.b-c_d:e:*"])
def test_well_formed_scopes_are_accepted(load_text, scope):
    rbac = load_text(f'rbac:\n  roles:\n    r: {{scopes: ["{scope}"]}}\n').config.rbac
    assert rbac.roles["r"].scopes == [scope]


def test_a_malformed_role_name_is_refused(load_text):
    error = _error(load_text, 'rbac:\n  roles:\n    "has space": {}\n')
    assert "invalid role name 'has space'" in str(error)


def test_a_typo_inside_a_role_is_named_as_a_dotted_key(load_text):
    error = _error(load_text, "rbac:\n  roles:\n    r: {scope: [a]}\n")
    assert error.key == "rbac.roles.r.scope"


def test_an_unknown_rbac_key_is_named_with_a_suggestion(load_text):
    error = _error(load_text, "rbac:\n  enable: true\n")
    assert error.key == "rbac.enable"
    assert "did you mean 'enabled'" in str(error)


@pytest.mark.parametrize("value", [0, -3])
def test_toolset_limit_must_be_positive(load_text, value):
    error = _error(load_text, f"tools:\n  toolset_limit: {value}\n")
    assert error.key == "tools.toolset_limit"


def test_plugins_dir_is_read_as_given(load_text):
    assert load_text("tools:\n  plugins_dir: plugins\n").config.tools.plugins_dir == "plugins"


_ROLE_NAMES = ["a", "b", "c", "d", "e"]


@given(
    st.dictionaries(
        st.sampled_from(_ROLE_NAMES),
        st.lists(st.sampled_from(_ROLE_NAMES), max_size=3, unique=True),
        min_size=1,
    )
)
def test_role_graphs_validate_exactly_when_acyclic_and_closed(graph):
    data = {"roles": {name: {"inherits": parents} for name, parents in graph.items()}}
    closed = all(parent in graph for parents in graph.values() for parent in parents)
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
        acyclic = True
    except graphlib.CycleError:
        acyclic = False
    if closed and acyclic:
        assert set(RbacConfig.model_validate(data).roles) == set(graph)
    else:
        with pytest.raises(ValidationError):
            RbacConfig.model_validate(data)


def test_role_scopes_include_inherited_roles_transitively() -> None:
    rbac = RbacConfig.model_validate(
        {
            "enabled": True,
            "roles": {
                "guest": {"scopes": ["weather:read"]},
                "staff": {"scopes": ["order:read"], "inherits": ["guest"]},
                "manager": {"scopes": ["hr:read"], "inherits": ["staff"]},
            },
            "users": {"alice": {"roles": ["manager", "guest"]}},
        }
    )
    assert rbac.role_scopes() == {
        "guest": {"weather:read"},
        "staff": {"order:read", "weather:read"},
        "manager": {"hr:read", "order:read", "weather:read"},
    }
    assert rbac.user_roles() == {"alice": ("manager", "guest")}


def test_an_unvalidated_inheritance_cycle_raises_instead_of_recursing() -> None:
    rbac = RbacConfig.model_construct(
        enabled=True,
        roles={
            "a": RoleConfig.model_construct(scopes=[], inherits=["b"]),
            "b": RoleConfig.model_construct(scopes=[], inherits=["a"]),
        },
        users={},
        default_role=None,
    )
    with pytest.raises(ValueError, match="inherits itself"):
        rbac.role_scopes()
