"""A capture of SYNs nobody answers, each its own connection try: load for a tracker's
bound on open connections (`watch --max-connections`, `benches/watch_load.py`)."""

from __future__ import annotations

from pathlib import Path


def syn_flood_pcap(path: Path, connections: int, per_second: int = 100_000) -> Path:
    """A capture of `connections` SYNs that no one answers, `per_second` of them evenly
    spread each second, each from its own address and port (Ethernet, IPv4): every one a
    connection try the tracker holds until its bound or until it is given up."""
    import struct

    with path.open("wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 256, 1))
        for i in range(connections):
            src = bytes([10, 200 + (i >> 16) % 50, (i >> 8) & 0xFF, i & 0xFF])
            tcp = struct.pack("!HHIIBBHHH", 1024 + i % 60000, 80, i, 0, 5 << 4, 0x02, 64240, 0, 0)
            ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), i & 0xFFFF, 0, 64, 6, 0, src, bytes([10, 231, 0, 2]))
            frame = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip + tcp
            us = i * 1_000_000 // per_second
            f.write(struct.pack("<IIII", 1_700_000_000 + us // 1_000_000, us % 1_000_000, len(frame), len(frame)))
            f.write(frame)
    return path
