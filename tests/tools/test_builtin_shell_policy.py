"""The shell deny-list: destructive commands are refused however they are dressed up, ordinary
commands pass, and the checker never fails with anything but a ToolArgumentError."""

from __future__ import annotations

import contextlib
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.errors import ToolArgumentError
from hermes.tools import BUILTIN_TOOLS
from hermes.tools.builtin.shell_policy import (
    MAX_COMMAND_CHARS,
    MAX_DEPTH,
    DeniedCommandError,
    check_command,
)


def _rule(command: str) -> str:
    with pytest.raises(DeniedCommandError) as exc:
        check_command(command)
    return exc.value.rule


# --- the deny-list -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf /",
        "rm -fr /",
        "rm -Rf /",
        "rm -r -f /",
        "rm --recursive --force /",
        "rm -rf -- /",
        "rm -r /",
        "rm -rf /*",
        "rm -rf /.*",
        "rm -rf //",
        "rm -rf ///",
        "rm -rf /.",
        "rm -rf /./",
        "rm -rf /usr/..",
        "rm -rf /tmp/../../",
        "rm -rf ~",
        "rm -rf ~/",
        "rm -rf ~/*",
        "rm -rf ~root",
        "rm -rf $HOME",
        "rm -rf ${HOME}/",
        "rm -rf $DIR/",
        "rm -rf ${TARGET}/*",
        "rm -rf /etc",
        "rm -rf /usr/*",
        "rm -rf /home/",
        "rm --no-preserve-root -rf /",
        "rm -rf --no-preserve-root /tmp/x",
        "rm -rf / --no-preserve-root",
        "/bin/rm -rf /",
        "/usr/bin/rm -rf /",
        "\\rm -rf /",
        "r\\m -rf /",
        "'rm' '-rf' '/'",
        '"rm" "-rf" "/"',
        'r"m" -r"f" "/"',
        "rm    -rf      /",
        "rm\t-rf\t/",
        "rm${IFS}-rf${IFS}/",
        "rm$IFS-rf$IFS/",
        "cd / && rm -rf *",
        "cd; rm -rf *",
        "cd /usr && rm -rf ..",
    ],
)
def test_recursive_removal_of_the_system_is_refused(command: str) -> None:
    assert _rule(command) == "rm_root"


@pytest.mark.parametrize(
    "command",
    [
        "sudo rm -rf /",
        "sudo -u root rm -rf /",
        "sudo -u root -- rm -rf /",
        "sudo -E -H rm -rf /",
        "doas rm -rf /",
        "env rm -rf /",
        "env -i PATH=/bin rm -rf /",
        "FOO=1 BAR=2 rm -rf /",
        "nohup rm -rf / &",
        "nice -n 19 rm -rf /",
        "timeout 5 rm -rf /",
        "timeout -s KILL 5s rm -rf /",
        "time rm -rf /",
        "exec rm -rf /",
        "command rm -rf /",
        "busybox rm -rf /",
        "xargs rm -rf /",
        "ionice -c3 rm -rf /",
        "sudo sudo sudo rm -rf /",
        "bash -c 'rm -rf /'",
        'bash -c "rm -rf /"',
        "sh -c 'rm -rf /'",
        "/bin/sh -c 'rm -rf /'",
        "bash -lc 'cd /tmp; rm -rf /'",
        'zsh -c "sudo rm -rf /"',
        "sudo bash -c 'sh -c \"rm -rf /\"'",
        "su -c 'rm -rf /'",
        "su root -c 'rm -rf /'",
        "eval 'rm -rf /'",
        "eval rm -rf /",
        "watch 'rm -rf /'",
        "ssh host 'rm -rf /'",
        "echo $(rm -rf /)",
        'echo "$(rm -rf /)"',
        "echo `rm -rf /`",
        'echo "`rm -rf /`"',
        "x=$(rm -rf /)",
        "cat <(rm -rf /)",
        "ls; rm -rf /",
        "ls;rm -rf /",
        "ls && rm -rf /",
        "false || rm -rf /",
        "ls | rm -rf /",
        "ls & rm -rf /",
        "ls\nrm -rf /",
        "(rm -rf /)",
        "{ rm -rf /; }",
        "if true; then rm -rf /; fi",
        "while true; do rm -rf /; done",
        "f() { rm -rf /; }; f",
        "function f { rm -rf /; }",
        "! rm -rf /",
        "ls # rm -rf /",
        "true && (cd / && rm -rf *)",
        'bash <<< "rm -rf /"',
        "echo 'rm -rf /' | sh",
        "printf 'rm -rf ~' | bash -s",
        "alias ll='rm -rf /'",
        "trap 'rm -rf /' EXIT",
        "rm -rf /{,}",
        "rm -rf /{tmp,usr}",
        "rm -rf /$(echo)",
        "rm -rf /var/$EMPTY",
    ],
)
def test_removal_hidden_behind_wrappers_and_chains_is_refused(command: str) -> None:
    assert _rule(command) == "rm_root"


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("mkfs /dev/sda1", "mkfs"),
        ("mkfs.ext4 /dev/sda1", "mkfs"),
        ("/sbin/mkfs.xfs -f /dev/nvme0n1", "mkfs"),
        ("sudo mkfs.vfat /dev/sdb", "mkfs"),
        ("mke2fs /dev/sda", "mkfs"),
        ("wipefs -a /dev/sda", "mkfs"),
        ("dd if=/dev/zero of=/dev/sda", "disk_write"),
        ("dd if=/dev/urandom of=/dev/sda1 bs=1M", "disk_write"),
        ("dd of=/dev/nvme0n1 if=image.iso", "disk_write"),
        ("sudo dd if=x of=//dev//sdb", "disk_write"),
        ("dd if=/dev/zero of=/dev/mapper/root", "disk_write"),
        ("echo hi > /dev/sda", "disk_write"),
        ("echo hi >/dev/sda", "disk_write"),
        ("cat image >> /dev/sdb", "disk_write"),
        ("cat image 1>/dev/sdb", "disk_write"),
        ("cat image &> /dev/vda", "disk_write"),
        ("> /dev/sda", "disk_write"),
        ("cat x | sudo tee /dev/sda", "disk_write"),
        ("cp disk.img /dev/sdc", "disk_write"),
        ("shred -n 3 /dev/sda", "disk_write"),
        (":(){ :|:& };:", "fork_bomb"),
        (":(){ :|: & };:", "fork_bomb"),
        (":() { : | : & }; :", "fork_bomb"),
        ("bomb() { bomb | bomb & }; bomb", "fork_bomb"),
        ("function f { f | f & }; f", "fork_bomb"),
        ("bash -c ':(){ :|:& };:'", "fork_bomb"),
        ("shutdown -h now", "power"),
        ("shutdown -r +5", "power"),
        ("sudo shutdown now", "power"),
        ("reboot", "power"),
        ("/sbin/reboot -f", "power"),
        ("halt", "power"),
        ("poweroff", "power"),
        ("init 0", "power"),
        ("init 6", "power"),
        ("telinit 0", "power"),
        ("systemctl poweroff", "power"),
        ("sudo systemctl reboot", "power"),
        ("ls && reboot", "power"),
        ("chmod -R 777 /", "chmod_root"),
        ("chmod -R 000 /", "chmod_root"),
        ("chmod --recursive 777 /etc", "chmod_root"),
        ("sudo chmod -Rf 777 /*", "chmod_root"),
        ("chmod 000 /", "chmod_root"),
        ("chown -R nobody /", "chmod_root"),
        ("chown -R me:me /usr", "chmod_root"),
        ("chgrp -R users /", "chmod_root"),
        ("kill -9 -1", "kill_all"),
        ("kill -KILL -1", "kill_all"),
        ("kill -s KILL -1", "kill_all"),
        ("kill -- -1", "kill_all"),
        ("kill -9 1", "kill_all"),
        ("sudo kill -9 -1", "kill_all"),
        ("find / -delete", "rm_root"),
        ("find / -name '*' -exec rm -rf {} +", "rm_root"),
        ("mv / /tmp/x", "rm_root"),
        ("mv ~ /dev/null", "rm_root"),
    ],
)
def test_other_destructive_commands_are_refused(command: str, rule: str) -> None:
    assert _rule(command) == rule


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "ls /",
        "pwd && whoami",
        "echo hello world",
        "echo a#b",
        "echo 'rm is a command'",
        "git status && git diff | head -n 20",
        "rm file.txt",
        "rm -f *.tmp",
        "rm -rf build/",
        "rm -rf ./node_modules",
        "rm -rf /tmp/hermes-test",
        'rm -rf "${DIR:?}/"',
        "rm -r /var/tmp/cache",
        "cd /tmp && rm -rf *",
        "chmod -R 755 ./site",
        "chmod 644 /etc/myapp.conf",
        "chown -R www-data ./public",
        "dd if=/dev/zero of=./disk.img bs=1M count=10",
        "dd if=/dev/sda of=./backup.img",
        "cat /dev/sda | head -c 512 | xxd",
        "echo done > /dev/null",
        "ls 2>&1 > out.txt",
        "kill -9 12345",
        "kill -1 12345",
        "kill -l",
        "find . -name '*.pyc' -delete",
        "find / -name '*.conf'",
        "sudo apt-get install -y vim",
        "timeout 5 python script.py",
        "bash script.sh",
        "python -c 'print(1)'",
        "systemctl status nginx",
        "docker run --rm alpine echo hi",
        "f() { echo hi; }; f",
        "mkdir -p out && cp a.txt out/",
        "tar czf backup.tgz ./data",
        "echo 'ls -la' | sh",
        "rm -rf /tmp/{a,b}",
        'grep x <<< "hello"',
        "alias ll='ls -la'",
        "",
        "   ",
    ],
)
def test_ordinary_commands_pass(command: str) -> None:
    check_command(command)


# --- what cannot be checked is refused -----------------------------------------------------


@pytest.mark.parametrize("command", ["echo 'unbalanced", 'rm -rf "/', "echo trailing\\"])
def test_unparsable_commands_are_refused(command: str) -> None:
    assert _rule(command) == "unparsable"


def test_too_long_commands_are_refused() -> None:
    assert _rule("echo " + "x" * MAX_COMMAND_CHARS) == "uncheckable"


def test_nul_is_refused() -> None:
    assert _rule("ls\x00rm -rf /") == "uncheckable"


def test_deep_nesting_is_refused() -> None:
    command = "ls"
    for _ in range(MAX_DEPTH + 2):
        command = f"sh -c {shlex.quote(command)}"
    assert _rule(command) == "uncheckable"


def test_nesting_within_the_limit_is_checked() -> None:
    command = "rm -rf /"
    for _ in range(MAX_DEPTH - 2):
        command = f"sh -c {shlex.quote(command)}"
    assert _rule(command) == "rm_root"


@pytest.mark.parametrize(
    "command",
    ["echo " + "$(" * 3000, "echo " + '"$(' * 1500, "x" + "`" * 5000, "sudo " * 1500, "(" * 5000],
)
def test_adversarial_nesting_ends_quickly_and_cleanly(command: str) -> None:
    # Thousands of nested substitutions or wrappers: an answer, not a hang or a crash.
    with contextlib.suppress(DeniedCommandError):
        check_command(command)


def test_refusal_is_a_tool_argument_error_naming_the_command_field() -> None:
    with pytest.raises(ToolArgumentError) as exc:
        check_command("sudo rm -rf /")
    assert exc.value.problems[0].path == "command"
    assert "no setting allows this" in str(exc.value)
    assert "命令被拒绝" in str(exc.value)


def test_non_text_is_refused() -> None:
    with pytest.raises(DeniedCommandError):
        check_command(None)  # type: ignore[arg-type]


def test_the_policy_module_exposes_no_tool() -> None:
    assert "check_command" not in BUILTIN_TOOLS
    assert not any(t.fn.__module__.endswith("shell_policy") for t in BUILTIN_TOOLS.values())


# --- properties ----------------------------------------------------------------------------

_SHELL_ALPHABET = st.sampled_from(
    [
        *"abcrmf-/ ~*.$(){}[]|&;<>`'\"\\\n\t#=!?:0123456789",
        *("rm", "-rf", "/", "sudo", "bash", "-c", "$(", "`", "&&", "||", "${IFS}", "dd"),
        "of=/dev/sda",
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_accepted_or_refused_cleanly(command: str) -> None:
    with contextlib.suppress(ToolArgumentError):
        check_command(command)


@settings(max_examples=500, deadline=None)
@given(st.lists(_SHELL_ALPHABET, max_size=60).map("".join))
def test_shell_like_noise_is_accepted_or_refused_cleanly(command: str) -> None:
    with contextlib.suppress(ToolArgumentError):
        check_command(command)


_PREFIXES = st.sampled_from(["", "ls", "echo hi", "cd /tmp", "true", "git status", "x=1"])
_SEPARATORS = st.sampled_from(["; ", ";", " && ", " || ", " | ", " & ", "\n", " ;\n "])
_HIDERS = st.sampled_from(
    [
        "{}",
        "sudo {}",
        "bash -c '{}'",
        'sh -c "{}"',
        "$({})",
        "`{}`",
        "({})",
        "env X=1 {}",
        "timeout 9 {}",
        "eval '{}'",
    ]
)
_DESTRUCTIVE = st.sampled_from(
    [
        "rm -rf /",
        "rm -fr /*",
        "/bin/rm -rf ~",
        "mkfs.ext4 /dev/sda",
        "dd if=/dev/zero of=/dev/sda",
        "shutdown now",
        "reboot",
        "kill -9 -1",
        "chmod -R 777 /",
    ]
)


@settings(max_examples=400, deadline=None)
@given(prefix=_PREFIXES, separator=_SEPARATORS, hider=_HIDERS, destructive=_DESTRUCTIVE)
def test_destructive_commands_are_refused_in_any_chain_or_wrapper(
    prefix: str, separator: str, hider: str, destructive: str
) -> None:
    command = (prefix + separator if prefix else "") + hider.format(destructive)
    with pytest.raises(DeniedCommandError):
        check_command(command)
