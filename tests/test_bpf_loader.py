"""The Rust BPF loader behind `shortflow.host.bpf` (aya, crates/bpf), on the real kernel:
the tuner's `struct config` read from the object's BTF (and a program built from another
source refused at load), a pinned link that outlives the process that made it until its
pin goes, and a held link that leaves the cgroup when its process dies, SIGKILL included.

Each test loads the program into a bpffs of its own (mounted in the test's temporary
directory) and attaches it to a cgroup of its own (`sf-<run id>-bpftest`), both removed on
every exit path."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from shortflow import _core
from shortflow.host import HostError, bpf, cgroup2_root
from shortflow.host.runid import fresh_run_id

SOURCE = Path(__file__).resolve().parents[1] / "bpf" / "tune.bpf.c"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="loading BPF programs needs root")


def compile_variant(src: str, out: Path) -> bytes:
    """`src` compiled for BPF with clang, as the extension's build does."""
    if shutil.which("clang") is None:
        pytest.fail("clang is missing: `make deps` installs it")
    c = out.with_suffix(".c")
    c.write_text(src)
    triple = subprocess.run(["gcc", "-dumpmachine"], capture_output=True, text=True).stdout.strip() or "x86_64-linux-gnu"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{triple}", "-c", str(c), "-o", str(out)],
                   check=True, capture_output=True, timeout=120)
    return out.read_bytes()


@needs_root
def test_config_layout_is_read_from_the_objects_btf(tmp_path: Path) -> None:
    built = _core.bpf_object("tune")
    assert built is not None, "the extension was built without the BPF program (no clang at build time)"
    layout = _core.bpf_struct_layout(built, "config")
    assert [name for name, _, _ in layout] == list(bpf.Config.__dataclass_fields__)
    assert [(off, size) for _, off, size in layout] == [(4 * i, 4) for i in range(len(layout))]
    bpf.check_layout(built, "the built-in object")
    # A program whose struct config gained a field in the middle: every later field moves.
    src = SOURCE.read_text().replace("\t__u32 iw_segments;\n", "\t__u32 iw_segments;\n\t__u32 added_later;\n", 1)
    moved = compile_variant(src, tmp_path / "moved.bpf.o")
    assert ("added_later", 8, 4) in _core.bpf_struct_layout(moved, "config")
    with pytest.raises(HostError, match="added_later.*built from different sources"):
        bpf.check_layout(moved, "moved.bpf.o")
    # A 64-bit field where the loader writes 32 bits.
    wide = compile_variant(SOURCE.read_text().replace("\t__u32 port;", "\t__u64 port;", 1), tmp_path / "wide.bpf.o")
    assert ("port", 32, 8) in _core.bpf_struct_layout(wide, "config")
    with pytest.raises(HostError, match="struct config"):
        bpf.check_layout(wide, "wide.bpf.o")
    with pytest.raises(OSError, match="no struct nothing_like_it"):
        _core.bpf_struct_layout(built, "nothing_like_it")


@pytest.fixture
def loaded(tmp_path: Path) -> Iterator[tuple[Path, Path, int]]:
    """(pin directory, cgroup, program id): the tuner's program loaded into a private
    bpffs, and an empty cgroup to attach it to."""
    fs = tmp_path / "bpffs"
    fs.mkdir()
    cgroup = cgroup2_root() / f"sf-{fresh_run_id()}-bpftest"
    bpf.mount_bpffs(fs)
    prog = None
    try:
        cgroup.mkdir()
        pins = fs / "tune"
        prog = bpf.load(bpf.program_object(tmp_path), pins)
        yield pins, cgroup, prog
    finally:
        if cgroup.exists():
            for member in (cgroup / "cgroup.procs").read_text().split():
                os.kill(int(member), signal.SIGKILL)
            if prog is not None:
                bpf.detach(cgroup, prog)
            cgroup.rmdir()
        bpf.unmount(fs)  # the pins, and the program with them


def attached(cgroup: Path) -> list[int]:
    """Program ids the kernel runs for `cgroup`'s sock_ops (asked with bpftool, a peer)."""
    out = subprocess.run(["bpftool", "-j", "cgroup", "show", str(cgroup)], capture_output=True, text=True).stdout
    return [int(p["id"]) for p in json.loads(out.strip() or "[]") if p.get("attach_type") in ("sock_ops", "cgroup_sock_ops")]


_ATTACH = """
import sys
from pathlib import Path
from shortflow.host import bpf
how, cgroup, pins = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
if how == "pinned":
    bpf.attach(cgroup, pins)
    print("attached", flush=True)
else:
    link = bpf.attach_held(cgroup, pins)
    print("attached", flush=True)
    sys.stdin.read()  # held until killed
"""


@needs_root
def test_pinned_link_outlives_its_process_until_its_pin_goes(loaded: tuple[Path, Path, int]) -> None:
    pins, cgroup, prog = loaded
    r = subprocess.run([sys.executable, "-c", _ATTACH, "pinned", str(cgroup), str(pins)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "attached", r.stderr
    assert (pins / "link").exists()
    assert attached(cgroup) == [prog], "the process that attached it has exited: the pinned link holds it"
    (pins / "link").unlink()
    assert attached(cgroup) == []


@needs_root
def test_pinned_link_detached_by_program_id(loaded: tuple[Path, Path, int]) -> None:
    """How `tune revert` and `--orphans` detach: by the program's id, its pin left in place."""
    pins, cgroup, prog = loaded
    bpf.attach(cgroup, pins)
    assert attached(cgroup) == [prog]
    bpf.detach(cgroup, prog)
    assert attached(cgroup) == []
    bpf.detach(cgroup, prog)  # not attached: nothing to do, no error


@needs_root
def test_held_link_leaves_the_cgroup_with_its_process(loaded: tuple[Path, Path, int]) -> None:
    pins, cgroup, prog = loaded
    with subprocess.Popen([sys.executable, "-c", _ATTACH, "held", str(cgroup), str(pins)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as p:
        try:
            assert p.stdout is not None and p.stdout.readline().strip() == "attached"
            assert attached(cgroup) == [prog]
            assert not (pins / "link").exists(), "a held link is pinned nowhere"
        finally:
            p.kill()
            p.wait(timeout=10)
    assert attached(cgroup) == [], "SIGKILLed: its link went with its descriptors"
    # In this process: closed by hand, and by leaving a with block.
    link = bpf.attach_held(cgroup, pins)
    assert link.attached and attached(cgroup) == [prog]
    link.close()
    assert not link.attached and attached(cgroup) == []
    with bpf.attach_held(cgroup, pins):
        assert attached(cgroup) == [prog]
    assert attached(cgroup) == []


@needs_root
def test_program_attached_without_a_link_is_detached_by_id(loaded: tuple[Path, Path, int]) -> None:
    """A program attached the way bpftool attaches (BPF_PROG_ATTACH, no link), as by an
    earlier shortflow: revert and --orphans still detach it by its id."""
    pins, cgroup, prog = loaded
    subprocess.run(["bpftool", "cgroup", "attach", str(cgroup), "sock_ops", "pinned", str(pins / "prog"), "multi"],
                   check=True, capture_output=True)
    assert attached(cgroup) == [prog]
    assert bpf.cgroup_tree() and any(e["cgroup"] == str(cgroup) for e in bpf.cgroup_tree())
    bpf.detach(cgroup, prog)
    assert attached(cgroup) == []


@needs_root
def test_counters_are_named_by_the_pinned_maps_own_btf(loaded: tuple[Path, Path, int]) -> None:
    """The counters' names and order come from the map the program made (its BTF, kept by
    the kernel), not from a list in the loader: a connection through the cgroup moves
    `matched`."""
    pins, cgroup, prog = loaded
    layout = _core.bpf_map_value_layout(str(pins / "tune_counters"))
    assert [name for name, _, _ in layout] == list(bpf.COUNTERS)
    assert [(off, size) for _, off, size in layout] == [(8 * i, 8) for i in range(len(layout))]
    assert bpf.counters(pins) == dict.fromkeys(bpf.COUNTERS, 0)
    with bpf.attach_held(cgroup, pins):
        probe = ("import socket\nls = socket.socket(); ls.bind(('127.0.0.1', 0)); ls.listen(1)\n"
                 "c = socket.create_connection(ls.getsockname()); a, _ = ls.accept(); c.close(); a.close()")
        enter = f"import os; open('{cgroup}/cgroup.procs', 'w').write(str(os.getpid()))\n"
        subprocess.run([sys.executable, "-c", enter + probe], check=True, timeout=30)
    assert bpf.counters(pins)["matched"] >= 2, "the active and the passive end each called the program"


@needs_root
def test_maps_are_written_as_their_btf_lays_them_out(loaded: tuple[Path, Path, int]) -> None:
    """The configuration and the prefix tries written through the loader, read back as the
    kernel holds them (`bpftool map dump`, a peer), and a struct whose members differ from
    the map's BTF refused naming them, the map unchanged."""
    import ipaddress
    import struct

    pins, _, _ = loaded
    c = bpf.Config(syn_rto_jiffies=50, iw_segments=4, rto_min_us=50_000, port=443, timer_min_us=8000)
    bpf.write_config(pins, c)
    dump = json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "pinned", str(pins / "tune_config")],
                                     capture_output=True, text=True, check=True).stdout)
    value = bytes(int(b, 16) for b in dump[0]["value"])
    assert struct.unpack("<9I", value) == (50, 4, 50_000, 0, 0, 0, 0, 443, 8000)
    net4, net6 = ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("2001:db8::/32")
    bpf.write_prefixes(pins, {net4: bpf.PrefixValue(10, 25), net6: bpf.PrefixValue(4, 0)})
    (k4, v4), = _core.bpf_map_entries(str(pins / "tune_prefix4"))
    assert k4 == struct.pack("<I", 8) + bytes([10, 0, 0, 0]) and struct.unpack("<2I", v4) == (10, 25)
    (k6, v6), = _core.bpf_map_entries(str(pins / "tune_prefix6"))
    assert k6[:4] == struct.pack("<I", 32) and struct.unpack("<2I", v6) == (4, 0)
    bpf.write_prefixes(pins, {net6: bpf.PrefixValue(4, 0)})
    assert _core.bpf_map_entries(str(pins / "tune_prefix4")) == [], "a prefix no longer asked for is deleted"
    with pytest.raises(OSError, match=r"not in the program: \[iw\]; not given: \[iw_segments\]"):
        _core.bpf_map_update_struct(str(pins / "tune_prefix6"), k6, [("iw", 1), ("syn_rto_jiffies", 2)])
    with pytest.raises(OSError, match="takes 20-byte keys"):
        _core.bpf_map_update(str(pins / "tune_prefix6"), b"short", bytes(8))
    assert _core.bpf_map_entries(str(pins / "tune_prefix6")) == [(k6, v6)]
