"""``hermes memory``: a user's long-term memories — add, search, list, forget, export, upkeep.

    hermes memory add [--user U] TEXT [--kind K] [--sensitive|--not-sensitive] [--topic T] [--json]
    hermes memory search [--user U] QUERY [--limit N] [--json]
    hermes memory list [--user U] [--all] [--limit N] [--json]
    hermes memory forget [--user U] ID [--json]    hermes memory forget [--user U] --all --yes
    hermes memory export [--user U] [--output FILE]
    hermes memory upkeep [--user U] [--dry-run] [--json]

The store is ``memory.db`` beside the session database (``hermes.memory.open``), used through
the :class:`~hermes.memory.facade.Memory` facade as an agent uses it. Every command
works on the memories of ``--user`` only (default: ``agent.default_user``, the OS account name
made a user id — the user ``hermes chat`` and ``hermes run`` use): another user's memory id is
"not found".

- ``add`` keeps TEXT as written, as an *explicit* memory (the user asked for it: upkeep never
  demotes or deletes it for going unrecalled). ``--kind`` defaults to what the offline
  extraction rules read in the text ("I prefer…" → preference), else ``fact``; sensitivity
  is detected (health, finance, ids, addresses…, with its topic) unless ``--sensitive`` or
  ``--not-sensitive`` says otherwise.
- ``search`` ranks like recall and applies its privacy rules (the user's memories only; a
  sensitive one only when the query is about its topic), but it is a look-up by a person,
  not a recall into a prompt: no gate, no recency window, a lower score floor
  (:data:`SEARCH_MIN_SCORE`), and nothing is marked as recalled. ``--json`` prints a list of
  ``{"id", "content", "kind", "score"}``, best first.
- ``list`` shows the active memories (``--all``: with superseded and expired history);
  ``export`` prints every memory with its history as one JSON object ``{"version", "user_id",
  "exported_at", "count", "memories"}`` (an error there is JSON too).
- ``add`` of a text the user already has as an active memory adds nothing and shows the
  existing one (``"created": false`` under ``--json``).
- ``forget --all --yes`` forgets everything about the user: memories, tool-call records (L2)
  with the archived outputs (L3) no other record uses, and habit counts.
- ``upkeep`` merges duplicates, resolves conflicts, demotes and deletes unused memories
  (``hermes.memory.upkeep``); without ``--user`` it also prunes tool-call records past their
  retention and sweeps the archive; ``--dry-run`` changes nothing and shows what it would do.

Reading commands (search, list, export) never create the database. Exit codes: 0 done; 2
refused (empty or too long text, malformed or unknown id, bad user id, memory disabled, bad
configuration, unusable store) — with ``--json`` stdout is ``{"error": {"type", "message"}}``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, TypeVar

import typer

from hermes.channels.cli.app import JsonFlag, app, loaded_config, run_async
from hermes.channels.cli.output import fail, note, report_warning, write_json, write_text
from hermes.errors import HermesError, InvalidInputError
from hermes.memory.manual import SEARCH_MIN_SCORE, detect_sensitive, guess_kind
from hermes.memory.open import memory_db_path, memory_dir, open_memory_store, require_memory
from hermes.memory.records import (
    MemoryKind,
    MemoryNotFoundError,
    MemoryRecord,
    validate_content,
    validate_kind,
    validate_memory_id,
    validate_topic,
)
from hermes.session.ids import validate_user_id

if TYPE_CHECKING:
    from hermes.config import LoadedConfig
    from hermes.memory.facade import Memory
    from hermes.memory.records import MemoryHit
    from hermes.memory.upkeep import UpkeepReport

T = TypeVar("T")

#: Said while ``search`` waits for the Chinese↔English tables to be built (once per machine).
_BUILDING_WORD_LIST: Final = (
    "building the Chinese↔English word list, once (~6 s) / 正在生成中英词表（仅一次，约 6 秒）"
)
#: Search queries are cut here (as the store does): more text adds no search terms.
_MAX_QUERY_CHARS: Final = 4000
_EXPORT_VERSION: Final = 1

memory_app = typer.Typer(
    help="Long-term memories: add, search, list, forget, export, upkeep. / "
    "长期记忆：添加、搜索、列出、删除、导出、整理。",
    no_args_is_help=True,
)
app.add_typer(memory_app, name="memory")

UserRequired = Annotated[
    str | None,
    typer.Option(
        "--user",
        "-u",
        help="Whose memories (a user id; default: agent.default_user, the OS account name). "
        "/ 用户 ID（默认 agent.default_user）。",
    ),
]
LimitOption = Annotated[int, typer.Option("--limit", "-n", min=1, max=10_000, help="At most N.")]


@memory_app.command("add")
def memory_add(
    text: Annotated[str, typer.Argument(help="What to remember, as the user would say it.")],
    *,
    user: UserRequired = None,
    kind: Annotated[
        str | None,
        typer.Option("--kind", "-k", help="preference, fact, habit or event (default: guessed)."),
    ] = None,
    sensitive: Annotated[
        bool | None,
        typer.Option(
            "--sensitive/--not-sensitive", help="Recall it only when asked about its topic."
        ),
    ] = None,
    topic: Annotated[
        str | None, typer.Option("--topic", help="What it is about (for sensitive ones).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Remember TEXT for a user. / 为用户记住一条信息。"""
    try:
        user_id = _user_id(user)
        content = validate_content(text)
        chosen: MemoryKind = validate_kind(kind) if kind is not None else guess_kind(content)
        detected = detect_sensitive(content)
        labels = validate_topic(topic) or (detected if sensitive is not False else None)
        loaded = _configured(log=True)
        if memory_db_path(loaded) is None:
            report_warning(
                "store.path is ':memory:': this memory is gone when the command ends / "
                "存储在内存中：命令结束后记忆即消失"
            )
        memory = _memory(loaded)
        record, created = run_async(
            lambda: _using(
                memory,
                lambda m: m.remember(
                    user_id,
                    content,
                    kind=chosen,
                    sensitive=detected is not None if sensitive is None else sensitive,
                    topic=labels,
                ),
            )
        )
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        write_json({**record.to_dict(), "created": created})
    else:
        write_text(record.id)
        if created:
            note(f"remembered ({record.kind}) / 已记住")
        else:
            note("already remembered, nothing added / 已经记住了，未重复添加")


@memory_app.command("search")
def memory_search(
    query: Annotated[str, typer.Argument(help="What to look for (any language).")],
    user: UserRequired = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=100, help="At most N.")] = 5,
    as_json: JsonFlag = False,
) -> None:
    """Search a user's memories, best first. / 搜索用户的记忆（最相关的在前）。"""
    try:
        user_id = _user_id(user)
        if not query.strip():
            raise InvalidInputError("the search query is empty / 搜索内容为空")
        text = query[:_MAX_QUERY_CHARS]
        memory = _open_existing(loaded_config(), vectors=True)
        hits = (
            []
            if memory is None
            else run_async(lambda: _using(memory, lambda m: _search(m, user_id, text, limit)))
        )
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        write_json([hit.to_dict() for hit in hits])
        return
    if not hits:
        note("no matching memories / 没有相关记忆")
        return
    for hit in hits:
        r = hit.record
        write_text(f"{hit.score:.2f}  {r.id}  {r.kind:<10}  {_one_line(r.content)}")


def _user_id(user: str | None) -> str:
    """``--user`` checked, or the configured ``agent.default_user`` when it is absent."""
    if user is not None:
        return validate_user_id(user)
    return loaded_config().config.agent.default_user_id


async def _search(memory: Memory, user_id: str, text: str, limit: int) -> list[MemoryHit]:
    """``Memory.search`` with the search floor — see the module docstring for why this is not
    ``recall()`` — once the word list is there."""
    from hermes.agent.compose import lexicon_building, load_lexicon

    if memory.store is not None and memory.store.lexicon == "auto":
        # A one-shot command waits for the Chinese↔English tables (built once per machine,
        # ~6 s) instead of searching without them; an agent's recall does not wait.
        if await asyncio.to_thread(load_lexicon, wait=False) is None and lexicon_building():
            note(_BUILDING_WORD_LIST)
        await asyncio.to_thread(load_lexicon)
    return await memory.search(user_id, text, limit=limit, min_score=SEARCH_MIN_SCORE)


@memory_app.command("list")
def memory_list(
    user: UserRequired = None,
    everything: Annotated[
        bool, typer.Option("--all", "-a", help="Also superseded and expired history.")
    ] = False,
    limit: LimitOption = 1000,
    as_json: JsonFlag = False,
) -> None:
    """List a user's memories, newest first. / 列出用户的记忆（最新的在前）。"""
    try:
        user_id = _user_id(user)
        memory = _open_existing(loaded_config())
        records = (
            []
            if memory is None
            else run_async(
                lambda: _using(
                    memory,
                    lambda m: m.memories(user_id, include_inactive=everything, limit=limit),
                )
            )
        )
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        write_json([r.to_dict() for r in records])
        return
    if not records:
        note("no memories / 没有记忆")
        return
    # One line each, ids never shortened (they are copied into other commands).
    now = time.time()
    for r in records:
        write_text(
            f"{r.id}  {r.kind:<10}  {_when(r.created_at)}  [{_state(r, now)}]  "
            f"{_one_line(r.content)}"
        )


@memory_app.command("forget")
def memory_forget(
    user: UserRequired = None,
    memory_id: Annotated[str | None, typer.Argument(help="The memory's id.")] = None,
    everything: Annotated[
        bool, typer.Option("--all", help="Every memory of the user (needs --yes).")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Confirm --all.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Delete one memory, or all of a user's. / 删除一条或全部记忆。"""
    try:
        user_id = _user_id(user)
        target = _forget_target(memory_id, everything, yes)
        loaded = _configured(log=True)
        # everything (no target): memories, tool-call records and blobs, habits
        memory = _open_existing(loaded, tool_calls=target is None)
        if memory is None:
            counts = {"memories": 0}
        elif target is None:
            counts = run_async(lambda: _using(memory, lambda m: m.forget_user(user_id)))
        else:
            one = run_async(lambda: _using(memory, lambda m: m.forget(user_id, target)))
            counts = {"memories": int(one)}
        count = counts["memories"]
        if target is not None and count == 0:
            raise MemoryNotFoundError(
                f"no memory {target!r} for this user / 找不到这条记忆", memory_id=target
            )
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        extra = {k: v for k, v in counts.items() if k != "memories"}
        write_json({"user_id": user_id, "forgotten": count, **extra})
    else:
        note(f"forgot {count} {'memory' if count == 1 else 'memories'} / 已删除 {count} 条记忆")


def _forget_target(memory_id: str | None, everything: bool, yes: bool) -> str | None:
    """The one id to forget, or None for all (after checking the arguments make sense)."""
    if everything:
        if memory_id is not None:
            raise InvalidInputError(
                "give a memory id or --all, not both / 只能指定一个 ID 或 --all"
            )
        if not yes:
            raise InvalidInputError(
                "--all deletes every memory of the user: add --yes to confirm / "
                "--all 会删除该用户的全部记忆，请加 --yes 确认"
            )
        return None
    if memory_id is None:
        raise InvalidInputError("give a memory id, or --all --yes / 请指定记忆 ID 或 --all --yes")
    return validate_memory_id(memory_id)


@memory_app.command("export")
def memory_export(
    user: UserRequired = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to FILE instead of stdout.")
    ] = None,
    reveal_personal: Annotated[
        bool,
        typer.Option(
            "--reveal-personal",
            help="Do not mask phone numbers, addresses and ids in sensitive memories.",
        ),
    ] = False,
) -> None:
    """Print every memory of a user, with history, as JSON. / 导出用户的全部记忆（JSON）。"""
    try:
        user_id = _user_id(user)
        memory = _open_existing(loaded_config())
        memories = (
            []
            if memory is None
            else run_async(
                lambda: _using(memory, lambda m: m.export(user_id, reveal_personal=reveal_personal))
            )
        )
        document = {
            "version": _EXPORT_VERSION,
            "user_id": user_id,
            "exported_at": time.time(),
            "count": len(memories),
            "memories": memories,
        }
        if output is not None:
            _write_file(output, document)
    except HermesError as exc:
        fail(exc, as_json=output is None)  # stdout is JSON: so is an error there
    if output is None:
        write_json(document)
    else:
        note(f"exported {len(memories)} memories to {output} / 已导出")


def _write_file(path: Path, document: dict[str, Any]) -> None:
    import json

    try:
        path.write_text(json.dumps(document, ensure_ascii=False, indent=2) + "\n", "utf-8")
    except OSError as exc:
        raise InvalidInputError(
            f"cannot write {path}: {exc.strerror or exc} / 无法写入文件", path=str(path)
        ) from None


@memory_app.command("upkeep")
def memory_upkeep(
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="Only this user's (default: all users).")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Change nothing; show what would be done.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Merge duplicates, resolve conflicts, demote and delete unused memories. / 整理记忆。"""
    from hermes.memory.upkeep import UpkeepReport

    try:
        user_id = None if user is None else validate_user_id(user)
        loaded = _configured(log=True)
        # the tool-call tiers are pruned by age, for all users at once: only without --user
        memory = _open_existing(loaded, vectors=True, tool_calls=user_id is None)
        if memory is None:
            report = UpkeepReport(now=time.time(), dry_run=dry_run)
        else:
            report = run_async(
                lambda: _using(memory, lambda m: m.upkeep(user_id=user_id, dry_run=dry_run))
            )
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        write_json(report.to_dict())
    else:
        _print_report(report)


def _print_report(report: UpkeepReport) -> None:
    for action in report.actions:
        into = f" -> {action.into}" if action.into else ""
        write_text(f"{action.action} {action.memory_id}{into} ({action.user_id}: {action.reason})")
    data = report.to_dict()
    counts = ", ".join(f"{k} {data[k]}" for k in ("merged", "superseded", "demoted", "deleted"))
    prefix = "dry run, nothing changed / 演练，未做修改: " if report.dry_run else ""
    note(f"{prefix}examined {report.examined}, {counts} / 记忆整理完成")
    if report.remaining:
        note("more work is left for the next run / 还有未处理的记忆，下次运行继续")


# -- shared --------------------------------------------------------------------------------


def _configured(*, log: bool = False) -> LoadedConfig:
    """The configuration; commands that change memories also log to the configured file."""
    loaded = loaded_config()
    if log and loaded.log_file is not None:
        from hermes.observe import configure_logging

        configure_logging(loaded.log_file, loaded.config.logging.level)
    return loaded


def _open_existing(
    loaded: LoadedConfig, *, vectors: bool = False, tool_calls: bool = False
) -> Memory | None:
    """The configured memory, or None when its file does not exist yet (nothing to read).
    Raises ``ConfigError`` when memory is disabled. ``vectors``: load the embedder (search);
    ``tool_calls``: open the tool-call tiers too (forgetting a user, upkeep of all users)."""
    require_memory(loaded)
    path = memory_db_path(loaded)
    if path is not None and not path.exists():
        return None
    return _memory(loaded, vectors=vectors, tool_calls=tool_calls)


def _memory(loaded: LoadedConfig, *, vectors: bool = False, tool_calls: bool = False) -> Memory:
    """The configured memory (its file created on first use), as :func:`_open_existing`."""
    from hermes.memory.facade import Memory  # the heavier modules load only when a command runs
    from hermes.memory.tiers import ToolMemory
    from hermes.memory.upkeep import UpkeepPolicy

    store = open_memory_store(loaded, embedder="auto" if vectors else None)
    directory = memory_dir(loaded) if tool_calls else None
    try:
        tools = None if directory is None else ToolMemory.open(directory)
    except BaseException:  # clean up, then re-raise unchanged
        store.close_sync()
        raise
    policy = UpkeepPolicy.from_config(loaded.config.memory)
    return Memory(store, tools, extractor=None, upkeep_policy=policy)


async def _using(memory: Memory, fn: Callable[[Memory], Awaitable[T]]) -> T:
    """``fn(memory)``, then close the memory whatever happened."""
    try:
        return await fn(memory)
    finally:
        await memory.aclose()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _state(record: MemoryRecord, now: float) -> str:
    if record.superseded_by is not None:
        return f"{record.superseded_reason or 'superseded'} -> {record.superseded_by}"
    if record.expires_at is not None and record.expires_at <= now:
        return "expired"
    flags = [record.tier, *(["sensitive"] if record.sensitive else [])]
    return " ".join([*flags, *(["explicit"] if record.explicit else [])])


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")
