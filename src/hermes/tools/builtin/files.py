"""File tools confined to the workspace: ``read_file``, ``write_file``, ``list_files``,
``search_files`` (built-ins and their arguments in DESIGN.md, "Public contracts").

Every path a model gives is resolved against ``ToolContext.workspace`` and must stay inside it:
absolute paths elsewhere, ``..`` escapes and symbolic links that lead out are refused. A path
is checked twice. First :meth:`Path.resolve` turns it into symlink-free components inside the
workspace; then those components are opened one by one from a descriptor of the workspace
root with ``O_NOFOLLOW`` (``openat``-style, via ``dir_fd``). A symlink swapped in between the
check and the use (a TOCTOU race) makes the open fail instead of escaping. Only regular files
are read or written: FIFOs, sockets and devices are refused (FIFOs are opened ``O_NONBLOCK``
so an open never hangs). ``.hermes/`` at the workspace root holds Hermes' own databases
(sessions, notes of every user) and is off limits to these tools.

The tools are sync on purpose: file system calls block, and sync tools run on the daemon
worker threads (hermes.tools.threads), never on the event loop. Every amount of work is
bounded (sizes, entry counts, bytes scanned), so a thread abandoned at a timeout finishes soon.
"""

from __future__ import annotations

import codecs
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from hermes.errors import FieldProblem, ToolArgumentError, ToolExecutionError
from hermes.tools.base import ToolContext
from hermes.tools.decorator import tool

__all__ = [
    "MAX_LIST_ENTRIES",
    "MAX_READ_BYTES",
    "MAX_SEARCH_BYTES",
    "MAX_SEARCH_HITS",
    "MAX_WRITE_BYTES",
    "FileToolError",
    "list_files",
    "read_file",
    "search_files",
    "write_file",
]

#: Largest slice ``read_file`` returns at once; bigger files are read in slices via ``offset``.
MAX_READ_BYTES = 1 << 20
#: Largest content ``write_file`` accepts (UTF-8 bytes).
MAX_WRITE_BYTES = 1 << 20
MAX_LIST_ENTRIES = 1000
MAX_SEARCH_HITS = 200
#: Total bytes ``search_files`` reads in one call, and how many files it opens.
MAX_SEARCH_BYTES = 5 << 20
MAX_SEARCH_FILES = 10_000
MAX_PATH_CHARS = 4096
MAX_QUERY_CHARS = 500
#: Characters of a matching line shown around the match.
SNIPPET_CHARS = 200
#: Hermes' own data (session and notes databases) lives here; file tools never touch it.
RESERVED_DIR = ".hermes"
#: Directories ``search_files`` does not descend into (VCS internals; our own data).
_SKIPPED_DIRS = frozenset({".git", RESERVED_DIR})
#: Bytes examined for a NUL when deciding whether a file is text.
_SNIFF_BYTES = 8192

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC


class FileToolError(ToolExecutionError):
    """A file operation that cannot be done; ``code`` names why (``not_found``,
    ``not_a_file``, ``not_a_directory``, ``too_large``, ``not_text``, ``workspace_unavailable``,
    ``io_error``)."""

    def __init__(self, code: str, english: str, chinese: str) -> None:
        super().__init__(f"{english} ({chinese})")
        self.code = code


def _bad_path(english: str, chinese: str, field: str = "path") -> ToolArgumentError:
    return ToolArgumentError([FieldProblem(field, f"{english} ({chinese})")])


# --- locating a path inside the workspace -------------------------------------------------


@contextmanager
def _workspace(ctx: ToolContext) -> Iterator[tuple[Path, int]]:
    """The resolved workspace root and an open descriptor of it (closed on exit)."""
    try:
        root = Path(ctx.workspace).resolve(strict=True)
        fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except (OSError, RuntimeError) as exc:
        raise FileToolError(
            "workspace_unavailable",
            f"the workspace directory cannot be opened: {_reason(exc)}",
            "无法打开工作目录",
        ) from None
    try:
        yield root, fd
    finally:
        os.close(fd)


def _locate(root: Path, path: str, ctx: ToolContext) -> tuple[str, ...]:
    """``path`` as components relative to ``root``, with every existing symlink resolved;
    refuses anything that ends up outside. Existence is not checked here: the open that
    follows reports a missing file, so a path outside never reveals whether it exists."""
    if not isinstance(path, str):
        raise _bad_path("path must be a string", "路径必须是字符串")
    if "\x00" in path:
        raise _bad_path("path contains a NUL character", "路径包含空字符")
    if len(path) > MAX_PATH_CHARS:
        raise _bad_path(f"path is longer than {MAX_PATH_CHARS} characters", "路径过长")
    candidate = Path(path) if os.path.isabs(path) else root / path
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11)
        raise _bad_path(f"path cannot be resolved: {_reason(exc)}", "无法解析路径") from None
    if not resolved.is_relative_to(root):
        raise _bad_path(
            "path is outside the workspace (absolute paths, '..' and symbolic links must stay "
            "inside it)",
            "路径超出了工作目录",
        )
    parts = resolved.relative_to(root).parts
    if parts and parts[0] == RESERVED_DIR:
        raise _bad_path(
            f"{RESERVED_DIR}/ holds Hermes' own data and is not accessible",
            f"{RESERVED_DIR}/ 是 Hermes 的内部数据目录，不可访问",
        )
    _refuse_protected(parts, resolved, ctx)
    return parts


#: Files and folders no file tool touches, wherever the workspace is: Hermes' configuration
#: and secrets, and places whose content runs as code (a model that could write there could
#: lift every other guard: RBAC, approvals, the sandbox).
_PROTECTED_TOP = frozenset({"hermes.yaml", "hermes.yml", ".env", ".git", ".venv", "venv"})
_PROTECTED_ANYWHERE = frozenset({".git", "site-packages", "dist-packages"})


def _refuse_protected(parts: tuple[str, ...], resolved: Path, ctx: ToolContext) -> None:
    extra = ctx.extras.get("protected_paths") or ()
    hit = (
        (parts and parts[0] in _PROTECTED_TOP)
        or any(part in _PROTECTED_ANYWHERE or part.endswith(".pth") for part in parts)
        or any(resolved == Path(p) or resolved.is_relative_to(Path(p)) for p in extra)
    )
    if hit:
        raise _bad_path(
            "path is protected: Hermes' configuration, secrets and code (hermes.yaml, .env, "
            ".git, virtual environments, plugin files) are not accessible to file tools",
            "该路径受保护：配置、密钥与代码文件不允许通过文件工具访问",
        )


def _open_dir(root_fd: int, parts: tuple[str, ...], *, create: bool = False) -> int:
    """A descriptor of the directory ``parts`` under ``root_fd``, opened one component at a
    time without following symlinks; ``create`` makes missing directories. Caller closes."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with suppress(FileExistsError):  # made by a concurrent call: fine
                    os.mkdir(part, 0o777, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP) and _is_symlink(fd, part):
                    raise _swapped_symlink() from None
                raise
            os.close(fd)
            fd = nxt
    except BaseException:  # clean up, then re-raise unchanged
        os.close(fd)
        raise
    return fd


def _is_symlink(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _swapped_symlink() -> ToolArgumentError:
    # The checked path had no symlink here; one appeared before the open (a TOCTOU race).
    return _bad_path(
        "path passes through a symbolic link that appeared while it was opened",
        "路径在打开时被替换为符号链接",
    )


def _open_regular(dir_fd: int, name: str, display: str) -> tuple[int, os.stat_result]:
    """Open ``name`` for reading, refusing anything but a regular file (checked before the
    open, so a device is never opened, and again on the descriptor)."""
    before = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    _require_regular(before, display)
    fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        _require_regular(info, display)
    except BaseException:  # clean up, then re-raise unchanged
        os.close(fd)
        raise
    return fd, info


def _require_regular(info: os.stat_result, display: str) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise FileToolError(
            "not_a_file", f"{display} is a directory, not a file", "这是一个目录，不是文件"
        )
    if not stat.S_ISREG(info.st_mode):
        raise FileToolError(
            "not_a_file",
            f"{display} is not a regular file (device, FIFO, socket or link)",
            "不是普通文件",
        )


@contextmanager
def _os_errors(display: str) -> Iterator[None]:
    """Operating-system failures as clear tool errors (the path is named, nothing else)."""
    try:
        yield
    except FileNotFoundError:
        raise FileToolError(
            "not_found", f"no such file or directory: {display}", "文件不存在"
        ) from None
    except NotADirectoryError:
        raise FileToolError(
            "not_a_directory", f"{display} is not a directory", "不是目录"
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink: the path changed under us
            raise _swapped_symlink() from None
        raise FileToolError("io_error", f"{display}: {_reason(exc)}", "文件操作失败") from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return type(exc).__name__


def _display(parts: tuple[str, ...]) -> str:
    return "/".join(parts) or "."


# --- read ----------------------------------------------------------------------------------


def _decode_slice(data: bytes, *, at_end: bool, display: str) -> tuple[str, int]:
    """The text of ``data`` and how many bytes it used. A slice that stops before the end of
    the file ends after its last newline (or its last whole character), so the next slice
    starts on a clean boundary."""
    if b"\x00" in data:
        raise _not_text(display)
    end = len(data)
    if not at_end:
        newline = data.rfind(b"\n")
        if newline >= 0:
            end = newline + 1  # UTF-8 never has b"\n" inside a multi-byte character
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(data[:end], final=at_end)
    except UnicodeDecodeError:
        raise _not_text(display) from None
    pending = decoder.getstate()[0]  # an incomplete character at the cut, left for next time
    return text, end - len(pending)


def _not_text(display: str) -> FileToolError:
    return FileToolError(
        "not_text", f"{display} is not UTF-8 text (binary files are not supported)", "不是文本文件"
    )


@tool(timeout=10.0, toolset="files", side_effects=False)
def read_file(
    path: str,
    offset: Annotated[int, Field(ge=0, le=1 << 62)] = 0,
    *,
    ctx: ToolContext,
) -> dict[str, Any]:
    """Read a UTF-8 text file inside the workspace.

    Returns at most 1 MiB at a time; for a bigger file the result has ``truncated: true``
    and ``next_offset`` to pass back as ``offset`` for the next part.

    Args:
        path: The file, relative to the workspace (e.g. "notes/todo.md").
        offset: Byte offset to start reading at (0 = the beginning).
    """
    with _workspace(ctx) as (root, root_fd):
        parts = _locate(root, path, ctx)
        display = _display(parts)
        if not parts:
            raise FileToolError("not_a_file", "the workspace itself is a directory", "这是一个目录")
        with _os_errors(display):
            dir_fd = _open_dir(root_fd, parts[:-1])
            try:
                fd, info = _open_regular(dir_fd, parts[-1], display)
            finally:
                os.close(dir_fd)
            try:
                data = os.pread(fd, MAX_READ_BYTES, offset)
            finally:
                os.close(fd)
    return _slice_result(display, data, offset, info.st_size)


def _slice_result(display: str, data: bytes, offset: int, size: int) -> dict[str, Any]:
    """The output of ``read_file`` for ``data`` read at ``offset`` of a ``size``-byte file."""
    if offset > 0:
        # Land on a character boundary: skip UTF-8 continuation bytes (at most 3).
        skip = 0
        while skip < min(3, len(data)) and 0x80 <= data[skip] <= 0xBF:
            skip += 1
        data, offset = data[skip:], offset + skip
    at_end = offset + len(data) >= size
    text, used = _decode_slice(data, at_end=at_end, display=display)
    if not at_end and used == 0:
        raise _not_text(display)  # 1 MiB without one whole character: not text
    out: dict[str, Any] = {"path": display, "content": text, "size": size, "offset": offset}
    out["truncated"] = not at_end
    if at_end:
        lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        out["summary"] = f"read {display}: {size} bytes, {lines} lines"
    else:
        out["next_offset"] = offset + used
        out["summary"] = (
            f"read {display}: bytes {offset}-{offset + used} of {size}; call read_file again "
            f"with offset={offset + used} for more (文件较大，已分段读取)"
        )
    return out


# --- write ---------------------------------------------------------------------------------


@tool(timeout=10.0, toolset="files", parallel_safe=False)
def write_file(path: str, content: str, *, ctx: ToolContext) -> dict[str, Any]:
    """Write a UTF-8 text file inside the workspace, replacing it if it exists.

    Missing parent directories are created. The write is atomic: readers see the old file
    or the new one, never a half-written mix. At most 1 MiB of content.

    Args:
        path: The file, relative to the workspace (e.g. "reports/summary.md").
        content: The complete new text of the file.
    """
    if not isinstance(content, str):
        raise _bad_path("content must be a string", "内容必须是字符串", "content")
    if "\x00" in content:
        raise _bad_path("content contains a NUL character", "内容包含空字符", "content")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: not representable as UTF-8 text
        raise _bad_path(
            "content is not valid Unicode text", "内容不是有效文本", "content"
        ) from None
    if len(data) > MAX_WRITE_BYTES:
        raise _bad_path(
            f"content is {len(data)} bytes; the limit is {MAX_WRITE_BYTES}",
            "内容超过 1 MiB 上限",
            "content",
        )
    with _workspace(ctx) as (root, root_fd):
        parts = _locate(root, path, ctx)
        display = _display(parts)
        if not parts:
            raise _bad_path("path names the workspace itself, not a file", "路径不是文件")
        with _os_errors(display):
            dir_fd = _open_dir(root_fd, parts[:-1], create=True)
            try:
                created = _replace_atomically(dir_fd, parts[-1], data, display)
            finally:
                os.close(dir_fd)
    verb = "created" if created else "replaced"
    return {
        "path": display,
        "bytes": len(data),
        "created": created,
        "summary": f"{verb} {display} ({len(data)} bytes)",
    }


def _replace_atomically(dir_fd: int, name: str, data: bytes, display: str) -> bool:
    """Write ``data`` to a temporary file beside ``name`` and rename it over ``name``;
    whether the file is new. The target must be absent or a regular file."""
    mode = 0o666  # narrowed by the umask, as for any new file
    try:
        existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        existing = None
    if existing is not None:
        _require_regular(existing, display)
        mode = stat.S_IMODE(existing.st_mode) & 0o777  # keep permissions, never setuid bits
    temp = f".hermes-write-{secrets.token_hex(8)}.tmp"  # short: long names would hit NAME_MAX
    fd = os.open(
        temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode, dir_fd=dir_fd
    )
    try:
        try:
            if existing is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:  # clean up, then re-raise unchanged
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    return existing is None


# --- list ----------------------------------------------------------------------------------


@tool(timeout=10.0, toolset="files", side_effects=False)
def list_files(path: str = ".", *, ctx: ToolContext) -> dict[str, Any]:
    """List the entries of a directory inside the workspace (one level, sorted by name).

    Each entry has ``name``, ``type`` ("file", "dir", "symlink" or "other") and, for files,
    ``size`` in bytes. At most 1000 entries are returned.

    Args:
        path: The directory, relative to the workspace; "." (the default) is the workspace.
    """
    with _workspace(ctx) as (root, root_fd):
        parts = _locate(root, path or ".", ctx)
        display = _display(parts)
        with _os_errors(display):
            dir_fd = _open_dir(root_fd, parts)
            try:
                entries, more = _scan_entries(dir_fd, hide_reserved=not parts)
            finally:
                os.close(dir_fd)
    entries.sort(key=lambda entry: entry["name"])
    summary = f"{display}: {len(entries)} entries"
    if more:
        summary = (
            f"{display}: more than {MAX_LIST_ENTRIES} entries; showing {MAX_LIST_ENTRIES} "
            "(目录条目过多，仅显示部分)"
        )
    return {"path": display, "entries": entries, "truncated": more, "summary": summary}


def _scan_entries(dir_fd: int, *, hide_reserved: bool) -> tuple[list[dict[str, Any]], bool]:
    entries: list[dict[str, Any]] = []
    with os.scandir(dir_fd) as scan:
        for entry in scan:
            if hide_reserved and entry.name == RESERVED_DIR:
                continue
            if len(entries) == MAX_LIST_ENTRIES:
                return entries, True
            entries.append(_describe(entry))
    return entries, False


def _describe(entry: os.DirEntry[str]) -> dict[str, Any]:
    if entry.is_symlink():
        return {"name": entry.name, "type": "symlink"}  # the target is not disclosed
    if entry.is_dir(follow_symlinks=False):
        return {"name": entry.name, "type": "dir"}
    if entry.is_file(follow_symlinks=False):
        try:
            size = entry.stat(follow_symlinks=False).st_size
        except OSError:  # removed since the directory was read
            return {"name": entry.name, "type": "file"}
        return {"name": entry.name, "type": "file", "size": size}
    return {"name": entry.name, "type": "other"}


# --- search --------------------------------------------------------------------------------


class _Search:
    """State of one ``search_files`` call: the hits and what is left of each budget."""

    def __init__(self, query: str) -> None:
        self.needle = query.casefold()
        self.hits: list[dict[str, Any]] = []
        self.bytes_left = MAX_SEARCH_BYTES
        self.files_left = MAX_SEARCH_FILES
        self.files_scanned = 0
        self.stopped: str | None = None  # why the search ended early, if it did

    def scan_file(self, dir_fd: int, name: str, display: str) -> None:
        if self.files_left <= 0:
            self.stopped = f"stopped after {MAX_SEARCH_FILES} files"
            return
        self.files_left -= 1
        try:
            fd, info = _open_regular(dir_fd, name, display)
        except (OSError, FileToolError):
            return  # symlinks, devices, vanished files: not searchable text, skipped
        try:
            wanted = min(info.st_size, self.bytes_left)
            data = os.pread(fd, wanted, 0) if wanted else b""
        except OSError:
            return
        finally:
            os.close(fd)
        self.bytes_left -= len(data)
        if info.st_size > len(data):
            self.stopped = f"stopped after scanning {MAX_SEARCH_BYTES} bytes"
        if b"\x00" in data[:_SNIFF_BYTES]:
            return  # binary
        self.files_scanned += 1
        text = data.decode("utf-8", errors="replace")
        if self.needle not in text.casefold():
            return
        self._collect(text, display)

    def _collect(self, text: str, display: str) -> None:
        for number, line in enumerate(text.splitlines(), start=1):
            at = line.casefold().find(self.needle)
            if at < 0:
                continue
            if len(self.hits) == MAX_SEARCH_HITS:
                self.stopped = f"stopped at {MAX_SEARCH_HITS} matches"
                return
            start = max(0, min(at - SNIPPET_CHARS // 4, len(line) - SNIPPET_CHARS))
            self.hits.append(
                {"path": display, "line": number, "text": line[start : start + SNIPPET_CHARS]}
            )

    @property
    def done(self) -> bool:
        return self.stopped is not None


@tool(timeout=10.0, toolset="files", side_effects=False)
def search_files(query: str, path: str = ".", *, ctx: ToolContext) -> dict[str, Any]:
    """Find lines containing a text (case-insensitive, plain text, not a regex) in the text
    files under a directory of the workspace.

    Returns up to 200 matches as ``{path, line, text}``; binary files and symbolic links are
    skipped, and at most 5 MiB are read per call.

    Args:
        query: The text to look for, e.g. "TODO" or "数据库".
        path: The directory (or single file) to search, relative to the workspace.
    """
    if not isinstance(query, str) or not query.strip():
        raise _bad_path("query is empty", "查询内容为空", "query")
    if len(query) > MAX_QUERY_CHARS or "\x00" in query:
        raise _bad_path(
            f"query must be at most {MAX_QUERY_CHARS} characters without NUL",
            "查询内容过长或包含空字符",
            "query",
        )
    search = _Search(query)
    with _workspace(ctx) as (root, root_fd):
        parts = _locate(root, path or ".", ctx)
        display = _display(parts)
        with _os_errors(display):
            _search_under(root_fd, parts, search)
    summary = f"{len(search.hits)} matches for {query!r} in {search.files_scanned} files"
    if search.stopped:
        summary += f" ({search.stopped}; 结果不完整，请缩小范围)"
    return {
        "query": query,
        "path": display,
        "hits": search.hits,
        "files_scanned": search.files_scanned,
        "truncated": search.stopped is not None,
        "summary": summary,
    }


def _search_under(root_fd: int, parts: tuple[str, ...], search: _Search) -> None:
    parent_fd = _open_dir(root_fd, parts[:-1])
    try:
        if parts:
            info = os.stat(parts[-1], dir_fd=parent_fd, follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode):
                search.scan_file(parent_fd, parts[-1], _display(parts))
                return
        top_fd = _open_dir(parent_fd, parts[-1:])
    finally:
        os.close(parent_fd)
    try:
        _walk(top_fd, parts, search)
    finally:
        os.close(top_fd)


def _walk(top_fd: int, parts: tuple[str, ...], search: _Search) -> None:
    # os.fwalk never follows symlinks here and hands out directory descriptors, so a directory
    # swapped for a symlink mid-walk is not entered (it compares stat results before descending).
    for dir_path, dir_names, file_names, dir_fd in os.fwalk(
        ".", dir_fd=top_fd, follow_symlinks=False
    ):
        relative = tuple(p for p in Path(dir_path).parts if p != ".")
        dir_names[:] = sorted(d for d in dir_names if d not in _SKIPPED_DIRS)
        for name in sorted(file_names):
            search.scan_file(dir_fd, name, _display((*parts, *relative, name)))
            if search.done:
                return
