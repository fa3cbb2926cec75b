"""The one BPF program shortflow puts on a host, the tuner's sock_ops program
(`bpf/tune.bpf.c`), and how it is loaded: the object built with the extension module (a
pip-installed package needs no clang) or compiled with clang as a fallback, loaded and
pinned by the extension's loader (aya, `shortflow-bpf`), attached to a cgroup through a BPF
link — pinned beside the program (`attach`: it outlives the command) or held by this
process (`attach_held`: it goes when the process does) — and configured through its
pinned maps while it stays attached, written by the same loader. Its `struct config` is
checked against `Config` in the object's BTF at load, and every struct written into a map
is laid out by the map's own BTF (member names, offsets and sizes): a program and this
writer built apart fail naming the members that differ. Both `tune` and the testbed (for
a scenario's SYN RTO) use it; neither knows the layout of its maps. No bpftool: clang only
compiles the program where the extension was built without it.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import struct
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from shortflow.host.commands import HostError, run
from shortflow.host.kernel import cgroup2_mounts, mounts

SOURCE = Path(__file__).resolve().parents[3] / "bpf" / "tune.bpf.c"
OBJECT_NAME = "tune.bpf.o"
#: The program's function in tune.bpf.c.
PROG_NAME = "tune"
BPF_FS = Path("/sys/fs/bpf")


def _counter_names() -> tuple[str, ...]:
    """The program's counters, named and ordered by `struct counters` in the BTF of the
    object built with the extension (empty when it was built without one)."""
    from shortflow import _core

    built = _core.bpf_object("tune")
    try:
        return tuple(name for name, _, _ in _core.bpf_struct_layout(built, "counters")) if built else ()
    except OSError:
        return ()


#: The program's counters (`struct counters` of tune.bpf.c, read from its BTF).
COUNTERS = _counter_names()
#: tune_last_error's slots: the knob each refusal counter stands for.
REFUSED = {"iw_refused": "TCP_BPF_IW (--iw, prefix iw)", "rto_min_refused": "TCP_BPF_RTO_MIN (--rto-min, --sfr-factor)",
           "delack_max_refused": "TCP_BPF_DELACK_MAX (--delack-max)"}

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Config:
    """`struct config` of tune.bpf.c, field for field; 0 leaves the kernel's own value."""

    syn_rto_jiffies: int = 0
    iw_segments: int = 0
    rto_min_us: int = 0
    delack_max_us: int = 0
    sfr_factor_pct: int = 0
    sfr_cutout_bytes: int = 0
    sfr_restore_us: int = 0
    port: int = 0
    timer_min_us: int = 0

    def fields(self) -> list[tuple[str, int]]:
        """The members by name, each checked to fit the program's 32-bit field."""
        for name, v in asdict(self).items():
            if not 0 <= v < 1 << 32:
                raise HostError(f"BPF config {name} = {v} does not fit the program's 32-bit field")
        return list(asdict(self).items())


@dataclass(frozen=True)
class PrefixValue:
    """`struct prefix_value`: what a destination prefix overrides (0: the global value)."""

    iw_segments: int = 0
    syn_rto_jiffies: int = 0


def needs_bpffs() -> bool:
    """True when bpffs is not mounted at /sys/fs/bpf."""
    return not (os.path.ismount(BPF_FS) and any(m.point == BPF_FS and m.kind == "bpf" for m in mounts()))


def mount_bpffs(at: Path) -> None:
    """Mounts a bpffs at `at` (a directory that exists)."""
    run(["mount", "-t", "bpf", "bpf", str(at)])


def unmount(at: Path) -> bool:
    """Unmounts `at` (its pins go with a private bpffs); False when nothing was unmounted."""
    return run(["umount", str(at)], check=False).returncode == 0


def ensure_bpffs() -> bool:
    """Mounts bpffs at /sys/fs/bpf when it is not; True when this call mounted it."""
    if not needs_bpffs():
        return False
    BPF_FS.mkdir(parents=True, exist_ok=True)
    mount_bpffs(BPF_FS)
    return True


def available() -> bool:
    """Whether the program can be had: built with the extension, or clang to compile it."""
    from shortflow import _core

    return _core.bpf_object("tune") is not None or shutil.which("clang") is not None


def program_object(build_dir: Path | None = None) -> Path:
    """The program's object, written into `build_dir` (default: a new temporary directory
    `shortflow-tune-*`): the one built with the extension module when there is one,
    otherwise compiled from `bpf/tune.bpf.c` now."""
    from shortflow import _core

    out = build_dir or Path(tempfile.mkdtemp(prefix="shortflow-tune-"))
    obj = out / OBJECT_NAME
    built = _core.bpf_object("tune")
    if built is not None:
        obj.write_bytes(built)
        return obj
    clang = shutil.which("clang")
    if clang is None:
        raise HostError("the extension module was built without the BPF program, and compiling it needs clang "
                        "(`make deps` installs it)")
    if not SOURCE.is_file():
        raise HostError(f"the extension module was built without the BPF program, and {SOURCE} is missing")
    triple = run(["gcc", "-dumpmachine"], check=False).stdout.strip() or "x86_64-linux-gnu"
    try:
        run([clang, "-O2", "-g", "-target", "bpf", f"-I/usr/include/{triple}", "-c", str(SOURCE), "-o", str(obj)],
            timeout=120)
    except HostError as e:
        raise HostError(f"compiling {SOURCE}: {e}") from None
    return obj


def check_layout(obj: bytes, where: str) -> None:
    """HostError unless `struct config` in the object's BTF is `Config`, field for field
    (name, offset, 32 bits each): a loader and a program built apart must agree before a
    single value is written."""
    from shortflow import _core

    try:
        members = _core.bpf_struct_layout(obj, "config")
    except OSError as e:
        raise HostError(f"{where}: {e}") from None
    expected = [(name, 4 * i, 4) for i, name in enumerate(Config.__dataclass_fields__)]
    if members != expected:
        raise HostError(f"{where}: struct config in the program's BTF is {members}, but this shortflow writes "
                        f"{expected}: the program and its loader were built from different sources")


def load(obj: Path, pin_dir: Path) -> int:
    """Loads the program, pins it (`pin_dir/prog`) and its maps under `pin_dir`; returns
    the program id. The object's `struct config` must match `Config` (`check_layout`)."""
    from shortflow import _core

    data = obj.read_bytes()
    check_layout(data, str(obj))
    pin_dir.mkdir(parents=True)
    try:
        return int(_core.bpf_load_pinned(data, PROG_NAME, str(pin_dir)))
    except OSError as e:
        raise HostError(str(e)) from None


def prog_id(pin_dir: Path) -> int:
    """The id of the program pinned in `pin_dir`."""
    from shortflow import _core

    try:
        return int(_core.bpf_pinned_program(str(pin_dir / "prog"))["id"])
    except OSError as e:
        raise HostError(str(e)) from None


def _write(path: Path, key: bytes, fields: list[tuple[str, int]]) -> None:
    from shortflow import _core

    try:
        _core.bpf_map_update_struct(str(path), key, fields)
    except OSError as e:
        raise HostError(str(e)) from None


def write_config(pin_dir: Path, config: Config) -> None:
    """Sets the program's configuration (`tune_config`'s one entry)."""
    _write(pin_dir / "tune_config", bytes(4), config.fields())


def _prefix_key(net: Network) -> bytes:
    return struct.pack("<I", net.prefixlen) + net.network_address.packed


def write_prefixes(pin_dir: Path, prefixes: Mapping[Network, PrefixValue]) -> None:
    """Makes the two LPM tries hold exactly `prefixes` (entries not in it are deleted)."""
    from shortflow import _core

    for family, name in ((4, "tune_prefix4"), (6, "tune_prefix6")):
        path = pin_dir / name
        wanted = {_prefix_key(net): v for net, v in prefixes.items() if net.version == family}
        for key, _ in _entries(path):
            if key not in wanted:
                try:
                    _core.bpf_map_delete(str(path), key)
                except OSError as e:
                    raise HostError(str(e)) from None
        for key, v in wanted.items():
            _write(path, key, list(asdict(v).items()))


def attach(cgroup: Path, pin_dir: Path) -> None:
    """Attaches the program pinned in `pin_dir` to `cgroup`, beside whatever else is
    attached there (which stays as it was), through a link pinned at `pin_dir/link`: it
    stays after this process ends, until the link is detached or its pin removed."""
    from shortflow import _core

    try:
        _core.bpf_attach_pinned(str(cgroup), str(pin_dir))
    except OSError as e:
        raise HostError(str(e)) from None


def attach_held(cgroup: Path, pin_dir: Path) -> Any:
    """Attaches the program pinned in `pin_dir` to `cgroup` through a link only this
    process holds (`_core.BpfLink`): its `close()`, or this process ending in any way,
    detaches it; nothing is pinned."""
    from shortflow import _core

    try:
        return _core.bpf_attach_held(str(cgroup), str(pin_dir / "prog"))
    except OSError as e:
        raise HostError(str(e)) from None


def detach(cgroup: Path, prog: int) -> None:
    """Detaches program `prog` from `cgroup` when it is attached there (else nothing)."""
    if cgroup.exists():
        refused = detach_id(str(cgroup), prog)
        if refused is not None:
            raise HostError(f"detaching program {prog} from {cgroup}: {refused}")


def detach_id(cgroup: str, prog: int) -> str | None:
    """Detaches program `prog` from `cgroup`: its links there (how shortflow attaches), or
    else a plain attachment by program id (BPF_PROG_ATTACH, how bpftool attaches); None
    when done or when it was not attached, else why not."""
    from shortflow import _core

    try:
        if not _core.bpf_detach_links(cgroup, prog):
            _core.bpf_detach_attached(cgroup, prog)
    except OSError as e:
        return str(e)
    return None


def prog_info(prog: int) -> dict[str, object] | None:
    """Program `prog`'s id, name, tag and map ids; None when there is no such program (or
    the kernel does not say)."""
    from shortflow import _core

    try:
        return _core.bpf_program(prog)
    except OSError:
        return None


def pinned_prog_info(pin: Path) -> dict[str, object] | None:
    """The program pinned at `pin` (as `prog_info`), None when there is none."""
    from shortflow import _core

    try:
        return _core.bpf_pinned_program(str(pin))
    except OSError:
        return None


def map_name(map_id: int) -> str | None:
    from shortflow import _core

    try:
        return _core.bpf_map_name(map_id)
    except OSError:
        return None


def pinned_map_name(pin: Path) -> str | None:
    """The name of the map pinned at `pin`; None when what is pinned there is no map."""
    r = run(["bpftool", "-j", "map", "show", "pinned", str(pin)], check=False)
    try:
        found = json.loads(r.stdout) if r.returncode == 0 else None
    except json.JSONDecodeError:
        return None
    return str(found["name"]) if isinstance(found, dict) and "name" in found else None


def cgroup_tree() -> list[dict[str, object]]:
    """Every cgroup (of every cgroup v2 mount) with sock_ops programs attached to it:
    `{"cgroup": path, "programs": [{"id", "name", "attach_type"}]}`."""
    from shortflow import _core

    tree: list[dict[str, object]] = []
    for root in cgroup2_mounts():
        try:
            found = _core.bpf_sock_ops_tree(str(root))
        except OSError:
            continue
        for cgroup, ids in found:
            programs = [{"id": i, "name": (prog_info(i) or {}).get("name"), "attach_type": "sock_ops"} for i in ids]
            tree.append({"cgroup": cgroup, "programs": programs})
    return tree


def _entries(path: Path) -> list[tuple[bytes, bytes]]:
    from shortflow import _core

    try:
        return _core.bpf_map_entries(str(path))
    except OSError as e:
        raise HostError(str(e)) from None


def unpin(pin_dir: Path) -> None:
    shutil.rmtree(pin_dir, ignore_errors=True)


def counters(pin_dir: Path) -> dict[str, int]:
    """The per-CPU counters summed over the CPUs, named as the pinned map's own BTF names
    its value's fields (`struct counters`)."""
    from shortflow import _core

    path = pin_dir / "tune_counters"
    try:
        layout = _core.bpf_map_value_layout(str(path))
    except OSError as e:
        raise HostError(f"the tuner's counters: {e}") from None
    out = {name: 0 for name, _, _ in layout}
    # A per-CPU value: one copy per possible CPU, each padded to 8 bytes.
    stride = -(-max(offset + size for _, offset, size in layout) // 8) * 8
    for _, value in _entries(path):
        for cpu in range(0, len(value), stride):
            for name, offset, size in layout:
                out[name] += int.from_bytes(value[cpu + offset:cpu + offset + size], "little")
    return out


def last_errors(pin_dir: Path) -> dict[str, int]:
    """The errno (negative, as bpf_setsockopt returned it) of the kernel's last refusal per
    knob; 0 where it never refused."""
    out = dict.fromkeys(REFUSED, 0)
    for key, value in _entries(pin_dir / "tune_last_error"):
        slot = int.from_bytes(key, "little")
        if slot < len(REFUSED):
            out[list(REFUSED)[slot]] = int.from_bytes(value, "little", signed=True)
    return out
