"""API-key auth (DESIGN.md, HTTP "Auth"): keys → users and roles, 401/403, RBAC roles."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.agent.factory import build_authorizer
from hermes.channels.cli.serve_cmd import with_key_roles_config
from hermes.channels.http.auth import with_key_roles
from hermes.config import load_config
from hermes.config.server import ServerConfig
from hermes.errors import ConfigError
from tests.channels.http.serve_fixtures import ADMIN_KEY, ALICE_KEY, KEYS, bearer, client, served


async def test_without_keys_the_service_is_anonymous_and_takes_the_user_as_given(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as app, client(app) as http:
        answer = await http.get("/test/act", params={"user_id": "bob"})
    assert answer.status_code == 200
    assert answer.json() == {"user": "bob", "admin": False}


@pytest.mark.parametrize(
    ("headers", "says"),
    [({}, "send an API key"), (bearer("not-a-key-0123456789"), "not valid"),
     ({"Authorization": f"Basic {ALICE_KEY}"}, "send an API key")],
)  # fmt: skip
async def test_with_keys_a_request_without_a_valid_key_is_401(
    tmp_path: Path, headers: dict[str, str], says: str
) -> None:
    async with served(tmp_path, ServerConfig(api_keys=KEYS)) as app, client(app) as http:
        answer = await http.get("/test/act", headers=headers)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == "Bearer"
    assert answer.json()["error"]["type"] == "unauthorized"
    assert says in answer.json()["error"]["message"]


async def test_a_key_acts_as_its_user_and_not_for_another(tmp_path: Path) -> None:
    async with served(tmp_path, ServerConfig(api_keys=KEYS)) as app, client(app) as http:
        own = await http.get("/test/act", headers=bearer(ALICE_KEY))
        other = await http.get("/test/act", params={"user_id": "bob"}, headers=bearer(ALICE_KEY))
    assert own.json() == {"user": "alice", "admin": False}
    assert other.status_code == 403
    assert other.json()["error"]["type"] == "forbidden"


async def test_an_admin_key_may_act_for_another_user(tmp_path: Path) -> None:
    async with served(tmp_path, ServerConfig(api_keys=KEYS)) as app, client(app) as http:
        answer = await http.get("/test/act", params={"user_id": "bob"}, headers=bearer(ADMIN_KEY))
    assert answer.json() == {"user": "bob", "admin": True}


def test_a_key_role_that_rbac_does_not_define_is_a_config_error_naming_the_key(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hermes.yaml"
    path.write_text(
        "rbac: {enabled: true, roles: {ops: {scopes: [shell]}}}\n"
        "server:\n  api_keys:\n    - {key: 0123456789abcdef0123, user: alice, roles: [ops]}\n"
        "    - {key: abcdef0123456789abcd, user: bob, roles: [opz]}\n",
        "utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert "server.api_keys[1].roles" in caught.value.message
    assert "opz" in caught.value.message


def test_a_key_users_roles_reach_the_agents_authorizer(tmp_path: Path) -> None:
    path = tmp_path / "hermes.yaml"
    path.write_text(
        "rbac:\n  enabled: true\n  roles: {ops: {scopes: [shell.run]}, viewer: {scopes: [read]}}\n"
        "  users: {alice: {roles: [viewer]}}\n"
        "server:\n  api_keys:\n"
        "    - {key: 0123456789abcdef0123, user: alice, roles: [ops, admin]}\n"
        "    - {key: abcdef0123456789abcd, user: carol, roles: [ops]}\n",
        "utf-8",
    )
    loaded = with_key_roles_config(load_config(path))
    authorizer = build_authorizer(loaded.config.rbac)
    assert authorizer.scopes_of("alice") == {"shell.run", "read"}
    assert authorizer.scopes_of("carol") == {"shell.run"}
    assert authorizer.scopes_of("dave") == frozenset()


def test_merging_key_roles_leaves_the_rbac_section_alone_without_keys() -> None:
    from hermes.config.schema import RbacConfig

    rbac = RbacConfig()
    assert with_key_roles(rbac, ()).users == {}
