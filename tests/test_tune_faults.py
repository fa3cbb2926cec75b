"""`shortflow tune` under faults, as a hostile user and an unlucky operator would meet it.

- `tune apply` killed (SIGKILL, SIGTERM) before, during and after each journal step, and
  SIGKILLed 25 times at random points with a `status` run during each apply: `status`
  never rolls back a live apply, afterwards names everything left, and one `revert
  --orphans` leaves the host's cgroup attachments, network namespaces, cgroups, bpffs and
  shortflow's build directories exactly as before (a snapshot diff).
- One lock per host: a stopped apply is "in progress" with its pid for `status`, and a
  second apply waits for it, then is refused naming it.
- `revert --orphans` trusts no name: a foreign program pinned under an `sf-<id>-tune` name
  survives, and a symbolic link so named is neither followed nor an error.
- A hand-edited journal (a foreign route, a path outside shortflow's roots) is refused with
  the reason and changes nothing.
- Every input file is read with a cap: `--iw-map /dev/zero` is refused in under a second
  and 100 MB, binary content and nesting 100,000 deep are clear errors.

Everything runs on a cgroup and in a network namespace the test creates, with run ids that
carry the session's tag; the snapshots look only at objects with that tag (other sessions
may apply and revert meanwhile).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from peak_rss import peak_rss_mb
from shortflow.host import cgroup2_root
from shortflow.host.records import RUN_DIR
from shortflow.testbed.names import PREFIX, RUN_ID_PREFIX_ENV
from shortflow.tune import journal

pytestmark = pytest.mark.netns

#: A BPF apply scoped to the test's cgroup, and its journal's steps.
APPLY = ["apply", "--syn-rto", "100ms", "--force"]
STEPS = ["build_dir", "load", "selfcheck", "attach", "remove_build_dir"]


def _tag() -> str:
    return os.environ.get(RUN_ID_PREFIX_ENV, "")


@dataclass
class Host:
    ns: str
    cgroup: Path
    tmp: Path

    def cmd(self, *args: str, state: Path | None = None) -> list[str]:
        cmd = ["nsenter", f"--net=/run/netns/{self.ns}", sys.executable, "-m", "shortflow", "tune", *args]
        if args[0] in ("apply", "status", "revert") and state is not None:
            cmd += ["--state", str(state)]
        if args[0] == "apply" and "--quickack" not in args:
            cmd += ["--scope", f"cgroup={self.cgroup}"]
        return cmd

    def env(self, fault: str | None = None) -> dict[str, str]:
        env = {**os.environ, "TMPDIR": str(self.tmp), "COLUMNS": "400"}
        env.pop(journal.FAULT_ENV, None)
        if fault:
            env[journal.FAULT_ENV] = fault
        return env

    def tune(self, *args: str, state: Path | None = None, fault: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.cmd(*args, state=state), capture_output=True, text=True, env=self.env(fault),
                              timeout=120)

    def start(self, *args: str, state: Path | None = None, fault: str | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(self.cmd(*args, state=state), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=self.env(fault))

    def snapshot(self) -> dict[str, list[str]]:
        """What the tuner can leave, as the system's own tools show it: the test cgroup's
        attachments (`bpftool cgroup tree`), and the network namespaces, cgroups, bpffs
        entries, build directories and registrations carrying this session's tag."""
        mine = f"{PREFIX}{_tag()}"
        tree = json.loads(subprocess.run(["bpftool", "-j", "cgroup", "tree", str(cgroup2_root())], capture_output=True,
                                         text=True, check=True).stdout or "[]")
        attached = sorted(f"{e['cgroup']} {p['name']} {p['id']}" for e in tree for p in e.get("programs", [])
                          if mine in e["cgroup"])
        netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout.split()
        return {
            "attached": attached,
            "netns": sorted(n for n in netns if n.startswith(mine)),
            "cgroups": sorted(p.name for p in cgroup2_root().iterdir() if p.name.startswith(mine)),
            "bpffs": sorted(p for p in os.listdir("/sys/fs/bpf") if p.startswith(mine)),
            "run_dir": sorted(p.name for p in RUN_DIR.glob(f"{mine}*")) if RUN_DIR.is_dir() else [],
            "registered": sorted(i for i in journal.registered() if i.startswith(_tag())),
        }


def appeared(before: dict[str, list[str]], after: dict[str, list[str]]) -> list[str]:
    return [x for k in after for x in after[k] if x not in before[k]]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    if os.geteuid() != 0:
        pytest.skip("needs root (BPF, cgroups, namespaces)")
    tag = (_tag() + "fa17ed")[:6]
    ns = f"{PREFIX}{tag}-faults"
    cg = cgroup2_root() / f"{PREFIX}{tag}-faults"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
    cg.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    h = Host(ns, cg, tmp)
    try:
        yield h
    finally:
        for state in tmp_path.glob("*.json"):
            h.tune("revert", "--force", state=state)
        h.tune("revert", "--orphans", "--scope", f"cgroup={cg}")
        subprocess.run(["ip", "netns", "del", ns])
        for c in (cg, cgroup2_root() / f"{PREFIX}{tag}-foreign"):
            if c.exists():
                c.rmdir()


def reported(status: str, leftovers: list[str]) -> list[str]:
    """The leftovers (snapshot entries) that `status`'s words do not name."""
    text = " ".join(status.split())
    missing = []
    for x in leftovers:
        # An attachment is named by its program id, everything else by its name.
        name = f"program {x.split()[-1]} " if x.count(" ") == 2 else x
        if name not in text:
            missing.append(x)
    return missing


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
def test_killed_at_each_step_status_names_what_is_left_and_one_revert_orphans_clears_it(
        host: Host, tmp_path: Path, sig: str) -> None:
    before = host.snapshot()
    nowhere = tmp_path / "nothing-applied-here.json"
    k = 0
    for n in range(1, len(STEPS) + 1):
        for when in ("before", "during", "after") if STEPS[n - 1] == "selfcheck" else ("before", "after"):
            where = f"{sig} {when} step {n} ({STEPS[n - 1]})"
            k += 1
            state = tmp_path / f"s{k}.json"
            # Each apply on its own state file; a program an earlier kill left on the cgroup is
            # replaced (without --replace the apply is refused: one program per cgroup).
            r = host.tune(*APPLY, "--replace", state=state, fault=f"{n}:{when}:{sig}")
            assert r.returncode != 0 and "Traceback" not in r.stderr, (where, r.stderr)
            if sig == "SIGTERM":
                assert "undone" in r.stderr and not state.exists(), (where, r.stderr)
                assert host.snapshot() == before, where
                continue
            assert not journal.load(state).committed, where
            # Status (of no state file) names everything the killed applies left, whose it is.
            r = host.tune("status", state=nowhere)
            assert r.returncode == 0 and "Traceback" not in r.stderr, (where, r.stderr)
            left = appeared(before, host.snapshot())
            assert reported(r.stdout, [x for x in left if x not in host.snapshot()["registered"]]) == [], \
                (where, left, r.stdout)
            assert "interrupted apply" in r.stdout or not left, (where, r.stdout)
    r = host.tune("revert", "--orphans", "--scope", f"cgroup={host.cgroup}")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert host.snapshot() == before, r.stdout
    assert list(tmp_path.glob("s*.json")) == [], "each interrupted apply's journal went with its rollback"


def test_25_kills_at_random_points_with_a_status_during_each(host: Host, tmp_path: Path) -> None:
    before = host.snapshot()
    nowhere = tmp_path / "nothing-applied-here.json"
    # How long an apply takes here, start to end: the kills fall anywhere inside that.
    t0 = time.monotonic()
    assert host.tune(*APPLY, state=tmp_path / "timing.json").returncode == 0
    span = time.monotonic() - t0
    assert host.tune("revert", state=tmp_path / "timing.json").returncode == 0
    rng = random.Random(38)
    outcomes = {"killed": 0, "finished": 0, "in progress seen": 0}
    for k in range(25):
        state = tmp_path / f"r{k}.json"
        kill_at = rng.uniform(0.05, span)
        look_at = rng.uniform(0.0, kill_at)
        looked: list[subprocess.CompletedProcess[str]] = []
        # A status of the apply's own state file while it runs: it must not roll it back.
        look = threading.Timer(look_at, lambda out, st: out.append(host.tune("status", state=st)), (looked, state))
        apply = host.start(*APPLY, "--replace", state=state)
        look.start()
        time.sleep(kill_at)
        apply.send_signal(signal.SIGKILL)
        out, err = apply.communicate(timeout=60)
        look.join()
        (st,) = looked
        assert st.returncode == 0 and "Traceback" not in st.stderr, (k, st.stderr)
        if "apply in progress" in st.stdout:
            outcomes["in progress seen"] += 1
        if apply.returncode == 0:
            outcomes["finished"] += 1
        else:
            assert apply.returncode == -signal.SIGKILL, (k, apply.returncode, err)
            outcomes["killed"] += 1
        # Had the status rolled the apply back under it, the apply would have failed (not
        # been killed) or said so.
        assert "rolled back" not in out + err, (k, out, err)
        r = host.tune("status", state=nowhere)
        assert r.returncode == 0, (k, r.stderr)
        left = [x for x in appeared(before, host.snapshot()) if x not in host.snapshot()["registered"]]
        assert reported(r.stdout, left) == [], (k, left, r.stdout)
    # (A status that found the apply running says so: the stopped-apply test holds it to that.)
    assert outcomes["killed"] >= 15, outcomes
    r = host.tune("revert", "--orphans", "--scope", f"cgroup={host.cgroup}")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    # Committed applies (the ones the kill came too late for) keep their journals; their
    # programs were replaced by the next apply. Their reverts find nothing left to undo.
    for state in tmp_path.glob("r*.json"):
        assert journal.load(state).committed, state
        assert host.tune("revert", state=state).returncode == 0
    assert host.snapshot() == before, (outcomes, r.stdout)


def test_a_stopped_apply_is_in_progress_for_status_and_blocks_a_second_apply(host: Host, tmp_path: Path) -> None:
    before = host.snapshot()
    state, other = tmp_path / "a.json", tmp_path / "b.json"
    # Stopped (SIGSTOP) in the middle of its self-check: its namespace, cgroup and link exist.
    apply = host.start(*APPLY, state=state, fault="3:during:SIGSTOP")
    try:
        deadline = time.monotonic() + 30
        while not (RUN_DIR / "tune.lock").exists() or "selfcheck" not in (state.read_text() if state.exists() else ""):
            assert time.monotonic() < deadline and apply.poll() is None, "the apply never reached its self-check"
            time.sleep(0.05)
        time.sleep(0.3)
        st = host.tune("status", state=state)
        assert st.returncode == 0, st.stderr
        assert f"apply in progress (pid {apply.pid})" in st.stdout, st.stdout
        assert "rolled back" not in st.stdout and state.exists()
        assert not journal.load(state).committed
        r = host.tune(*APPLY, state=other)
        assert r.returncode == 2 and f"in progress (pid {apply.pid})" in r.stderr, r.stderr
        assert not other.exists()
        r = host.tune("revert", "--orphans", "--scope", f"cgroup={host.cgroup}")
        assert r.returncode == 2 and f"in progress (pid {apply.pid})" in r.stderr, r.stderr
        # Nor does `testbed clean` take the self-check's namespace and cgroup from under it.
        run_id = json.loads(state.read_text().splitlines()[0])["id"]
        check = f"{PREFIX}{run_id}-tcheck"
        assert check in host.snapshot()["netns"] and check in host.snapshot()["cgroups"]
        r = subprocess.run([sys.executable, "-m", "shortflow", "testbed", "clean", "--run", run_id], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0 and f"an apply is in progress (pid {apply.pid})" in r.stdout, (r.stdout, r.stderr)
        assert check in host.snapshot()["netns"] and check in host.snapshot()["cgroups"]
    finally:
        apply.send_signal(signal.SIGCONT)
    out, err = apply.communicate(timeout=60)
    assert apply.returncode == 0, err
    assert journal.load(state).committed
    assert host.tune("revert", state=state).returncode == 0
    assert host.snapshot() == before


FOREIGN_PROG = r"""
#include <linux/bpf.h>
#define SEC(name) __attribute__((section(name), used))
/* Not shortflow's: same function name as the tuner's, none of its maps. */
SEC("sockops") int tune(struct bpf_sock_ops *skops) { return 1; }
char _license[] SEC("license") = "GPL";
"""


def test_revert_orphans_trusts_no_name(host: Host, tmp_path: Path) -> None:
    src, obj = tmp_path / "foreign.c", tmp_path / "foreign.o"
    src.write_text(FOREIGN_PROG)
    triple = subprocess.run(["gcc", "-dumpmachine"], capture_output=True, text=True).stdout.strip() or "x86_64-linux-gnu"
    subprocess.run(["clang", "-O2", "-target", "bpf", f"-I/usr/include/{triple}", "-c", str(src), "-o", str(obj)],
                   check=True)
    tag = (_tag() + "f0e1d2")[:6]
    foreign = Path(f"/sys/fs/bpf/{PREFIX}{tag}-tune")
    link = Path(f"/sys/fs/bpf/{PREFIX}{(_tag() + 'a1b2c3')[:6]}-tune")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("not shortflow's")
    foreign_cg = cgroup2_root() / f"{PREFIX}{(_tag() + 'fa17ed')[:6]}-foreign"
    foreign_cg.mkdir()
    try:
        foreign.mkdir()
        subprocess.run(["bpftool", "prog", "load", str(obj), str(foreign / "prog"), "type", "sockops"], check=True)
        subprocess.run(["bpftool", "cgroup", "attach", str(foreign_cg), "sock_ops", "pinned", str(foreign / "prog")],
                       check=True)
        link.symlink_to(outside)
        # And one of shortflow's own, an orphan (its journal deleted), which does go.
        mine = tmp_path / "mine.json"
        assert host.tune(*APPLY, state=mine).returncode == 0
        pins = Path(json.loads(mine.read_text().splitlines()[0])["id"])
        mine.unlink()
        r = host.tune("status", state=mine)
        text = " ".join(r.stdout.split())
        assert r.returncode == 0 and "an orphan" in text, text
        assert f"{foreign}: its program is not the tuner's" in text and f"{link}: a symbolic link" in text, text
        r = host.tune("revert", "--orphans")
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        assert f"sf-{pins}-tune removed" in r.stdout and "detached" in r.stdout, r.stdout
        assert f"{foreign}: its program is not the tuner's" in " ".join(r.stdout.split()), r.stdout
        assert sorted(os.listdir(foreign)) == ["prog"] and link.is_symlink() and (outside / "keep").exists()
        shown = subprocess.run(["bpftool", "-j", "cgroup", "show", str(foreign_cg)], capture_output=True, text=True,
                               check=True).stdout
        assert [p["name"] for p in json.loads(shown)] == ["tune"], "the foreign program stays attached"
        assert not Path(f"/sys/fs/bpf/sf-{pins}-tune").exists()
    finally:
        subprocess.run(["bpftool", "cgroup", "detach", str(foreign_cg), "sock_ops", "pinned", str(foreign / "prog")],
                       capture_output=True)
        if link.is_symlink():
            link.unlink()
        if (foreign / "prog").exists():
            (foreign / "prog").unlink()
        if foreign.exists():
            foreign.rmdir()


def test_a_hand_edited_journal_is_refused_with_the_reason_and_changes_nothing(host: Host, tmp_path: Path) -> None:
    sh = ["ip", "netns", "exec", host.ns]
    subprocess.run([*sh, "ip", "link", "add", "d0", "type", "veth", "peer", "name", "d1"], check=True)
    subprocess.run([*sh, "ip", "link", "set", "d0", "up"], check=True)
    subprocess.run([*sh, "ip", "addr", "add", "10.231.9.1/24", "dev", "d0"], check=True)
    subprocess.run([*sh, "ip", "route", "add", "default", "via", "10.231.9.254", "dev", "d0"], check=True)
    state = tmp_path / "routes.json"
    r = host.tune("apply", "--quickack", state=state)
    assert r.returncode == 0, r.stderr
    good = state.read_text()
    routes = subprocess.run([*sh, "ip", "route"], capture_output=True, text=True).stdout
    # A foreign route: revert would have put "default via 10.231.9.66" in place.
    records = [json.loads(line) for line in good.splitlines()]
    (route,) = [rec for rec in records if rec.get("op") == "route"]
    assert route["before"]["gateway"] == "10.231.9.254"
    route["before"]["gateway"] = "10.231.9.66"
    state.write_text("".join(json.dumps(rec) + "\n" for rec in records))
    r = host.tune("revert", state=state)
    assert r.returncode == 2 and "line 2: route: after" in r.stderr and "other parts differ" in r.stderr, r.stderr
    assert subprocess.run([*sh, "ip", "route"], capture_output=True, text=True).stdout == routes
    # A build directory outside shortflow's roots (holding what a build holds): not removed.
    outside = tmp_path / "sf-abcdef-tune-build"
    outside.mkdir()
    (outside / "tune.bpf.o").write_bytes(b"\x7fELF")
    head = json.loads(good.splitlines()[0])
    forged = [head, {"n": 1, "op": "build_dir", "path": str(outside)}]
    state.write_text("\n".join(json.dumps(x) for x in forged) + "\n")
    r = host.tune("revert", state=state)
    assert r.returncode == 2 and "is not this apply's build directory" in r.stderr, r.stderr
    assert (outside / "tune.bpf.o").exists()
    state.write_text(good)
    assert host.tune("revert", state=state).returncode == 0
    assert "quickack" not in subprocess.run([*sh, "ip", "route"], capture_output=True, text=True).stdout


def test_input_files_are_read_with_a_cap_and_refused_clearly(tmp_path: Path) -> None:
    shortflow = [sys.executable, "-m", "shortflow", "tune"]
    # The interpreter and shortflow's imports alone, for comparison.
    code, err, _, base = peak_rss_mb([*shortflow, "apply", "--help"])
    assert code == 0, err
    code, err, secs, peak = peak_rss_mb([*shortflow, "apply", "--iw-map", "/dev/zero", "--dry-run"])
    assert code == 2 and "/dev/zero: the prefix file is longer than 4 MiB: refused" in err, err
    assert secs < 1, secs  # (the interpreter's start included)
    assert peak < 100 and peak - base < 20, (peak, base)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b'"10.0.0.0/8" = { iw = 4 }\n\xff\xfe\x00secret')
    code, err, _, _ = peak_rss_mb([*shortflow, "apply", "--iw-map", str(binary), "--dry-run"])
    assert code == 2 and "is not UTF-8 text (line 2, byte 26)" in err and "secret" not in err, err
    # A file that is not a prefix file: said so, and none of its content echoed.
    code, err, _, _ = peak_rss_mb([*shortflow, "apply", "--iw-map", "/etc/shadow", "--dry-run"])
    secret = [w for line in Path("/etc/shadow").read_text().splitlines() for w in line.split(":") if len(w) > 3]
    assert code == 2 and "/etc/shadow: not valid TOML" in err and not [w for w in secret if w in err], err
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    code, err, _, _ = peak_rss_mb([*shortflow, "apply", "--iw-map", str(deep), "--dry-run"])
    assert code == 2 and "nested too deeply" in err and "RecursionError" not in err, err
    # State files: JSON nested 100,000 deep, 400 MB, binary.
    head = {"format": journal.FORMAT, "version": journal.VERSION, "id": "abcdef", "settings": {}}
    state = tmp_path / "deep.json"
    state.write_text(json.dumps(head) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    code, err, _, _ = peak_rss_mb([*shortflow, "status", "--state", str(state)])
    assert code == 1 and "line 2: JSON nested too deeply" in err and "RecursionError" not in err, err
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:
        f.truncate(400 << 20)
    code, err, secs, peak = peak_rss_mb([*shortflow, "status", "--state", str(huge)])
    assert code == 1 and "the state file is longer than 16 MiB: refused" in err, err
    assert peak < 100 and secs < 3, (peak, secs)


def test_status_names_another_state_files_program_as_its_and_revert_orphans_leaves_it(host: Host, tmp_path: Path) -> None:
    before = host.snapshot()
    other = tmp_path / "other.json"
    r = host.tune(*APPLY, state=other)
    assert r.returncode == 0, r.stderr
    prog = json.loads([x for x in other.read_text().splitlines() if '"prog_id"' in x][0])["done"]["prog_id"]
    r = host.tune("status", state=tmp_path / "mine.json")
    text = " ".join(r.stdout.split())
    assert r.returncode == 0, r.stderr
    assert f"program {prog} " in text and f"applied with state file {other}" in text, text
    assert "orphan" not in text and "revert --orphans" not in text, text
    r = host.tune("revert", "--orphans", "--scope", f"cgroup={host.cgroup}")
    assert r.returncode == 0 and f"program {prog} on {host.cgroup}: applied with state file {other}" in r.stdout, r.stdout
    assert host.snapshot()["attached"] != before["attached"], "a committed apply's program is not an orphan"
    assert host.tune("revert", state=other).returncode == 0
    assert host.snapshot() == before


def test_a_journal_edited_to_another_applys_id_is_refused_and_that_apply_untouched(host: Host, tmp_path: Path) -> None:
    before = host.snapshot()
    second = cgroup2_root() / f"{PREFIX}{(_tag() + 'fa17ed')[:6]}-foreign"
    second.mkdir()
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert host.tune(*APPLY, state=a).returncode == 0
    r = subprocess.run([*host.cmd("apply", "--syn-rto", "100ms", "--force", state=b)[:-1], f"cgroup={second}"],
                       capture_output=True, text=True, env=host.env())
    assert r.returncode == 0, r.stderr
    a_id = json.loads(a.read_text().splitlines()[0])["id"]
    b_id = json.loads(b.read_text().splitlines()[0])["id"]
    # B's journal rewritten to name A's id (and so A's pins): revert would remove A's program.
    b.write_text(b.read_text().replace(b_id, a_id))
    attached = host.snapshot()["attached"]
    r = host.tune("revert", state=b)
    assert r.returncode == 2 and f"line 1: id {a_id} is the apply journalled in {a}, not this file's" in r.stderr, r.stderr
    assert host.snapshot()["attached"] == attached and Path(f"/sys/fs/bpf/sf-{a_id}-tune").is_dir()
    # B's objects are orphans now (its journal cannot be trusted): removed; A's stay A's.
    r = host.tune("revert", "--orphans", "--scope", f"cgroup={second}")
    assert r.returncode == 0 and "detached" in r.stdout and not Path(f"/sys/fs/bpf/sf-{b_id}-tune").exists(), r.stdout
    assert Path(f"/sys/fs/bpf/sf-{a_id}-tune").is_dir()
    assert host.tune("revert", state=a).returncode == 0
    # Nothing of B's is left: its registration went with the orphan pass.
    assert b_id not in journal.registered()
    second.rmdir()
    assert host.snapshot() == before
