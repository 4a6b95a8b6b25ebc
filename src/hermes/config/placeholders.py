"""``${VAR}`` placeholders in configuration values (seed 002 §3.1: keys live in the environment).

Grammar, inside any string value (also in the middle of a longer string):

- ``${NAME}`` — the variable's value; an unset variable is an error naming the key and file.
- ``${NAME:-default}`` — the value, or ``default`` when the variable is unset or empty.
- ``$${`` — a literal ``${`` (so ``$${NAME}`` stays ``${NAME}``).

Names follow the shell: a letter or ``_``, then letters, digits or ``_``. Any other ``${`` is a
malformed placeholder and an error, rather than text silently sent to a server. Substituted text
is not expanded again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from hermes.errors import ConfigError

_TOKEN = re.compile(
    r"\$\$\{"  # escaped literal
    r"|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}"
    r"|\$\{"  # anything else that opens a placeholder is malformed
)


def expand_placeholders(
    text: str, env: Mapping[str, str], *, key: str, file: str | None = None
) -> str:
    """``text`` with every placeholder replaced from ``env``.

    Raises ``ConfigError`` (with ``key`` and ``file``) for an unset variable without a default or
    a malformed placeholder. The message names the variable, never a value.
    """
    if "$" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "$${":
            return "${"
        name = match.group("name")
        if name is None:
            raise ConfigError(
                "malformed placeholder: expected ${NAME} or ${NAME:-default}", key=key, file=file
            )
        value = env.get(name)
        default = match.group("default")
        if default is not None:
            return value or default
        if value is None:
            raise ConfigError(
                f"environment variable {name} is not set (set it, put it in .env, "
                f"or write ${{{name}:-default}})",
                key=key,
                file=file,
            )
        return value

    return _TOKEN.sub(replace, text)


#: A configuration is a few hundred values; YAML aliases that expand past this many are a
#: "billion laughs" file, refused before anything is copied.
MAX_VALUES = 100_000


def expand_tree(data: Any, env: Mapping[str, str], *, file: str | None = None) -> Any:
    """A copy of parsed YAML ``data`` with placeholders expanded in every string value.

    Mapping keys are left alone; the error key is the dotted path (``model.api_key``,
    ``brain.intents[0]``). Raises ``ConfigError`` first when aliases make ``data`` expand to
    more than :data:`MAX_VALUES` values or refer to themselves (see :func:`check_expansion`).
    """
    check_expansion(data, file=file)
    return _expand(data, env, file, "")


def check_expansion(data: Any, *, file: str | None = None) -> None:
    """Raise ``ConfigError`` unless ``data`` expands to at most :data:`MAX_VALUES` values.

    YAML aliases make one parsed object appear many times; the count is taken over the object
    graph with each shared object measured once (linear in the file), never by expanding it.
    """
    sizes: dict[int, int] = {}
    visiting: set[int] = set()

    def size(node: Any) -> int:
        if not isinstance(node, dict | list):
            return 1
        key = id(node)
        known = sizes.get(key)
        if known is not None:
            return known
        if key in visiting:
            raise ConfigError(
                "a YAML alias refers to itself, so the file never ends; write the value out "
                "/ 配置中的 YAML 别名引用了自身，请直接写出该值",
                file=file,
            )
        visiting.add(key)
        children = node.values() if isinstance(node, dict) else node
        total = 1
        for child in children:
            total += size(child)
            if total > MAX_VALUES:
                break  # a sum this large is refused below; no need to count the rest
        visiting.discard(key)
        sizes[key] = total
        return total

    try:
        total = size(data)
    except RecursionError:
        total = MAX_VALUES + 1  # nested deeper than any configuration
    if total > MAX_VALUES:
        raise ConfigError(
            f"YAML aliases make the file expand to more than {MAX_VALUES:,} values (an alias "
            "bomb?); write the repeated values out or use fewer nested aliases / 配置中的 YAML "
            f"别名展开后超过 {MAX_VALUES:,} 个值，请直接写出重复的值或减少别名嵌套",
            file=file,
        )


def _expand(node: Any, env: Mapping[str, str], file: str | None, path: str) -> Any:
    if isinstance(node, str):
        return expand_placeholders(node, env, key=path or "<root>", file=file)
    if isinstance(node, dict):
        return {
            name: _expand(value, env, file, f"{path}.{name}" if path else str(name))
            for name, value in node.items()
        }
    if isinstance(node, list):
        return [_expand(item, env, file, f"{path}[{index}]") for index, item in enumerate(node)]
    return node
