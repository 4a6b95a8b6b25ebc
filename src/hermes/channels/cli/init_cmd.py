"""``hermes init``: write a commented ``hermes.yaml`` to start from, and ``hermes --version``.

The file is the annotated example of ``hermes.config.EXAMPLE_CONFIG`` (every key, its default
and its meaning) with its ``model:`` section commented out, so a fresh ``hermes chat`` still
runs the offline rule brain; uncommenting the section points Hermes at a server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hermes.channels.cli.app import STATE, app
from hermes.channels.cli.output import fail, note, write_text
from hermes.config import EXAMPLE_CONFIG
from hermes.errors import ConfigError

DEFAULT_CONFIG_NAME = "hermes.yaml"
_OFFLINE_MODEL = (
    "model: null                 # the offline rule brain; uncomment the section above (and\n"
    "                            # delete this line) to use a server / 离线规则大脑\n"
)


def init_config_text(example: str = EXAMPLE_CONFIG) -> str:
    """``example`` with its top-level ``model:`` section commented out and ``model: null``.

    The section runs from its ``model:`` line to the next blank line (how the example is laid
    out; a test loads the result through the real loader).
    """
    lines = example.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("model:"))
    end = next(i for i in range(start, len(lines)) if not lines[i].strip())
    commented = [f"# {line}" if line.strip() else line for line in lines[start:end]]
    return "".join([*lines[:start], *commented, _OFFLINE_MODEL, *lines[end:]])


@app.command()
def init(
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented hermes.yaml here (or at --config). / 生成带注释的 hermes.yaml。"""
    path = STATE.config_path or Path(DEFAULT_CONFIG_NAME)
    try:
        if path.is_dir():
            raise ConfigError(f"{path} is a folder / {path} 是一个目录", file=str(path))
        if path.exists() and not force:
            raise ConfigError(
                f"{path} already exists; `hermes init --force` overwrites it"
                f" / {path} 已存在，使用 `hermes init --force` 覆盖"
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(init_config_text(), encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot write {path}: {exc.strerror or exc} / 无法写入 {path}"
            ) from exc
    except ConfigError as exc:
        fail(exc)
    write_text(str(path))
    note(
        f"wrote {path}: every key with its default; edit it, then `hermes chat`"
        f" / 已写入 {path}（含全部配置项及默认值），修改后运行 `hermes chat`"
    )
