"""The command blocks of the README and the guides, read and run as a reader would.

Every fenced block of shell commands carries a tag in an HTML comment on the line before it
(invisible on GitHub and in the built site):

    <!-- run -->                 run as written, from a fresh clone of the repository
    <!-- run: root-netns -->     run as root inside a network namespace made for it
    <!-- not-run: REASON -->     shown only; REASON says why it cannot run here

In a `console` block a line `$ COMMAND` is a command (a trailing backslash continues it on
the next line) and the lines after it, up to the next command, are what it prints. The
output is compared with numbers masked: times, counts and widths change from run to run,
the words and the shape of the output must not. A line `...` stands for any number of
lines.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SHELL_LANGUAGES = {"console", "sh", "bash", "shell", ""}
TAG = re.compile(r"<!--\s*(run(?::\s*root-netns)?|not-run:\s*(?P<reason>.+?))\s*-->")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+)(?P<lang>[\w-]*)\s*$")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?")
RUN_ID = re.compile(r"\b(?=[0-9a-f]*\d)[0-9a-f]{6,}\b")  # run ids and hashes: sf-3fa9c1-…
BOX_RUN = re.compile(r"([─━═┄┈-])\1+")
SPACES = re.compile(r"[ \t]+")


@dataclass
class Command:
    line: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    path: Path
    lineno: int  # of the opening fence, 1-based
    lang: str
    tag: str | None  # "run", "root-netns", "not-run" or None (untagged)
    reason: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.lineno}"

    def commands(self) -> list[Command]:
        """The commands of a `console` block with what each prints; a `sh` block's lines are
        all commands, with no output to compare."""
        commands: list[Command] = []
        pending = ""
        for raw in self.text.splitlines():
            if self.lang != "console":
                line = raw.rstrip()
                if not line or line.lstrip().startswith("#"):
                    continue
                pending += line
                if pending.endswith("\\"):
                    pending = pending[:-1] + " "
                    continue
                commands.append(Command(pending))
                pending = ""
                continue
            if pending:
                pending += raw.strip()
                if pending.endswith("\\"):
                    pending = pending[:-1] + " "
                    continue
                commands[-1].line = pending
                pending = ""
            elif raw.startswith("$ "):
                line = raw[2:].rstrip()
                commands.append(Command(line))
                if line.endswith("\\"):
                    pending = line[:-1] + " "
            elif commands:
                commands[-1].expected.append(raw)
        return commands


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file with the tag on the line before it."""
    lines = path.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m["fence"], m["lang"]
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence:
            j += 1
        prev = lines[i - 1].strip() if i > 0 else ""
        t = TAG.fullmatch(prev)
        tag = reason = None
        if t:
            word = t.group(1)
            tag = "not-run" if word.startswith("not-run") else "root-netns" if "root-netns" in word else "run"
            reason = t["reason"] or ""
        indent = len(m["indent"])
        text = "\n".join(line[indent:] for line in lines[i + 1 : j])
        found.append(Block(path, i + 1, lang, tag, reason or "", text))
        i = j + 1
    return found


def mask(text: str) -> list[str]:
    """The lines of `text` with what changes from run to run taken out: colours, numbers,
    runs of spaces and of a table's rule characters, trailing blanks, blank lines."""
    out = []
    for line in ANSI.sub("", text).replace("\r", "").splitlines():
        line = NUMBER.sub("N", RUN_ID.sub("N", line))
        line = BOX_RUN.sub(r"\1", line)
        line = SPACES.sub(" ", line).strip()
        if line:
            out.append(line)
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether masked output equals the masked expectation, `...` standing for any lines."""
    exp = [e for e in expected]
    if not exp:
        return True
    memo: dict[tuple[int, int], bool] = {}

    def go(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[i, j]
        if i == len(exp):
            r = j == len(actual)
        elif exp[i] == "...":
            r = any(go(i + 1, k) for k in range(j, len(actual) + 1))
        else:
            r = j < len(actual) and exp[i] == actual[j] and go(i + 1, j + 1)
        memo[i, j] = r
        return r

    return go(0, 0)


def run_in_terminal(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str, str]:
    """Run `argv` with its standard output on a pseudo-terminal 100 columns wide (tables are
    drawn as a reader's terminal draws them) and its standard error on a pipe (no progress
    bar; notes and warnings still printed). Returns the exit status, stdout and stderr."""
    master, slave = pty.openpty()
    try:
        os.set_blocking(master, False)
        env = {**env, "COLUMNS": "100", "LINES": "50", "NO_COLOR": "1", "TERM": "xterm"}
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE)
        os.close(slave)
        slave = -1
        out = bytearray()
        assert p.stderr is not None
        err_fd = p.stderr.fileno()
        os.set_blocking(err_fd, False)
        err = bytearray()
        deadline = time.monotonic() + timeout
        open_fds = {master, err_fd}
        while open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                p.kill()
                raise TimeoutError(f"{' '.join(argv)} did not finish in {timeout:.0f} s")
            ready, _, _ = select.select(list(open_fds), [], [], min(left, 0.5))
            for fd in ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # the pty's other end closed (EIO)
                    chunk = b""
                if not chunk:
                    open_fds.discard(fd)
                else:
                    (out if fd == master else err).extend(chunk)
            if not ready and p.poll() is not None:
                # The process is gone; what it left in the buffers has been read.
                break
        status = p.wait(timeout=max(1.0, deadline - time.monotonic()))
        p.stderr.close()
        return status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)


def here(output: str, cwd: Path) -> str:
    """Output with the directory the commands ran in written `.`, as from a reader's clone."""
    return output.replace(f"{cwd}/", "./").replace(str(cwd), ".")


def netns_with_a_route(run: str) -> str:
    """A namespace of its own with a link up and a default route, as a server has, for a
    `root-netns` block; `sf-<run>-doc`, removed by `drop_netns`."""
    ns = f"sf-{run}-doc"
    sh = ["ip", "netns", "exec", ns]
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        for cmd in (["ip", "link", "add", "d0", "type", "veth", "peer", "name", "d1"], ["ip", "link", "set", "d0", "up"],
                    ["ip", "link", "set", "d1", "up"], ["ip", "addr", "add", "10.231.9.1/24", "dev", "d0"],
                    ["ip", "route", "add", "default", "via", "10.231.9.254", "dev", "d0"]):
            subprocess.run([*sh, *cmd], check=True)
    except BaseException:
        drop_netns(ns)
        raise
    return ns


def drop_netns(ns: str) -> None:
    subprocess.run(["ip", "netns", "del", ns], check=False)


def argv(command: str, ns: str | None) -> list[str]:
    """How a page's command runs: `sudo` dropped (the runner is root where it runs root
    blocks), inside the block's namespace when it has one."""
    line = re.sub(r"^sudo\s+", "", command)
    return ["bash", "-c", line] if ns is None else ["ip", "netns", "exec", ns, "bash", "-c", line]


def fill(path: Path, cwd: Path, env: dict[str, str]) -> None:
    """Rewrite the output shown under each command of `path`'s runnable console blocks
    with what the command prints now (run from `cwd`): for writing a page, never in a test.
    Lines the author cut with `...` are kept out by hand afterwards."""
    lines = path.read_text().splitlines()
    out: list[str] = []
    todo = {b.lineno: b for b in blocks(path) if b.tag in ("run", "root-netns") and b.lang == "console"}
    i = 0
    while i < len(lines):
        out.append(lines[i])
        block = todo.get(i + 1)
        i += 1
        if block is None:
            continue
        ns = netns_with_a_route(f"fill{os.getpid()}") if block.tag == "root-netns" else None
        try:
            for cmd in block.commands():
                status, o, e = run_in_terminal(argv(cmd.line, ns), cwd, env, timeout=300)
                shown = [ln.rstrip() for ln in ANSI.sub("", here(o + e, cwd)).replace("\r", "").splitlines() if ln.strip()]
                out.append("$ " + cmd.line)
                out.extend(shown)
        finally:
            if ns is not None:
                drop_netns(ns)
        while lines[i].strip() != "```":
            i += 1
    path.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    import sys

    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '')}"}
    for name in sys.argv[2:]:
        fill(Path(name).resolve(), Path(sys.argv[1]).resolve(), env)
