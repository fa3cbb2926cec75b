"""Routes: the default routes of a namespace as structured data, and `ip route replace`, in
one place.

A route is read over netlink (pyroute2) into a `Route`: its type, gateway, device,
protocol, metric, preference, scope and TCP metrics with their locks (`ip -j` drops the
locks, which `replace` must be handed back to restore a route exactly). `Route.args()`
renders it as `ip route replace` takes it: the one inverse of reading, kept here. A route
with a part this module cannot render (a multipath or encapsulated route, a metric outside
`METRICS`) is refused naming that part, never restored approximately; `Route.from_json`
refuses the same way a stored route shortflow could not have produced."""

from __future__ import annotations

import socket
from collections.abc import Collection
from dataclasses import dataclass, field
from dataclasses import replace as _dc_replace
from typing import Any

from shortflow.host.commands import HostError, in_ns, run

#: Route metrics (RTAX_*) shortflow renders, by the word `ip route` writes them with; each
#: is a whole number, except `congctl` (a name) and `rto_min` (milliseconds, always locked
#: by the kernel, and `ip route`'s parser takes no `lock` before it).
METRICS = {
    "RTAX_MTU": "mtu", "RTAX_WINDOW": "window", "RTAX_RTT": "rtt", "RTAX_RTTVAR": "rttvar",
    "RTAX_SSTHRESH": "ssthresh", "RTAX_CWND": "cwnd", "RTAX_ADVMSS": "advmss", "RTAX_REORDERING": "reordering",
    "RTAX_HOPLIMIT": "hoplimit", "RTAX_INITCWND": "initcwnd", "RTAX_INITRWND": "initrwnd",
    "RTAX_RTO_MIN": "rto_min", "RTAX_QUICKACK": "quickack", "RTAX_CC_ALGO": "congctl",
    "RTAX_FASTOPEN_NO_COOKIE": "fastopen_no_cookie",
}
#: Their RTAX numbers (include/uapi/linux/rtnetlink.h): bit n of RTAX_LOCK locks metric n.
_RTAX = {"mtu": 2, "window": 3, "rtt": 4, "rttvar": 5, "ssthresh": 6, "cwnd": 7, "advmss": 8, "reordering": 9,
         "hoplimit": 10, "initcwnd": 11, "initrwnd": 14, "rto_min": 13, "quickack": 15, "congctl": 16,
         "fastopen_no_cookie": 17}
#: rtt and rttvar: the kernel keeps them in units of 1/8 and 1/4 ms; `ip route` writes ms.
_MS_SCALE = {"rtt": 8, "rttvar": 4}
#: Routing protocols (RTPROT_*, /etc/iproute2/rt_protos) by the name `ip route` takes; boot
#: is what `ip route replace` sets when given none, so it is left unsaid.
PROTOS = {2: "kernel", 3: "boot", 4: "static", 9: "ra", 16: "dhcp"}
RTPROT_BOOT = 3
#: Route types (RTN_*) `ip route replace` takes as a word before the destination.
TYPES = {1: "unicast", 6: "blackhole", 7: "unreachable", 8: "prohibit", 9: "throw"}
SCOPES = {0: "global", 200: "site", 253: "link", 254: "host"}
#: RTA_PREF of an IPv6 route (RFC 4191).
PREFS = {0: "medium", 1: "high", 3: "low"}
#: Netlink attributes that are the route's state or its table, not something to render.
_STATE_ATTRS = {"RTA_TABLE", "RTA_CACHEINFO", "RTA_EXPIRES", "RTA_UNSPEC"}
RTNH_F_ONLINK = 4
FAMILIES = {"-4": socket.AF_INET, "-6": socket.AF_INET6}


@dataclass(frozen=True)
class Route:
    """One default route of the main table, every part `ip route replace` is given."""

    family: str
    dev: str
    gateway: str | None = None
    type: str = "unicast"
    proto: int | None = None
    metric: int | None = None
    scope: str | None = None
    prefsrc: str | None = None
    pref: str | None = None
    onlink: bool = False
    #: (word, value, locked), in the order the kernel lists them.
    metrics: tuple[tuple[str, int | str, bool], ...] = ()
    #: Seconds left of a route that expires (an IPv6 route learnt from a router
    #: advertisement): put back with it, so a restored route still expires. It counts down
    #: between two readings, so two readings of one route are equal without it.
    expires: int | None = field(default=None, compare=False)

    def args(self) -> list[str]:
        """The route as `ip route replace` takes it."""
        out = ([] if self.type == "unicast" else [self.type]) + ["default"]
        if self.gateway:
            out += ["via", self.gateway]
        out += ["dev", self.dev]
        if self.proto is not None and self.proto != RTPROT_BOOT:
            out += ["proto", PROTOS.get(self.proto, str(self.proto))]
        if self.scope is not None:
            out += ["scope", self.scope]
        if self.prefsrc:
            out += ["src", self.prefsrc]
        if self.metric is not None:
            out += ["metric", str(self.metric)]
        if self.onlink:
            out.append("onlink")
        for word, value, locked in self.metrics:
            shown = f"{value}ms" if word in ("rto_min", "rtt", "rttvar") else str(value)
            out += [word, *(["lock"] if locked and word != "rto_min" else []), shown]
        if self.expires:
            out += ["expires", str(self.expires)]
        if self.pref:
            out += ["pref", self.pref]
        return out

    def show(self) -> str:
        return " ".join(self.args())

    def metric_value(self, word: str) -> int | str | None:
        return next((v for w, v, _ in self.metrics if w == word), None)

    def with_metrics(self, new: dict[str, int | str]) -> Route:
        """This route with metrics `new` set (unlocked), the others kept as they are, in the
        kernel's order; a metric set to 0 is unset, as the kernel keeps it."""
        kept = [m for m in self.metrics if m[0] not in new] + [(w, v, False) for w, v in new.items() if v != 0]
        return _dc_replace(self, metrics=tuple(sorted(kept, key=lambda m: _RTAX[m[0]])))

    def as_json(self) -> dict[str, Any]:
        return {"family": self.family, "dev": self.dev, "gateway": self.gateway, "type": self.type,
                "proto": self.proto, "metric": self.metric, "scope": self.scope, "prefsrc": self.prefsrc,
                "pref": self.pref, "onlink": self.onlink, "metrics": [list(m) for m in self.metrics],
                "expires": self.expires}

    @classmethod
    def from_json(cls, d: object) -> Route:
        """A stored route, checked part by part: ValueError naming the part shortflow could
        not have written."""
        if not isinstance(d, dict):
            raise ValueError(f"expected the route's fields as an object, found {d!r}")
        extra = set(d) - {"family", "dev", "gateway", "type", "proto", "metric", "scope", "prefsrc", "pref",
                          "onlink", "metrics", "expires"}
        if extra:
            raise ValueError(f"unknown parts {sorted(extra)}")

        def want(key: str, kind: type, choices: Collection[object] = (), optional: bool = True) -> Any:
            v = d.get(key)
            if v is None and optional:
                return None
            if not isinstance(v, kind) or isinstance(v, bool) is not (kind is bool) or (choices and v not in choices):
                raise ValueError(f"{key} {v!r}: not a value shortflow writes")
            return v

        family = want("family", str, FAMILIES, optional=False)
        dev = want("dev", str, optional=False)
        if not dev or any(c.isspace() for c in dev):
            raise ValueError(f"dev {dev!r}: not a device name")
        metrics = d.get("metrics", [])
        if not isinstance(metrics, list):
            raise ValueError(f"metrics {metrics!r}: expected a list")
        parsed = []
        for m in metrics:
            ok = isinstance(m, list) and len(m) == 3 and m[0] in _RTAX and isinstance(m[2], bool) and (
                isinstance(m[1], str) if m[0] == "congctl" else isinstance(m[1], int) and not isinstance(m[1], bool)
                and m[1] >= 0)
            if not ok:
                raise ValueError(f"metric {m!r}: not one shortflow writes (one of {sorted(_RTAX)}, its value, locked)")
            parsed.append((m[0], m[1], m[2]))
        for key in ("gateway", "prefsrc"):
            v = want(key, str)
            if v is not None:
                try:
                    socket.inet_pton(FAMILIES[family], v)
                except OSError:
                    raise ValueError(f"{key} {v!r}: not an IPv{family[1]} address") from None
        return cls(family=family, dev=dev, gateway=d.get("gateway"), type=want("type", str, TYPES.values()) or "unicast",
                   proto=want("proto", int), metric=want("metric", int), scope=want("scope", str, SCOPES.values()),
                   prefsrc=d.get("prefsrc"), pref=want("pref", str, PREFS.values()), onlink=bool(want("onlink", bool)),
                   metrics=tuple(parsed), expires=want("expires", int) if family == "-6" else None)


def _expires(attrs: dict[str, Any], family: str) -> int | None:
    """Whole seconds left of an IPv6 route's lifetime (RTA_CACHEINFO counts in USER_HZ,
    hundredths of a second, as `ip route` reads it), rounded up; None when it has none."""
    left = int((attrs.get("RTA_CACHEINFO") or {}).get("rta_expires", 0))
    return -(-left // 100) if family == "-6" and left > 0 else None


def _from_netlink(family: str, msg: Any, names: dict[int, str]) -> Route:
    attrs = dict(msg["attrs"])
    where = f"the IPv{family[1]} default route"
    for key in attrs:
        if key not in _STATE_ATTRS | {"RTA_GATEWAY", "RTA_OIF", "RTA_PRIORITY", "RTA_PREFSRC", "RTA_PREF", "RTA_METRICS"}:
            raise HostError(f"{where} carries {key}, which shortflow does not render: left as it is")
    metrics, lock = [], 0
    for key, value in (attrs.get("RTA_METRICS") or {"attrs": []})["attrs"]:
        if key == "RTAX_LOCK":
            lock = int(value)
        elif key in METRICS:
            word = METRICS[key]
            metrics.append((word, value // _MS_SCALE.get(word, 1) if isinstance(value, int) else value))
        else:
            raise HostError(f"{where} carries the metric {key}, which shortflow does not render: left as it is")
    if msg["type"] not in TYPES or msg["scope"] not in SCOPES:
        raise HostError(f"{where} is of type {msg['type']}, scope {msg['scope']}, which shortflow does not render")
    oif = attrs.get("RTA_OIF")
    if oif not in names:
        raise HostError(f"{where} has no device shortflow can name (oif {oif})")
    return Route(
        family=family, dev=names[oif], gateway=attrs.get("RTA_GATEWAY"), type=TYPES[msg["type"]],
        proto=msg["proto"], metric=attrs.get("RTA_PRIORITY"),
        scope=None if msg["scope"] == 0 else SCOPES[msg["scope"]],
        prefsrc=attrs.get("RTA_PREFSRC"), pref=PREFS.get(attrs["RTA_PREF"]) if "RTA_PREF" in attrs else None,
        onlink=bool(msg["flags"] & RTNH_F_ONLINK), expires=_expires(attrs, family),
        metrics=tuple((w, v, bool(lock & (1 << _RTAX[w]))) for w, v in metrics))


def default_routes(ns: str | None = None) -> list[Route]:
    """Every default route of the main table in `ns` (None: this namespace), IPv4 first."""
    from pyroute2 import IPRoute, NetNS  # type: ignore[import-untyped]

    try:
        with (NetNS(ns) if ns else IPRoute()) as ipr:
            names = {link["index"]: link.get_attr("IFLA_IFNAME") for link in ipr.get_links()}
            return [_from_netlink(flag, msg, names) for flag, fam in FAMILIES.items()
                    for msg in ipr.get_routes(family=fam, table=254, dst_len=0)]
    except OSError as e:
        raise HostError(f"reading the routes{f' of namespace {ns}' if ns else ''}: {e}") from None


def _ip(args: list[str], ns: str | None) -> str:
    return (in_ns(ns, "ip", *args) if ns else run(["ip", *args])).stdout


def replace(route: list[str], *, family: str | None = None, ns: str | None = None) -> None:
    """`ip [FAMILY] route replace ROUTE…` in `ns`: creates the route or changes it in place."""
    _ip([*([family] if family else []), "route", "replace", *route], ns)


def put(route: Route, ns: str | None = None) -> None:
    """Sets `route` exactly as it stands (metrics, locks and all)."""
    replace(route.args(), family=route.family, ns=ns)
