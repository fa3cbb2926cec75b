"""The kernel table (crates/scenario/src/kernel.rs, served as `_core.kernel_knobs()`) as
realize, tune and the host layer use it: ranges at the running kernel's HZ, the encoding
each setter is handed, a sysctl held to its range before the kernel is asked, HZ read from
this kernel (and measured, agreeing), and the `linux` profile's defaults taken from the
same constants."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from shortflow import _core
from shortflow.exceptions import TuneError
from shortflow.host import HostError, knobs, sysctl
from shortflow.host.kernel import kernel_hz, measured_hz
from shortflow.host.runid import fresh_run_id
from shortflow.testbed import load
from shortflow.testbed.realize import RealizeError
from shortflow.tune.settings import TuneSettings, hard_limits

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="creating a network namespace needs root")


def test_ranges_follow_hz() -> None:
    bpf_rto_min = knobs.knob("rto_min", "bpf_field")
    route_rto_min = knobs.knob("rto_min", "route_metric")
    # TCP_TIMEOUT_MIN (2 jiffies) to TCP_RTO_MIN (200 ms) for bpf_setsockopt.
    assert bpf_rto_min.limits(250) == (0.008, 0.2)
    assert bpf_rto_min.limits(1000) == (0.002, 0.2)
    # The route metric: one jiffy to TCP_RTO_MAX.
    assert route_rto_min.limits(100) == (0.01, 120.0)
    assert knobs.seconds("TCP_RTO_MIN") == 0.2
    with pytest.raises(HostError, match="no kernel knob 'rto_min' set by 'sysctl'"):
        knobs.knob("rto_min", "sysctl")


def test_each_setter_gets_its_own_unit() -> None:
    assert knobs.knob("rto_min", "route_metric").encode(0.05) == "50ms"
    assert knobs.knob("rto_min", "bpf_field").encode(0.05) == 50_000
    assert knobs.knob("syn_rto", "bpf_field").encode(0.2, 250) == 50
    assert knobs.knob("rto_max", "sysctl").encode(2.5) == 2500
    with pytest.raises(HostError, match="HZ is needed"):
        knobs.knob("syn_rto", "bpf_field").encode(0.2)


def test_hz_is_this_kernels_and_measuring_it_agrees() -> None:
    """CONFIG_HZ from the kernel's configuration and HZ measured from its jiffies counter
    (the fallback where no configuration is readable) must be the same number."""
    assert kernel_hz() in (100, 250, 300, 1000)
    assert measured_hz() == kernel_hz()


def test_realize_and_tune_refuse_from_the_same_table() -> None:
    hz = kernel_hz()
    jiffy_ms = 1000 / hz
    with pytest.raises(RealizeError, match=f"between {jiffy_ms:g}ms and 120s \\(one jiffy to TCP_RTO_MAX, HZ {hz}\\)"):
        load("002-initial-window", [f"client.rto_min={jiffy_ms / 2:g}ms"])
    assert load("002-initial-window", [f"client.rto_min={jiffy_ms:g}ms"]).plan is not None
    with pytest.raises(TuneError, match=f"the kernel takes {2 * jiffy_ms:g} ms to 200 ms here"):
        hard_limits(TuneSettings(rto_min_s=jiffy_ms / 1000), hz)


def test_linux_profile_takes_its_defaults_from_the_table() -> None:
    linux = json.loads(_core.stack_profiles())["linux"]["config"]
    assert linux["rto"]["min"] == knobs.constant("TCP_RTO_MIN_ns")
    assert linux["rto"]["max"] == knobs.constant("TCP_RTO_MAX_ns")
    assert linux["jiffy"] == 1_000_000_000 // knobs.constant("PROFILE_HZ")


@needs_root
def test_a_sysctl_is_held_to_its_range_before_the_kernel_is_asked() -> None:
    ns = f"sf-{fresh_run_id()}-knobs"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        knobs.set_sysctl("net.ipv4.tcp_syn_retries", 3, ns)
        assert sysctl.read("net.ipv4.tcp_syn_retries", ns) == "3"
        with pytest.raises(HostError, match=r"net.ipv4.tcp_syn_retries = 200: the kernel takes 1 to 127"):
            knobs.set_sysctl("net.ipv4.tcp_syn_retries", 200, ns)
        assert sysctl.read("net.ipv4.tcp_syn_retries", ns) == "3", "refused before anything was written"
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
