"""The analyzer on public captures of real hosts, beside tshark.

The captures come from six repositories; tests/data/real/SOURCES.md names each file's
repository, commit, path and licence:
- PcapPlusPlus (public domain, The Unlicense), commit 200853b3a0b5ea2c443d6bee1a67f9c9c67b8f1b;
- arkime/arkime (Apache-2.0), commit 2d2f3678796bcedc6655a276f476b7ddd457f3f2 (files `arkime-*`);
- OISF/suricata-verify (MIT), commit 10a45e4bad6d29d0f1239d93119ea24e1bbdab19 (files `sv-*`);
- kbandla/dpkt (BSD-3-Clause), commit 4f8958eb4b375b38d0ab6ffadf2da9b24395394d (files `dpkt-*`);
- NotYuSheng/TracePcap (MIT), commit 7030093d563faa26eda82c69289f53433eb0a892 (files `tracepcap-*`);
- andrewf/pcap2har (BSD-3-Clause), commit b13c49ee91c4c4933f18c8fe38d5bffe6c82fd4e (files `pcap2har-*`).
Every one must be read to its end without error; the data retransmissions and the handshake
classes (refusals by RST and by ICMP, SYN ladders, retries after a RST, capture duplicates,
Fast Open) agree with what tshark's fields show wherever tshark is right, and the tests say
where it is not and why, from the packets.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import shortflow
from shortflow.analyze import CAUSES, WAITED_CAUSES

DATA = Path(__file__).parent / "data" / "real"
FILES = sorted(p for p in DATA.iterdir() if p.suffix in (".pcap", ".pcapng", ".gz"))

#: Data (or FIN) segments tshark calls a retransmission of any kind; SYNs are Table 1's.
TSHARK_RETX = (
    "tcp.flags.syn==0 and (tcp.len>0 or tcp.flags.fin==1) and "
    "(tcp.analysis.retransmission or tcp.analysis.fast_retransmission or tcp.analysis.spurious_retransmission)"
)


needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed (make deps installs it)")


def _plain(path: Path, tmp: Path) -> Path:
    if path.suffix != ".gz":
        return path
    plain = tmp / path.stem
    with gzip.open(path) as src, plain.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return plain


def _tshark_fields(path: Path, tmp: Path, fields: list[str], display_filter: str = "") -> list[list[str]]:
    cmd = ["tshark", "-r", str(_plain(path, tmp)), "-T", "fields", "-E", "occurrence=f"]
    if display_filter:
        cmd += ["-Y", display_filter]
    for f in fields:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    return [line.split("\t") for line in r.stdout.splitlines()]


def _tshark_count(path: Path, tmp: Path, display_filter: str) -> int:
    return len(_tshark_fields(path, tmp, ["frame.number"], display_filter))


@dataclass
class TsharkHandshakes:
    """What tshark's own fields say of the handshakes in a capture, read without our code."""

    #: SYNs (without ACK) tshark flags `tcp.analysis.retransmission`, and SYN/ACKs likewise.
    syn_retransmissions: int = 0
    synack_retransmissions: int = 0
    #: Quoted (client port, server port) of every ICMP / ICMPv6 destination unreachable
    #: whose quoted TCP header is a SYN: the tries refused by ICMP.
    icmp_refused: set[tuple[str, str]] = field(default_factory=set)
    #: tcp.stream numbers with a SYN, no SYN/ACK and a RST from the other side.
    rst_refused: set[str] = field(default_factory=set)
    #: Client SYNs sent in such a stream after its first RST.
    syns_after_rst: int = 0
    #: tcp.stream numbers whose SYN carries data or a Fast Open option (request or cookie).
    fast_open: set[str] = field(default_factory=set)
    #: tcp.stream -> times (s) of the client's SYNs, first one included.
    syn_times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


_HANDSHAKES: dict[Path, TsharkHandshakes] = {}


def _tshark_handshakes(path: Path, tmp: Path) -> TsharkHandshakes:
    """Read once per capture (several tests ask; tshark takes a second to start)."""
    if path not in _HANDSHAKES:
        _HANDSHAKES[path] = _read_tshark_handshakes(path, tmp)
    return _HANDSHAKES[path]


def _read_tshark_handshakes(path: Path, tmp: Path) -> TsharkHandshakes:
    fields = ["tcp.stream", "frame.time_epoch", "tcp.srcport", "tcp.dstport", "tcp.flags.syn", "tcp.flags.ack",
              "tcp.flags.reset", "tcp.len", "tcp.analysis.retransmission", "tcp.options.tfo.request",
              "tcp.options.tfo.cookie", "icmp.type", "icmpv6.type"]
    out = TsharkHandshakes()
    answered: set[str] = set()
    rst_seen: set[str] = set()
    client_port: dict[str, str] = {}
    for stream, t, sport, dport, syn, ack, rst, tcp_len, retx, tfo_req, tfo_cookie, icmp4, icmp6 in _tshark_fields(
            path, tmp, fields, "tcp or icmp.type==3 or icmpv6.type==1"):
        syn, ack, rst = syn in ("1", "True"), ack in ("1", "True"), rst in ("1", "True")
        if icmp4 or icmp6:
            # tshark dissects the TCP header the message quotes (RFC 792 / RFC 4443 3.1).
            if (icmp4 == "3" or icmp6 == "1") and syn and not ack:
                out.icmp_refused.add((sport, dport))
            continue
        if syn and not ack:
            client_port.setdefault(stream, sport)
            out.syn_times[stream].append(float(t))
            out.syn_retransmissions += bool(retx)
            if stream in rst_seen and stream not in answered:
                out.syns_after_rst += 1
            if tfo_req or tfo_cookie or (tcp_len and int(tcp_len) > 0):
                out.fast_open.add(stream)
        elif syn and ack:
            answered.add(stream)
            out.synack_retransmissions += bool(retx)
        elif rst and stream in client_port and sport != client_port[stream] and stream not in answered:
            rst_seen.add(stream)
            out.rst_refused.add(stream)
    return out


def test_the_captures_are_here():
    assert len(FILES) == 48


#: Captures where tshark's flags are wrong, with (ours, tshark's) counts of data
#: retransmissions and of segments out of order; the tests below say why, from the packets.
TSHARK_WRONG = {
    # One resend of data seen before, by the sender's next IP ID: a retransmission that
    # tshark calls "out-of-order" (it looks at the time since the last segment only).
    "sv-sack-recovery-window-updates.pcap.gz": {"retransmissions": (18, 17), "out_of_order": (0, 1)},
    # The server's FIN, never acknowledged, resent 6 times by timeout (0.39 ... 12.5 s
    # apart: RTO doubling); each is recorded twice, the second copy one hop later (TTL one
    # lower, same IP ID), and one resend once more through the NAT's other mapping. tshark
    # calls the copies retransmissions too (14); they are capture duplicates. The ladder
    # goes on through that other mapping (66 and 116 s), on the 4-tuple of a try given up
    # by then: a connection of its own, whose FIN is resent once (the seventh).
    "sv-erspan-nat-fin-retries.pcap": {"retransmissions": (7, 14)},
    # Every packet recorded twice, the copies interleaved (A, B, A', B') where a burst
    # crossed the router: tshark calls the data copies retransmissions (8) and one, behind
    # its neighbour's original, out of order; all are copies (test_capture_duplicates...).
    "arkime-http-post-router-copies.pcap": {"retransmissions": (0, 8), "out_of_order": (0, 1)},
    # Every packet two to four times, up to 51 ms apart, same IP ID: tshark's 42 data
    # retransmissions and one out-of-order segment are all copies.
    "arkime-wireshark-retrans-copies.pcap": {"retransmissions": (0, 42), "out_of_order": (0, 1)},
    # An 802.11 retry of a data frame already captured: the link's resend, not TCP's
    # (test_wifi_frames_the_link_sent_again_are_not_tcp_packets).
    "arkime-80211-radiotap-http.pcap": {"retransmissions": (0, 1)},
    # A router's "fragmentation needed" about the first of four 1460-byte segments: the
    # sender resends them as 1452-byte ones at once. tshark calls the first resend (one
    # IP ID on, 55 µs after the message) out of order (test_data_resent_smaller_...).
    "sv-smtp-fragmentation-needed.pcap": {"retransmissions": (5, 4), "out_of_order": (0, 1)},
    # Servers whose first data segment comes after their second (IP IDs in between the
    # SYN/ACK's and the second's, 120-150 µs later): one tshark calls a fast
    # retransmission, from the client's SACKs that cannot have reached the server yet
    # (test_a_first_segment_overtaken_by_the_second_is_new_data).
    "tracepcap-teams-first-segment-overtaken.pcap": {"retransmissions": (0, 1), "out_of_order": (7, 6)},
    # A client sends the same bytes again 0.15-0.3 ms after it sent them, cut anew (1440,
    # then 1200 + 1200), on a 23 ms path: tshark calls the three out of order; they were
    # seen before, so they are resends, of no loss (test_data_resent_before_anything_...).
    "tracepcap-whatsapp-recut-at-once.pcap": {"retransmissions": (4, 1), "out_of_order": (0, 3)},
    # A client re-cuts data 3.5-10 ms after sending it on a 43 ms path (four resends), and
    # repairs twice after the server's SACK: tshark calls three of the six out of order.
    "sv-apple-recut-before-ack.pcap": {"retransmissions": (6, 3), "out_of_order": (0, 3)},
    # Two segments lost before the capture point (their first sendings' IP IDs, 0x4463 and
    # 0x1918, never seen) are resent with IDs after the resend before them (0x446e after
    # 0x446d; 0x1921, after the segments sent since): retransmissions, which tshark calls
    # out of order (test_resends_of_data_lost_before_the_capture_point_...).
    "pcap2har-pcapr-losses-keepalive.pcap": {"retransmissions": (35, 33), "out_of_order": (0, 2)},
}


def _data_retransmissions(summary: dict) -> int:
    """Every data retransmission the analyzer counts, whatever its class: what tshark's
    retransmission flags are compared with."""
    return (summary["timeout_retransmissions"] + summary["fast_retransmissions"] + summary["tlp_probes"]
            + summary["path_mtu_retransmissions"] + summary["unprompted_retransmissions"])


def _ours_and_tshark(path: Path, what: str, ours: int, tshark: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """(ours, tshark's) and what it must be: tshark's count twice, or on a capture of
    `TSHARK_WRONG` the known pair."""
    return (ours, tshark), TSHARK_WRONG.get(path.name, {}).get(what, (tshark, tshark))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_capture_reads_without_error_and_adds_up(path):
    a = shortflow.analyze(path)
    assert not a.errors, a.errors
    assert sum(f["tcp_packets"] for f in a.files) > 0
    t = a.table
    # Rows in connection order; the time-lost breakdown adds up to each duration.
    assert t.column("conn_id").to_pylist() == sorted(t.column("conn_id").to_pylist())
    total = sum(t.column(f"time_{c}_s").to_numpy(zero_copy_only=False) for c in CAUSES)
    dur = t.column("duration_s").to_numpy(zero_copy_only=False)
    assert max(abs(total - dur), default=0.0) < 1e-6


@needs_tshark
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_data_retransmissions_agree_with_tshark(path, tmp_path):
    s = shortflow.analyze(path).raw_summary
    ours = _data_retransmissions(s)
    got, want = _ours_and_tshark(path, "retransmissions", ours, _tshark_count(path, tmp_path, TSHARK_RETX))
    assert got == want


@needs_tshark
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_segments_out_of_order_agree_with_tshark(path, tmp_path):
    # Data overtaken on the way before the capture point: new data come late, never a
    # retransmission. tshark's `tcp.analysis.out_of_order` flags the same segments.
    ours = shortflow.analyze(path).raw_summary["out_of_order_segments"]
    got, want = _ours_and_tshark(path, "out_of_order", ours, _tshark_count(path, tmp_path, "tcp.analysis.out_of_order"))
    assert got == want


def test_dsack_proves_retransmissions_spurious_where_tshark_says_nothing(tmp_path):
    # one_tcp_stream.pcap: the client resends 1,420 B at 47 ms and again at 15.47 s; each
    # time the server's next ACK carries a D-SACK block for exactly that range (RFC 2883),
    # so both were spurious. tshark flags them only as "suspected retransmission".
    path = DATA / "one_tcp_stream.pcap"
    a = shortflow.analyze(path)
    row = a.table.to_pylist()[0]
    assert (row["retx_spurious_c2s"], a.raw_summary["spurious_retransmissions"]) == (2, 2)
    assert _tshark_count(path, tmp_path, "tcp.analysis.spurious_retransmission") == 0
    # Its keep-alive (1 byte below the next sequence number) is neither data nor a repair.
    assert row["retx_timeout_c2s"] + row["retx_fast_c2s"] + row["retx_tlp_c2s"] == 2


def test_refused_connection_is_one_refused_try():
    a = shortflow.analyze(DATA / "one_tcp_rst.pcap")
    assert a.summary["connection_tries"] == 1
    assert a.raw_summary["refused_rst"] + a.raw_summary["unsuccessful"] >= 1
    assert a.table.column("handshake").to_pylist()[0] in ("refused_rst", "never_answered")


def test_handshakes_and_rtt_of_clean_streams():
    a = shortflow.analyze(DATA / "three_http_streams.pcap")
    assert a.summary["connection_tries"] == a.summary["successful"] == 3
    assert a.vantage == "client"
    rtt = a.table.column("handshake_rtt_s").to_pylist()
    assert all(0 < r < 1 for r in rtt)


def _rows(a) -> list[dict]:
    return a.table.to_pylist()


@needs_tshark
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_refusals_and_fast_open_agree_with_tshark(path, tmp_path):
    # On every capture: tries refused by ICMP (the quoted SYN's ports), tries refused by a
    # RST, the SYNs resent after that RST and Fast Open SYNs, each counted from tshark's
    # own fields, equal the analyzer's.
    a = shortflow.analyze(path)
    s, ts = a.raw_summary, _tshark_handshakes(path, tmp_path)
    icmp = {(str(r["client_port"]), str(r["server_port"])) for r in _rows(a) if r["handshake"] == "refused_icmp"}
    assert icmp == ts.icmp_refused
    assert s["refused_icmp"] == len(ts.icmp_refused)
    assert s["refused_rst"] == len(ts.rst_refused)
    assert s["syn_retries_after_rst"] == ts.syns_after_rst
    assert s["fast_open"] == len(ts.fast_open)


@needs_tshark
def test_syns_refused_by_icmpv6_are_tries_that_ended(tmp_path):
    # arkime ospf.pcap: a Linux host (2001:bef::a00:27ff:fe0d:5c3c) opens 17 connections to
    # port 80 of web servers; its router 2001:bef::2 answers each SYN with an ICMPv6
    # destination unreachable, code 0 "no route to destination" (RFC 4443 3.1). Linux ends
    # the connect on it (tcp_v6_err: tcp_done_with_error in SYN-SENT), so no SYN is resent.
    path = DATA / "arkime-ospf-icmpv6-no-route.pcap"
    a, ts = shortflow.analyze(path), _tshark_handshakes(path, tmp_path)
    assert len(ts.icmp_refused) == 17
    assert a.raw_summary["refused_icmp"] == a.raw_summary["unsuccessful"] == 17
    assert a.raw_summary["syn_retransmissions"] == ts.syn_retransmissions == 0
    # Its BGP sessions (port 179) started before the capture: no handshake, not a failure.
    bgp = [r for r in _rows(a) if r["server_port"] == 179]
    assert bgp and all(r["handshake"] == "not_seen" for r in bgp)


@needs_tshark
def test_a_try_refused_by_icmpv6_but_resent_on_the_timer_stays_one_try(tmp_path):
    # suricata-verify ipv6-evasion/ipv6-kill-router-gateway/kill_router6.pcap: a macOS host
    # (window 65535, options MSS,NOP,WS,NOP,NOP,TS,SACK_PERM,EOL; an ECN SYN first, then
    # without ECN) connects to port 443 twice; 2001:db8:1::3 answers every SYN with an
    # ICMPv6 no-route. BSD takes that as a soft error in SYN-SENT (tcp_notify), so the
    # second try is resent on its timer 1.02 s, 1.02 s and 1.00 s later and refused each
    # time: five ICMPv6 messages, two tries refused by ICMP, three SYN retransmissions, as
    # tshark says too (the ICMP does not cause them; the timer does).
    path = DATA / "sv-kill-router6-icmpv6-retries.pcap"
    a, ts = shortflow.analyze(path), _tshark_handshakes(path, tmp_path)
    assert _tshark_count(path, tmp_path, "icmpv6.type==1 and tcp.flags.syn==1") == 5
    assert len(ts.icmp_refused) == a.raw_summary["refused_icmp"] == 2
    assert a.raw_summary["syn_retransmissions"] == ts.syn_retransmissions == 3
    resent = [r for r in _rows(a) if r["syn_count"] > 1]
    assert [(r["client_port"], r["syn_count"], r["handshake"], r["syn_ladder"]) for r in resent] == \
        [(54114, 4, "refused_icmp", "linux_linear|bsd")]


@needs_tshark
def test_syns_resent_after_a_rst_are_one_refused_try_not_retransmissions(tmp_path):
    # suricata-verify rdp-protocol/RDP-003.pcap: the RDP server 10.226.29.74 (Windows, TTL
    # 128 one hop away) connects back to port 2998 of the client, which answers RST|ACK;
    # the server sends the same SYN (same ISN 1293312473) again 0.484 s and 0.504 s later,
    # refused each time. tshark flags the two repeats "(suspected) retransmission"; they are
    # not: a retransmission answers silence on the RTO ladder (3 s for this stack), these
    # answer a refusal within half a second. The analyzer is right: one try, refused by
    # RST, two retries after the refusal, no SYN retransmission.
    path = DATA / "sv-rdp-003-rst-retries.pcap"
    a, ts = shortflow.analyze(path), _tshark_handshakes(path, tmp_path)
    assert (ts.syn_retransmissions, len(ts.rst_refused), ts.syns_after_rst) == (2, 1, 2)
    s = a.raw_summary
    assert (s["refused_rst"], s["syn_retries_after_rst"], s["syn_retransmissions"]) == (1, 2, 0)
    assert (s["connection_tries"], s["successful"]) == (2, 1)
    refused = [r for r in _rows(a) if r["handshake"] == "refused_rst"]
    assert [(r["client_port"], r["server_port"], r["syn_count"], r["syn_retries_after_rst"]) for r in refused] == \
        [(3955, 2998, 1, 2)]


@needs_tshark
@pytest.mark.parametrize(("name", "ladder", "handshake"), [
    # suricata-verify sip-method/sip.pcap: a Windows XP host (TTL 128) tries ports 445 and
    # 139 of 147.137.21.94, never answered: SYNs 2.92 s and 6.01 s apart, Windows' 3 s
    # initial RTO doubled (RFC 2988's ladder); two gaps cannot tell the two apart.
    ("sv-sip-never-answered-ladder.pcap", "rfc2988|windows_3s", "never_answered"),
    # suricata-verify smb2-delete/input.pcap: a macOS client (per its README) resends its
    # SYN after 1.001 s and 1.000 s, answered after the third: BSD's 1 s repeated (Linux
    # with tcp_syn_linear_timeouts repeats it too; two gaps cannot tell them apart).
    ("sv-smb2-delete-linear-ladder.pcap", "linux_linear|bsd", "answered"),
])
def test_syn_ladders_agree_with_tshark(name, ladder, handshake, tmp_path):
    path = DATA / name
    a, ts = shortflow.analyze(path), _tshark_handshakes(path, tmp_path)
    assert a.raw_summary["syn_retransmissions"] == ts.syn_retransmissions > 0
    laddered = [r for r in _rows(a) if r["syn_count"] > 1]
    assert laddered
    tshark_gaps = sorted([round(b - a_, 6) for a_, b in zip(t, t[1:])] for t in ts.syn_times.values() if len(t) > 1)
    assert sorted([round(g, 6) for g in r["syn_gaps_s"]] for r in laddered) == tshark_gaps
    for r in laddered:
        assert (r["syn_ladder"], r["handshake"]) == (ladder, handshake)
        assert "outside" not in r["syn_gap_class"]


def _tshark_copies(path: Path, tmp: Path) -> int:
    """Packets tshark shows more than once, by the analyzer's rule written again from
    tshark's fields: same stream, direction, sequence and acknowledgment numbers, flags,
    length and IP ID (non-zero, or zero with TTLs one apart) as one of the last 4 packets
    that way that were not copies, TTL equal or one apart; within 100 µs without an ID,
    5 ms with one, 100 ms when the sender's IP ID changed since; each copy's window runs
    from the copy before it (the captures given number their datagrams: no two packets
    share an ID)."""
    fields = ["tcp.stream", "frame.time_epoch", "tcp.srcport", "tcp.seq_raw", "tcp.ack_raw", "tcp.flags",
              "tcp.len", "ip.id", "ip.ttl", "ipv6.hlim"]
    recent: dict[tuple[str, str], list[list]] = defaultdict(list)
    id_changed: dict[tuple[str, str], tuple[str, float]] = {}
    copies = 0
    for stream, t, sport, *headers, ip_id, ttl, hlim in _tshark_fields(path, tmp, fields, "tcp and not icmp"):
        key, now = (stream, sport), float(t)
        last_id, changed_at = id_changed.get(key, (None, 0.0))
        if ip_id != last_id:
            id_changed[key] = (ip_id, now)
        has_id = bool(ip_id) and int(ip_id, 16) != 0
        hop = int(ttl or hlim)
        match = next((p for p in reversed(recent[key]) if p[1] == headers and p[2] == ip_id), None)
        if match is not None:
            window = (0.1 if changed_at > match[0] else 5e-3) if has_id else 1e-4
            if now - match[0] <= window and ((has_id and match[3] == hop) or abs(match[3] - hop) == 1):
                copies += 1
                match[0] = now
                continue
        recent[key] = [*recent[key][-3:], [now, headers, ip_id, hop]]
    return copies


@needs_tshark
@pytest.mark.parametrize(("name", "copies", "tshark_retx"), [
    # arkime mongo.pcap: the capture sees the clients' packets on both sides of a router:
    # each SYN and handshake ACK twice, 6-60 µs apart, same IP ID, TTL 63 then 62; one
    # server's SYN/ACK twice 45 µs apart at TTL 61 then 60 with IP ID 0 (Linux sets no ID
    # on a SYN/ACK with DF). tshark calls the SYN and SYN/ACK copies retransmissions (4)
    # and the ACK copies duplicate ACKs; a sender's own repeat would carry a new IP ID, or
    # its own TTL: these are the capture's copies.
    ("arkime-mongo-router-duplicates.pcap", 7, 4),
    # arkime smb-smb1-ascii.pcap: a Windows client's SYN twice, 188 µs apart, same IP ID
    # 0x5d1e and TTL 128, and the server's SYN/ACK twice 67 µs apart (ID 0x67b3): a SPAN
    # port that copies both directions. tshark calls both second copies retransmissions.
    ("arkime-smb1-bridge-duplicates.pcap", 2, 2),
    # arkime http-post-upload.pcap: an HTTP upload seen on both sides of a router, every
    # packet twice (TTL 64, then 63, 30-80 µs later, same IP ID); the client's two-segment
    # burst crossed it as A, B, A', B', so a copy is not always right after its original.
    # tshark calls the SYN and SYN/ACK copies retransmissions (2), the data copies too.
    ("arkime-http-post-router-copies.pcap", 17, 2),
    # arkime wireshark-retrans.pcap: one connection whose every packet is recorded two to
    # four times with the same IP ID and TTL (both hosts number their datagrams, by 2 and
    # by 1): copies 5 µs to 5.6 ms apart, and a stretch of the exchange recorded again
    # 40-51 ms later, after each sender's next datagrams. A sender's own repeat would carry
    # a later ID. tshark calls the SYN and SYN/ACK copies retransmissions (5).
    ("arkime-wireshark-retrans-copies.pcap", 81, 5),
])
def test_capture_duplicates_are_not_retransmissions(name, copies, tshark_retx, tmp_path):
    path = DATA / name
    a, ts = shortflow.analyze(path), _tshark_handshakes(path, tmp_path)
    assert ts.syn_retransmissions + ts.synack_retransmissions == tshark_retx
    assert _tshark_copies(path, tmp_path) == copies
    s = a.raw_summary
    assert s["capture_duplicates"] == copies
    assert s["syn_retransmissions"] == s["synack_retransmissions"] == 0
    assert all(r["syn_count"] == r["synack_count"] == 1 for r in _rows(a))
    assert s["connection_tries"] == s["successful"]


@needs_tshark
def test_fast_open_connections_are_understood(tmp_path):
    # suricata-verify tcp-fastopen-01/tfo.pcap (Linux to Linux): the first SYN asks for a
    # cookie (empty TFO option), the second carries it and 86 bytes of request, which the
    # server's SYN/ACK acknowledges (RFC 7413 section 3). Both are Fast Open SYNs; both
    # handshakes are answered and the data on the SYN is not a retransmission.
    path = DATA / "sv-tcp-fastopen.pcap"
    a, ts = shortflow.analyze(path), _tshark_handshakes(path, tmp_path)
    assert len(ts.fast_open) == 2
    rows = _rows(a)
    assert [r["fast_open"] for r in rows] == [True, True]
    assert [r["handshake"] for r in rows] == ["answered", "answered"]
    s = a.raw_summary
    assert _data_retransmissions(s) == 0


@needs_tshark
def test_segments_overtaken_before_the_capture_point_are_new_data(tmp_path):
    # suricata-verify filestore-v2.1-forced/suricata-update-pdf.pcap: a server sends a PDF
    # over HTTP; the capture sees its segments of IP ID 0xb28d (seq 123081), then 0xb293..
    # 0xb295 (seq 131769..) and only then 0xb28e..0xb292 (seq 124529..130321): five
    # segments sent in order and overtaken on the way, seen once each. Not
    # retransmissions (the old analyzer called them fast ones); tshark says "out-of-order".
    path = DATA / "sv-reordered-before-capture.pcap"
    a = shortflow.analyze(path)
    s = a.raw_summary
    assert _data_retransmissions(s) == 0
    assert s["out_of_order_segments"] == 5 == _tshark_count(path, tmp_path, "tcp.analysis.out_of_order")
    (row,) = _rows(a)
    assert (row["out_of_order_s2c"], row["out_of_order_c2s"]) == (5, 0)


@needs_tshark
def test_sack_recovery_while_the_window_opens_is_fast_retransmit(tmp_path):
    # suricata-verify bug-4376/syn_retransmit_with_ts.pcap (from the Suricata issue 4376:
    # an HTTP download between two Linux hosts, µs apart). The client loses segments;
    # its ACKs SACK the data behind each hole while its window still grows, so no two of
    # them carry the same window and RFC 5681 sees no duplicate ACK (nor does tshark's
    # "Duplicate ACK" until the window settles). RFC 6675 counts them (new SACKed data),
    # and so does Linux: the server repairs at once, 11 segments fast, then 7 after a
    # 1 s silence (timeouts). The old analyzer called all 18 timeouts.
    path = DATA / "sv-sack-recovery-window-updates.pcap.gz"
    s = shortflow.analyze(path).raw_summary
    assert (s["fast_retransmissions"], s["timeout_retransmissions"], s["tlp_probes"]) == (11, 7, 0)
    # The server's repeat of seq 11585 (frame 51, IP ID 0xd15a, the next of the sender's
    # count after 0xd159) came 2 µs after frame 50 and was first sent in frame 22 (ID
    # 0xd144): a retransmission. tshark calls it "out-of-order": 17 against our 18.
    assert _tshark_count(path, tmp_path, TSHARK_RETX) == 17
    assert _tshark_count(path, tmp_path, "tcp.analysis.out_of_order and tcp.seq==11585") == 1
    assert s["out_of_order_segments"] == 0


@needs_tshark
def test_a_reset_challenge_ack_leaves_one_try_with_a_syn_retransmission(tmp_path):
    # suricata-verify tls/tls-subjectaltname/input.pcap (Suricata issue 5234), its TCP
    # streams 0 and 1 only: a Windows client (TTL 128) opens ports 59621 and 59622 to
    # 138.201.208.22:443. The server answers each SYN with a bare ACK of other numbers (a
    # challenge ACK from an older connection it still holds, RFC 5961 4); the client
    # answers with a RST carrying that ACK's number and stays in SYN-SENT (RFC 9293
    # 3.10.7.3): it sends the same SYN again 3.06 s later (Windows' 3 s RTO) and 13.1 s
    # later, answered both times. tshark calls the repeats SYN retransmissions; so does
    # the analyzer now (it used to end each try at the RST and count a second try).
    path = DATA / "sv-challenge-ack-syn-retries.pcap"
    a, ts = shortflow.analyze(path), _tshark_handshakes(path, tmp_path)
    s = a.raw_summary
    assert s["syn_retransmissions"] == ts.syn_retransmissions == 2
    assert (s["connection_tries"], s["successful"], s["refused_rst"]) == (2, 2, 0)
    rows = _rows(a)
    assert [(r["client_port"], r["syn_count"], r["handshake"]) for r in rows] == \
        [(59621, 2, "answered"), (59622, 2, "answered")]
    assert [round(r["syn_gaps_s"][0], 3) for r in rows] == [3.061, 13.098]


@needs_tshark
def test_data_the_capture_missed_is_told_by_the_senders_own_sequence_numbers(tmp_path):
    # suricata-verify dcerpc/zerologon/input.pcap, the client port 50584 only: the client
    # (IP ID 0, window 4096) sends a pure ACK with sequence number 321 while the capture
    # has seen its data only up to 177 (bytes 177..321 not captured); 223 ms later the
    # client sends 177..321 again. Its own sequence number said the data had been sent:
    # a retransmission, as tshark says (the analyzer called it new data).
    path = DATA / "sv-missed-data-in-ack-seq.pcap"
    s = shortflow.analyze(path).raw_summary
    ours = _data_retransmissions(s)
    assert ours == _tshark_count(path, tmp_path, TSHARK_RETX) == 4
    assert s["out_of_order_segments"] == 0


@needs_tshark
def test_a_response_overtaken_right_after_a_pure_ack_is_new_data(tmp_path):
    # suricata-verify tls/tls-subjectaltname/input.pcap, the client port 60044 only: the
    # server ACKs the request (IP ID 0xc0b7), then the capture sees its segment 0xc0c3
    # (seq 11581) before 0xc0b8..0xc0c2 (seq 1..11581). The pure ACK is where the
    # server's count stood before them: eleven segments overtaken, none resent.
    path = DATA / "sv-reordered-after-pure-ack.pcap"
    s = shortflow.analyze(path).raw_summary
    assert _data_retransmissions(s) == 0
    assert s["out_of_order_segments"] == _tshark_count(path, tmp_path, "tcp.analysis.out_of_order") == 11


@needs_tshark
def test_a_fin_resent_by_timeout_is_a_retransmission_and_its_copies_are_duplicates(tmp_path):
    # suricata-verify bug-5437-02/input.pcap (Suricata issue 5437): ERSPAN from two mirror
    # sessions, before and after a NAT. The server 126.203.57.64:80 sends its FIN to the
    # client's port 54530 at 16.78 s and, never acknowledged, resends it 6 times, 0.39,
    # 0.78, 1.56, 3.13, 6.26 and 12.5 s apart (RTO doubling: back-off 5). Each is recorded
    # twice, the second copy one hop later (TTL 63 against 64, same IP ID): 7 capture
    # duplicates. tshark counts the copies as retransmissions too (13 in that stream).
    # The last two gaps are longer than the 5 s close linger: the connection now waits
    # for the next back-off (they used to be late packets, 4 retransmissions counted).
    path = DATA / "sv-erspan-nat-fin-retries.pcap"
    a = shortflow.analyze(path)
    (row,) = [r for r in _rows(a) if r["client_port"] == 54530 and r["server_ip"] == "126.203.57.64"]
    assert (row["retx_timeout_s2c"], row["rto_backoff_max"], row["late_packets"]) == (6, 5, 0)
    assert (row["capture_duplicates"], row["outcome"]) == (7, "fin")
    assert _tshark_count(path, tmp_path, "tcp.analysis.retransmission and tcp.stream==6") == 13
    # The SYNs to a third address, never answered, on the RFC 6298 ladder (1, 2, 4, 8 s).
    assert a.raw_summary["syn_retransmissions"] == _tshark_handshakes(path, tmp_path).syn_retransmissions == 8


@needs_tshark
@pytest.mark.parametrize(("name", "tries"), [
    # suricata-verify vxlan-decoder-03/vxlan.pcap: SSH sessions captured by AWS traffic
    # mirroring, which delivers each packet inside VXLAN (UDP 4789) to the sensor.
    ("sv-vxlan-aws-mirror.pcap", 4),
    # suricata-verify bug-5437-01/input.pcap: two HTTP requests to a honeypot, mirrored by
    # a switch as ERSPAN type II inside GRE.
    ("sv-erspan-ii.pcap", 0),
    # suricata-verify bug-4810/pppoe-session-http.pcap: HTTP over PPPoE, PPP's protocol
    # field compressed to one byte.
    ("sv-pppoe-pfc-http.pcap", 1),
    # suricata-verify decode-chdlc-01/hdlc-http_1tx.pcap: HTTP on a Cisco HDLC link.
    ("sv-cisco-hdlc-http.pcap", 1),
    # suricata-verify decode-etag-01/input.pcap: one ACK behind an 802.1BR E-tag.
    ("sv-etag-port-extender.pcap", 0),
    # suricata-verify defrag/bug-6887-*: a SYN in three IPv4 fragments (VLAN-tagged), a
    # segment in three IPv6 fragments; both crafted with scapy. tshark reassembles them
    # and shows the segment on the last piece; so does the analyzer.
    ("sv-fragmented-syn-vlan.pcap", 1),
    ("sv-fragmented-ipv6-tcp.pcap", 0),
    # arkime gtp-iphone.pcap: a phone's VoLTE signalling (SIP over TCP, IPv6) inside GTP-U
    # (UDP 2152) between a mobile network's base station and gateway, captured there.
    ("arkime-gtp-u-ipv6-sip.pcap", 4),
    # arkime gre-erspan-vxlan.pcap: an HTTP exchange in VXLAN (from UDP port 4789 to
    # VXLAN-GPE's 4790, the GPE header naming Ethernet), mirrored as ERSPAN type II in GRE.
    ("arkime-erspan-vxlan-gpe.pcap", 1),
    # dpkt nb6-http.pcap: a DSL box's PPPoE link; two HTTP exchanges over IPv4, a third
    # over IPv6 inside L2TP version 2 (UDP 1701, then PPP).
    ("dpkt-pppoe-l2tp-ipv6-http.pcap", 3),
])
def test_tunneled_captures_are_read_inside_their_tunnels(name, tries, tmp_path):
    # The analyzer reads the TCP segment inside (VXLAN, GRE, ERSPAN, IP in IP, Geneve,
    # GTP-U, L2TP) or under its link's own framing (PPPoE, PPP, Cisco HDLC, MPLS, E-tag),
    # or in IP fragments put back together: every TCP packet tshark finds, in as many
    # connections as tshark's streams.
    path = DATA / name
    a = shortflow.analyze(path)
    s = a.raw_summary
    assert sum(f["tcp_packets"] for f in a.files) == _tshark_count(path, tmp_path, "tcp") > 0
    streams = {row[0] for row in _tshark_fields(path, tmp_path, ["tcp.stream"], "tcp")}
    assert a.table.num_rows == len(streams)
    assert s["connection_tries"] == tries == _tshark_count(path, tmp_path, "tcp.flags.syn==1 and tcp.flags.ack==0")
    # Every payload byte, those of segments sent in fragments too.
    payload = sum(int(row[0] or 0) for row in _tshark_fields(path, tmp_path, ["tcp.len"], "tcp"))
    assert sum(a.table.column("bytes_c2s").to_pylist()) + sum(a.table.column("bytes_s2c").to_pylist()) == payload


@needs_tshark
def test_wifi_frames_the_link_sent_again_are_not_tcp_packets(tmp_path):
    # arkime 80211http.pcap: an HTTP exchange recorded on Wi-Fi in monitor mode (radiotap,
    # 802.11 QoS data frames, LLC/SNAP). Two frames come again with the 802.11 retry bit
    # and their first copy's sequence number (a 564-byte segment 64 ms on, an ACK 3.8 ms
    # on): the link's own resends, which the receiver's MAC discards. tshark counts them
    # as TCP packets, the segment as a retransmission; the analyzer skips them as repeats.
    path = DATA / "arkime-80211-radiotap-http.pcap"
    a = shortflow.analyze(path)
    s = a.raw_summary
    retries = _tshark_fields(path, tmp_path, ["tcp.len"], "tcp and wlan.fc.retry==1")
    assert len(retries) == a.files[0]["skipped_link_repeat"] == 2
    assert sum(f["tcp_packets"] for f in a.files) + 2 == _tshark_count(path, tmp_path, "tcp")
    assert _tshark_count(path, tmp_path, TSHARK_RETX) == 1
    assert _data_retransmissions(s) == s["capture_duplicates"] == 0
    assert a.table.num_rows == s["connection_tries"] == 1
    payload = sum(int(row[0] or 0) for row in _tshark_fields(path, tmp_path, ["tcp.len"], "tcp and wlan.fc.retry==0"))
    assert sum(a.table.column("bytes_c2s").to_pylist()) + sum(a.table.column("bytes_s2c").to_pylist()) == payload


def test_a_segment_sent_in_fragments_is_graphed_like_the_table_counts_it():
    # The time-sequence graph reads the capture again: it must put the datagram's pieces
    # together as the analysis did, or its connection ids and packets would differ.
    from shortflow.plot.tsg import packets

    path = DATA / "sv-fragmented-ipv6-tcp.pcap"
    t = shortflow.analyze(path).table
    assert t.column("conn_id").to_pylist() == [0]
    pk = packets(path, [0])[0]
    assert len(pk["ts_ns"]) == 1
    assert t.column("bytes_c2s").to_pylist() == [1000]


@needs_tshark
def test_data_resent_smaller_after_fragmentation_needed_is_told_apart(tmp_path):
    # suricata-verify bug-3616-smtp: a client's four 1460-byte segments meet a router whose
    # path is smaller; its ICMP "fragmentation needed" quotes each, and the client resends
    # the data as 1452-byte segments at once, then as the ACKs let it. No timer
    # fired: these are path-MTU resends, not timeouts, and the wait is the path's.
    path = DATA / "sv-smtp-fragmentation-needed.pcap"
    a = shortflow.analyze(path)
    s = a.raw_summary
    assert a.files[0]["icmp_unreachable"] == _tshark_count(path, tmp_path, "icmp.type==3 and icmp.code==4") == 4
    assert (s["path_mtu_retransmissions"], s["timeout_retransmissions"], s["rto_events"]) == (5, 0, 0)
    assert s["fast_retransmissions"] + s["tlp_probes"] + s["spurious_retransmissions"] == 0
    # Resent: the 1452-byte segments that start below the end of what went as 1460 bytes.
    first_end = max(int(seq) + 1460 for (seq,) in _tshark_fields(path, tmp_path, ["tcp.seq"], "tcp.len==1460"))
    resent = [seq for (seq,) in _tshark_fields(path, tmp_path, ["tcp.seq"], "tcp.len==1452") if int(seq) < first_end]
    assert len(resent) == 5
    row = a.table.to_pylist()[0]
    assert row["retx_path_mtu_c2s"] == 5 and row["time_timeout_s"] == 0
    # The time-sequence graph reads the messages too: its marks are the table's.
    from shortflow.plot.tsg import packets

    events = packets(path, [row["conn_id"]])[row["conn_id"]]["event"]
    assert events.count("retx_path_mtu") == 5 and "retx_timeout" not in events


def _resends(path: Path, conn_id: int, events: set[str]) -> list[tuple[int, int]]:
    """(sequence number, length) of the connection's packets the analyzer marked with one
    of `events`, in capture order."""
    from shortflow.plot.tsg import packets

    pk = packets(path, [conn_id])[conn_id]
    return [(pk["seq"][i], pk["len"][i]) for i, e in enumerate(pk["event"]) if e in events]


@needs_tshark
def test_data_resent_before_anything_could_ask_is_unprompted(tmp_path):
    # Resends within half an RTT of the data's last sending: no ACK of it could be back,
    # no timer fired. Before, the first of each run started a "timeout" and its recovery.
    def tshark_segments(path: Path, display_filter: str) -> list[tuple[int, int]]:
        """(absolute sequence number, length) of the segments tshark's filter keeps."""
        return [(int(q), int(n)) for q, n in _tshark_fields(path, tmp_path, ["tcp.seq_raw", "tcp.len"], display_filter)]

    # TracePcap's whatsapp_login_chat.pcap, one connection (from mid-flow): a client cuts
    # 2,473 bytes anew 0.15-0.3 ms after sending them, on a 23 ms path; tshark calls the
    # three copies out of order. Its one later resend, 0.27 s on, is the timer's.
    path = DATA / "tracepcap-whatsapp-recut-at-once.pcap"
    a = shortflow.analyze(path)
    row = a.table.to_pylist()[0]
    assert (row["retx_unprompted_c2s"], row["retx_timeout_c2s"], row["rto_events"]) == (3, 1, 1)
    assert _resends(path, row["conn_id"], {"retx_unprompted"}) == tshark_segments(path, "tcp.analysis.out_of_order")

    # suricata-verify bug-5881-01: a client to 17.188.17.120 re-cuts data 3.5-10 ms after
    # sending it on a 43 ms path (four times), and repairs twice after the server's SACK.
    # No timer fired: no expiry, no time lost to one. tshark flags the six as three
    # retransmissions and three out of order.
    path = DATA / "sv-apple-recut-before-ack.pcap"
    a = shortflow.analyze(path)
    row = a.table.to_pylist()[0]
    assert (row["retx_unprompted_c2s"], row["retx_fast_c2s"], row["rto_events"], row["time_timeout_s"]) == (4, 2, 0, 0)
    ours = _resends(path, row["conn_id"], {"retx_unprompted", "retx_fast"})
    theirs = tshark_segments(path, "tcp.len>0 and (tcp.analysis.out_of_order or tcp.analysis.retransmission)")
    assert ours == theirs
    # The third and fourth, 2.3 ms after the server's SACK of 2046-2552, are the fast ones:
    # they fill the hole below that block.
    assert _resends(path, row["conn_id"], {"retx_fast"}) == theirs[2:4]


@needs_tshark
def test_a_first_segment_overtaken_by_the_second_is_new_data(tmp_path):
    # TracePcap's teams.pcap (three of its connections): Microsoft servers whose first
    # data segment (IP ID one above the SYN/ACK's) arrives after the segments sent after
    # it. The SYN/ACK's ID and TSval stand before the gap the second segment opened.
    path = DATA / "tracepcap-teams-first-segment-overtaken.pcap"
    a = shortflow.analyze(path)
    s = a.raw_summary
    assert _data_retransmissions(s) == 0
    assert s["out_of_order_segments"] == 7
    # tshark's fields: each stream's first data segment (relative seq 1) comes after a
    # later one and carries the IP ID one above its SYN/ACK's.
    rows = _tshark_fields(path, tmp_path, ["tcp.stream", "ip.id", "tcp.seq", "tcp.len", "tcp.flags.syn"], "ip.src!=192.168.1.6")
    for stream in {r[0] for r in rows}:
        mine = [r for r in rows if r[0] == stream]
        synack_id = int(mine[0][1], 16)
        first = next(i for i, r in enumerate(mine) if r[2] == "1" and int(r[3]) > 0)
        assert int(mine[first][1], 16) == synack_id + 1 and first > 1, mine[:4]



def _row(name: str, conn_id: int) -> dict:
    (row,) = [r for r in shortflow.analyze(DATA / name).table.to_pylist() if r["conn_id"] == conn_id]
    return row


def test_a_page_then_a_rest_then_the_close_is_idle_and_teardown():
    # Wireshark's http.cap: the page's last byte acknowledged at 5.017214 s (frame 39); the
    # server's FIN at 17.905747 s, the client's at 30.063228 s, its ACK at 30.393704 s. The
    # server acknowledged the request at 1.472116 s and answered at 1.682419 s: nothing
    # outstanding meanwhile, its think time. The page then came in rounds clocked by the
    # client's ACKs over a 0.9 s path (pauses of 80-430 ms between arrivals at the client,
    # within the round trip: data already on its way, not the server's choice).
    r = _row("pcap2har-http-keepalive-fin-late.pcap", 0)
    assert r["response_complete_s"] == pytest.approx(5.017214, abs=1e-6)
    assert r["time_idle_s"] == pytest.approx(17.905747 - 5.017214, abs=1e-6)
    assert r["time_teardown_s"] == pytest.approx(30.393704 - 17.905747, abs=1e-6)
    waited = sum(r[f"time_{c}_s"] for c in WAITED_CAUSES)
    assert waited == pytest.approx(r["response_complete_s"], abs=1e-6)
    assert r["time_application_s"] == pytest.approx(1.682419 - 1.472116, abs=1e-6)
    assert r["time_slow_start_s"] > 1.0 and r["time_timeout_s"] == 0


def test_a_fin_resent_on_a_ladder_after_the_response_is_teardown():
    # The NAT's inside: the server's FIN never acknowledged, resent 6 times 0.39 ... 12.5 s
    # apart (each step doubles: RFC 6298 5.5, not tail loss probes); no user waits for it.
    r = _row("sv-erspan-nat-fin-retries.pcap", 6)
    assert (r["retx_timeout_s2c"], r["retx_tlp_s2c"], r["rto_backoff_max"]) == (6, 0, 5)
    assert r["time_timeout_s"] == 0 and r["time_tlp_s"] == 0
    assert r["time_teardown_s"] > 40


def test_a_try_given_up_then_a_stray_fin_is_a_connection_of_its_own():
    # SYNs 1, 2, 4 and 8 s apart, unanswered; 50 and 100 s after the last one a FIN of
    # some other connection on the 4-tuple. The client gave the try up when its next SYN,
    # due 16 s after the last, had not come in 32: the try ends at its last SYN, and the
    # FIN and its resend are a connection seen mid-way, all teardown.
    r = _row("sv-erspan-nat-fin-retries.pcap", 7)
    assert r["time_handshake_s"] == pytest.approx(15.027, abs=0.01) == r["duration_s"]
    assert (r["outcome"], r["handshake"]) == ("idle", "never_answered")
    fin = _row("sv-erspan-nat-fin-retries.pcap", 8)
    assert (fin["server_ip"], fin["client_port"], fin["packets_s2c"], fin["handshake"]) == ("196.25.212.207", 54530, 2, "not_seen")
    assert fin["time_teardown_s"] == pytest.approx(50.0, abs=0.01) == fin["duration_s"]


@needs_tshark
def test_resends_of_data_lost_before_the_capture_point_are_retransmissions(tmp_path):
    from shortflow import _core

    path = DATA / "pcap2har-pcapr-losses-keepalive.pcap"
    # Frames 186 and 240, which tshark calls out of order: resends with IP IDs 0x446e and
    # 0x1921, after the resend before them (0x446d) or the segments sent since; their first
    # sendings (0x4463, 0x1918) never reached the capture point.
    frames = _tshark_fields(path, tmp_path, ["frame.time_epoch", "ip.id"], "frame.number==186 or frame.number==240")
    assert [f[1] for f in frames] == ["0x446e", "0x1921"]
    table = shortflow.analyze(path).table.to_pylist()
    ids = [r["conn_id"] for r in table if r["server_ip"] == "74.125.19.82"]
    pk, _, _, _ = _core.connection_packets(str(path), ids)
    for epoch, _ in frames:
        # The capture's µs times, read exactly (no float rounding): seconds and micros.
        sec, frac = epoch.split(".")
        ts = int(sec) * 10**9 + int(frac[:9].ljust(9, "0"))
        (i,) = [i for i, t in enumerate(pk["ts_ns"]) if t == ts]
        assert pk["event"][i].startswith("retx_"), (epoch, pk["event"][i])
