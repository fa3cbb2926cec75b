"""The test session's leftover check: a snapshot of everything the project can create on
this host, taken before and after the session, and what appeared in between and is still
there.

Other sessions (other people's tests, a testbed someone runs) may create and remove the same
kinds of objects meanwhile. So the check counts as ours only what appeared during the session
and either carries the session's tag in its `sf-<id>-` name (every run id this session
starts, tune's included, begins with the tag: `RunNames.fresh`), or has no name of ours at all
but is host state the project changes: a project BPF program attached to a cgroup outside the
`sf-` ones, a root-namespace sysctl the project sets, a root-namespace route or iptables rule
carrying one of the project's marks. Whatever its name: a pin left under any name carrying
the tag, an attachment left on the host's own cgroups, a sysctl left changed.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from shortflow.host import cgroup2_root
from shortflow.testbed.clean import leftovers
from shortflow.testbed.names import PREFIX

#: The BPF programs the project loads (function names in bpf/*.bpf.c).
PROGRAMS = {"tune", "syn_rto"}
#: Root-namespace sysctls the project sets somewhere (tune, testbed stacks, synopt).
SYSCTLS = ("net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_early_retrans", "net.ipv4.tcp_no_metrics_save",
           "net.ipv4.tcp_timestamps", "net.ipv4.tcp_syn_linear_timeouts", "net.ipv4.tcp_rmem",
           "net.ipv4.tcp_rto_min_us", "net.ipv4.ip_forward", "net.ipv4.tcp_rto_max_ms")
#: Route metrics the project sets (tune's fallback, the testbed's stacks).
ROUTE_MARKS = ("initcwnd", "rto_min", "quickack", "congctl", "initrwnd", "advmss")


def _out(*args: str) -> str:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=60).stdout


def attachments() -> list[str]:
    """`cgroup prog-name attach-type` of every project program attached anywhere."""
    try:
        tree = json.loads(_out("bpftool", "-j", "cgroup", "tree", str(cgroup2_root())) or "[]")
    except (json.JSONDecodeError, OSError):
        return []
    out = []
    for entry in tree:
        for prog in entry.get("programs", []):
            if prog.get("name") in PROGRAMS:
                out.append(f"{entry['cgroup']} {prog['name']} {prog.get('attach_type')} id={prog.get('id')}")
    return out


def sysctls() -> list[str]:
    out = []
    for key in SYSCTLS:
        path = Path("/proc/sys") / key.replace(".", "/")
        if path.exists():
            out.append(f"{key}={' '.join(path.read_text().split())}")
    return out


def routes() -> list[str]:
    """Root-namespace routes with one of the project's metrics, on devices not of a run."""
    lines = _out("ip", "-4", "route", "show", "table", "all") + _out("ip", "-6", "route", "show", "table", "all")
    return [line for line in lines.splitlines()
            if any(f" {m} " in f" {line} " for m in ROUTE_MARKS) and f"dev {PREFIX}" not in line and " dev sf" not in line]


def temp_dirs() -> list[str]:
    """Scratch directories of the libraries the project runs, in the system's temporary
    directory: Dask's (a local cluster's default `dask-scratch-space`, or the project's own
    `sf-dask-*`), which carry no run id of ours."""
    tmp = Path(tempfile.gettempdir())
    return sorted(str(p) for p in [tmp / "dask-scratch-space", *tmp.glob("sf-dask-*")] if p.exists())


def bpf_pins() -> list[str]:
    """The names under /sys/fs/bpf that are not another session's: the host's own and this
    session's `sf-<tag>...` pins. A test comparing the listing before and after itself
    must not see a tuner another session applies or reverts meanwhile."""
    import os

    from shortflow.host.runid import RUN_ID_PREFIX_ENV

    ours = f"{PREFIX}{os.environ.get(RUN_ID_PREFIX_ENV, '')}"
    return sorted(p for p in os.listdir("/sys/fs/bpf") if not p.startswith(PREFIX) or p.startswith(ours))


def run_records() -> list[str]:
    """What the project keeps in /run/shortflow: testbed runs' owner records (named here
    `sf-<id>-owner`), tune's registrations (`sf-<id>-registered`) and build directories
    (`sf-<id>-tune-build`)."""
    from shortflow.host.records import OWNERS, RUN_DIR
    from shortflow.tune.journal import REGISTRY

    found = [f"{PREFIX}{p.name}-registered" for p in REGISTRY.glob("*")] if REGISTRY.is_dir() else []
    found += [f"{PREFIX}{p.name}-owner" for p in OWNERS.glob("*")] if OWNERS.is_dir() else []
    return sorted(found + ([p.name for p in RUN_DIR.glob(f"{PREFIX}*")] if RUN_DIR.is_dir() else []))


def snapshot() -> dict[str, list[str]]:
    snap = leftovers()
    snap["run_records"] = run_records()
    snap["temp_dirs"] = temp_dirs()
    snap["attachments"] = attachments()
    snap["root_sysctls"] = sysctls()
    snap["root_routes"] = routes()
    return snap


def leaked(before: dict[str, list[str]], after: dict[str, list[str]], tag: str) -> dict[str, list[str]]:
    """What appeared between the snapshots, is still there, and is this session's."""
    ours = f"{PREFIX}{tag}"
    new: dict[str, list[str]] = {}
    for kind, items in after.items():
        appeared = sorted(set(items) - set(before.get(kind, [])))
        if kind == "attachments":
            # On our cgroups, or on any cgroup that is no run's (the host's own).
            appeared = [a for a in appeared if ours in a.split()[0] or f"/{PREFIX}" not in a.split()[0]]
        elif kind in ("root_sysctls", "root_routes", "temp_dirs"):
            pass  # host state with no name of ours: any change the session left is a leak
        else:
            appeared = [x for x in appeared if ours in x]
        if appeared:
            new[kind] = appeared
    # A sysctl put back changes nothing; one left changed shows as a new value.
    return new
