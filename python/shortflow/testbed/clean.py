"""`shortflow testbed clean`: removes whatever earlier runs left, found by the `sf-<id>-`
prefix — namespaces (with their processes, veths, iptables rules and qdiscs), veths or
iptables rules in the root namespace, BPF pins under /sys/fs/bpf, cgroups, work
directories in the temp directory. Each removal is reported."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from shortflow.testbed.names import PREFIX, RUN_OBJECT
from shortflow.testbed.system import TestbedError, require_root
from shortflow.testbed.system import run as run_checked
from shortflow.testbed.topology import kill_namespace

BPF_FS = Path("/sys/fs/bpf")


def leftovers() -> dict[str, list[str]]:
    """Objects with our run prefix that exist now (empty lists: clean)."""
    ns = [line.split()[0] for line in run(["ip", "netns", "list"], check=False).stdout.splitlines() if line.strip()]
    links = []
    for line in run(["ip", "-o", "link", "show"], check=False).stdout.splitlines():
        name = line.split(":", 2)[1].strip().split("@")[0] if ":" in line else ""
        links.append(name)
    rules = [r for r in _iptables_rules() if "sf-" in r and _rule_is_ours(r)]
    pins = [p.name for p in BPF_FS.iterdir()] if BPF_FS.is_dir() else []
    cgroups = [str(p) for p in _cgroup_roots() for p in p.glob("sf-*")]
    tmp = [p.name for p in Path(tempfile.gettempdir()).iterdir()]
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    return {
        "mounts": [m for m in mounts if any(RUN_OBJECT.match(part) for part in Path(m).parts)],
        "namespaces": [n for n in ns if RUN_OBJECT.match(n)],
        "links": [n for n in links if RUN_OBJECT.match(n)],
        "iptables_rules": rules,
        "bpf_pins": [n for n in pins if RUN_OBJECT.match(n)],
        "cgroups": [c for c in cgroups if RUN_OBJECT.match(Path(c).name)],
        "work_dirs": [n for n in tmp if RUN_OBJECT.match(n)],
    }


def run(args: list[str], check: bool = False) -> subprocess.CompletedProcess[str]:
    """Like `system.run`, but a missing tool (no iptables here) lists nothing."""
    try:
        return run_checked(args, check=check)
    except TestbedError:
        return subprocess.CompletedProcess(args, 127, "", "")


def _rule_is_ours(rule: str) -> bool:
    return any(RUN_OBJECT.match(tok.strip('"')) for tok in rule.split())


def _iptables_rules() -> list[str]:
    r = run(["iptables", "-S"], check=False)
    return [line for line in r.stdout.splitlines() if line.startswith("-A ")]


def _cgroup_roots() -> list[Path]:
    roots = []
    for line in Path("/proc/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == "cgroup2":
            roots.append(Path(parts[1]))
    return roots


OWNER_FILE = "owner"


def process_identity(pid: int) -> str | None:
    """`pid` and its start time (field 22 of /proc/PID/stat), which together name one
    process even after the pid is reused; None when no such process runs."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    return f"{pid} {stat.rsplit(')', 1)[1].split()[19]}"


def live_runs() -> dict[str, int]:
    """Run ids whose owning process still runs (from the `owner` file a topology writes
    into its work directory), with that process's pid."""
    live: dict[str, int] = {}
    for d in Path(tempfile.gettempdir()).iterdir():
        m = RUN_OBJECT.match(d.name)
        if not m:
            continue
        try:
            owner = (d / OWNER_FILE).read_text().strip()
        except OSError:
            continue
        pid = int(owner.split()[0]) if owner.split() and owner.split()[0].isdigit() else 0
        if pid and process_identity(pid) == owner:
            live[d.name.split("-")[1]] = pid
    return live


def clean(force: bool = False, only: str | None = None) -> list[str]:
    """Removes every leftover of runs whose process has ended (all of them with `force`;
    only run `only`'s when given); returns one line per object removed or run left alone."""
    require_root()
    done: list[str] = []
    found = leftovers()
    if only is not None:
        found = {kind: [x for x in objs if f"{PREFIX}{only}-" in x] for kind, objs in found.items()}
    live = {} if force else live_runs()
    for run_id, pid in sorted(live.items()):
        marker = f"{PREFIX}{run_id}-"
        found = {kind: [x for x in objs if marker not in x] for kind, objs in found.items()}
        done.append(f"nothing of run {run_id}: it is still running (pid {pid}); --force removes it too")
    for ns in found["namespaces"]:
        if kill_namespace(ns):
            done.append(f"namespace {ns} (its processes killed)")
    for mount in found["mounts"]:  # the run's private bpffs (its pins go with it)
        if run(["umount", mount], check=False).returncode == 0:
            done.append(f"mount {mount}")
    for link in found["links"]:
        if run(["ip", "link", "del", link], check=False).returncode == 0:
            done.append(f"link {link}")
    for rule in found["iptables_rules"]:
        # `-A CHAIN spec` → `-D CHAIN spec`.
        if run(["iptables", "-D", *shlex.split(rule[3:])], check=False).returncode == 0:
            done.append(f"iptables rule {rule}")
    for pin in found["bpf_pins"]:
        target = BPF_FS / pin
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
        else:
            target.unlink(missing_ok=True)
        done.append(f"BPF pin {target}")
    for cg in found["cgroups"]:
        # Removing a cgroup detaches and frees its BPF programs; it must be empty first.
        for pid in (Path(cg) / "cgroup.procs").read_text().split():
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass
        try:
            os.rmdir(cg)
            done.append(f"cgroup {cg}")
        except OSError as e:
            done.append(f"cgroup {cg} NOT removed: {e.strerror}")
    for d in found["work_dirs"]:
        shutil.rmtree(Path(tempfile.gettempdir()) / d, ignore_errors=True)
        done.append(f"work directory {Path(tempfile.gettempdir()) / d}")
    return done
