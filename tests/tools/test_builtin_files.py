"""File built-ins: they work inside the workspace, and nothing a model writes gets them out."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.errors import ToolArgumentError
from hermes.models.base import ToolCall
from hermes.tools import BUILTIN_TOOLS, ToolContext, ToolRegistry, execute_tool_call
from hermes.tools.builtin.files import (
    MAX_LIST_ENTRIES,
    MAX_READ_BYTES,
    MAX_SEARCH_BYTES,
    MAX_SEARCH_HITS,
    MAX_WRITE_BYTES,
    FileToolError,
    list_files,
    read_file,
    search_files,
    write_file,
)

SECRET = "TOP-SECRET-OUTSIDE"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace holding a secret the tools must never reach."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(SECRET + "\n")
    return folder


@pytest.fixture
def ws(tmp_path: Path, outside: Path) -> Path:
    folder = tmp_path / "ws"
    (folder / "docs").mkdir(parents=True)
    (folder / "hello.txt").write_text("hello world\n第二行\n")
    (folder / "docs" / "guide.md").write_text("# Guide\nUse the TODO list.\n")
    return folder


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(user_id="u1", workspace=ws)


def _field_error(exc: pytest.ExceptionInfo[ToolArgumentError]) -> str:
    return str(exc.value)


async def _call(name: str, arguments: dict[str, Any], ctx: ToolContext) -> Any:
    registry = ToolRegistry([BUILTIN_TOOLS[name]])
    return await execute_tool_call(registry, ToolCall("c1", name, arguments), ctx)


# --- the names and signatures DESIGN promises ----------------------------------------------


def test_builtins_are_registered_with_the_designed_arguments() -> None:
    assert set(BUILTIN_TOOLS["read_file"].parameters["required"]) == {"path"}
    assert BUILTIN_TOOLS["write_file"].parameters["required"] == ["path", "content"]
    list_schema = BUILTIN_TOOLS["list_files"].parameters
    assert list_schema["properties"]["path"]["default"] == "."
    assert "required" not in list_schema or list_schema["required"] == []
    assert set(BUILTIN_TOOLS["search_files"].parameters["required"]) == {"query"}
    for name in ("read_file", "write_file", "list_files", "search_files"):
        assert "ctx" not in BUILTIN_TOOLS[name].parameters["properties"]


def test_writes_run_in_order_and_reads_may_run_in_parallel() -> None:
    assert BUILTIN_TOOLS["write_file"].parallel_safe is False
    assert BUILTIN_TOOLS["read_file"].parallel_safe is True


# --- read ----------------------------------------------------------------------------------


def test_read_returns_the_text_and_a_summary(ctx: ToolContext) -> None:
    text = "hello world\n第二行\n"
    out = read_file("hello.txt", ctx=ctx)
    assert out["content"] == text
    assert out["truncated"] is False
    assert out["summary"] == f"read hello.txt: {len(text.encode())} bytes, 2 lines"


def test_default_workspace_is_the_current_directory(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ws)
    assert read_file("hello.txt", ctx=ToolContext())["content"].startswith("hello")


def test_dot_dot_that_stays_inside_is_fine(ctx: ToolContext) -> None:
    assert read_file("docs/../hello.txt", ctx=ctx)["path"] == "hello.txt"


def test_absolute_path_inside_the_workspace_is_fine(ctx: ToolContext, ws: Path) -> None:
    assert read_file(str(ws / "docs" / "guide.md"), ctx=ctx)["path"] == "docs/guide.md"


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",
        "docs/../../outside/secret.txt",
        "../../../../etc/passwd",
        "/etc/passwd",
    ],
)
def test_paths_leaving_the_workspace_are_refused(ctx: ToolContext, path: str) -> None:
    with pytest.raises(ToolArgumentError) as exc:
        read_file(path, ctx=ctx)
    assert "outside the workspace" in _field_error(exc)


def test_absolute_path_to_the_outside_secret_is_refused(ctx: ToolContext, outside: Path) -> None:
    with pytest.raises(ToolArgumentError, match="outside the workspace"):
        read_file(str(outside / "secret.txt"), ctx=ctx)


def test_missing_outside_path_gives_the_same_refusal_as_an_existing_one(ctx: ToolContext) -> None:
    # No oracle: the answer must not tell whether a file outside exists.
    with pytest.raises(ToolArgumentError, match="outside the workspace"):
        read_file("../outside/no-such-file.txt", ctx=ctx)


def test_symlink_to_a_file_outside_is_refused(ctx: ToolContext, ws: Path, outside: Path) -> None:
    (ws / "innocent.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolArgumentError, match="outside the workspace"):
        read_file("innocent.txt", ctx=ctx)


def test_symlinked_directory_pointing_outside_is_refused(
    ctx: ToolContext, ws: Path, outside: Path
) -> None:
    (ws / "linked").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolArgumentError, match="outside the workspace"):
        read_file("linked/secret.txt", ctx=ctx)
    with pytest.raises(ToolArgumentError, match="outside the workspace"):
        list_files("linked", ctx=ctx)


def test_symlink_inside_the_workspace_is_followed(ctx: ToolContext, ws: Path) -> None:
    (ws / "alias.txt").symlink_to(ws / "hello.txt")
    assert read_file("alias.txt", ctx=ctx)["path"] == "hello.txt"


def test_symlink_loop_is_a_clear_error(ctx: ToolContext, ws: Path) -> None:
    (ws / "loop").symlink_to(ws / "loop")
    with pytest.raises((ToolArgumentError, FileToolError)):
        read_file("loop", ctx=ctx)


def test_a_directory_swapped_for_a_symlink_after_the_check_is_not_followed(
    ctx: ToolContext, ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race an attacker with a shell would run: the path is checked while docs/ is a real
    # directory, then docs/ becomes a symlink to the outside before the file is opened.
    (ws / "docs" / "secret.txt").write_text("inside copy\n")
    resolve = Path.resolve

    def racing_resolve(self: Path, strict: bool = False) -> Path:
        result = resolve(self, strict)
        if self.name == "secret.txt" and (ws / "docs").is_dir() and not (ws / "docs").is_symlink():
            (ws / "docs").rename(ws / "docs-moved")
            (ws / "docs").symlink_to(outside, target_is_directory=True)
        return result

    monkeypatch.setattr(Path, "resolve", racing_resolve)
    with pytest.raises(ToolArgumentError, match="symbolic link"):
        read_file("docs/secret.txt", ctx=ctx)


def test_a_file_swapped_for_a_symlink_after_the_check_is_not_followed(
    ctx: ToolContext, ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolve = Path.resolve

    def racing_resolve(self: Path, strict: bool = False) -> Path:
        result = resolve(self, strict)
        if self.name == "hello.txt" and not (ws / "hello.txt").is_symlink():
            (ws / "hello.txt").unlink()
            (ws / "hello.txt").symlink_to(outside / "secret.txt")
        return result

    monkeypatch.setattr(Path, "resolve", racing_resolve)
    with pytest.raises(FileToolError) as exc:
        read_file("hello.txt", ctx=ctx)
    assert exc.value.code == "not_a_file"


@pytest.mark.parametrize("path", ["hello.txt\x00.png", "\x00", "docs/\x00/x"])
def test_nul_in_a_path_is_refused(ctx: ToolContext, path: str) -> None:
    with pytest.raises(ToolArgumentError, match="NUL"):
        read_file(path, ctx=ctx)


def test_overlong_path_is_refused(ctx: ToolContext) -> None:
    with pytest.raises(ToolArgumentError, match="longer than"):
        read_file("a/" * 3000, ctx=ctx)


def test_missing_file_is_not_found(ctx: ToolContext) -> None:
    with pytest.raises(FileToolError) as exc:
        read_file("nope.txt", ctx=ctx)
    assert exc.value.code == "not_found"


def test_reading_a_directory_is_not_a_file(ctx: ToolContext) -> None:
    with pytest.raises(FileToolError) as exc:
        read_file("docs", ctx=ctx)
    assert exc.value.code == "not_a_file"


def test_a_fifo_is_refused_without_blocking(ctx: ToolContext, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    with pytest.raises(FileToolError) as exc:
        read_file("pipe", ctx=ctx)
    assert exc.value.code == "not_a_file"


@pytest.mark.parametrize("data", [b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"caf\xe9 latin-1 text"])
def test_binary_or_non_utf8_files_are_refused(ctx: ToolContext, ws: Path, data: bytes) -> None:
    (ws / "blob.bin").write_bytes(data)
    with pytest.raises(FileToolError) as exc:
        read_file("blob.bin", ctx=ctx)
    assert exc.value.code == "not_text"


def test_a_big_file_is_read_in_slices_that_add_up(ctx: ToolContext, ws: Path) -> None:
    text = "".join(f"line {i} 数据 {'x' * (i % 50)}\n" for i in range(60_000))
    (ws / "big.log").write_text(text)
    assert len(text.encode()) > 2 * MAX_READ_BYTES
    parts, offset = [], 0
    while True:
        out = read_file("big.log", offset, ctx=ctx)
        parts.append(out["content"])
        assert len(out["content"].encode()) <= MAX_READ_BYTES
        if not out["truncated"]:
            break
        assert out["content"].endswith("\n")  # slices end on a line boundary
        assert f"offset={out['next_offset']}" in out["summary"]
        offset = out["next_offset"]
    assert "".join(parts) == text


def test_slices_never_split_a_character(ctx: ToolContext, ws: Path) -> None:
    text = "中文字符" * 200_000  # 2.4 MB of 3-byte characters, no newline
    (ws / "wide.txt").write_text(text)
    first = read_file("wide.txt", ctx=ctx)
    second = read_file("wide.txt", first["next_offset"], ctx=ctx)
    third = read_file("wide.txt", second["next_offset"], ctx=ctx)
    assert first["content"] + second["content"] + third["content"] == text
    # An offset in the middle of a character moves to the next character.
    assert read_file("wide.txt", 1, ctx=ctx)["content"].startswith("文字符")


async def test_negative_offset_is_invalid_arguments(ctx: ToolContext) -> None:
    result = await _call("read_file", {"path": "hello.txt", "offset": -1}, ctx)
    assert result.error is not None
    assert result.error.type == "invalid_arguments"


# --- write ---------------------------------------------------------------------------------


def test_write_creates_parent_directories(ctx: ToolContext, ws: Path) -> None:
    out = write_file("reports/2024/summary.md", "# 总结\n", ctx=ctx)
    size = len("# 总结\n".encode())
    assert out == {
        "path": "reports/2024/summary.md",
        "bytes": size,
        "created": True,
        "summary": f"created reports/2024/summary.md ({size} bytes)",
    }
    assert (ws / "reports" / "2024" / "summary.md").read_text() == "# 总结\n"


def test_write_replaces_atomically_and_keeps_permissions(ctx: ToolContext, ws: Path) -> None:
    target = ws / "hello.txt"
    target.chmod(0o640)
    out = write_file("hello.txt", "new text\n", ctx=ctx)
    assert out["created"] is False
    assert target.read_text() == "new text\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert not [p for p in ws.iterdir() if p.name.endswith(".tmp")]  # no temp file left


def test_write_outside_through_dot_dot_is_refused(ctx: ToolContext, outside: Path) -> None:
    with pytest.raises(ToolArgumentError, match="outside the workspace"):
        write_file("../outside/planted.txt", "x", ctx=ctx)
    assert not (outside / "planted.txt").exists()


def test_write_through_a_symlinked_directory_is_refused(
    ctx: ToolContext, ws: Path, outside: Path
) -> None:
    (ws / "linked").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolArgumentError, match="outside the workspace"):
        write_file("linked/secret.txt", "overwritten", ctx=ctx)
    with pytest.raises(ToolArgumentError, match="outside the workspace"):
        write_file("linked/new/deeper.txt", "planted", ctx=ctx)
    assert (outside / "secret.txt").read_text() == SECRET + "\n"
    assert not (outside / "new").exists()


def test_write_to_a_dangling_symlink_pointing_outside_is_refused(
    ctx: ToolContext, ws: Path, outside: Path
) -> None:
    (ws / "trap.txt").symlink_to(outside / "created-by-trap.txt")
    with pytest.raises(ToolArgumentError, match="outside the workspace"):
        write_file("trap.txt", "x", ctx=ctx)
    assert not (outside / "created-by-trap.txt").exists()


def test_write_over_1_mib_is_refused(ctx: ToolContext, ws: Path) -> None:
    with pytest.raises(ToolArgumentError, match="limit"):
        write_file("big.txt", "x" * (MAX_WRITE_BYTES + 1), ctx=ctx)
    assert not (ws / "big.txt").exists()


@pytest.mark.parametrize("content", ["a\x00b", "lone \ud800 surrogate"])
def test_write_refuses_content_that_is_not_text(ctx: ToolContext, content: str) -> None:
    with pytest.raises(ToolArgumentError, match="content"):
        write_file("x.txt", content, ctx=ctx)


def test_write_over_a_directory_is_refused(ctx: ToolContext) -> None:
    with pytest.raises(FileToolError) as exc:
        write_file("docs", "x", ctx=ctx)
    assert exc.value.code == "not_a_file"


def test_write_below_a_file_is_not_a_directory(ctx: ToolContext) -> None:
    with pytest.raises(FileToolError) as exc:
        write_file("hello.txt/child.txt", "x", ctx=ctx)
    assert exc.value.code == "not_a_directory"


def test_write_to_the_workspace_itself_is_refused(ctx: ToolContext) -> None:
    with pytest.raises(ToolArgumentError, match="workspace itself"):
        write_file(".", "x", ctx=ctx)


@pytest.mark.parametrize("path", [".hermes/notes.db", ".hermes/hermes.db", ".hermes"])
@pytest.mark.parametrize("tool", ["read_file", "write_file", "list_files", "search_files"])
async def test_hermes_own_data_directory_is_off_limits(
    ctx: ToolContext, ws: Path, path: str, tool: str
) -> None:
    (ws / ".hermes").mkdir()
    (ws / ".hermes" / "notes.db").write_text("private\n")
    arguments: dict[str, Any] = {"path": path}
    if tool == "write_file":
        arguments["content"] = "clobbered"
    elif tool == "search_files":
        arguments["query"] = "private"
    result = await _call(tool, arguments, ctx)
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert ".hermes/ holds Hermes' own data" in result.error.message
    assert (ws / ".hermes" / "notes.db").read_text() == "private\n"


# --- list ----------------------------------------------------------------------------------


def test_list_shows_sorted_entries_with_types(ctx: ToolContext, ws: Path, outside: Path) -> None:
    (ws / ".hermes").mkdir()
    (ws / "zlink").symlink_to(outside)
    out = list_files(ctx=ctx)
    assert out["entries"] == [
        {"name": "docs", "type": "dir"},
        {"name": "hello.txt", "type": "file", "size": (ws / "hello.txt").stat().st_size},
        {"name": "zlink", "type": "symlink"},  # shown, never followed, target not disclosed
    ]
    assert out["truncated"] is False
    assert out["summary"] == ".: 3 entries"


def test_list_is_capped(ctx: ToolContext, ws: Path) -> None:
    many = ws / "many"
    many.mkdir()
    for i in range(MAX_LIST_ENTRIES + 5):
        (many / f"f{i:05d}").touch()
    out = list_files("many", ctx=ctx)
    assert len(out["entries"]) == MAX_LIST_ENTRIES
    assert out["truncated"] is True
    assert f"more than {MAX_LIST_ENTRIES}" in out["summary"]


def test_listing_a_file_is_not_a_directory(ctx: ToolContext) -> None:
    with pytest.raises(FileToolError) as exc:
        list_files("hello.txt", ctx=ctx)
    assert exc.value.code == "not_a_directory"


def test_listing_outside_is_refused(ctx: ToolContext) -> None:
    with pytest.raises(ToolArgumentError, match="outside the workspace"):
        list_files("..", ctx=ctx)


# --- search --------------------------------------------------------------------------------


def test_search_is_case_insensitive_with_line_numbers(ctx: ToolContext) -> None:
    out = search_files("todo", ctx=ctx)
    assert out["hits"] == [{"path": "docs/guide.md", "line": 2, "text": "Use the TODO list."}]
    assert out["truncated"] is False


def test_search_finds_chinese_text(ctx: ToolContext) -> None:
    assert search_files("第二", ctx=ctx)["hits"] == [
        {"path": "hello.txt", "line": 2, "text": "第二行"}
    ]


def test_search_in_one_file(ctx: ToolContext) -> None:
    assert search_files("guide", "docs/guide.md", ctx=ctx)["hits"][0]["line"] == 1


def test_search_skips_binaries_symlinks_and_private_dirs(
    ctx: ToolContext, ws: Path, outside: Path
) -> None:
    (ws / "blob.bin").write_bytes(b"\x00\x01needle")
    (ws / "leak.txt").symlink_to(outside / "secret.txt")
    (ws / "leakdir").symlink_to(outside, target_is_directory=True)
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("needle\n")
    (ws / ".hermes").mkdir()
    (ws / ".hermes" / "x.txt").write_text("needle\n")
    assert search_files("needle", ctx=ctx)["hits"] == []
    assert search_files(SECRET, ctx=ctx)["hits"] == []


def test_search_stops_at_the_hit_limit(ctx: ToolContext, ws: Path) -> None:
    (ws / "many.txt").write_text("match\n" * (MAX_SEARCH_HITS + 50))
    out = search_files("MATCH", ctx=ctx)
    assert len(out["hits"]) == MAX_SEARCH_HITS
    assert out["truncated"] is True
    assert f"stopped at {MAX_SEARCH_HITS} matches" in out["summary"]


def test_search_stops_at_the_byte_budget(ctx: ToolContext, ws: Path) -> None:
    chunk = ("filler line\n" * (1 << 16)).encode()[: 1 << 20]
    for i in range(MAX_SEARCH_BYTES // len(chunk) + 2):
        (ws / f"part{i}.txt").write_bytes(chunk)
    out = search_files("no such words", ctx=ctx)
    assert out["truncated"] is True
    assert "stopped after scanning" in out["summary"]


def test_search_snippet_shows_the_match_in_a_long_line(ctx: ToolContext, ws: Path) -> None:
    (ws / "min.js").write_text("a" * 5000 + "needle" + "b" * 5000)
    hit = search_files("needle", ctx=ctx)["hits"][0]
    assert "needle" in hit["text"]
    assert len(hit["text"]) <= 200


@pytest.mark.parametrize("query", ["", "   ", "x" * 501, "a\x00b"])
def test_bad_queries_are_refused(ctx: ToolContext, query: str) -> None:
    with pytest.raises(ToolArgumentError, match="query"):
        search_files(query, ctx=ctx)


# --- through the executor: failures are data ----------------------------------------------


async def test_executor_reports_an_escape_as_invalid_arguments(ctx: ToolContext) -> None:
    result = await _call("read_file", {"path": "../outside/secret.txt"}, ctx)
    assert result.ok is False
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert SECRET not in result.to_model_text()


async def test_executor_reports_binary_as_not_text(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.bin").write_bytes(b"\x00\xff")
    result = await _call("read_file", {"path": "a.bin"}, ctx)
    assert result.error is not None
    assert result.error.type == "not_text"
    assert "不是文本文件" in result.error.message


async def test_executor_write_then_read_round_trip(ctx: ToolContext) -> None:
    written = await _call("write_file", {"path": "n/a.txt", "content": "你好\n"}, ctx)
    assert written.ok is True
    assert written.summary == "created n/a.txt (7 bytes)"
    read = await _call("read_file", {"path": "n/a.txt"}, ctx)
    assert read.output["content"] == "你好\n"


async def test_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    gone = ToolContext(workspace=tmp_path / "does-not-exist")
    result = await _call("list_files", {}, gone)
    assert result.error is not None
    assert result.error.type == "workspace_unavailable"


# --- property: no path string ever reads the outside secret -------------------------------

_PIECES = st.sampled_from(
    ["..", ".", "docs", "hello.txt", "outside", "secret.txt", "link", "dirlink", "", "/", "~"]
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(pieces=st.lists(_PIECES, max_size=8), absolute=st.booleans())
def test_no_path_reads_outside(ws: Path, outside: Path, pieces: list[str], absolute: bool) -> None:
    if not (ws / "link").is_symlink():
        (ws / "link").symlink_to(outside / "secret.txt")
        (ws / "dirlink").symlink_to(outside, target_is_directory=True)
    path = "/".join(pieces)
    if absolute:
        path = str(ws) + "/" + path
    ctx = ToolContext(workspace=ws)
    try:
        out = read_file(path, ctx=ctx)
    except (ToolArgumentError, FileToolError):
        return
    assert SECRET not in out["content"]


@pytest.mark.parametrize(
    "path",
    [
        "hermes.yaml",
        ".env",
        ".git/hooks/pre-commit",
        ".venv/lib/python3.11/site-packages/evil.pth",
        "lib/site-packages/x.py",
        "evil.pth",
        "sub/.git/config",
    ],
)
def test_configuration_secrets_and_code_are_protected(tmp_path: Path, path: str) -> None:
    """A model able to write these could lift every other guard (RBAC, approvals, sandbox)."""
    from hermes.tools.builtin.files import write_file

    ctx = ToolContext(workspace=tmp_path)
    with pytest.raises(ToolArgumentError, match="protected"):
        write_file(path, "x", ctx=ctx)


def test_paths_the_runtime_protects_are_refused(tmp_path: Path) -> None:
    from hermes.tools.builtin.files import read_file, write_file

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "tool.py").write_text("print('hi')\n", encoding="utf-8")
    ctx = ToolContext(workspace=tmp_path, extras={"protected_paths": [str(plugins)]})
    with pytest.raises(ToolArgumentError, match="protected"):
        write_file("plugins/new_tool.py", "import os", ctx=ctx)
    with pytest.raises(ToolArgumentError, match="protected"):
        read_file("plugins/tool.py", ctx=ctx)
