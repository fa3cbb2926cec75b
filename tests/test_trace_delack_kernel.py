"""The analyzer's delayed-ACK stall against the real kernel (root, namespaces).

On a new connection Linux acknowledges at once (quick-ACK mode, tcp_incr_quickack), so a
stall needs a connection past its first exchange: the server, which answered within the
delayed-ACK time of a request, is in "ping-pong" mode and delays the ACK of a lone small
segment (at least TCP_DELACK_MIN, 40 ms). A client that writes its last request in two
halves with Nagle's algorithm on cannot send the second half before the first is
acknowledged: it stalls for the delayed ACK. The truth is the client's own clock around that
request (`delack_stall_probe.py`); with TCP_NODELAY the same exchanges never stall, and a
single exchange (quick-ACK mode) does not either.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import shortflow
from netns import namespace_pair

pytestmark = pytest.mark.netns

PROBE = Path(__file__).with_name("delack_stall_probe.py")


def exchange(tmp_path: Path, exchanges: int, mode: str) -> tuple[float, dict[str, Any], dict[str, Any]]:
    """Runs the probe over a veth pair, captured at the client: (the client's measured time
    for its last exchange, the analyzer's row, its --summary-json document)."""
    pcap = tmp_path / f"{mode}-{exchanges}.pcap"
    with namespace_pair() as p:
        with p.capture(p.client, p.client_dev, pcap, "tcp"):
            srv = p.spawn(p.server, sys.executable, str(PROBE), "server", "8080", str(exchanges))
            assert srv.stdout is not None and srv.stdout.readline().strip() == "listening", srv.communicate(timeout=5)
            cli = p.spawn(p.client, sys.executable, str(PROBE), "client", p.server_ip, "8080", str(exchanges), mode)
            c_out, c_err = cli.communicate(timeout=30)
            _, s_err = srv.communicate(timeout=30)
            assert cli.returncode == 0 and srv.returncode == 0, (c_err, s_err)
    a = shortflow.analyze(str(pcap))
    assert not a.errors, a.errors
    (row,) = a.table.to_pylist()
    return json.loads(c_out.splitlines()[-1])["last_exchange_s"], row, a.raw_summary


#: A loaded VM may deschedule the probe after the ACK arrives, which its clock counts and the
#: capture does not: such a run says nothing of the analyzer, so it is run again, this often.
TRIES = 3


def test_nagle_behind_a_delayed_ack_is_one_stall_of_the_time_the_client_waited(tmp_path):
    gaps = []
    for _ in range(TRIES):
        waited, row, summary = exchange(tmp_path, 2, "nagle")
        assert waited >= 0.040, waited  # the kernel did delay the ACK (TCP_DELACK_MIN)
        assert row["delack_stalls"] == 1 and summary["delayed_ack_stalls"] == 1, (row, summary)
        # The stall lasts at least the kernel's shortest delayed ACK, and never longer than
        # the client waited (to the capture's 1 ms).
        assert 0.040 <= row["time_delayed_ack_s"] <= waited + 0.001, (row["time_delayed_ack_s"], waited)
        assert row["time_delayed_ack_s"] > row["time_network_s"] + row["time_application_s"], row
        # The analyzer's time lost to it is the client's own wait, to the capture's precision
        # (the rest of the exchange is two round trips on a veth: well under a millisecond).
        gaps.append(waited - row["time_delayed_ack_s"])
        if gaps[-1] < 0.003:
            return
    pytest.fail(f"the client waited longer than the analyzer's stall by {gaps} s in {TRIES} runs")


@pytest.mark.parametrize("exchanges, mode", [(2, "nodelay"), (1, "nagle")],
                         ids=["TCP_NODELAY", "first-exchange-quick-ack"])
def test_no_stall_without_nagle_or_in_quick_ack_mode(tmp_path, exchanges, mode):
    waits = []
    for _ in range(TRIES):
        waited, row, summary = exchange(tmp_path, exchanges, mode)
        assert row["delack_stalls"] == 0 and summary["delayed_ack_stalls"] == 0, (row, summary)
        assert row["time_delayed_ack_s"] == 0, row
        waits.append(waited)
        if waited < 0.020:  # nothing waited for an ACK on the client's side
            return
    pytest.fail(f"the client's last exchange took {waits} s in {TRIES} runs: a wait for an ACK?")
