"""The deny-list of the ``shell`` tool: destructive commands that no setting lifts.

:func:`check_command` is pure and runs before anything else (approval, sandbox): it raises
:class:`DeniedCommandError` (a ``ToolArgumentError``) for commands such as ``rm -rf /``,
``mkfs``, ``dd of=/dev/sda``, writes to ``/proc/sysrq-trigger`` or ``/sys``, fork bombs,
``shutdown``/``systemctl reboot``, ``kill -9 -1``/``pkill -f .``, moving a system directory
away or a recursive ``chmod``/``chown`` of the root — also when they hide behind
``sudo``/``env``/``timeout`` and other wrappers, ``bash -c "…"``, ``eval``, ``$(…)``,
backticks, ``xargs``, ``find -exec``, ``;``/``&&``/``||``/``|`` chains, newlines and line
continuations, quotes, escapes, ``${IFS}``, extra slashes, ``/proc/self/root``, abbreviated
long options (``--recur``) or absolute paths (``/bin/rm``).

Also looked into: here-strings (``bash <<< '…'``), ``echo '…' | sh``, ``alias``/``trap``
bodies, brace expansion (``/{,}``), ``cd``/``pushd`` before a relative target, literal
assignments on the same line (``x=/usr; rm -rf $x``), and variables that may be empty or are
unknown: ``rm -rf $DIR/`` is ``rm -rf /`` when DIR is unset, and any other unknown expansion
(``$x``, ``$(…)``, backticks) in a destructive target is refused as uncheckable; only
``${DIR:?}`` is trusted, as the author's explicit "never empty".

A deny-list can only catch what it knows; it is one layer under approval and the sandbox,
not a replacement. Code run by other interpreters (``python -c``, ``perl -e``) and payloads
built at run time (``base64 -d | sh``, ``$(printf …)`` as a command name) are out of its
reach. It errs on the side of refusing: text it cannot read reliably (unbalanced quotes,
ANSI-C ``$'…'`` quoting), nesting deeper than :data:`MAX_DEPTH` and comments are treated as
suspect, so ``ls # rm -rf /`` is refused too.
"""

from __future__ import annotations

import re
import warnings

from hermes.errors import FieldProblem, ToolArgumentError
from hermes.tools.builtin._shell_words import (
    OPAQUE,
    Cwds,
    ShellTextError,
    Variables,
    basename,
    expand_braces,
    has_flag,
    has_unknown,
    is_opaque_word,
    long_option,
    normalize,
    options_and_operands,
    prepare,
    protected,
    simple_commands,
    substitutions,
    tokenize,
    write_target,
)

__all__ = ["MAX_COMMAND_CHARS", "MAX_DEPTH", "DeniedCommandError", "check_command"]

MAX_COMMAND_CHARS = 10_000
#: Levels of ``bash -c``/``sudo``/``$(…)`` nesting examined; deeper is refused.
MAX_DEPTH = 8
#: Characters and words examined in total (all nesting levels); more is refused as too
#: complex to check. Bounds the work of adversarial nesting such as "$($($(…".
_BUDGET = 20 * MAX_COMMAND_CHARS

_IFS = re.compile(r"\$\{IFS\}|\$IFS\b")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# NAME() { … NAME | NAME & … } and friends: a function that starts two copies of itself.
# The name starts at a word boundary and is matched possessively (++), so a long word costs
# linear time, not quadratic backtracking.
_FORK_BOMB = re.compile(
    r"(?<![^\s;&|(){}])(?:function\s+)?(?P<name>[^\s(){}|&;<>`'\"]++)\s*(?:\(\s*\))?\s*"
    r"\{[^}]*?(?<![^\s{;|&])(?P=name)\s*[|&]\s*(?P=name)(?![^\s;|&}])"
)
_RESERVED_WORDS = frozenset(
    {"{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "esac"}
)
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff", "kexec"})
#: Arguments of systemctl/loginctl (verbs or target units) that stop or suspend the machine.
_STOP_VERBS = frozenset(
    {"poweroff", "reboot", "halt", "kexec", "emergency", "rescue", "suspend", "hibernate"}
    | {"hybrid-sleep", "suspend-then-hibernate", "soft-reboot", "ctrl-alt-del", "sleep"}
)
_RUNLEVELS = frozenset({"0", "1", "6", "s", "S", "single", "emergency"})
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
    | {"rm", "dd", "init", "telinit", "systemctl", "loginctl", "kill", "killall", "killall5"}
    | {"pkill", "chmod", "chown", "chgrp", "find", "rsync"}
)
#: Command names worth checking when they appear among a wrapper's arguments.
_INTERESTING = _DANGEROUS | _SHELLS | _WRAPPERS
#: What a ``find`` over a system tree must not run on what it finds.
_FIND_FED = (
    _SHELLS
    | _WRAPPERS
    | _FORMATTERS
    | {"rm", "shred", "unlink", "rmdir", "chmod", "chown", "chgrp", "dd", "mv", "truncate"}
)
#: Commands that xargs must not feed unknown input (as arguments or as a script) to.
_XARGS_REFUSED = _SHELLS | {"dd", "shred", "eval"}
# xargs options followed by a separate value.
_XARGS_VALUES = frozenset({"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s"})
_XARGS_LONG_VALUES = ("--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars")
#: A stand-in for what xargs reads: a protected path, so "xargs rm -rf" is refused.
_UNKNOWN_INPUT = "/usr"
#: What the process patterns of pkill/killall must not match: pid 1.
_PID1_NAMES = ("init", "systemd")
_CHMOD_MODE_OPTION = re.compile(r"-[rwxXst]+\Z")


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
    try:
        _Checker().check(command, depth=0)
    except ShellTextError as error:
        raise DeniedCommandError(error.rule, error.english, error.chinese) from None


def _uncheckable(what: str) -> DeniedCommandError:
    return DeniedCommandError("uncheckable", f"{what} cannot be checked", "命令的目标无法确定")


class _Checker:
    """One check: walks nested scripts depth-first, within one budget of words."""

    def __init__(self) -> None:
        self.budget = _BUDGET
        #: HOME/CDPATH changed somewhere: "~" and relative "cd" are then unknown.
        self.special: frozenset[str] = frozenset()

    def check(self, script: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise DeniedCommandError(
                "uncheckable", "the command is nested too deeply to check", "命令嵌套过深"
            )
        self._spend(len(script))
        script = _IFS.sub(" ", prepare(script))
        if _FORK_BOMB.search(script):
            raise DeniedCommandError("fork_bomb", "a fork bomb", "这是 fork 炸弹")
        commands = simple_commands(tokenize(script))
        variables = Variables(commands, self.special)
        self.special = variables.special
        cwds: Cwds = (None,)  # where a literal `cd` went, for relative targets
        stack: list[Cwds] = []  # pushd/popd
        previous: list[str] = []
        for simple in commands:
            for word in (*simple.words, *(target for _, target in simple.redirects)):
                for inner in substitutions(word):
                    self.check(inner, depth + 1)
            words = variables.expand(simple.words)
            variables.assign(simple)
            for operator, raw in simple.redirects:
                target = variables.expand_one(raw)
                if ">" in operator:
                    _check_write(target, cwds)
                if operator == "<<<":  # a here-string may be the script of a shell
                    self.check(target, depth + 1)
            command = _strip_prefix(words)
            if command[:1] in (["builtin"], ["command"]) and command[1:2] in _DIRECTORY_WORDS:
                command = command[1:]
            if simple.piped and _feeds_a_shell(previous, command):  # echo 'rm -rf /' | sh
                self.check(" ".join(previous[1:]), depth + 1)
            if command and command[0] in ("cd", "pushd", "popd"):
                new = self._change_dir(command, cwds, stack)
                # A cd that may not run, or runs in a subshell, leaves either directory.
                cwds = new if simple.clean else tuple(dict.fromkeys((*cwds, *new)))
            elif command:
                self.command(command, depth, cwds)
                if command[0] in OPAQUE:  # eval/source may cd anywhere: assume the root
                    cwds = tuple(dict.fromkeys((*cwds, "/")))
            previous = command

    def _change_dir(self, command: list[str], cwds: Cwds, stack: list[Cwds]) -> Cwds:
        """The working directories after ``cd``/``pushd``/``popd`` (``command``)."""
        name = command[0]
        operands = [arg for arg in command[1:] if not arg.startswith(("-", "+"))]
        rotates = any(arg[:1] in "+-" and arg[1:].isdigit() for arg in command[1:])
        if name == "popd" or rotates or (name == "pushd" and not operands):
            if name == "pushd" and not rotates:
                stack.append(cwds)
            everything = tuple(dict.fromkeys(c for entry in (cwds, *stack) for c in entry))
            if name == "popd" and stack and not rotates:
                return stack.pop()
            return everything  # a rotation may land on any directory of the stack
        if name == "pushd":
            stack.append(cwds)
        target = operands[0] if operands else "~"
        if has_unknown(target):
            return ("/",)  # cd "$x": the worst case is the root
        if "CDPATH" in self.special and not target.startswith(("/", "~", ".")):
            return ("/", *(normalize(target, cwd) for cwd in cwds))
        return tuple(dict.fromkeys(normalize(target, cwd) for cwd in cwds))

    def command(self, words: list[str], depth: int, cwds: Cwds) -> None:
        """Check one simple command (already split from its neighbours)."""
        self._spend(len(words))
        name, args = basename(words[0]), words[1:]
        if is_opaque_word(words[0]):  # $cmd -rf /usr, /bin/r? -rf /usr, {rm,-rf,/usr}
            braces = expand_braces(words[0])
            hidden = [*(braces if len(braces) > 1 else []), *args]
            for candidate in ("rm", "chmod", "dd", "mv", "kill"):
                _check_rules(candidate, hidden, cwds)
        _check_rules(name, args, cwds)
        if name == "alias":  # alias x='rm -rf /'
            for arg in args:
                if "=" in arg:
                    self.check(arg.split("=", 1)[1], depth + 1)
        elif name == "find":
            self._find(args, depth, cwds)
        elif name in ("xargs", "parallel"):
            self._fed(name, args, depth, cwds)
        if name in _SHELLS or name in _WRAPPERS:
            if depth >= MAX_DEPTH:
                raise DeniedCommandError(
                    "uncheckable", "the command is nested too deeply to check", "命令嵌套过深"
                )
            # Option arities differ by wrapper and version; instead of parsing them, every
            # argument that could start the wrapped command is checked as one, and every
            # argument that could be a script ("bash -c '…'", "su -c '…'") as a script.
            for index, arg in enumerate(args):
                if basename(arg) in _INTERESTING or basename(arg).startswith("mkfs"):
                    self.command(args[index:], depth + 1, cwds)
                if any(ch in arg for ch in " \t\n;&|`$(<>") and not arg.startswith("-"):
                    self.check(arg, depth + 1)

    def _find(self, args: list[str], depth: int, cwds: Cwds) -> None:
        """``find`` deleting, or running a command on, what it finds under a system tree."""
        index = 0
        while index < len(args) and (
            args[index] in ("-H", "-L", "-P", "-D") or args[index].startswith("-O")
        ):
            index += 2 if args[index] == "-D" else 1
        roots: list[str] = []
        while index < len(args) and not args[index].startswith(("-", "(", "!", ")")):
            roots.append(args[index])
            index += 1
        roots = roots or ["."]
        runs: list[list[str]] = []
        for start, arg in enumerate(args):
            if arg in ("-exec", "-execdir", "-ok", "-okdir"):
                end = start + 1
                while end < len(args) and args[end] not in (";", "+"):
                    end += 1
                if end > start + 1:
                    runs.append(args[start + 1 : end])
        destructive = "-delete" in args or any(
            basename(run[0]) in _FIND_FED or is_opaque_word(run[0]) for run in runs
        )
        for root in roots:
            where = protected(root, cwds)
            if destructive and where:
                raise DeniedCommandError(
                    "rm_root", f"find that deletes or rewrites {where}", "删除或改写系统目录"
                )
            if destructive and has_unknown(root):
                raise _uncheckable(f"the tree {root} of a deleting find")
            for run in runs:  # "{}" stands for each path found, the root first
                self.command([word.replace("{}", root) for word in run], depth + 1, cwds)

    def _fed(self, name: str, args: list[str], depth: int, cwds: Cwds) -> None:
        """``xargs``/``parallel``: the command receives unknown arguments (or a script)."""
        start = 0
        if name == "xargs":
            while start < len(args) and args[start].startswith("-"):
                option = args[start]
                takes_value = option in _XARGS_VALUES or (
                    "=" not in option and any(long_option(option, v) for v in _XARGS_LONG_VALUES)
                )
                start += 2 if takes_value else 1
        if start >= len(args):
            return
        first = basename(args[start])
        candidates = range(start, len(args)) if first in _WRAPPERS else (start,)
        for index in candidates:
            fed = basename(args[index])
            if fed in _XARGS_REFUSED or fed.startswith("mkfs"):
                raise _uncheckable(f"what {name} feeds to {fed}")
            if fed in ("rm", "chmod", "chown", "chgrp"):
                self.command([*args[index:], _UNKNOWN_INPUT], depth + 1, cwds)

    def _spend(self, words: int) -> None:
        self.budget -= words
        if self.budget < 0:
            raise DeniedCommandError(
                "uncheckable", "the command is too complex to check", "命令过于复杂，无法检查"
            )


_DIRECTORY_WORDS = (["cd"], ["pushd"], ["popd"])


def _feeds_a_shell(previous: list[str], command: list[str]) -> bool:
    """Whether ``previous | command`` pipes literal text (echo/printf) into a shell."""
    return (
        bool(previous and command)
        and basename(previous[0]) in ("echo", "printf")
        and basename(command[0]) in _SHELLS
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


def _is_formatter(name: str) -> bool:
    return name.startswith("mkfs") or name in _FORMATTERS


def _check_write(target: str, cwds: Cwds) -> None:
    rule = write_target(target, cwds)
    if rule == "disk_write":
        raise DeniedCommandError(
            "disk_write", f"writing to the device {target}", "直接写入磁盘或设备"
        )
    if rule == "kernel_write":
        raise DeniedCommandError(
            "kernel_write", f"writing to the kernel control {target}", "写入内核控制文件"
        )


def _check_target(target: str, cwds: Cwds, what: str, chinese: str, rule: str) -> None:
    """Refuse a destructive ``what`` (e.g. "recursive rm") of a protected or unknown target."""
    where = protected(target, cwds)
    if where:
        raise DeniedCommandError(rule, f"{what} of {where}", f"{chinese} {where}")
    if has_unknown(target):
        raise _uncheckable(f"the target {target} of {what}")


def _check_rules(name: str, args: list[str], cwds: Cwds) -> None:
    """Raise if ``name args`` is on the deny-list."""
    if _is_formatter(name):
        raise DeniedCommandError("mkfs", f"{name} formats or wipes a disk", "格式化或擦除磁盘")
    _check_power(name, args)
    if name == "dd":
        for arg in args:
            if arg.startswith("of="):
                _check_write(arg[3:], cwds)
                if has_unknown(arg[3:]):
                    raise _uncheckable(f"the output {arg[3:]} of dd")
    if name in _DEVICE_WRITERS:
        for arg in args:
            _check_write(arg, cwds)
    options, operands = options_and_operands(args)
    if name == "rm":
        if any(long_option(option, "--no-preserve-root") for option in options):
            raise DeniedCommandError("rm_root", "rm --no-preserve-root", "删除根目录")
        if has_flag(options, "rR", "--recursive"):
            for target in operands:
                _check_target(target, cwds, "recursive rm", "递归删除", "rm_root")
    elif name in ("chmod", "chown", "chgrp"):
        _check_chmod(name, options, operands, cwds)
    elif name in ("kill", "killall", "killall5", "pkill"):
        _check_kill(name, args)
    elif name == "mv":
        _check_mv(args, cwds)
    elif name == "rsync":
        deletes = any(option.startswith("--del") for option in options)
        moves = any(long_option(option, "--remove-source-files") for option in options)
        for index, target in enumerate(operands):
            where = protected(target, cwds)
            # The destination follows at least one source; sources are moved away.
            if where and ((deletes and index > 0) or moves):
                raise DeniedCommandError("rm_root", f"rsync that empties {where}", "清空系统目录")


def _check_power(name: str, args: list[str]) -> None:
    stops = (
        name in _POWER
        or (name in ("init", "telinit") and bool(_RUNLEVELS.intersection(args)))
        or (
            name in ("systemctl", "loginctl")
            and any(arg.removesuffix(".target") in _STOP_VERBS for arg in args)
        )
    )
    if stops:
        raise DeniedCommandError("power", f"{name} would stop the machine", "关机或重启")


def _check_chmod(name: str, options: list[str], operands: list[str], cwds: Cwds) -> None:
    recursive = has_flag(options, "R", "--recursive")
    # The first operand is the mode or owner, unless --reference or a mode spelled like an
    # option ("chmod -R -w /usr") took its place.
    mode_given = any(
        long_option(o, "--reference") or (name == "chmod" and _CHMOD_MODE_OPTION.match(o))
        for o in options
    )
    targets = operands if mode_given or len(operands) < 2 else operands[1:]
    for target in targets:
        if recursive:
            _check_target(target, cwds, f"recursive {name}", "递归修改权限或属主", "chmod_root")
        elif protected(target, cwds) == "/":
            raise DeniedCommandError("chmod_root", f"{name} of /", "修改根目录的权限或属主")


def _check_mv(args: list[str], cwds: Cwds) -> None:
    """``mv`` of a protected directory, wherever the destination is given."""
    sources: list[str] = []
    target_given = False
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            sources.extend(args[index + 1 :])
            break
        if arg.startswith("--"):
            takes = long_option(arg, "--target-directory") or long_option(arg, "--suffix")
            target_given |= long_option(arg, "--target-directory")
            index += 2 if takes and "=" not in arg else 1
            continue
        if arg.startswith("-") and arg != "-":
            letters = arg[1:]
            for position, letter in enumerate(letters):
                if letter in "tS":  # -t DIR, -S SUFFIX (attached or separate)
                    target_given |= letter == "t"
                    index += 1 if letters[position + 1 :] else 2
                    break
            else:
                index += 1
            continue
        sources.append(arg)
        index += 1
    if not target_given:
        sources = sources[:-1]
    for source in sources:
        where = protected(source, cwds)
        if where:
            raise DeniedCommandError("rm_root", f"mv would move {where} away", "移走系统目录")


def _check_kill(name: str, args: list[str]) -> None:
    if name == "killall5":
        raise DeniedCommandError("kill_all", "killall5 kills every process", "终止所有进程")
    if name == "kill":
        targets = _kill_targets(args)
        if "-1" in targets or "1" in targets:
            raise DeniedCommandError(
                "kill_all", "kill of every process (or of init)", "终止所有进程或 init"
            )
        return
    patterns, users = _process_selection(name, args)
    if not patterns and users:
        raise DeniedCommandError(
            "kill_all", f"{name} of every process of a user", "终止某用户的所有进程"
        )
    regex = name == "pkill" or any(
        long_option(a, "--regexp") or (a[:1] == "-" and a[1:2] != "-" and "r" in a) for a in args
    )
    for pattern in patterns:
        if _matches_init(pattern, regex):
            raise DeniedCommandError(
                "kill_all", f"{name} {pattern} matches every process or init", "终止所有进程或 init"
            )


def _kill_targets(args: list[str]) -> list[str]:
    index = 0
    if args and args[0] in ("-s", "-n"):
        index = 2  # kill -s KILL pid
    elif args and args[0].startswith("-") and args[0] != "--":
        if args[0] in ("-l", "-L") or args[0].startswith("--list"):
            return []
        index = 1  # kill -9 pid, kill -KILL pid
    return [arg for arg in args[index:] if arg != "--"]


# Options of killall and pkill followed by a value (short letters, long names).
_KILLALL_VALUES = ("suoynZ", ("--signal", "--user", "--older-than", "--younger-than", "--ns"))
_PKILL_VALUES = ("dgGPstuUF", ("--signal", "--euid", "--uid", "--group", "--pgroup", "--parent"))


def _process_selection(name: str, args: list[str]) -> tuple[list[str], list[str]]:
    """The name patterns and the users that ``killall``/``pkill`` ``args`` select."""
    shorts, longs = _KILLALL_VALUES if name == "killall" else _PKILL_VALUES
    patterns: list[str] = []
    users: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        value: str | None = None
        if arg == "--":
            patterns.extend(args[index + 1 :])
            break
        if arg.startswith("--"):
            spelled, _, attached = arg.partition("=")
            if any(long_option(spelled, option) for option in longs):
                value = (
                    attached if "=" in arg else (args[index + 1] if index + 1 < len(args) else "")
                )
                index += 0 if "=" in arg else 1
            if long_option(spelled, "--user") or long_option(spelled, "--euid"):
                users.append(value or "")
        elif (
            arg.startswith("-") and len(arg) > 1 and not arg[1:].isdigit() and not arg[1].isupper()
        ):
            for position, letter in enumerate(arg[1:], start=1):
                if letter in shorts:
                    value = arg[position + 1 :]
                    if not value:
                        index += 1
                        value = args[index] if index < len(args) else ""
                    if letter in "uU":
                        users.append(value)
                    break
        elif not arg.startswith("-"):
            patterns.append(arg)
        index += 1
    return patterns, users


def _matches_init(pattern: str, regex: bool) -> bool:
    """Whether a process pattern selects init (pid 1) — and with it usually everything."""
    if not regex:
        return basename(pattern) in _PID1_NAMES
    # A user regex runs on two short names only; long or heavily quantified ones, which
    # could backtrack for long, are refused rather than run.
    if len(pattern) > 64 or sum(pattern.count(ch) for ch in "*+?{") > 4:
        return True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # POSIX classes like [[:alpha:]] warn in Python
            compiled = re.compile(pattern, re.IGNORECASE)
    except re.error:
        return True
    return any(compiled.search(name) for name in _PID1_NAMES)
