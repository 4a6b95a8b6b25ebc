"""Shell text for the deny-list of :mod:`hermes.tools.builtin.shell_policy`: lexing, simple
commands, same-line variables and paths.

Everything here is pure and errs on the side of the checker: what cannot be read reliably is
reported (:class:`ShellTextError`) or marked unknown, never guessed in the harmless direction.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator, Sequence

#: Shell metacharacters become their own tokens; newline is a separator, not whitespace.
PUNCTUATION = "();<>|&`\n"
#: Possible working directories of a command; ``None`` stands for "unknown, unchanged".
Cwds = tuple[str | None, ...]

_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)\Z", re.DOTALL)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DEFAULTING = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?=")  # ${x:=v} assigns x
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
# A variable reference, or a "$" left at the end of a word (the start of a substitution).
_VARIABLE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$$")
# Expansions whose value is unknown ("bad"), after the harmless ones: $$ $# $? $! are numbers,
# $HOME is "~", and ${NAME:?} is the author's explicit "never empty" (seed: rm -rf "${D:?}/").
_EXPANSION = re.compile(
    r"\$[$#?!]|\$\{HOME\}|\$HOME\b|\$\{[A-Za-z_][A-Za-z0-9_]*:?\?[^}]*\}"
    r"|(?P<bad>\$(?:[{(A-Za-z_0-9@*-]|$)|`)"
)
_BRACES = re.compile(r"\{([^{}]*,[^{}]*)\}")
#: Brace-expansion variants of one word examined ("/{usr,etc}" is two targets).
_MAX_VARIANTS = 32
_HOME = re.compile(r"^(?:\$\{HOME\}|\$HOME)(?=/|$)")
_TILDE = re.compile(r"^~[A-Za-z0-9._-]*(?=/|$)")
_GLOB = re.compile(r"[*?\[]")
#: Words that open or close a compound command when they start a simple command.
_OPENERS = frozenset({"if", "while", "until", "for", "select", "case", "{"})
_CLOSERS = frozenset({"fi", "done", "esac", "}"})
#: Builtins whose effect on variables (or on the working directory) the checker cannot follow.
OPAQUE = frozenset({"eval", "source", ".", "trap", "alias"})
_DECLARERS = frozenset({"export", "declare", "typeset", "local", "readonly"})
#: Variables that change what "~" and a relative "cd" mean.
SPECIAL = frozenset({"HOME", "CDPATH"})
_UNKNOWN_HOME = "$_HOME_"  # an unknown expansion, so "~" in a destructive target is refused
#: Directories whose recursive removal (or chmod/chown) wrecks the system; "~" is any home.
PROTECTED = frozenset(
    {"/", "~", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32"}
    | {"/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/usr"}
    | {"/usr/bin", "/usr/lib", "/usr/lib64", "/usr/local", "/usr/sbin", "/usr/share", "/var"}
    | {"/var/lib"}
)
# Writable /dev entries that are not storage; every other /dev path counts as a device.
_HARMLESS_DEVICE = re.compile(
    r"/dev/(?:null|zero|full|u?random|std(?:in|out|err)|tty[A-Za-z0-9]*|ptmx|console|"
    r"fd/\d+|pts/\d+|(?:shm|mqueue|tcp|udp)/[^*?\[$]*)\Z"
)
# Kernel knobs: sysrq, sysctl, /sys power and device controls, process memory.
_KERNEL = re.compile(r"/(?:proc/sysrq-trigger|proc/sys(?:/.*)?|sys(?:/.*)?|proc/[^/]+/mem)\Z")


class ShellTextError(ValueError):
    """Text the checker cannot read reliably; ``rule`` names why (``unparsable``/
    ``uncheckable``)."""

    def __init__(self, rule: str, english: str, chinese: str) -> None:
        super().__init__(english)
        self.rule = rule
        self.english = english
        self.chinese = chinese


def prepare(script: str) -> str:
    """``script`` with what shlex does not know rewritten the way bash reads it: ``\\<newline>``
    outside single quotes is removed (a line continuation) and ``$"…"`` is ``"…"``. Raises
    :class:`ShellTextError` for ANSI-C quoting ``$'…'``, whose escapes (``$'\\162m'`` is
    ``rm``) hide any word."""
    if "$'" not in script and '$"' not in script and "\\\n" not in script:
        return script  # the common case: nothing to rewrite
    out: list[str] = []
    quote = ""
    index, size = 0, len(script)
    while index < size:
        char = script[index]
        following = script[index + 1] if index + 1 < size else ""
        if quote == "'":
            quote = "" if char == "'" else quote
        elif char == "\\":
            if following != "\n":
                out.append(char + following)
            index += 2
            continue
        elif quote == '"':
            quote = "" if char == '"' else quote
        elif char == "$" and following == "'":
            raise ShellTextError(
                "uncheckable",
                "ANSI-C quoting ($'…') hides what the words are",
                "命令使用 $'…' 转义",
            )
        elif char == "$" and following == '"':
            index += 1  # $"text" is a translated "text"
            continue
        elif char in "'\"":
            quote = char
        out.append(char)
        index += 1
    return "".join(out)


def tokenize(script: str) -> list[str]:
    """Words and punctuation of ``script``, quotes removed; raises :class:`ShellTextError`."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=PUNCTUATION)
    lexer.whitespace_split = True
    lexer.whitespace = " \t\r"
    # No comments: shlex would end a word at '#' ("a#b"), which bash does not, and hide what
    # follows; checking comment text as commands only ever refuses more.
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # "No closing quotation", "No escaped character"
        raise ShellTextError(
            "unparsable", "the command has unbalanced quotes or escapes", "命令的引号或转义不完整"
        ) from None


class Simple:
    """One simple command: its words, its redirections (operator, target), whether its stdin is
    piped from the previous command, and whether it surely runs in the current shell (top
    level, not after ``&&``/``||``, not in a pipeline, subshell, loop, branch or function)."""

    __slots__ = ("clean", "piped", "redirects", "words")

    def __init__(
        self, words: list[str], redirects: list[tuple[str, str]], piped: bool, clean: bool
    ) -> None:
        self.words = words
        self.redirects = redirects
        self.piped = piped
        self.clean = clean


def _sequential(separator: str | None) -> bool:
    return separator is None or all(ch in ";\n()" for ch in separator)


def _stays(separator: str | None) -> bool:
    """Whether a command followed by ``separator`` runs in the current shell."""
    if separator is None or separator.startswith(("&&", "||")):
        return True
    return "|" not in separator and "&" not in separator


# Shell operators; shlex glues adjacent punctuation into one token (");", "`;", "))").
_OPERATOR = re.compile(r"&&|\|\||;;&?|;&|\|&|&>>?|>>|<<<|<<-?|<>|>&|<&|>\||[()`;|&<>\n]")


class _Frame:
    """The state of the command being read (saved while a substitution inside it is read)."""

    __slots__ = ("before", "kind", "level", "piped", "redirects", "start_level", "words")

    def __init__(self, before: str | None, level: int, kind: str = "") -> None:
        self.words: list[str] = []
        self.redirects: list[tuple[str, str]] = []
        self.piped = False
        self.before = before
        self.start_level = level
        self.level = level  # the nesting level at which this substitution closes
        self.kind = kind  # "(" or "`" for a substitution, "" for the top level


def simple_commands(tokens: list[str]) -> list[Simple]:
    """Split tokens at ``;`` ``&&`` ``||`` ``|`` ``&`` ``(`` ``)``, newlines and comments into
    simple commands. A command substitution (``$(…)``, backticks, ``<(…)``) is a command of
    its own, and the words after it still belong to the command around it."""
    result: list[Simple] = []
    stack: list[_Frame] = []
    frame = _Frame(None, 0)
    pending: str | None = None
    level = 0

    def emit(after: str | None) -> None:
        if frame.words or frame.redirects:
            clean = frame.start_level == 0 and _sequential(frame.before) and _stays(after)
            result.append(Simple(frame.words, frame.redirects, frame.piped, clean))
        frame.words, frame.redirects, frame.piped = [], [], False
        frame.before = after

    for token in tokens:
        if token.startswith("#"):  # a comment: what follows is checked like a command
            emit("#")
            if len(token) > 1:
                frame.words.append(token[1:])
        elif not token or any(ch not in PUNCTUATION for ch in token):
            if pending is not None:
                frame.redirects.append((pending, token))
                pending = None
                continue
            if not frame.words:
                level += (token in _OPENERS) - (token in _CLOSERS)
                frame.start_level = level
            frame.words.append(token)
            continue
        for op in _OPERATOR.findall(token):
            last = frame.words[-1] if frame.words else ""
            opens = (op == "(" and (last.endswith("$") or pending in ("<", ">"))) or (
                op == "`" and not (stack and frame.kind == "`" and frame.level == level)
            )
            if opens:  # $( … ), <( … ), ` … `: the outer command gets an unknown word
                if op == "`" or pending is not None:
                    frame.words.append("$")
                pending = None
                stack.append(frame)
                level += 1
                frame = _Frame(op, level, op if op == "`" else "(")
            elif op in ("`", ")") and stack and frame.level == level:
                emit(op)  # the end of a substitution: back to the command around it
                frame = stack.pop()
                level -= 1
            elif "<" in op or ">" in op:
                pending = op
            else:
                emit(op)
                frame.piped = op in ("|", "|&")
                level += op.count("(") - op.count(")")
    emit(None)
    while stack:
        frame = stack.pop()
        emit(None)
    return result


def substitutions(word: str) -> Iterator[str]:
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


def has_unknown(word: str) -> bool:
    """Whether ``word`` (after same-line variables are substituted) still holds an expansion
    whose value is unknown: a variable, ``$(…)``, backticks, ``$1``, ``$@`` …"""
    if "$" not in word and "`" not in word:
        return False
    return any(match.group("bad") for match in _EXPANSION.finditer(word))


class Variables:
    """Literal same-line assignments (``x=/usr; rm -rf $x``) for substitution.

    A variable is known only after an assignment that surely runs (:attr:`Simple.clean`) and only
    if nothing else in the script may bind it (``read x``, ``for x``, a second value, an
    assignment in a loop, function or subshell, ``${x:=…}``); ``eval``/``source``/``trap``/
    ``alias``, ``IFS`` changes, ``case`` and here-documents turn substitution off entirely."""

    def __init__(self, commands: Sequence[Simple], special: frozenset[str]) -> None:
        self.known: dict[str, str] = {}
        self.enabled = True
        self._values: dict[str, str] = {}
        self._tainted: set[str] = set()
        for command in commands:
            self._survey(command)
        changed = self._tainted | self._values.keys()
        if "IFS" in changed:
            self.enabled = False
        #: Special variables (HOME, CDPATH) changed here or by an enclosing script.
        self.special = special | (SPECIAL & changed)

    def _survey(self, command: Simple) -> None:
        if any(op.startswith("<<") and op != "<<<" for op, _ in command.redirects):
            self.enabled = False  # a here-document body lexes as commands that never run
        words = _skip_reserved(command.words)
        name = words[0] if words else ""
        if name in ("builtin", "command") and len(words) > 1:
            name = words[1]
        if name in OPAQUE or "case" in command.words:
            self.enabled = False
        if words and all(_ASSIGNMENT.match(word) for word in words):
            self._bind(words, command.clean)
        elif name in _DECLARERS and not any(w.startswith(("-", "+")) for w in words[1:]):
            self._bind(words[1:], command.clean)
        else:
            self._taint(command.words)
        for word in command.words:
            if "${" in word:
                self._tainted.update(_DEFAULTING.findall(word))

    def _bind(self, words: Iterable[str], clean: bool) -> None:
        for word in words:
            match = _ASSIGNMENT.match(word)
            if match is None:  # "export x": a bare name
                self._taint([word])
                continue
            name, plus, value = match.groups()
            if plus or not clean or self._values.get(name, value) != value:
                self._tainted.add(name)
            self._values[name] = value

    def _taint(self, words: Iterable[str]) -> None:
        for word in words:
            if _IDENTIFIER.match(word):  # read x, for x in, unset x, printf -v x …
                self._tainted.add(word)
            else:
                match = _ASSIGNMENT.match(word)
                if match is not None:  # FOO=1 cmd, env FOO=1, let x=1, eval x=1 …
                    self._tainted.add(match.group(1))

    def assign(self, command: Simple) -> None:
        """Record the assignments of ``command`` when it runs in order (call for each)."""
        words = _skip_reserved(command.words)
        if words and words[0] in _DECLARERS:
            words = words[1:]
        for word in words:
            match = _ASSIGNMENT.match(word)
            if match is None:
                continue
            name, value = match.group(1), self.expand_one(match.group(3))
            if self.enabled and name not in self._tainted and not has_unknown(value):
                self.known[name] = value
            else:
                self.known.pop(name, None)

    def expand_one(self, word: str) -> str:
        """``word`` with known variables substituted (and "~" made unknown if HOME changed)."""
        if "HOME" in self.special and word.startswith("~") and _TILDE.match(word):
            word = self.known.get("HOME", _UNKNOWN_HOME) + word[1:]
        if "$" not in word:
            return word
        if "HOME" in self.special and "HOME" not in self.known:
            word = _HOME.sub(lambda _: _UNKNOWN_HOME, word)
        if not self.known:
            return word
        return _REFERENCE.sub(lambda m: self.known.get(m[1] or m[2], m[0]), word)

    def expand(self, words: list[str]) -> list[str]:
        """``words`` with known variables substituted; a value with blanks becomes several
        words (as unquoted, which is the stricter reading)."""
        result: list[str] = []
        for word in words:
            expanded = self.expand_one(word)
            if expanded != word and any(ch in expanded for ch in " \t\n"):
                result.extend(expanded.split())
            else:
                result.append(expanded)
        return result


def _skip_reserved(words: list[str]) -> list[str]:
    index = 0
    while index < len(words) and (words[index] in _OPENERS or words[index] in _CLOSERS):
        index += 1
    while index < len(words) and words[index] in ("then", "do", "else", "elif", "!"):
        index += 1
    return words[index:]


# --- paths ---------------------------------------------------------------------------------


def normalize(path: str, cwd: str | None) -> str | None:
    """``path`` as an absolute path ("~" for a home directory), or ``None`` if unknown."""
    path = _HOME.sub("~", path)
    path = _TILDE.sub("~", path)
    if not path.startswith(("/", "~")):
        if cwd is None:
            return None
        path = f"{cwd}/{path}"
    if path.startswith("~"):
        rest = absolute("/" + path[1:])
        return "~" if rest == "/" else "~" + rest
    return absolute(path)


def absolute(path: str) -> str:
    """Resolve ``.``, ``..`` and repeated slashes of an absolute path, and the symlinks to the
    root that the kernel offers (``/proc/<pid>/root``, ``/proc/<pid>/cwd`` — init's is ``/``)
    at the point they occur, so ``/proc/self/root/../usr`` is ``/usr``."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
        at_link = part in ("root", "cwd") and parts[0] == "proc"
        if at_link and (len(parts) == 3 or (len(parts) == 5 and parts[2] == "task")):
            parts.clear()
    return "/" + "/".join(parts)


def protected(target: str, cwds: Cwds) -> str | None:
    """The protected directory ``target`` removes (``/`` for ``/*``), or ``None``."""
    for variant in variants(target):
        for cwd in cwds:
            path = normalize(variant, cwd)
            if path is None:
                continue
            if path in PROTECTED:
                return path
            head, _, tail = path.rpartition("/")
            head = head or "/"
            if _GLOB.search(tail) and head in PROTECTED:  # "/*", "/u*", "~/.*": all of it
                return head
    return None


def variants(target: str) -> list[str]:
    """``target`` after brace expansion, each also with its variables empty ("$DIR/" is
    "/" when DIR is unset)."""
    expanded = expand_braces(target)
    return expanded + [_VARIABLE.sub("", v) for v in expanded if "$" in v]


def expand_braces(word: str) -> list[str]:
    """The words of the brace expansion of ``word`` (bounded; unordered)."""
    if "{" not in word:
        return [word]
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


def is_opaque_word(word: str) -> bool:
    """Whether a command name is hidden: an expansion, a glob (``/bin/r?``) or braces."""
    return has_unknown(word) or _GLOB.search(word) is not None or _BRACES.search(word) is not None


def write_target(path: str, cwds: Cwds) -> str | None:
    """``"disk_write"`` if writing to ``path`` writes a device, ``"kernel_write"`` if a kernel
    knob (sysrq, ``/proc/sys``, ``/sys``), else ``None``."""
    for cwd in cwds:
        full = normalize(path, cwd)
        if full is None:
            continue
        if full.startswith("/dev/") and not _HARMLESS_DEVICE.match(full):
            return "disk_write"
        if _KERNEL.match(full):
            return "kernel_write"
    return None


# --- options -------------------------------------------------------------------------------


def long_option(option: str, name: str) -> bool:
    """Whether ``option`` spells the long option ``name`` (``--recursive``): GNU getopt accepts
    any unambiguous prefix, so ``--rec`` and ``--r`` count, as does ``--name=value``."""
    spelled = option.split("=", 1)[0]
    return len(spelled) >= 3 and name.startswith(spelled)


def has_flag(options: list[str], shorts: str, long: str) -> bool:
    """Whether one of the short flags ``shorts`` or a spelling of ``long`` is among
    ``options``."""
    for option in options:
        if option.startswith("--"):
            if long_option(option, long):
                return True
        elif any(short in option[1:] for short in shorts):
            return True
    return False


def options_and_operands(args: list[str]) -> tuple[list[str], list[str]]:
    """Split ``args`` into options and operands (GNU order: options anywhere, ``--`` ends)."""
    options: list[str] = []
    operands: list[str] = []
    for index, arg in enumerate(args):
        if arg == "--":
            operands.extend(args[index + 1 :])
            break
        (options if arg.startswith("-") and arg != "-" else operands).append(arg)
    return options, operands


def basename(word: str) -> str:
    """The command name of ``word`` (``/usr/bin/rm`` is ``rm``)."""
    return word.rstrip("/").rsplit("/", 1)[-1] if "/" in word else word
