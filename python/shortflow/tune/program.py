"""The BPF side of the tuner (`bpf/tune.bpf.c`): compiled with clang, loaded and attached
with bpftool (libbpf), its maps written through their pins so that settings and prefixes
change while the program stays attached.

The pins live in `/sys/fs/bpf/sf-<id>-tune/` (bpffs is mounted there when absent, and
unmounted again on revert), named like every object the project creates so that
`shortflow testbed clean` and the test suite's leftover check can find them.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import struct
import tempfile
from pathlib import Path

from shortflow.exceptions import TuneError
from shortflow.host import HostError, run
from shortflow.tune.settings import PrefixRule, TuneSettings

SOURCE = Path(__file__).resolve().parents[3] / "bpf" / "tune.bpf.c"
BPF_FS = Path("/sys/fs/bpf")
#: tune_counters' slots, in the order of `enum counter` in tune.bpf.c.
COUNTERS = ("matched", "syn_rto_set", "iw_set", "rto_min_set", "delack_max_set", "prefix_hits",
            "sfr_set", "sfr_restored", "setsockopt_errors", "sfr_floor_set", "sfr_from_known_rtt", "sfr_no_handshake_rtt",
            "iw_refused", "rto_min_refused", "delack_max_refused")
#: tune_last_error's slots: the knob each refusal counter stands for.
REFUSED = {"iw_refused": "TCP_BPF_IW (--iw, prefix iw)", "rto_min_refused": "TCP_BPF_RTO_MIN (--rto-min, --sfr-factor)",
           "delack_max_refused": "TCP_BPF_DELACK_MAX (--delack-max)"}
#: TCP_RTO_MIN: where Super Fast Retransmit's minimum RTO goes back to after the cut-out.
DEFAULT_RTO_MIN_US = 200_000


def _bpftool(*args: str) -> str:
    try:
        return run(["bpftool", *args], timeout=60).stdout
    except HostError as e:
        raise TuneError(str(e)) from None


def needs_bpffs() -> bool:
    """True when bpffs is not mounted at /sys/fs/bpf."""
    return not (os.path.ismount(BPF_FS) and any(line.split()[1] == str(BPF_FS) and line.split()[2] == "bpf"
                                                for line in Path("/proc/mounts").read_text().splitlines()))


def ensure_bpffs() -> bool:
    """Mounts bpffs at /sys/fs/bpf when it is not; True when this call mounted it."""
    if not needs_bpffs():
        return False
    BPF_FS.mkdir(parents=True, exist_ok=True)
    run(["mount", "-t", "bpf", "bpf", str(BPF_FS)])
    return True


def compile_program(build_dir: Path | None = None) -> Path:
    """The program's object in `build_dir` (default: a new temporary directory): the one
    compiled with the extension module when there is one (a pip-installed package needs
    no clang), otherwise compiled from `bpf/tune.bpf.c` now."""
    from shortflow import _core

    built = _core.bpf_object("tune")
    if built is not None:
        obj = (build_dir or Path(tempfile.mkdtemp(prefix="shortflow-tune-"))) / "tune.bpf.o"
        obj.write_bytes(built)
        return obj
    clang = shutil.which("clang")
    if clang is None or shutil.which("bpftool") is None:
        raise TuneError("the BPF tuner needs clang and bpftool (`make deps` installs them); "
                        "without BPF use --fallback routes")
    if not SOURCE.is_file():
        raise TuneError(f"{SOURCE} is missing")
    triple = run(["gcc", "-dumpmachine"], check=False).stdout.strip() or "x86_64-linux-gnu"
    obj = (build_dir or Path(tempfile.mkdtemp(prefix="shortflow-tune-"))) / "tune.bpf.o"
    try:
        run([clang, "-O2", "-g", "-target", "bpf", f"-I/usr/include/{triple}", "-c", str(SOURCE), "-o", str(obj)],
            timeout=120)
    except HostError as e:
        raise TuneError(f"compiling {SOURCE}: {e}") from None
    return obj


def load(obj: Path, pin_dir: Path) -> int:
    """Loads the program, pins it and its maps under `pin_dir`; returns the program id."""
    pin_dir.mkdir(parents=True)
    _bpftool("prog", "load", str(obj), str(pin_dir / "prog"), "type", "sockops", "pinmaps", str(pin_dir))
    info = json.loads(_bpftool("-j", "prog", "show", "pinned", str(pin_dir / "prog")))
    return int(info["id"])


def prog_id(pin_dir: Path) -> int:
    info = json.loads(_bpftool("-j", "prog", "show", "pinned", str(pin_dir / "prog")))
    return int(info["id"])


def _hex(data: bytes) -> list[str]:
    return [f"0x{b:02x}" for b in data]


def write_config(pin_dir: Path, s: TuneSettings, hz: int) -> None:
    def us(v: float | None) -> int:
        return round(v * 1e6) if v is not None else 0

    value = struct.pack(
        "<9I",
        round(s.syn_rto_s * hz) if s.syn_rto_s is not None else 0,
        s.iw or 0,
        us(s.rto_min_s),
        us(s.delack_max_s),
        round(s.sfr_factor * 100) if s.sfr_factor is not None else 0,
        s.sfr_cutout_bytes if s.sfr_factor is not None else 0,
        us(s.rto_min_s) or DEFAULT_RTO_MIN_US,
        s.port or 0,
        # TCP_TIMEOUT_MIN (2 jiffies): the smallest minimum RTO bpf_setsockopt takes.
        -(-2 * 1_000_000 // hz),
    )
    _bpftool("map", "update", "pinned", str(pin_dir / "tune_config"), "key", *_hex(bytes(4)), "value", *_hex(value))


def _prefix_key(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bytes:
    return struct.pack("<I", net.prefixlen) + net.network_address.packed


def write_prefixes(pin_dir: Path, rules: list[PrefixRule], hz: int) -> None:
    """Makes the two LPM tries hold exactly `rules` (entries not in it are deleted)."""
    for family, name in ((4, "tune_prefix4"), (6, "tune_prefix6")):
        path = str(pin_dir / name)
        wanted = {_prefix_key(r.network): r for r in rules if r.network.version == family}
        for entry in json.loads(_bpftool("-j", "map", "dump", "pinned", path) or "[]"):
            key = bytes(int(b, 16) for b in entry["key"])
            if key not in wanted:
                _bpftool("map", "delete", "pinned", path, "key", *_hex(key))
        for key, r in wanted.items():
            value = struct.pack("<2I", r.iw or 0, round(r.syn_rto_s * hz) if r.syn_rto_s is not None else 0)
            _bpftool("map", "update", "pinned", path, "key", *_hex(key), "value", *_hex(value))


def attach(cgroup: Path, pin_dir: Path) -> None:
    # multi: beside whatever else is attached there, which stays as it was.
    _bpftool("cgroup", "attach", str(cgroup), "sock_ops", "pinned", str(pin_dir / "prog"), "multi")


def detach(cgroup: Path, prog_id: int) -> None:
    if cgroup.exists() and f'"id":{prog_id},' in _bpftool("-j", "cgroup", "show", str(cgroup)).replace(" ", ""):
        _bpftool("cgroup", "detach", str(cgroup), "sock_ops", "id", str(prog_id))


def unpin(pin_dir: Path) -> None:
    shutil.rmtree(pin_dir, ignore_errors=True)


def counters(pin_dir: Path) -> dict[str, int]:
    """The per-CPU counters summed over the CPUs."""
    out = dict.fromkeys(COUNTERS, 0)
    for entry in json.loads(_bpftool("-j", "map", "dump", "pinned", str(pin_dir / "tune_counters"))):
        slot = entry["key"] if isinstance(entry["key"], int) else int.from_bytes(bytes(int(b, 16) for b in entry["key"]), "little")
        if "formatted" in entry:
            values = [v["value"] for v in entry["formatted"]["values"]]
        else:
            values = [int.from_bytes(bytes(int(b, 16) for b in v["value"]), "little") for v in entry["values"]]
        if slot < len(COUNTERS):
            out[COUNTERS[slot]] = sum(values)
    return out


def last_errors(pin_dir: Path) -> dict[str, int]:
    """The errno (negative, as bpf_setsockopt returned it) of the kernel's last refusal per
    knob; 0 where it never refused."""
    out = dict.fromkeys(REFUSED, 0)
    for entry in json.loads(_bpftool("-j", "map", "dump", "pinned", str(pin_dir / "tune_last_error"))):
        if "formatted" in entry:
            slot, value = entry["formatted"]["key"], entry["formatted"]["value"]
        else:
            slot = int.from_bytes(bytes(int(b, 16) for b in entry["key"]), "little")
            value = int.from_bytes(bytes(int(b, 16) for b in entry["value"]), "little", signed=True)
        if slot < len(REFUSED):
            out[list(REFUSED)[slot]] = int(value)
    return out
