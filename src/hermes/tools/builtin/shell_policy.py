"""The deny-list of the ``shell`` tool: destructive commands that no setting lifts.

:func:`check_command` is pure and runs before anything else (approval, sandbox): it raises
:class:`DeniedCommandError` (a ``ToolArgumentError``) for commands such as ``rm -rf /``,
``mkfs``, ``dd of=/dev/sda``, fork bombs, ``shutdown``, ``kill -9 -1`` or a recursive
``chmod``/``chown`` of the root — also when they hide behind ``sudo``/``env``/``timeout``
and other wrappers, ``bash -c "…"``, ``eval``, ``$(…)``, backticks, ``;``/``&&``/``||``/``|``
chains, newlines, quotes, escapes, ``${IFS}``, extra slashes or absolute paths (``/bin/rm``).

Also looked into: here-strings (``bash <<< '…'``), ``echo '…' | sh``, ``alias``/``trap``
bodies, brace expansion (``/{,}``), ``cd /`` before a relative target, and variables that
may be empty (``rm -rf $DIR/`` is ``rm -rf /`` when DIR is unset; ``${DIR:?}/`` is fine).

A deny-list can only catch what it knows; it is one layer under approval and the sandbox,
not a replacement. Code run by other interpreters (``python -c``, ``perl -e``) and payloads
built at run time (``base64 -d | sh``, ``$(printf …)`` as a command name) are out of its
reach. It errs on the side of refusing: text it cannot tokenize (unbalanced quotes),
nesting deeper than :data:`MAX_DEPTH` and comments are treated as suspect, so
``ls # rm -rf /`` is refused too.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterator

from hermes.errors import FieldProblem, ToolArgumentError

__all__ = ["MAX_COMMAND_CHARS", "MAX_DEPTH", "DeniedCommandError", "check_command"]

MAX_COMMAND_CHARS = 10_000
#: Levels of ``bash -c``/``sudo``/``$(…)`` nesting examined; deeper is refused.
MAX_DEPTH = 8
#: Characters and words examined in total (all nesting levels); more is refused as too
#: complex to check. Bounds the work of adversarial nesting such as "$($($(…".
_BUDGET = 20 * MAX_COMMAND_CHARS

# Shell metacharacters become their own tokens; newline is a separator, not whitespace.
_PUNCTUATION = "();<>|&`\n"
_IFS = re.compile(r"\$\{IFS\}|\$IFS\b")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# A variable reference, or a "$" left at the end of a word (the start of a substitution).
_VARIABLE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$$")
_BRACES = re.compile(r"\{([^{}]*,[^{}]*)\}")
#: Brace-expansion variants of one word examined ("/{usr,etc}" is two targets).
_MAX_VARIANTS = 32
_HOME = re.compile(r"^(?:\$\{HOME\}|\$HOME)(?=/|$)")
_TILDE = re.compile(r"^~[A-Za-z0-9._-]*(?=/|$)")
_GLOB = re.compile(r"[*?\[]")
# NAME() { … NAME | NAME & … } and friends: a function that starts two copies of itself.
# The name starts at a word boundary and is matched possessively (++), so a long word costs
# linear time, not quadratic backtracking.
_FORK_BOMB = re.compile(
    r"(?<![^\s;&|(){}])(?:function\s+)?(?P<name>[^\s(){}|&;<>`'\"]++)\s*(?:\(\s*\))?\s*"
    r"\{[^}]*?(?<![^\s{;|&])(?P=name)\s*[|&]\s*(?P=name)(?![^\s;|&}])"
)
_BLOCK_DEVICE = re.compile(
    r"/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|md\d|dm-\d|loop\d|nbd\d|"
    r"rbd\d|zram\d|sr\d|disk/|mapper/|root$|mem$|kmem$|port$)"
)
#: Directories whose recursive removal (or chmod/chown) wrecks the system; "~" is any home.
_PROTECTED = frozenset(
    {
        "/",
        "~",
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/media",
        "/mnt",
        "/opt",
        "/proc",
        "/root",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/usr",
        "/usr/bin",
        "/usr/lib",
        "/usr/lib64",
        "/usr/local",
        "/usr/sbin",
        "/usr/share",
        "/var",
        "/var/lib",
    }
)
_RESERVED_WORDS = frozenset(
    {"{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "esac"}
)
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff", "kexec", "killall5"})
_FORMATTERS = frozenset({"mke2fs", "mkswap", "wipefs", "mkdosfs", "mkntfs", "blkdiscard"})
_DEVICE_WRITERS = frozenset(
    {"tee", "cp", "mv", "install", "shred", "fdisk", "sfdisk", "cfdisk", "parted", "sgdisk"}
    | {"gdisk", "hdparm", "truncate", "ddrescue", "badblocks"}
)
_SHELLS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "csh", "tcsh"}
)
#: Commands that run another command given as their arguments (or as a script string).
_WRAPPERS = frozenset(
    {"sudo", "doas", "su", "runuser", "env", "nice", "ionice", "nohup", "setsid", "timeout"}
    | {"time", "exec", "command", "builtin", "stdbuf", "chrt", "taskset", "xargs", "watch"}
    | {"flock", "unbuffer", "chroot", "busybox", "toybox", "strace", "ltrace", "nsenter"}
    | {"unshare", "firejail", "systemd-run", "script", "ssh", "eval", "parallel", "sg", "trap"}
)
_DANGEROUS = (
    _POWER
    | _FORMATTERS
    | _DEVICE_WRITERS
    | {"rm", "dd", "init", "telinit", "systemctl", "kill", "chmod", "chown", "chgrp", "find"}
)
#: Command names worth checking when they appear among a wrapper's arguments.
_INTERESTING = _DANGEROUS | _SHELLS | _WRAPPERS


class DeniedCommandError(ToolArgumentError):
    """A command on the deny-list (or one too obscure to check); ``rule`` names which."""

    def __init__(self, rule: str, english: str, chinese: str) -> None:
        super().__init__(
            [
                FieldProblem(
                    "command",
                    f"refused: {english}; no setting allows this (命令被拒绝：{chinese}，"
                    "任何设置都不能解除)",
                )
            ]
        )
        self.rule = rule


def check_command(command: str) -> None:
    """Raise :class:`DeniedCommandError` if ``command`` is, or may hide, a destructive
    command of the deny-list; return ``None`` otherwise. Never raises anything else."""
    if not isinstance(command, str):
        raise DeniedCommandError("uncheckable", "the command is not text", "命令不是文本")
    if len(command) > MAX_COMMAND_CHARS:
        raise DeniedCommandError(
            "uncheckable",
            f"the command is longer than {MAX_COMMAND_CHARS} characters",
            "命令过长，无法检查",
        )
    if "\x00" in command:
        raise DeniedCommandError("uncheckable", "the command contains a NUL", "命令包含空字符")
    _Checker().check(command, depth=0)


class _Checker:
    """One check: walks nested scripts depth-first, within one budget of words."""

    def __init__(self) -> None:
        self.budget = _BUDGET

    def check(self, script: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise DeniedCommandError(
                "uncheckable", "the command is nested too deeply to check", "命令嵌套过深"
            )
        self._spend(len(script))
        script = _IFS.sub(" ", script)
        if _FORK_BOMB.search(script):
            raise DeniedCommandError("fork_bomb", "a fork bomb", "这是 fork 炸弹")
        tokens = _tokenize(script)
        cwd: str | None = None  # the directory of a literal `cd`, for relative targets
        previous: list[str] = []
        for words, redirects, piped in _simple_commands(tokens):
            for word in (*words, *(target for _, target in redirects)):
                for inner in _substitutions(word):
                    self.check(inner, depth + 1)
            for operator, target in redirects:
                if ">" in operator and _is_block_device(target):
                    raise _deny_device(target)
                if operator == "<<<":  # a here-string may be the script of a shell
                    self.check(target, depth + 1)
            command = _strip_prefix(words)
            if piped and _feeds_a_shell(previous, command):  # echo 'rm -rf /' | sh
                self.check(" ".join(previous[1:]), depth + 1)
            if command and command[0] == "cd":
                cwd = _change_dir(cwd, command[1:])
            elif command:
                self.command(command, depth, cwd)
            previous = command

    def command(self, words: list[str], depth: int, cwd: str | None) -> None:
        """Check one simple command (already split from its neighbours)."""
        self._spend(len(words))
        name, args = _basename(words[0]), words[1:]
        _check_rules(name, args, cwd)
        if name == "alias":  # alias x='rm -rf /'
            for arg in args:
                if "=" in arg:
                    self.check(arg.split("=", 1)[1], depth + 1)
        if name in _SHELLS or name in _WRAPPERS:
            if depth >= MAX_DEPTH:
                raise DeniedCommandError(
                    "uncheckable", "the command is nested too deeply to check", "命令嵌套过深"
                )
            # Option arities differ by wrapper and version; instead of parsing them, every
            # argument that could start the wrapped command is checked as one, and every
            # argument that could be a script ("bash -c '…'", "su -c '…'") as a script.
            for index, arg in enumerate(args):
                if _basename(arg) in _INTERESTING or _is_formatter(arg):
                    self.command(args[index:], depth + 1, cwd)
                if any(ch in arg for ch in " \t\n;&|`$(<>") and not arg.startswith("-"):
                    self.check(arg, depth + 1)

    def _spend(self, words: int) -> None:
        self.budget -= words
        if self.budget < 0:
            raise DeniedCommandError(
                "uncheckable", "the command is too complex to check", "命令过于复杂，无法检查"
            )


def _tokenize(script: str) -> list[str]:
    lexer = shlex.shlex(script, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace_split = True
    lexer.whitespace = " \t\r"
    # No comments: shlex would end a word at '#' ("a#b"), which bash does not, and hide what
    # follows; checking comment text as commands only ever refuses more.
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # "No closing quotation", "No escaped character"
        raise DeniedCommandError(
            "unparsable", "the command has unbalanced quotes or escapes", "命令的引号或转义不完整"
        ) from None


_Simple = tuple[list[str], list[tuple[str, str]], bool]


def _simple_commands(tokens: list[str]) -> Iterator[_Simple]:
    """Split tokens at ``;`` ``&&`` ``||`` ``|`` ``&`` ``(`` ``)`` backticks and newlines into
    (words, redirections, whether stdin is piped from the previous command) of each simple
    command."""
    words: list[str] = []
    redirects: list[tuple[str, str]] = []
    pending: str | None = None
    piped = False
    for token in tokens:
        if token.startswith("#"):  # a comment: what follows is checked like a command
            if words or redirects:
                yield words, redirects, piped
            words, redirects, pending = ([token[1:]] if len(token) > 1 else []), [], None
            piped = False
        elif token and all(ch in _PUNCTUATION for ch in token):
            # "<(" and ">(" open a process substitution: a new command, not a redirection.
            if ("<" in token or ">" in token) and "(" not in token:
                pending = token
                continue
            if words or redirects:
                yield words, redirects, piped
            words, redirects, pending = [], [], None
            piped = token in ("|", "|&")
        elif pending is not None:
            redirects.append((pending, token))
            pending = None
        else:
            words.append(token)
    if words or redirects:
        yield words, redirects, piped


def _substitutions(word: str) -> Iterator[str]:
    """Scripts inside ``$(…)``, ``<(…)``, ``>(…)`` and backticks that survived as part of one
    word (quoted). Unbalanced ones run to the end of the word."""
    for opener in ("$(", "<(", ">("):
        start = word.find(opener)
        while start >= 0:
            depth, index = 1, start + 2
            while index < len(word) and depth:
                depth += {"(": 1, ")": -1}.get(word[index], 0)
                index += 1
            yield word[start + 2 : index - 1 if depth == 0 else index]
            start = word.find(opener, start + 2)
    if "`" in word:
        yield from word.split("`")[1::2]


def _feeds_a_shell(previous: list[str], command: list[str]) -> bool:
    """Whether ``previous | command`` pipes literal text (echo/printf) into a shell."""
    return (
        bool(previous and command)
        and _basename(previous[0]) in ("echo", "printf")
        and _basename(command[0]) in _SHELLS
    )


def _strip_prefix(words: list[str]) -> list[str]:
    """Drop leading reserved words (``then``, ``{``, ``!`` …), ``function NAME`` and variable
    assignments (``FOO=1 rm …``)."""
    index = 0
    while index < len(words):
        word = words[index]
        if word in _RESERVED_WORDS or _ASSIGNMENT.match(word):
            index += 1
        elif word == "function":
            index += 2
        else:
            break
    return words[index:]


def _basename(word: str) -> str:
    return word.rstrip("/").rsplit("/", 1)[-1] if "/" in word else word


def _is_formatter(word: str) -> bool:
    name = _basename(word)
    return name.startswith("mkfs") or name in _FORMATTERS


def _options_and_operands(args: list[str]) -> tuple[list[str], list[str]]:
    options: list[str] = []
    operands: list[str] = []
    for index, arg in enumerate(args):
        if arg == "--":
            operands.extend(args[index + 1 :])
            break
        (options if arg.startswith("-") and arg != "-" else operands).append(arg)
    return options, operands


def _has_flag(options: list[str], short: str, long: str) -> bool:
    return any(
        option == long or (not option.startswith("--") and short in option[1:])
        for option in options
    )


def _check_rules(name: str, args: list[str], cwd: str | None) -> None:
    """Raise if ``name args`` is on the deny-list."""
    if _is_formatter(name):
        raise DeniedCommandError("mkfs", f"{name} formats or wipes a disk", "格式化或擦除磁盘")
    if name in _POWER or (name in ("init", "telinit") and args[:1] in (["0"], ["6"])):
        raise DeniedCommandError("power", f"{name} stops the machine", "关机或重启")
    if name == "systemctl" and {"poweroff", "reboot", "halt", "kexec"} & set(args):
        raise DeniedCommandError("power", "systemctl would stop the machine", "关机或重启")
    if name == "dd":
        for arg in args:
            if arg.startswith("of=") and _is_block_device(arg[3:]):
                raise _deny_device(arg[3:])
    if name in _DEVICE_WRITERS:
        for arg in args:
            if _is_block_device(arg):
                raise _deny_device(arg)
    options, operands = _options_and_operands(args)
    if name == "rm":
        _check_rm(options, operands, cwd)
    elif name in ("chmod", "chown", "chgrp"):
        recursive = _has_flag(options, "R", "--recursive")
        for target in operands[1:]:  # the first operand is the mode or owner
            where = _protected(target, cwd)
            if where == "/" or (recursive and where):
                raise DeniedCommandError(
                    "chmod_root",
                    f"{name} of {where} changes the whole system",
                    "递归修改系统目录的权限或属主",
                )
    elif name == "kill":
        _check_kill(args)
    elif name == "find":
        _check_find(args, cwd)
    elif name == "mv":
        for source in operands[:-1]:
            if _protected(source, cwd):
                raise DeniedCommandError("rm_root", f"mv would move {source} away", "移走系统目录")


def _check_rm(options: list[str], operands: list[str], cwd: str | None) -> None:
    if "--no-preserve-root" in options:
        raise DeniedCommandError("rm_root", "rm --no-preserve-root", "删除根目录")
    if not _has_flag(options, "r", "--recursive") and not _has_flag(options, "R", "--recursive"):
        return
    for target in operands:
        where = _protected(target, cwd)
        if where:
            raise DeniedCommandError("rm_root", f"recursive rm of {where}", f"递归删除 {where}")


def _check_kill(args: list[str]) -> None:
    index = 0
    if args and args[0] in ("-s", "-n"):
        index = 2  # kill -s KILL pid
    elif args and args[0].startswith("-") and args[0] != "--":
        if args[0] in ("-l", "-L") or args[0].startswith("--list"):
            return
        index = 1  # kill -9 pid, kill -KILL pid
    pids = [arg for arg in args[index:] if arg != "--"]
    if "-1" in pids or "1" in pids:
        raise DeniedCommandError(
            "kill_all", "kill of every process (or of init)", "终止所有进程或 init"
        )


def _check_find(args: list[str], cwd: str | None) -> None:
    roots: list[str] = []
    for arg in args:
        if arg.startswith(("-", "(", "!")):
            break
        roots.append(arg)
    if not any(_protected(root, cwd) for root in roots):
        return
    deleting = "-delete" in args or any(
        arg in ("-exec", "-execdir", "-ok", "-okdir")
        and index + 1 < len(args)
        and _basename(args[index + 1]) in ("rm", "shred", "unlink")
        for index, arg in enumerate(args)
    )
    if deleting:
        raise DeniedCommandError("rm_root", "find that deletes a system tree", "删除系统目录")


def _normalize(path: str, cwd: str | None) -> str | None:
    """``path`` as an absolute path ("~" for a home directory), or ``None`` if unknown."""
    path = _HOME.sub("~", path)
    path = _TILDE.sub("~", path)
    if not path.startswith(("/", "~")):
        if cwd is None:
            return None
        path = f"{cwd}/{path}"
    if path.startswith("~"):
        rest = _absolute("/" + path[1:])
        return "~" if rest == "/" else "~" + rest
    return _absolute(path)


def _absolute(path: str) -> str:
    # Collapse "//" first: normpath keeps a leading "//" (POSIX leaves its meaning open).
    return posixpath.normpath(re.sub(r"/+", "/", path))


def _protected(target: str, cwd: str | None) -> str | None:
    """The protected directory ``target`` removes (``/`` for ``/*``), or ``None``."""
    for variant in _variants(target):
        path = _normalize(variant, cwd)
        if path is None:
            continue
        if path in _PROTECTED:
            return path
        head, tail = posixpath.split(path)
        if _GLOB.search(tail) and head in _PROTECTED:  # "/*", "/u*", "~/.*": all of it
            return head
    return None


def _variants(target: str) -> list[str]:
    """``target`` after brace expansion, each also with its variables empty ("$DIR/" is
    "/" when DIR is unset)."""
    variants = _expand_braces(target)
    return variants + [_VARIABLE.sub("", v) for v in variants if "$" in v]


def _expand_braces(word: str) -> list[str]:
    done: list[str] = []
    todo = [word]
    while todo and len(done) + len(todo) < _MAX_VARIANTS:
        current = todo.pop()
        match = _BRACES.search(current)
        if match is None:
            done.append(current)
            continue
        head, tail = current[: match.start()], current[match.end() :]
        todo.extend(head + alternative + tail for alternative in match.group(1).split(","))
    return done + todo


def _change_dir(cwd: str | None, args: list[str]) -> str | None:
    operands = [arg for arg in args if not arg.startswith("-")]
    if not operands:
        return "~"
    return _normalize(operands[0], cwd)


def _is_block_device(path: str) -> bool:
    normalized = _absolute(path) if path.startswith("/") else path
    return _BLOCK_DEVICE.match(normalized) is not None


def _deny_device(target: str) -> DeniedCommandError:
    return DeniedCommandError(
        "disk_write", f"writing to the disk device {target}", "直接写入磁盘设备"
    )
