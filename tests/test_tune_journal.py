"""`shortflow tune` is transactional and bounded to its own objects.

- Fault injection: `tune apply` killed (SIGKILL, SIGTERM, SIGINT) just before and just
  after each of its steps in turn; afterwards (the apply's own rollback, or the next
  `status`, `apply` or `revert`) BPF attachments, pins, routes, sysctls and build
  directories are exactly as before.
- Damaged state files (deleted, empty, truncated, binary, wrong types, paths outside
  shortflow's roots, a wrong program id): never a traceback, never a deletion outside
  shortflow's objects, and the attached program is still found and removed.
- Routes and sysctls are restored only where they still hold tune's value; a missing device
  is reported and the rest goes on; a second program on the same cgroup is refused.

Everything runs in a network namespace and a cgroup the test creates (`nsenter --net`
keeps the host's bpffs), with its own temporary directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from shortflow.exceptions import TuneError
from shortflow.host import cgroup2_root
from shortflow.host.routes import Route
from shortflow.testbed.names import PREFIX, RUN_ID_PREFIX_ENV
from shortflow.tune import journal

SSAI = "/proc/sys/net/ipv4/tcp_slow_start_after_idle"
#: A BPF apply, scoped to the test's cgroup, and its journal's steps (bpffs is mounted here
#: already). Quick-ACK and slow start after idle act on the whole network namespace and are
#: refused with a scope, so they are a second apply, unscoped, inside the test's namespace.
APPLY = ["apply", "--syn-rto", "100ms", "--force"]
STEPS = ["build_dir", "load", "selfcheck", "attach", "remove_build_dir"]
APPLY_NS = ["apply", "--quickack", "--slow-start-after-idle", "off", "--force"]
STEPS_NS = ["route", "sysctl"]
APPLIES = {"bpf": (APPLY, STEPS), "namespace": (APPLY_NS, STEPS_NS)}


def _tag() -> str:
    return (os.environ.get(RUN_ID_PREFIX_ENV, "") + "5afe00")[:6]


@dataclass
class Host:
    ns: str
    cgroup: Path
    tmp: Path
    state: Path

    def tune(self, *args: str, fault: str | None = None, state: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "TMPDIR": str(self.tmp), "COLUMNS": "400"}
        env.pop(journal.FAULT_ENV, None)
        if fault:
            env[journal.FAULT_ENV] = fault
        cmd = ["nsenter", f"--net=/run/netns/{self.ns}", sys.executable, "-m", "shortflow", "tune", *args]
        if args[0] in ("apply", "status", "revert", "reload"):
            cmd += ["--state", str(state or self.state)]
        if args[0] == "apply" and not {"--quickack", "--slow-start-after-idle"} & set(args):
            cmd += ["--scope", f"cgroup={self.cgroup}"]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)

    def in_ns(self, *args: str) -> str:
        return subprocess.run(["ip", "netns", "exec", self.ns, *args], capture_output=True, text=True, check=True).stdout

    def snapshot(self) -> dict[str, object]:
        attached = subprocess.run(["bpftool", "-j", "cgroup", "show", str(self.cgroup)], capture_output=True,
                                  text=True).stdout
        ssai = subprocess.run(["nsenter", f"--net=/run/netns/{self.ns}", "cat", SSAI], capture_output=True,
                              text=True).stdout
        return {"attached": json.loads(attached.strip() or "[]"), "routes": self.in_ns("ip", "route", "show", "table", "all"),
                "sysctl": ssai, "tmp": sorted(os.listdir(self.tmp))}


def no_pins_of(ids: set[str]) -> list[str]:
    return [i for i in ids if Path(f"/sys/fs/bpf/sf-{i}-tune").exists()]


def journal_id(state: Path) -> str | None:
    try:
        return str(json.loads(state.read_text().splitlines()[0])["id"])
    except (OSError, ValueError, IndexError, KeyError):
        return None


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    if os.geteuid() != 0:
        pytest.skip("needs root (BPF, cgroups, namespaces)")
    for tool in ("bpftool", "clang", "nsenter"):
        if subprocess.run(["which", tool], capture_output=True).returncode != 0:
            pytest.skip(f"needs {tool}")
    ns = f"{PREFIX}{_tag()}-tunej"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    cg = cgroup2_root() / f"{PREFIX}{_tag()}-tunej"
    cg.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    h = Host(ns, cg, tmp, tmp_path / "state.json")
    try:
        sh = ["ip", "netns", "exec", ns]
        subprocess.run([*sh, "ip", "link", "add", "d0", "type", "veth", "peer", "name", "d1"], check=True)
        subprocess.run([*sh, "ip", "link", "set", "d0", "up"], check=True)
        subprocess.run([*sh, "ip", "addr", "add", "10.231.9.1/24", "dev", "d0"], check=True)
        subprocess.run([*sh, "ip", "route", "add", "default", "via", "10.231.9.254", "dev", "d0", "rto_min", "300ms"],
                       check=True)
        yield h
    finally:
        # Whatever a failed test left: its applies (each state file), then the orphans on
        # this test's cgroup only.
        for state in tmp_path.glob("*.json"):
            h.tune("revert", "--force", state=state)
        h.tune("revert", "--orphans", "--scope", f"cgroup={cg}")
        subprocess.run(["ip", "netns", "del", ns])
        cg.rmdir()


pytestmark = pytest.mark.netns


@pytest.mark.parametrize("kind", list(APPLIES))
def test_apply_and_revert_restore_everything(host: Host, kind: str) -> None:
    apply, steps = APPLIES[kind]
    before = host.snapshot()
    r = host.tune(*apply)
    assert r.returncode == 0, r.stderr
    j = journal.load(host.state)
    assert j.committed and [s.op for s in j.steps] == steps and all(s.done is not None for s in j.steps)
    during = host.snapshot()
    if kind == "bpf":
        assert during["attached"] and during["routes"] == before["routes"]
    else:
        assert not during["attached"] and "quickack 1" in str(during["routes"]) and during["sysctl"].strip() == "0"
    r = host.tune("revert")
    assert r.returncode == 0, r.stderr
    assert host.snapshot() == before and not host.state.exists() and no_pins_of({j.id}) == []
    # Idempotent: nothing left to revert says so, and changes nothing.
    r = host.tune("revert")
    assert r.returncode == 2 and "nothing applied" in r.stderr and host.snapshot() == before


@pytest.mark.parametrize("kind", list(APPLIES))
@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM", "SIGINT"])
def test_apply_killed_at_every_step_leaves_nothing(host: Host, sig: str, kind: str) -> None:
    apply, steps = APPLIES[kind]
    before = host.snapshot()
    ids: set[str] = set()
    recovery = ["status", "apply", "revert"]
    k = 0
    for n in range(1, len(steps) + 1):
        for when in ("before", "after"):
            r = host.tune(*apply, fault=f"{n}:{when}:{sig}")
            where = f"{sig} {when} step {n} ({steps[n - 1]})"
            assert r.returncode != 0, where
            assert "Traceback" not in r.stderr, (where, r.stderr)
            jid = journal_id(host.state)
            if sig != "SIGKILL":
                # Caught: the apply undid itself before exiting.
                assert "undone" in r.stderr, (where, r.stderr)
                assert not host.state.exists(), where
                assert host.snapshot() == before, where
                continue
            assert jid is not None and not journal.load(host.state).committed, where
            ids.add(jid)
            # SIGKILL: the next command rolls the interrupted apply back, in turn each of them.
            how = recovery[k % 3]
            k += 1
            if how == "apply":
                r = host.tune(*apply)
                assert r.returncode == 0 and "rolled back" in r.stdout, (where, r.stdout, r.stderr)
                ids.add(journal_id(host.state) or "")
                r = host.tune("revert")
                assert r.returncode == 0, (where, r.stderr)
            else:
                r = host.tune(how)
                assert "rolled back" in r.stdout + r.stderr, (where, how, r.stdout, r.stderr)
                assert "Traceback" not in r.stderr, (where, r.stderr)
            assert not host.state.exists(), (where, how)
            assert host.snapshot() == before, (where, how)
    assert no_pins_of(ids) == []


def damage(state: Path, how: str) -> None:
    lines = state.read_text().splitlines()
    recs = [json.loads(x) for x in lines]
    if how == "deleted":
        state.unlink()
    elif how == "empty":
        state.write_text("")
    elif how == "truncated":
        state.write_text("\n".join(lines)[: len(lines[0]) + 25])
    elif how == "binary":
        state.write_bytes(os.urandom(64) + b"\xff\xfe")
    elif how == "wrong types":
        for r in recs:
            if r.get("op") == "attach":
                r["cgroup"] = 17
        state.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    elif how in ("outside pin_dir", "outside build_dir"):
        decoy = state.parent / "decoy"
        for r in recs:
            if how == "outside pin_dir" and r.get("op") in ("load", "attach"):
                r["pin_dir"] = str(decoy)
            if how == "outside build_dir" and r.get("op") in ("build_dir", "remove_build_dir"):
                r["path"] = str(decoy)
        state.write_text("\n".join(json.dumps(r) for r in recs) + "\n")


@pytest.mark.parametrize("how", ["deleted", "empty", "truncated", "binary", "wrong types", "outside pin_dir",
                                 "outside build_dir"])
def test_damaged_state_file_is_refused_and_the_program_still_found(host: Host, how: str) -> None:
    decoy = host.state.parent / "decoy"
    decoy.mkdir()
    (decoy / "keep").write_text("not shortflow's")
    before = host.snapshot()
    r = host.tune(*APPLY[:3], "--force")  # BPF only: the orphan pass is what finds it
    assert r.returncode == 0, r.stderr
    jid = journal_id(host.state)
    damage(host.state, how)
    if how == "truncated":
        # Records cut off: the objects named after the journal's id are still found and removed.
        r = host.tune("revert")
        assert r.returncode == 0 and "detached" in r.stdout, r
        assert host.snapshot() == before and no_pins_of({jid or ""}) == []
        return
    for cmd in ("revert", "status"):
        r = host.tune(cmd)
        # A missing state file is an answer for status (nothing applied: exit 0); a damaged one
        # is an error. Either way: the reason, and the program found on its cgroup, an orphan
        # (no readable journal accounts for it).
        assert r.returncode == (0 if (how, cmd) == ("deleted", "status") else 1 if cmd == "status" else 2), \
            (how, cmd, r.returncode, r.stderr)
        assert "Traceback" not in r.stderr, (how, cmd, r.stderr)
        assert (decoy / "keep").exists(), "nothing outside shortflow's objects is ever removed"
        text = " ".join((r.stdout + r.stderr).split())
        if (how, cmd) == ("deleted", "revert"):
            assert "nothing applied" in text, text
            continue
        assert f"on {host.cgroup}" in text and "an orphan" in text and "revert --orphans" in text, (how, cmd, text)
    r = host.tune("revert", "--orphans", "--scope", f"cgroup={host.cgroup}")
    assert r.returncode == 0 and "detached" in r.stdout, r
    assert host.snapshot() == before and no_pins_of({jid or ""}) == []
    assert (decoy / "keep").exists()


def test_wrong_program_id_detaches_the_pinned_one_only(host: Host) -> None:
    before = host.snapshot()
    assert host.tune(*APPLY[:3]).returncode == 0
    recs = [json.loads(x) for x in host.state.read_text().splitlines()]
    for r in recs:
        if "done" in r and "prog_id" in r["done"]:
            r["done"]["prog_id"] = 1  # some other program (or none)
    host.state.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    r = host.tune("revert")
    assert r.returncode == 0, r.stderr
    assert "journal's program id 1 is not the one pinned" in " ".join(r.stdout.split())
    assert host.snapshot() == before


def test_schema_errors_name_the_line_and_the_reason(tmp_path: Path) -> None:
    state = tmp_path / "s.json"
    head = {"format": journal.FORMAT, "version": journal.VERSION, "id": "abcdef", "settings": {}}
    route = Route(family="-4", dev="d0", gateway="10.231.9.254")
    cases = {
        "'/etc' is not this apply's pins": {"n": 1, "op": "load", "pin_dir": "/etc"},
        "not a plain absolute path": {"n": 1, "op": "load", "pin_dir": "/sys/fs/bpf/sf-abcdef-tune/../.."},
        # Another apply's pins, and a build directory elsewhere: never this journal's to remove.
        "'/sys/fs/bpf/sf-123456-tune' is not this apply's pins": {"n": 1, "op": "load",
                                                                 "pin_dir": "/sys/fs/bpf/sf-123456-tune"},
        "not this apply's build directory": {"n": 1, "op": "build_dir", "path": "/home"},
        "'/var/tmp/sf-abcdef-tune-build' is not this apply's build directory": {
            "n": 1, "op": "build_dir", "path": "/var/tmp/sf-abcdef-tune-build"},
        "selfcheck.ns 'sf-123456-tcheck' is not this apply's": {
            "n": 1, "op": "selfcheck", "ns": "sf-123456-tcheck", "cgroup": str(cgroup2_root() / "sf-abcdef-tcheck")},
        "is not this apply's self-check cgroup": {
            "n": 1, "op": "selfcheck", "ns": "sf-abcdef-tcheck", "cgroup": str(cgroup2_root() / "sf-123456-tcheck")},
        "unknown step 'rm'": {"n": 1, "op": "rm", "path": "/"},
        "sysctl.key 'kernel.panic'": {"n": 1, "op": "sysctl", "key": "kernel.panic", "before": "0", "after": "1"},
        "before and after must be 0 or 1": {"n": 1, "op": "sysctl", "key": "net.ipv4.tcp_slow_start_after_idle",
                                            "before": "1; reboot", "after": "0"},
        "route.before: expected dict": {"n": 1, "op": "route", "family": "-4", "before": 3, "after": {}},
        # A foreign route: another gateway in "before" than the one "after" was made from, a
        # change of a metric the tuner does not set.
        "other parts differ": {"n": 1, "op": "route", "family": "-4",
                               "before": Route(family="-4", dev="d0", gateway="192.0.2.66").as_json(),
                               "after": route.with_metrics({"quickack": 1}).as_json()},
        "sets none of the tuner's metrics": {"n": 1, "op": "route", "family": "-4", "before": route.as_json(),
                                             "after": route.with_metrics({"mtu": 1200}).as_json()},
    }
    for why, rec in cases.items():
        state.write_text(json.dumps(head) + "\n" + json.dumps(rec) + "\n")
        with pytest.raises(TuneError) as e:
            journal.load(state)
        assert "line 2: " in str(e.value) and why in str(e.value), (why, str(e.value))
        assert "Traceback" not in str(e.value)
    # What apply itself writes is taken.
    locked = Route(family="-4", dev="d0", gateway="10.231.9.254", metrics=(("rto_min", 300, True),))
    good = [{"n": 1, "op": "route", "family": "-4", "before": locked.as_json(),
             "after": locked.with_metrics({"rto_min": 300, "quickack": 1}).as_json()},
            {"n": 2, "op": "selfcheck", "ns": "sf-abcdef-tcheck", "cgroup": str(cgroup2_root() / "sf-abcdef-tcheck")},
            {"n": 3, "op": "build_dir", "path": "/run/shortflow/sf-abcdef-tune-build"}]
    state.write_text("\n".join(json.dumps(r) for r in [head, *good]) + "\n")
    assert [s.op for s in journal.load(state).steps] == ["route", "selfcheck", "build_dir"]
    state.write_text(json.dumps({**head, "id": "../x"}) + "\n")
    with pytest.raises(TuneError, match="line 1: id"):
        journal.load(state)
    # A last line cut short is an apply killed mid-write: that record never counted.
    state.write_text(json.dumps(head) + '\n{"n": 1, "op": "lo')
    assert journal.load(state).steps == []


def test_second_program_on_a_cgroup_is_refused_unless_replace(host: Host, tmp_path: Path) -> None:
    before = host.snapshot()
    assert host.tune(*APPLY[:3]).returncode == 0
    other = tmp_path / "other.json"
    r = host.tune(*APPLY[:3], state=other)
    assert r.returncode == 2 and "already carries shortflow's tuner program" in " ".join(r.stderr.split()), r.stderr
    assert not other.exists()
    r = host.tune(*APPLY[:3], "--replace", state=other)
    assert r.returncode == 0, r.stderr
    progs = json.loads(subprocess.run(["bpftool", "-j", "cgroup", "show", str(host.cgroup)], capture_output=True,
                                      text=True).stdout)
    assert len(progs) == 1, progs
    assert host.tune("revert", state=other).returncode == 0
    # The first journal's objects are gone; its revert has nothing left to do and says so.
    r = host.tune("revert")
    assert r.returncode == 0, r.stderr
    assert host.snapshot() == before


def test_routes_and_sysctls_changed_since_are_left_unless_forced(host: Host) -> None:
    before = host.snapshot()
    assert host.tune("apply", "--quickack", "--slow-start-after-idle", "off").returncode == 0
    host.in_ns("ip", "route", "replace", "default", "via", "10.231.9.254", "dev", "d0", "initcwnd", "7")
    host.in_ns("sysctl", "-q", "-w", "net.ipv4.tcp_slow_start_after_idle=1")
    r = host.tune("revert")
    assert r.returncode == 2 and "changed since" in r.stderr and host.state.exists(), r.stderr
    assert "initcwnd 7" in host.in_ns("ip", "route")
    r = host.tune("revert", "--force")
    assert r.returncode == 0, r.stderr
    assert host.snapshot() == before


def test_missing_device_is_reported_and_the_rest_reverted(host: Host) -> None:
    ssai = host.snapshot()["sysctl"]
    assert host.tune("apply", "--quickack", "--slow-start-after-idle", "off").returncode == 0
    host.in_ns("ip", "link", "del", "d0")
    r = host.tune("revert")
    assert r.returncode == 0, r.stderr
    assert "device d0 is gone" in " ".join(r.stdout.split()) and not host.state.exists()
    assert host.snapshot()["sysctl"] == ssai


def test_kernel_limits_are_refused_naming_them(host: Host) -> None:
    r = host.tune("apply", "--syn-rto", "1h")
    assert r.returncode == 2 and "TCP_RTO_MAX" in r.stderr and not host.state.exists(), r.stderr
