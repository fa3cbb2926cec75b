"""The fuzz targets' seeds are what their targets expect: `read_pcap` puts one of four
pcap magics (chosen by the first byte) in front of the rest, `read_pcapng` a section
header's block type. A seed written as a whole capture file would reach the reader with
its header shifted, and fuzzing would start from noise instead of the captures the seeds
were chosen for (crates/trace/fuzz/fuzz_targets)."""

from __future__ import annotations

from pathlib import Path

import pytest

import shortflow

SEEDS = Path(__file__).parents[1] / "crates" / "trace" / "fuzz" / "seeds"
PCAP_MAGICS = [bytes.fromhex(m) for m in ("d4c3b2a1", "a1b2c3d4", "4d3cb2a1", "a1b23c4d")]
PCAPNG_BLOCK_TYPE = bytes.fromhex("0a0d0d0a")


def _rebuilt(target: str, seed: bytes) -> bytes:
    """The capture the target reads for `seed` (as its fuzz_targets/*.rs builds it)."""
    if target == "read_pcap":
        return PCAP_MAGICS[seed[0] % 4] + seed[1:]
    return PCAPNG_BLOCK_TYPE + seed


@pytest.mark.parametrize("path", sorted((SEEDS / "read_pcap").iterdir()) + sorted((SEEDS / "read_pcapng").iterdir()),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_seed_is_a_capture_once_its_target_completes_it(path, tmp_path):
    target = path.parent.name
    capture = tmp_path / ("seed.pcapng" if target == "read_pcapng" else "seed.pcap")
    capture.write_bytes(_rebuilt(target, path.read_bytes()))
    if not path.name.startswith(("seed-", "seed0")):
        return  # regressions and the hand-made edge cases (seed1-3) may be anything
    a = shortflow.analyze(capture)
    # Seeds are cut to the 8,192 bytes the targets are run with (-max_len): the last
    # record may end early, nothing else may be wrong.
    assert all("truncated packet record" in str(e) for e in a.errors), a.errors
    assert sum(f["tcp_packets"] for f in a.files) > 0
