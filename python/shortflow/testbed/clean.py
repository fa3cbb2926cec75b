"""`shortflow testbed clean`: removes whatever earlier runs left, found by the `sf-<id>-`
prefix — namespaces (with their processes, veths, iptables rules and qdiscs), veths or
iptables rules in the root namespace, BPF pins under /sys/fs/bpf, cgroups, work
directories in the temp directory, and the nftables table (`inet sf-<id>-synopt`) of a
killed `shortflow synopt` daemon in the root namespace or any other named namespace, and
the Dask scratch directory (`sf-dask-*`) of a killed sweep (`shortflow.cluster`). Each
removal is reported.

A run still running is never touched. Liveness is read from the run's own record in the
fixed system place (`/run/shortflow/runs/<id>`, whatever `$TMPDIR` says: `sudo` may give
another one than the run had): the pid *and* start time of the process that owns it, alive
and not a zombie. `tune`'s self-check objects (`sf-<id>-tcheck`) are left while a `tune`
apply holds the host's tune lock."""

from __future__ import annotations

import errno
import json
import re
import shutil
import socket
import sys
import tempfile
from pathlib import Path

from shortflow.cluster import remove_stale_scratch
from shortflow.host import bpf, cgroups, nft
from shortflow.host.commands import in_ns
from shortflow.host.kernel import cgroup2_mounts, mounts
from shortflow.host.netns import delete_link, kill_namespace, links, namespaces
from shortflow.host.records import TUNE_LOCK, live_owner, lock_holder, owner_records, run_owner
from shortflow.testbed.names import PREFIX, RUN_OBJECT
from shortflow.testbed.system import require_root

BPF_FS = bpf.BPF_FS
#: The ending of `shortflow tune`'s self-check namespace and cgroup (`sf-<id>-tcheck`).
TUNE_SELFCHECK = "-tcheck"
#: A synopt daemon's own nftables table's name (crates/synopt/src/rules.rs).
SYNOPT_TABLE = re.compile(r"^(sf-([0-9a-f]{6})-synopt)$")
#: Exits 0 when a synopt daemon of run argv[1] is alive in this namespace: it holds the
#: abstract socket `sf-<id>-synopt` for its lifetime (crates/synopt/src/sys.rs, RunLock).
_ALIVE_PROBE = """
import errno, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
try:
    s.bind("\\0sf-%s-synopt" % sys.argv[1])
except OSError as e:
    sys.exit(0 if e.errno == errno.EADDRINUSE else 2)
sys.exit(1)
"""


def leftovers() -> dict[str, list[str]]:
    """Objects with our run prefix that exist now (empty lists: clean)."""
    ns = namespaces()
    names = links()
    rules = [r for r in nft.iptables_rules() if "sf-" in r and _rule_is_ours(r)]
    pins = [p.name for p in BPF_FS.iterdir()] if BPF_FS.is_dir() else []
    cgroups = [str(p) for p in cgroup2_mounts() for p in p.glob("sf-*")]
    tmp = [p.name for p in Path(tempfile.gettempdir()).iterdir()]
    points = [str(m.point) for m in mounts()]
    return {
        "mounts": [m for m in points if any(RUN_OBJECT.match(part) for part in Path(m).parts)],
        "namespaces": [n for n in ns if RUN_OBJECT.match(n)],
        "links": [n for n in names if RUN_OBJECT.match(n)],
        "iptables_rules": rules,
        "bpf_pins": [n for n in pins if RUN_OBJECT.match(n)],
        "cgroups": [c for c in cgroups if RUN_OBJECT.match(Path(c).name)],
        "work_dirs": [n for n in tmp if RUN_OBJECT.match(n)],
        "synopt_tables": [f"{ns or '(root)'} {table}" for ns, table in stale_synopt_tables()],
    }


def _synopt_alive(run_id: str, netns: str | None) -> bool:
    if netns is None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            s.bind(f"\0sf-{run_id}-synopt")
        except OSError as e:
            return e.errno == errno.EADDRINUSE
        finally:
            s.close()
        return False
    return in_ns(netns, sys.executable, "-c", _ALIVE_PROBE, run_id, check=False).returncode == 0


def synopt_tables(netns: str | None = None) -> list[tuple[str, str]]:
    """(table name, run id) of every synopt daemon's nftables table in `netns` (None: this
    namespace), live or not."""
    return [(m.group(1), m.group(2)) for name in nft.tables("inet", netns) if (m := SYNOPT_TABLE.match(name))]


def synopt_rules(netns: str | None = None) -> list[str]:
    """Every copying rule (an NFLOG `log group`) of the synopt tables in `netns`, as
    `TABLE: CHAIN EXPRESSIONS` (the expressions as nft's JSON)."""
    rules = []
    for table, _ in synopt_tables(netns):
        for r in nft.rules("inet", table, netns):
            if any("log" in e and "group" in e["log"] for e in r.get("expr", [])):
                rules.append(f"{table}: {r['chain']} {json.dumps(r['expr'], sort_keys=True)}")
    return rules


def stale_synopt_tables(in_namespaces: list[str | None] | None = None) -> list[tuple[str | None, str]]:
    """(namespace or None for the root one, table name) of every synopt table whose daemon
    is gone, in `in_namespaces` (default: the root namespace and every named one except our
    runs', which `clean` deletes whole)."""
    found = []
    if in_namespaces is None:
        wanted = [None, *(n for n in namespaces() if not RUN_OBJECT.match(n))]
    else:
        wanted = in_namespaces
    for netns in wanted:
        for table, run_id in synopt_tables(netns):
            if not _synopt_alive(run_id, netns):
                found.append((netns, table))
    return found


def _rule_is_ours(rule: str) -> bool:
    return any(RUN_OBJECT.match(tok.strip('"')) for tok in rule.split())


def remove_stale_synopt_tables(namespaces: list[str | None] | None = None, run_id: str | None = None) -> list[str]:
    """Deletes the tables `stale_synopt_tables(namespaces)` finds (only that of daemon run
    `run_id` when given), each whole in one command; one line per table. A live daemon's
    table is never touched: it deletes it itself when it stops."""
    done = []
    for netns, table in stale_synopt_tables(namespaces):
        if run_id is not None and table != f"{PREFIX}{run_id}-synopt":
            continue
        if nft.delete_table("inet", table, netns):
            done.append(f"synopt table ({netns or 'root namespace'}) inet {table}")
    return done


def live_runs() -> dict[str, int]:
    """Run ids whose owning process still runs (from its owner record), with its pid."""
    live: dict[str, int] = {}
    for run_id in owner_records():
        pid = live_owner(run_owner(run_id))
        if pid is not None:
            live[run_id] = pid
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
    if only is not None:
        # Other runs are none of this call's business: they are neither cleaned nor named.
        live = {run_id: pid for run_id, pid in live.items() if run_id == only}
    for run_id, pid in sorted(live.items()):
        marker = f"{PREFIX}{run_id}-"
        found = {kind: [x for x in objs if marker not in x] for kind, objs in found.items()}
        done.append(f"nothing of run {run_id}: it is still running (pid {pid}); --force removes it too")
    tuning = None if force else lock_holder(TUNE_LOCK)
    if tuning is not None:
        checks = {kind: [x for x in objs if x.endswith(TUNE_SELFCHECK)] for kind, objs in found.items()}
        if any(checks.values()):
            found = {kind: [x for x in objs if not x.endswith(TUNE_SELFCHECK)] for kind, objs in found.items()}
            done.append(f"nothing of `shortflow tune`'s self-check: an apply is in progress (pid {tuning})")
    for ns in found["namespaces"]:
        if kill_namespace(ns):
            done.append(f"namespace {ns} (its processes killed)")
    for mount in found["mounts"]:  # the run's private bpffs (its pins go with it)
        if bpf.unmount(Path(mount)):
            done.append(f"mount {mount}")
    for link in found["links"]:
        if delete_link(link):
            done.append(f"link {link}")
    for rule in found["iptables_rules"]:
        if nft.iptables_delete(rule):
            done.append(f"iptables rule {rule}")
    done += remove_stale_synopt_tables(run_id=only)
    for pin in found["bpf_pins"]:
        if pin.endswith("-tune"):
            # A host's tuning, not a testbed run's: its journal knows how to undo it.
            done.append(f"nothing of {BPF_FS / pin}: `shortflow tune revert` removes it "
                        "(`shortflow tune revert --orphans` without its state file)")
            continue
        target = BPF_FS / pin
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
        else:
            target.unlink(missing_ok=True)
        done.append(f"BPF pin {target}")
    for cg in found["cgroups"]:
        # Removing a cgroup detaches and frees its BPF programs; it must be empty first.
        try:
            if cgroups.remove(Path(cg)):
                done.append(f"cgroup {cg}")
        except OSError as e:
            done.append(f"cgroup {cg} NOT removed: {e.strerror}")
    for d in found["work_dirs"]:
        shutil.rmtree(Path(tempfile.gettempdir()) / d, ignore_errors=True)
        done.append(f"work directory {Path(tempfile.gettempdir()) / d}")
    for run_id in owner_records():
        if run_id not in live and (only is None or run_id == only):
            run_owner(run_id).unlink(missing_ok=True)
    if only is None:
        done += [f"Dask scratch directory {d} (its sweep was killed)" for d in remove_stale_scratch()]
    return done
