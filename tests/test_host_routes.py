"""Default routes read as their parts over netlink and put back from them, on the real
kernel, in a network namespace the test creates: a route with locked metrics survives the
round trip to the letter (`ip route` prints the same line), a route shortflow cannot render
is refused naming the part, and a journal whose route shortflow could not have written is
refused with the reason."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from shortflow.exceptions import TuneError
from shortflow.host import HostError, routes
from shortflow.tune import journal

pytestmark = pytest.mark.netns

LOCKED = ["mtu", "lock", "1400", "advmss", "1300", "initcwnd", "10", "rto_min", "300ms", "quickack", "1",
          "congctl", "lock", "cubic"]


@pytest.fixture
def ns(lone_ns: str) -> str:
    """The test's namespace with a veth end `d0` up, addressed in both families."""
    for cmd in (["ip", "link", "add", "d0", "type", "veth", "peer", "name", "d1"], ["ip", "link", "set", "d0", "up"],
                ["ip", "addr", "add", "10.231.9.1/24", "dev", "d0"],
                ["ip", "-6", "addr", "add", "2001:db8:9::1/64", "dev", "d0", "nodad"]):
        subprocess.run(["ip", "netns", "exec", lone_ns, *cmd], check=True)
    return lone_ns


def shown(ns: str) -> str:
    return "".join(subprocess.run(["ip", "netns", "exec", ns, "ip", fam, "route", "show", "default"], capture_output=True,
                                  text=True, check=True).stdout for fam in ("-4", "-6"))


def test_locked_metrics_survive_the_round_trip(ns: str) -> None:
    sh = ["ip", "netns", "exec", ns]
    subprocess.run([*sh, "ip", "route", "add", "default", "via", "10.231.9.254", "dev", "d0", "proto", "static",
                    "metric", "5", *LOCKED], check=True)
    subprocess.run([*sh, "ip", "-6", "route", "add", "default", "via", "2001:db8:9::fe", "dev", "d0", "initcwnd", "4",
                    "pref", "high"], check=True)
    before = shown(ns)
    v4, v6 = routes.default_routes(ns)
    assert (v4.family, v4.dev, v4.gateway, v4.metric, v6.family, v6.pref) == ("-4", "d0", "10.231.9.254", 5, "-6", "high")
    assert v4.metrics == (("mtu", 1400, True), ("advmss", 1300, False), ("initcwnd", 10, False), ("rto_min", 300, True),
                          ("quickack", 1, False), ("congctl", "cubic", True))
    tuned = v4.with_metrics({"initcwnd": 20, "quickack": 0})
    routes.put(tuned, ns)
    assert "initcwnd 20" in shown(ns) and "mtu lock 1400" in shown(ns)
    assert routes.default_routes(ns)[0] == tuned
    routes.put(v4, ns)
    assert shown(ns) == before, "put back to the letter, locks and all"


def test_a_route_that_expires_still_expires_when_put_back(ns: str) -> None:
    """A default route learnt from a router advertisement has a lifetime: put back, it
    keeps one (not a route that outlives the router)."""
    sh = ["ip", "netns", "exec", ns]
    subprocess.run([*sh, "ip", "-6", "route", "add", "default", "via", "2001:db8:9::fe", "dev", "d0", "proto", "ra",
                    "expires", "600"], check=True)
    (r,) = routes.default_routes(ns)
    assert r.proto == 9 and r.expires is not None and 590 <= r.expires <= 600
    routes.put(r.with_metrics({"initcwnd": 20}), ns)
    routes.put(r, ns)
    (back,) = routes.default_routes(ns)
    assert back == r and back.expires is not None and 580 <= back.expires <= 600
    assert "expires" in shown(ns) and "initcwnd" not in shown(ns)
    assert routes.Route.from_json(r.as_json()).expires == r.expires


def test_a_route_shortflow_cannot_render_is_refused_naming_the_part(ns: str) -> None:
    sh = ["ip", "netns", "exec", ns]
    subprocess.run([*sh, "ip", "route", "add", "default", "via", "10.231.9.254", "dev", "d0", "realm", "7"], check=True)
    with pytest.raises(HostError, match="the IPv4 default route carries RTA_FLOW, which shortflow does not render"):
        routes.default_routes(ns)


def _journal(tmp_path: Path, before: object) -> Path:
    # What the tuner journals: the route as it was, with its initial window set.
    after = {**before, "metrics": [["initcwnd", 10, False]]} if isinstance(before, dict) else \
        {"family": "-4", "dev": "eth0", "gateway": "10.0.0.1", "metrics": [["initcwnd", 10, False]]}
    p = tmp_path / "state.json"
    p.write_text("\n".join(json.dumps(r) for r in (
        {"format": journal.FORMAT, "version": journal.VERSION, "id": "abc123", "settings": {}},
        {"n": 1, "op": "route", "family": "-4", "before": before, "after": after})) + "\n")
    return p


@pytest.mark.parametrize(("before", "why"), [
    ("default via 10.0.0.1 dev eth0", "route.before: expected dict, found 'default via"),
    ({"family": "-4", "dev": "eth0 mtu 9000"}, "route.before: dev 'eth0 mtu 9000': not a device name"),
    ({"family": "-4", "dev": "eth0", "gateway": "10.0.0.1 onlink"}, "route.before: gateway '10.0.0.1 onlink': not an IPv4 address"),
    ({"family": "-4", "dev": "eth0", "metrics": [["features", 1, False]]}, "route.before: metric \\['features', 1, False\\]: not one"),
    ({"family": "-4", "dev": "eth0", "metrics": [["initcwnd", "10 lock", False]]}, "route.before: metric \\['initcwnd', '10 lock'"),
    ({"family": "-6", "dev": "eth0"}, "route.before: an IPv6 route in an -4 step"),
    ({"family": "-4", "dev": "eth0", "via": "10.0.0.1"}, "route.before: unknown parts \\['via'\\]"),
])
def test_a_journalled_route_shortflow_could_not_have_written_is_refused(tmp_path: Path, before: object, why: str) -> None:
    with pytest.raises(TuneError, match=f"state.json: line 2: {why}"):
        journal.load(_journal(tmp_path, before))


def test_a_journalled_route_shortflow_writes_is_taken(tmp_path: Path) -> None:
    j = journal.load(_journal(tmp_path, {"family": "-4", "dev": "eth0", "gateway": "10.0.0.1", "proto": 16}))
    (step,) = j.steps
    assert routes.Route.from_json(step.args["before"]).show() == "default via 10.0.0.1 dev eth0 proto dhcp"


def test_a_journal_from_before_routes_had_parts_is_refused_saying_so(tmp_path: Path) -> None:
    p = tmp_path / "state.json"
    p.write_text("\n".join(json.dumps(r) for r in (
        {"format": journal.FORMAT, "version": 1, "id": "abc123", "settings": {}},
        {"n": 1, "op": "route", "family": "-4", "before": "default via 10.0.0.1 dev eth0",
         "after": "default via 10.0.0.1 dev eth0 initcwnd 10"})) + "\n")
    with pytest.raises(TuneError, match=r"line 1: written by an older shortflow \(journal version 1; this one reads 2\)"):
        journal.load(p)
    assert "initcwnd 10" in p.read_text(), "kept as it was"
