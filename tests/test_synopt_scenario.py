"""`[mechanisms] syn_optimizer` in a scenario: read by the testbed (checked, naming key and
file), and applied on the real kernel by `shortflow testbed run` (the daemon in the side's
namespace, its counters in the result)."""

from __future__ import annotations

import textwrap

import pytest

from shortflow import testbed
from shortflow.exceptions import ScenarioError
from shortflow.testbed.scenario_real import SynOptimizer, load

BASE = '[path]\nrtt = "20ms"\n[workload]\nresponse = "1000B"\n'


def write(tmp_path, body):
    p = tmp_path / "s.toml"
    p.write_text(BASE + textwrap.dedent(body))
    return p


def test_syn_optimizer_is_read(tmp_path):
    s = load(write(tmp_path, '[mechanisms]\nsyn_optimizer = { side = "server", delay = "150ms", retries = 2, port = 8080 }\n'))
    assert s.syn_optimizer == SynOptimizer("server", 0.15, 2, (8080,))
    s = load(write(tmp_path, '[mechanisms]\nsyn_optimizer = { side = "client", delay = "200ms", retries = 3 }\n'))
    assert s.syn_optimizer == SynOptimizer("client", 0.2, 3, (80,)), "port: the workload's"
    assert load(write(tmp_path, "")).syn_optimizer is None


@pytest.mark.parametrize(("body", "words"), [
    ('[mechanisms]\nsyn_optimizer = { side = "client" }\n', ["mechanisms.syn_optimizer"]),
    ('[mechanisms]\nsyn_optimizer = { side = "proxy", delay = "200ms", retries = 3 }\n', ["mechanisms.syn_optimizer.side", "proxy"]),
    ('[mechanisms]\nsyn_optimizer = { side = "client", delay = "200", retries = 3 }\n', ["mechanisms.syn_optimizer.delay"]),
    ('[mechanisms]\nsyn_optimizer = { side = "client", delay = "200ms", retries = 3, port = 0 }\n', ["mechanisms.syn_optimizer.port"]),
    ('[mechanisms]\nsyn_optimizer = { side = "client", delay = "200ms", retries = 3, bogus = 1 }\n', ["bogus"]),
    ('[mechanisms]\nsuper_fast_retransmit = { factor = 3 }\n', ["mechanisms.super_fast_retransmit"]),
])
def test_refusals_name_key_and_file(tmp_path, body, words):
    p = write(tmp_path, body)
    with pytest.raises(ScenarioError) as e:
        load(p)
    assert str(p) in str(e.value)
    for w in words:
        assert w in str(e.value)


@pytest.mark.netns
def test_testbed_run_applies_the_syn_optimizer(tmp_path):
    p = write(tmp_path, """
        [drop]
        syn = [1]
        [mechanisms]
        syn_optimizer = { side = "client", delay = "200ms", retries = 3, port = 80 }
    """)
    r = testbed.run(str(p))
    (c,) = r["connections"]
    assert c["status"] == 200 and c["syn_transmissions"] == 2
    # Request right after the handshake: 200 ms + one RTT after the first SYN (kernel: 1 s).
    assert 0.220 - 0.001 <= c["request_sent_s"] <= 0.225 + 0.002, c["request_sent_s"]
    assert (r["synopt"]["resends"], r["synopt"]["answered"]) == (1, 1)
