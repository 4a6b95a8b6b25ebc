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


# --- bypasses found in review: each is refused, with variants ----------------------------


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        # ANSI-C quoting hides any word
        ("$'rm' -rf /usr", "uncheckable"),
        ("$'\\162m' -rf /usr", "uncheckable"),
        ("rm -rf $'/usr'", "uncheckable"),
        ("sudo $'\\x72m' -rf /", "uncheckable"),
        ('$"rm" -rf /usr', "rm_root"),
        # abbreviated GNU long options
        ("rm --recur --force /usr", "rm_root"),
        ("rm --r /etc", "rm_root"),
        ("rm --recursive=yes /etc", "rm_root"),
        ("rm --no-pres /tmp/x", "rm_root"),
        ("chmod --rec 000 /usr", "chmod_root"),
        ("chown --recursive me /usr", "chmod_root"),
        ("chmod -R -w /usr", "chmod_root"),
        ("chmod -R --reference=/tmp/x /usr", "chmod_root"),
        # moving system directories away, in any option order
        ("mv -t /tmp/x /usr", "rm_root"),
        ("mv --target-directory=/x /etc", "rm_root"),
        ("mv --target /x /etc", "rm_root"),
        ("mv -ft/x /boot", "rm_root"),
        ("mv /usr -t /x", "rm_root"),
        ("rsync -a --delete empty/ /usr/", "rm_root"),
        ("rsync -a --delete-after empty/ /etc", "rm_root"),
        ("rsync --remove-source-files -a /etc/ x/", "rm_root"),
        # /proc/<pid>/root is the root; // /./ and trailing /. collapse
        ("rm -rf /proc/self/root/usr", "rm_root"),
        ("rm -rf /proc/1/root/etc", "rm_root"),
        ("rm -rf /proc/self/root/../usr", "rm_root"),
        ("rm -rf /proc/1/task/1/root/", "rm_root"),
        ("rm -rf /proc/1/cwd/usr", "rm_root"),
        ("rm -rf //usr/./", "rm_root"),
        ("rm -rf /usr/.", "rm_root"),
        # xargs and find feeding destructive commands
        ("echo /usr | xargs rm -rf", "rm_root"),
        ("xargs -0 -n 1 rm -rf --", "rm_root"),
        ("xargs -I{} rm -rf {}", "rm_root"),
        ("xargs sudo rm -rf", "rm_root"),
        ("xargs chmod -R 000", "chmod_root"),
        ("echo 'rm -rf /' | xargs sh -c", "uncheckable"),
        ("xargs dd", "uncheckable"),
        ("find / -exec sh -c 'rm -rf \"$0\"' {} \\;", "rm_root"),
        ("find / -delete", "rm_root"),
        ("find -L / -delete", "rm_root"),
        ("find / -exec rm {} \\;", "rm_root"),
        ("find /usr -execdir shred {} +", "rm_root"),
        ("find / -exec sudo rm {} +", "rm_root"),
        ("find . -exec rm -rf / \\;", "rm_root"),
        ("cd / && find -delete", "rm_root"),
        # the working directory of pushd/popd, builtin cd, and cd that may not happen
        ("pushd /; rm -rf *", "rm_root"),
        ("pushd /usr && pushd /tmp && popd && rm -rf *", "rm_root"),
        ("builtin cd / && rm -rf *", "rm_root"),
        ("cd /; (cd /tmp); rm -rf *", "rm_root"),
        ("cd /; false && cd /tmp; rm -rf *", "rm_root"),
        ("cd $X; rm -rf *", "rm_root"),
        ("eval cd /; rm -rf *", "rm_root"),
        ("CDPATH=/ ; cd usr && rm -rf *", "rm_root"),
        # literal assignments on the same line, and unknown values
        ("x=/usr; rm -rf $x", "rm_root"),
        ("x=/usr\nrm -rf ${x}", "rm_root"),
        ("export x=/etc; sudo rm -rf $x", "rm_root"),
        ('x=/usr; bash -c "rm -rf $x"', "rm_root"),
        ("x='/tmp /usr'; rm -rf $x", "rm_root"),
        ("r=rm; $r -rf /usr", "rm_root"),
        ("x=/tmp/a; false && x=/usr; rm -rf $x", "uncheckable"),
        ("f() { x=/usr; }; x=/tmp/a; f; rm -rf $x", "uncheckable"),
        ("x=/tmp/a; read x; rm -rf $x", "uncheckable"),
        ("for x in /usr; do rm -rf $x; done", "uncheckable"),
        ("IFS=x; y=/tmpx/usr; rm -rf $y", "uncheckable"),
        ("rm -rf $x", "uncheckable"),
        ("rm -rf /tmp/$1", "uncheckable"),
        ("HOME=/usr bash -c 'rm -rf ~/bin'", "rm_root"),
        ("HOME=/usr bash -c 'rm -rf ~/share'", "uncheckable"),
        ("export HOME=/usr; rm -rf $HOME/share", "rm_root"),
        ("dd if=/dev/zero of=$DEV", "uncheckable"),
        # command names that are hidden
        ("$CMD -rf /usr", "rm_root"),
        ("/bin/r? -rf /usr", "rm_root"),
        ("{rm,-rf,/usr}", "rm_root"),
        # kernel knobs and device targets
        ("echo b > /proc/sysrq-trigger", "kernel_write"),
        ("echo o | sudo tee /proc/sysrq-trigger", "kernel_write"),
        ("echo 1 > /proc/sys/kernel/panic", "kernel_write"),
        ("echo mem > /sys/power/state", "kernel_write"),
        ("echo 1 > /sys/block/sda/device/delete", "kernel_write"),
        ("echo x > /proc/1/root/proc/sys/vm/drop_caches", "kernel_write"),
        ("cat x > /dev/block/8:0", "disk_write"),
        ("dd of=/dev/block/8:0", "disk_write"),
        ("dd if=x of=/dev/nvme0n1", "disk_write"),
        ("dd of=/dev/mmcblk0p1", "disk_write"),
        ("dd of=/dev/vdb", "disk_write"),
        ("dd of=/dev/xvda", "disk_write"),
        ("dd of=/dev/mapper/vg-root", "disk_write"),
        ("dd of=/dev/disk/by-id/ata-x", "disk_write"),
        ("echo x > /dev/sd*", "disk_write"),
        ("cd /dev && dd if=x of=sda", "disk_write"),
        ("dd of=/proc/self/root/dev/sda", "disk_write"),
        # line continuations and substitutions inside destructive targets
        ("rm -rf /u\\\nsr", "rm_root"),
        ("rm -r\\\nf /", "rm_root"),
        ('rm -rf "/u\\\nsr"', "rm_root"),
        ('rm -rf /usr"$(true)"', "uncheckable"),
        ("rm -rf `echo /usr`", "uncheckable"),
        ("rm -rf $(echo /usr)", "uncheckable"),
        ("rm -rf `true` /usr", "uncheckable"),
        ("chmod 000 $(true) /", "chmod_root"),
        # killing everything, stopping the machine
        ("killall -9 -r .", "kill_all"),
        ("killall -r '.*'", "kill_all"),
        ("killall systemd", "kill_all"),
        ("killall -u root", "kill_all"),
        ("killall5", "kill_all"),
        ("killall5 -9", "kill_all"),
        ("pkill -9 -f .", "kill_all"),
        ("pkill -f '^'", "kill_all"),
        ("pkill init", "kill_all"),
        ("pkill -u root", "kill_all"),
        ("sudo pkill -KILL -f '[a-z]'", "kill_all"),
        ("loginctl poweroff", "power"),
        ("loginctl reboot", "power"),
        ("loginctl halt", "power"),
        ("loginctl suspend", "power"),
        ("systemctl poweroff", "power"),
        ("systemctl --force reboot", "power"),
        ("systemctl halt", "power"),
        ("systemctl kexec", "power"),
        ("systemctl emergency", "power"),
        ("systemctl rescue", "power"),
        ("systemctl isolate rescue.target", "power"),
        ("systemctl start poweroff.target", "power"),
        ("telinit 0", "power"),
        ("telinit 6", "power"),
        ("telinit 1", "power"),
        ("busybox reboot", "power"),
        ("busybox poweroff -f", "power"),
        ("busybox halt", "power"),
    ],
)
def test_bypasses_found_in_review_are_refused(command: str, rule: str) -> None:
    assert _rule(command) == rule


@pytest.mark.parametrize(
    "command",
    [
        "ls -la /usr",
        "rm -rf ./build",
        "rm -rf /tmp/x",
        "find . -name '*.pyc' -delete",
        "echo hi > out.txt",
        "x=1; echo $x",
        "killall myapp",
        "killall -r '^myapp-[0-9]+$'",
        "pkill -f 'python app.py'",
        "grep 'foo$' x.txt",
        'grep "foo$" x.txt',
        "awk '{print $1}' data.txt",
        "docker run \\\n  --rm alpine echo hi",
        "x=/tmp/build; rm -rf $x",
        'rm -rf "${BUILD_DIR:?}"',
        "rm -rf /tmp/cache-$$",
        "rm -rf $HOME/.cache/pip",
        "pushd /tmp && rm -rf *; popd",
        "find . -exec sh -c 'echo $0' {} \\;",
        "find . -name '*.o' | xargs rm -f",
        "find . -type d -exec rm -rf {} +",
        "echo done > /dev/stderr",
        "echo hi > /proc/self/fd/1",
        "cat /proc/cpuinfo /sys/class/net/eth0/address",
        "mv a.txt b.txt",
        "mv build/app /usr/local/bin/",
        "chmod +x $f",
        "chown -R $USER ./build",
        "rsync -a --delete src/ dst/",
        "kill $(pgrep myapp)",
        "systemctl restart nginx",
        "loginctl list-sessions",
        "$EDITOR notes.txt",
        'for f in *.txt; do mv "$f" out/; done',
    ],
)
def test_commands_close_to_the_bypasses_still_pass(command: str) -> None:
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


_SYSTEM_DIRS = st.sampled_from(["/", "/usr", "/etc", "/boot", "/var/lib", "/usr/share", "/home"])
_NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(name=_NAMES, directory=_SYSTEM_DIRS, braces=st.booleans(), hider=_HIDERS)
def test_a_variable_holding_a_system_directory_is_followed(
    name: str, directory: str, braces: bool, hider: str
) -> None:
    reference = "${" + name + "}" if braces else "$" + name
    command = f"{name}={directory}; " + hider.format(f"rm -rf {reference}")
    with pytest.raises(DeniedCommandError):
        check_command(command)


@settings(max_examples=200, deadline=None)
@given(
    pid=st.sampled_from(["self", "1", "thread-self", "42"]),
    directory=_SYSTEM_DIRS,
    spelling=st.integers(min_value=3, max_value=len("--recursive")),
)
def test_proc_root_prefixes_and_abbreviated_options_are_seen_through(
    pid: str, directory: str, spelling: int
) -> None:
    option = "--recursive"[:spelling]
    with pytest.raises(DeniedCommandError):
        check_command(f"rm {option} /proc/{pid}/root{directory}")
