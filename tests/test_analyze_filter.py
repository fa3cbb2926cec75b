"""`analyze --filter EXPR` selects the packets tcpdump selects with the same expression.

The peer: `tcpdump -r FILE -w OUT EXPR` (libpcap's own reading and filtering). Our
analysis of FILE with `--filter EXPR` must equal our analysis of tcpdump's OUT without a
filter: the same packets, hence the same connection table and packet count. For a pcapng
whose interfaces have different link types (which libpcap's reader refuses), the peer
filters each link type's packets apart (`tcpdump` on each source capture) and mergecap
merges them."""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import shortflow

DATA = Path(__file__).parent / "data" / "real"
SHORTFLOW = [sys.executable, "-m", "shortflow"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SHORTFLOW, *args], capture_output=True, text=True, timeout=120)


def plain(path: Path, tmp: Path) -> Path:
    """tcpdump reads no gzip: a decompressed copy."""
    if path.suffix != ".gz":
        return path
    out = tmp / path.name.removesuffix(".gz")
    out.write_bytes(gzip.decompress(path.read_bytes()))
    return out


def tcpdump(src: Path, expr: str, out: Path) -> Path:
    # Nanosecond timestamps kept as read (the generator writes them).
    subprocess.run(["tcpdump", "--time-stamp-precision=nano", "-r", str(src), "-w", str(out), expr], check=True, capture_output=True, timeout=60)
    return out


def rows(a: Any) -> list[tuple[object, ...]]:
    t = a.table.drop_columns(["trace"])
    return sorted(tuple(r.values()) for r in t.to_pylist())


def same_selection(capture: Path, expr: str, peer: Path) -> int:
    ours = shortflow.analyze(capture, filter=expr)
    theirs = shortflow.analyze(peer)
    assert not ours.errors and not theirs.errors, (ours.errors, theirs.errors)
    assert ours.raw_summary["packets"] == theirs.raw_summary["packets"], expr
    assert ours.files[0]["filtered_out"] == ours.files[0]["packets"] - theirs.files[0]["packets"]
    # Same packets, so the same connections (ids included: order of first appearance).
    assert rows(ours) == rows(theirs), expr
    return int(theirs.raw_summary["packets"])


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same traffic (seeded) in each link type the generator writes."""
    d = tmp_path_factory.mktemp("links")
    out = {}
    for link in ("ethernet", "raw", "sll", "sll2", "null", "ipv4"):
        out[link] = d / f"{link}.pcap"
        shortflow.generate(out[link], connections=60, seed=5, syn_loss=0.1, link=link)
    return out


EXPRESSIONS = ("tcp port 80", "tcp[tcpflags] & tcp-syn != 0", "not port 80", "tcp and len > 100",
               "host 10.0.0.7 or src portrange 40000-40100")


@pytest.mark.parametrize("link", ["ethernet", "raw", "sll", "sll2", "null", "ipv4"])
def test_generated_captures_of_each_link_type(generated: dict[str, Path], link: str, tmp_path: Path) -> None:
    kept = []
    for k, expr in enumerate(EXPRESSIONS):
        kept.append(same_selection(generated[link], expr, tcpdump(generated[link], expr, tmp_path / f"{k}.pcap")))
    # The expressions select different, non-trivial sets: the check could fail.
    total = shortflow.analyze(generated[link]).raw_summary["packets"]
    assert any(0 < k < total for k in kept), kept


@pytest.mark.parametrize(("name", "expr"), [
    ("4KHttpRequests.pcap.gz", "dst port 80 and tcp[tcpflags] & tcp-push != 0"),   # Ethernet
    ("4KHttpRequests.pcap.gz", "net 212.199.0.0/16 and greater 460"),
    ("sll.pcap.gz", "tcp and not port 443"),                                         # Linux cooked (SLL)
    ("arkime-gtp-u-ipv6-sip.pcap", "udp port 2152"),                                 # GTP-U in SLL: outer headers
    ("sv-cisco-hdlc-http.pcap", "tcp port 80"),                                      # Cisco HDLC
    ("sv-vxlan-aws-mirror.pcap", "udp port 4789"),                                   # VXLAN: the outer UDP
    ("sv-fragmented-syn-vlan.pcap", "vlan and tcp"),                                 # 802.1Q
    ("four_ipv6_http_streams.pcap", "ip6 and tcp port 80"),                          # IPv6
    ("sv-fragmented-ipv6-tcp.pcap", "ip6[6] == 44"),                                 # IPv6 fragments
    ("dpkt-pppoe-l2tp-ipv6-http.pcap", "pppoes"),                                    # PPPoE session
    ("arkime-80211-radiotap-http.pcap", "wlan type data"),                           # 802.11 behind radiotap
    ("sv-erspan-ii.pcap", "proto gre"),                                              # ERSPAN: the outer GRE
])
def test_real_captures(name: str, expr: str, tmp_path: Path) -> None:
    src = plain(DATA / name, tmp_path)
    n = same_selection(src, expr, tcpdump(src, expr, tmp_path / "peer.pcap"))
    assert n > 0, f"{expr!r} selects nothing in {name}: no test"


def test_tunnel_filters_match_the_outer_headers(tmp_path: Path) -> None:
    # The inner TCP port of a GTP-U tunnelled connection is not what `port` sees: a filter
    # on the outer UDP port keeps its packets, one on the inner TCP port keeps none of them.
    src = DATA / "arkime-gtp-u-ipv6-sip.pcap"
    inner = shortflow.analyze(src)
    assert inner.table.num_rows > 0
    port = int(inner.table.column("server_port")[0].as_py())
    assert shortflow.analyze(src, filter=f"tcp port {port}").table.num_rows == 0
    assert shortflow.analyze(src, filter="udp port 2152").table.num_rows == inner.table.num_rows


def test_pcapng_with_interfaces_of_two_link_types(generated: dict[str, Path], tmp_path: Path) -> None:
    if shutil.which("mergecap") is None:
        pytest.fail("mergecap (Wireshark) is needed: Debian's tshark brings it")
    both = tmp_path / "both.pcapng"
    subprocess.run(["mergecap", "-F", "pcapng", "-w", str(both), str(generated["ethernet"]), str(generated["sll2"])],
                   check=True, timeout=60)
    links = subprocess.run(["capinfos", "-E", str(both)], capture_output=True, text=True, check=True).stdout
    assert "Ethernet" in links and "cooked" in links.lower(), links
    for k, expr in enumerate(("tcp port 80", "tcp[tcpflags] & tcp-syn != 0")):
        parts = [tcpdump(generated[link], expr, tmp_path / f"{link}-{k}.pcap") for link in ("ethernet", "sll2")]
        peer = tmp_path / f"peer-{k}.pcapng"
        subprocess.run(["mergecap", "-F", "pcapng", "-w", str(peer), *map(str, parts)], check=True, timeout=60)
        same_selection(both, expr, peer)


def test_a_bad_expression_gets_libpcaps_message_and_exits_2(generated: dict[str, Path]) -> None:
    r = run("analyze", str(generated["ethernet"]), "--filter", "tcp port eighty")
    assert r.returncode == 2, r
    assert "--filter 'tcp port eighty'" in r.stderr and "libpcap: unknown port 'eighty'" in r.stderr, r.stderr
    assert r.stdout == ""
    # Valid for Ethernet, not for a raw IP capture: that file's error, libpcap's words.
    r = run("analyze", str(generated["raw"]), "--filter", "ether host 00:00:5e:00:53:01")
    assert r.returncode == 1, r
    assert "raw.pcap" in r.stderr and "--filter: libpcap:" in r.stderr and "RAW" in r.stderr, r.stderr


def test_the_cli_says_what_the_filter_kept(generated: dict[str, Path], tmp_path: Path) -> None:
    path = generated["ethernet"]
    kept = shortflow.analyze(path, filter="tcp port 80").raw_summary["packets"]
    total = shortflow.analyze(path).raw_summary["packets"]
    r = run("analyze", str(path), "--filter", "tcp port 80")
    assert r.returncode == 0, r.stderr
    assert f"{kept:,} packets (--filter 'tcp port 80' kept them of {total:,} read)" in r.stdout, r.stdout
    # The worst connections' graph commands carry the filter, which decides their ids.
    assert "--filter 'tcp port 80'" in r.stdout


def test_without_libpcap_only_the_filter_fails(tmp_path: Path, generated: dict[str, Path]) -> None:
    # A process told to load libpcap from where there is none (as on a host without it):
    # the analysis runs, and only the filter fails, saying what is missing.
    code = ("import ctypes.util, sys, shortflow\n"
            "a = shortflow.analyze(sys.argv[1]); print(a.table.num_rows)\n"
            "try:\n    shortflow.analyze(sys.argv[1], filter='tcp')\n"
            "except shortflow.FilterError as e:\n    print('FilterError:', e)\n")
    hide = tmp_path / "hide"
    hide.mkdir()
    env = {"PATH": "/usr/bin:/bin", "SHORTFLOW_LIBPCAP": str(hide / "libpcap.so.1")}
    r = subprocess.run([sys.executable, "-c", code, str(generated["ethernet"])], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert int(lines[0]) > 0
    assert lines[1].startswith("FilterError: a filter needs libpcap, which could not be loaded"), r.stdout


def test_the_extension_does_not_link_libpcap() -> None:
    # libpcap is opened when a filter is asked for, never linked: the wheel loads on a
    # host without it (its dynamic section names no libpcap).
    import shortflow._core as core

    needed = subprocess.run(["readelf", "-d", core.__file__], capture_output=True, text=True, check=True).stdout
    libs = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", needed)
    assert libs and not any("pcap" in lib for lib in libs), libs


def test_a_real_pcapng_with_ethernet_and_loopback_interfaces(tmp_path: Path) -> None:
    # PcapPlusPlus' many_interfaces-1.pcapng: packets on an Ethernet interface and on a BSD
    # loopback one (Dropbox LAN sync on UDP 17500 on both). libpcap's reader refuses such a
    # file; the peer takes each interface's packets apart (tshark selects them, editcap
    # writes them as a classic pcap of that interface's link type), filters them with
    # tcpdump and counts.
    src = DATA / "many_interfaces-1.pcapng"
    for expr in ("udp port 17500", "tcp", "udp and not port 53", "ip"):
        peer = 0
        for interface, link in ((0, "ether"), (10, "null")):
            ng, part = tmp_path / f"if{interface}.pcapng", tmp_path / f"if{interface}.pcap"
            subprocess.run(["tshark", "-r", str(src), "-Y", f"frame.interface_id == {interface}", "-w", str(ng)],
                           check=True, capture_output=True, timeout=60)
            subprocess.run(["editcap", "-F", "pcap", "-T", link, str(ng), str(part)], check=True, capture_output=True,
                           timeout=60)
            out = tcpdump(part, expr, tmp_path / f"if{interface}-kept.pcap")
            peer += shortflow.analyze(out).raw_summary["packets"]
        ours = shortflow.analyze(src, filter=expr)
        assert not ours.errors
        assert ours.raw_summary["packets"] == peer, expr
    # Both link types took part: the loopback interface's two packets match "udp port 17500".
    assert shortflow.analyze(src, filter="udp port 17500").raw_summary["packets"] == 4
