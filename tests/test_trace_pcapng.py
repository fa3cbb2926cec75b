"""The pcapng reader on conformance files from google/gopacket (tests/data/pcapng/SOURCES.md
names them): what the pcapng draft allows that captures in the wild rarely show."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import shortflow

DATA = Path(__file__).parent / "data" / "pcapng"


def test_timestamps_in_powers_of_2_are_read():
    # if_tsresol 0x88: units of 2^-8 s (pcap-parser 0.17 refuses every power of 2).
    a = shortflow.analyze(DATA / "gopacket-test902-be-tsresol-2-8.pcapng")
    f = a.files[0]
    assert f["error"] is None and f["packets"] == 1, f
    assert f["first_ts_s"] == 1519128000.1953125, f


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed (make deps installs it)")
def test_a_timestamp_in_powers_of_2_is_tsharks():
    path = DATA / "gopacket-test902-be-tsresol-2-8.pcapng"
    r = subprocess.run(["tshark", "-n", "-r", str(path), "-T", "fields", "-e", "frame.time_epoch"],
                       capture_output=True, text=True, check=True)
    assert float(r.stdout.split()[0]) == shortflow.analyze(path).files[0]["first_ts_s"]


def test_a_section_of_another_major_version_is_skipped_and_said():
    # Sections 1 and 3 are version 1.0, section 2 (from byte 480) version 2.0: its blocks
    # are passed over, its packet not read; the third section's packet is. (tshark stops
    # at the second section with an error, gopacket too unless told to skip it.)
    path = DATA / "gopacket-test901-le-version-2-section.pcapng"
    a = shortflow.analyze(path)
    f = a.files[0]
    assert f["error"] is None and f["packets"] == 2, f
    assert f["warnings"] == [f"{path}: byte 480: skipped a section of pcapng version 2.0 (this reader knows "
                             "version 1): its blocks up to the next section header"], f["warnings"]
