"""RBAC: users → roles → scopes decide which tools a user is offered and may call."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.agent.factory import build_authorizer
from hermes.config.schema import RbacConfig
from hermes.errors import PermissionDeniedError, ToolError
from hermes.models.base import ToolCall
from hermes.tools import Tool, ToolRegistry
from hermes.tools.audit import AuditLog, read_audit
from hermes.tools.decorator import make_tool
from hermes.tools.permissions import Authorizer, scope_grants
from hermes.tools.pipeline import CallContext, ToolExecutor


def _noop() -> str:
    """Do nothing."""
    return "ok"


def protected(name: str, *scopes: str) -> Tool:
    """A real Tool requiring ``scopes``."""
    return make_tool(_noop, name=name, permissions=scopes)


OPEN = make_tool(_noop, name="open_tool")

CONFIG = RbacConfig.model_validate(
    {
        "enabled": True,
        "default_role": "guest",
        "roles": {
            "guest": {"scopes": ["weather:read"]},
            "staff": {"scopes": ["order:read", "order:write"], "inherits": ["guest"]},
            "manager": {"scopes": ["hr:salary:read"], "inherits": ["staff"]},
            "auditor": {"scopes": ["hr:*"]},
            "root": {"scopes": ["*"]},
        },
        "users": {
            "alice": {"roles": ["manager"]},
            "bob": {"roles": ["staff"]},
            "carol": {"roles": ["auditor", "guest"]},
            "dave": {"roles": ["root"]},
            "erin": {"roles": []},
        },
    }
)


@pytest.fixture
def audit(tmp_path: Path) -> AuditLog:
    return AuditLog(tmp_path / "audit" / "audit.log")


@pytest.fixture
def authorizer(audit: AuditLog) -> Authorizer:
    return build_authorizer(CONFIG, audit=audit)


def test_a_tool_without_permissions_is_open_to_everyone(authorizer):
    for user in ("alice", "erin", "stranger", None):
        assert authorizer.allowed(user, OPEN)


def test_an_object_without_a_permissions_attribute_is_open():
    assert build_authorizer(CONFIG).allowed("erin", object())


def test_scopes_include_every_inherited_role_transitively(authorizer):
    assert authorizer.scopes_of("alice") == {
        "hr:salary:read",
        "order:read",
        "order:write",
        "weather:read",
    }


def test_scopes_of_a_user_are_computed_once(authorizer):
    assert authorizer.scopes_of("alice") is authorizer.scopes_of("alice")


def test_unlisted_and_anonymous_users_hold_the_default_role(authorizer):
    assert authorizer.scopes_of("stranger") == {"weather:read"}
    assert authorizer.scopes_of(None) == {"weather:read"}


def test_a_listed_user_does_not_also_get_the_default_role(authorizer):
    assert authorizer.scopes_of("erin") == frozenset()
    assert not authorizer.allowed("erin", protected("weather", "weather:read"))


def test_without_a_default_role_unlisted_users_hold_nothing():
    config = CONFIG.model_copy(update={"default_role": None})
    authorizer = build_authorizer(config)
    assert authorizer.scopes_of("stranger") == frozenset()
    assert not authorizer.allowed("stranger", protected("weather", "weather:read"))
    assert authorizer.allowed("stranger", OPEN)


@pytest.mark.parametrize(
    ("user", "scopes", "expected"),
    [
        ("alice", ("hr:salary:read",), True),
        ("bob", ("hr:salary:read",), False),
        ("bob", ("order:read",), True),
        ("bob", ("order:read", "order:write"), True),
        ("bob", ("order:read", "order:delete"), False),  # every required scope is needed
        ("bob", ("weather:read",), True),  # inherited from guest
        ("carol", ("hr:salary:read",), True),  # hr:* wildcard
        ("carol", ("hr",), True),  # hr:* covers hr itself
        ("carol", ("hrx:read",), False),  # segments, not characters
        ("carol", ("order:read",), False),
        ("dave", ("anything:at:all", "x"), True),  # *
        ("stranger", ("weather:read",), True),  # default role
        ("stranger", ("order:read",), False),
        (None, ("order:read",), False),
    ],
)
def test_allow_deny_matrix(authorizer, user, scopes, expected):
    assert authorizer.allowed(user, protected("t", *scopes)) is expected


@pytest.mark.parametrize(
    ("held", "required", "grants"),
    [
        ("order:read", "order:read", True),
        ("order:read", "order:write", False),
        ("order:read", "order", False),
        ("order:read", "order:*", False),  # a required wildcard is read literally
        ("order:*", "order:*", True),
        ("order:*", "order", True),
        ("order:*", "order:read", True),
        ("order:*", "order:read:own", True),
        ("order:*", "orders:read", False),
        ("order:*", "ord", False),
        ("order:read:*", "order:read:own", True),
        ("order:read:*", "order:write", False),
        ("*", "order:read", True),
        ("*", "*", True),
        ("order", "order:read", False),  # no implicit wildcard
        ("Order:read", "order:read", False),  # case-sensitive
    ],
)
def test_scope_matching_rules(held, required, grants):
    assert scope_grants(held, required) is grants


_SEGMENT = st.sampled_from(["a", "b", "ab"])
_SCOPE = st.lists(_SEGMENT, min_size=1, max_size=3).map(":".join)
_HELD = st.one_of(_SCOPE, _SCOPE.map(lambda s: s + ":*"), st.just("*"))


@given(held=st.lists(_HELD, max_size=4), required=st.lists(_SCOPE, min_size=1, max_size=3))
def test_the_authorizer_agrees_with_scope_grants(held, required):
    config = RbacConfig.model_validate(
        {"enabled": True, "roles": {"r": {"scopes": held}}, "users": {"u": {"roles": ["r"]}}}
    )
    expected = all(any(scope_grants(h, r) for h in held) for r in required)
    assert build_authorizer(config).allowed("u", protected("t", *required)) is expected


def test_a_single_string_permission_is_one_scope_not_its_characters(authorizer):
    class Legacy:
        name = "legacy"
        permissions = "order:read"

    assert authorizer.allowed("bob", Legacy())
    assert not authorizer.allowed("carol", Legacy())


def test_check_allows_silently_for_a_permitted_user(authorizer):
    assert authorizer.check("bob", protected("list_orders", "order:read")) is None


def test_check_refuses_with_permission_denied_naming_only_the_missing_scopes(authorizer):
    tool = protected("pay_salary", "order:read", "hr:salary:write", "hr:salary:read")
    with pytest.raises(PermissionDeniedError) as caught:
        authorizer.check("bob", tool, session_id="s-1", trace_id="t-1")
    error = caught.value
    assert isinstance(error, ToolError)
    assert (error.code, error.status) == ("permission_denied", 403)
    assert error.missing == ("hr:salary:write", "hr:salary:read")
    assert error.tool == "pay_salary"
    assert "pay_salary" in error.message
    assert "hr:salary:write, hr:salary:read" in error.message
    assert "order:read" not in error.message  # not the user's own scopes
    assert "weather:read" not in error.message
    assert error.to_dict() == {"type": "permission_denied", "message": error.message}


def test_a_repeated_required_scope_is_reported_once(authorizer):
    with pytest.raises(PermissionDeniedError) as caught:
        authorizer.check("bob", protected("t", "hr:x", "hr:x"))
    assert caught.value.missing == ("hr:x",)


def test_every_decision_on_a_protected_tool_is_audited(authorizer, audit):
    tool = protected("get_salary", "hr:salary:read")
    authorizer.check("alice", tool, session_id="s-1", trace_id="t-1")
    with pytest.raises(PermissionDeniedError):
        authorizer.check("bob", tool, session_id="s-2", trace_id="t-2")
    allow, deny = read_audit(audit.path)
    assert allow["decision"] == "allow"
    assert (allow["user"], allow["tool"], allow["missing"]) == ("alice", "get_salary", [])
    assert (allow["session_id"], allow["trace_id"]) == ("s-1", "t-1")
    assert deny["decision"] == "deny"
    assert (deny["user"], deny["missing"], deny["required"]) == (
        "bob",
        ["hr:salary:read"],
        ["hr:salary:read"],
    )
    assert (deny["session_id"], deny["trace_id"]) == ("s-2", "t-2")
    assert allow["time"].endswith("Z")
    assert "T" in allow["time"]


def test_calls_of_open_tools_are_not_audited(authorizer, audit):
    authorizer.check("bob", OPEN, session_id="s", trace_id="t")
    assert not audit.path.exists()


def test_an_anonymous_decision_is_audited_with_a_null_user(authorizer, audit):
    with pytest.raises(PermissionDeniedError):
        authorizer.check(None, protected("t", "order:read"))
    assert read_audit(audit.path)[0]["user"] is None


def test_without_an_audit_log_decisions_still_hold():
    authorizer = build_authorizer(CONFIG)
    assert authorizer.audit is None
    with pytest.raises(PermissionDeniedError):
        authorizer.check("bob", protected("t", "hr:x"))


def test_an_unwritable_audit_log_does_not_turn_an_allow_into_a_deny(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x", encoding="utf-8")
    audit = AuditLog(blocker / "audit.log")
    authorizer = build_authorizer(CONFIG, audit=audit)
    authorizer.check("bob", protected("t", "order:read"))
    assert audit.lost == 1


def test_filter_tools_offers_only_permitted_tools_in_order(authorizer):
    tools = [
        OPEN,
        protected("salary", "hr:salary:read"),
        protected("orders", "order:read"),
        protected("weather", "weather:read"),
    ]
    assert [t.name for t in authorizer.filter_tools("bob", tools)] == [
        "open_tool",
        "orders",
        "weather",
    ]
    assert [t.name for t in authorizer.filter_tools(None, tools)] == ["open_tool", "weather"]
    assert [t.name for t in authorizer.filter_tools("dave", tools)] == [t.name for t in tools]


def test_filter_tools_writes_no_audit_record(authorizer, audit):
    authorizer.filter_tools("bob", [protected("salary", "hr:salary:read")])
    assert not audit.path.exists()


def test_disabled_rbac_allows_everything_and_audits_nothing(audit):
    authorizer = build_authorizer(RbacConfig(), audit=audit)
    tool = protected("salary", "hr:salary:read")
    assert authorizer.enabled is False
    assert authorizer.allowed("anyone", tool)
    assert authorizer.filter_tools("anyone", [tool, OPEN]) == [tool, OPEN]
    authorizer.check("anyone", tool, session_id="s", trace_id="t")
    assert authorizer.audit is None
    assert not audit.path.exists()


def test_enabled_rbac_without_roles_leaves_only_open_tools(audit):
    authorizer = build_authorizer(RbacConfig(enabled=True), audit=audit)
    assert authorizer.allowed("anyone", OPEN)
    assert not authorizer.allowed("anyone", protected("t", "a"))


def test_many_unlisted_users_share_one_grant(authorizer):
    for index in range(1000):
        authorizer.scopes_of(f"visitor-{index}")
    assert authorizer.scopes_of("visitor-1") is authorizer.scopes_of("visitor-2")


async def test_the_executor_refuses_a_denied_call_as_permission_denied_data(authorizer, audit):
    ran: list[str] = []

    def pay_salary(employee: str) -> str:
        """Pay an employee."""
        ran.append(employee)
        return "paid"

    tool = make_tool(pay_salary, permissions=("hr:salary:write",))
    registry = ToolRegistry([tool])
    ctx = CallContext(session_id="s-9", user_id="bob", trace_id="t-9")
    executor = ToolExecutor(registry, authorizer=authorizer)
    result = await executor.run(ToolCall("c1", "pay_salary", {"employee": "e1"}), ctx)
    assert (result.ok, result.error.type) == (False, "permission_denied")
    assert "hr:salary:write" in result.error.message
    assert ran == []
    assert read_audit(audit.path, user="bob", tool="pay_salary")[0]["decision"] == "deny"


def test_from_roles_takes_plain_mappings() -> None:
    authorizer = Authorizer.from_roles(
        {"guest": frozenset({"weather:read"}), "staff": {"order:read", "weather:read"}},
        users={"bob": ["staff"], "erin": []},
        default_role="guest",
    )
    assert authorizer.enabled
    assert authorizer.scopes_of("bob") == {"order:read", "weather:read"}
    assert authorizer.scopes_of("erin") == frozenset()
    assert authorizer.scopes_of("stranger") == {"weather:read"}
    assert authorizer.allowed(None, protected("weather", "weather:read"))
    assert not authorizer.allowed(None, protected("orders", "order:read"))


def test_from_roles_refuses_a_role_it_was_not_given() -> None:
    with pytest.raises(ValueError, match="unknown roles: ghost, phantom"):
        Authorizer.from_roles({"r": {"a"}}, users={"u": ["ghost"]}, default_role="phantom")


def test_the_permissions_module_does_not_know_the_config_schema() -> None:
    import ast

    import hermes.tools.permissions as module

    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert sorted(name for name in imported if name.startswith("hermes.config")) == []
