"""The packet filter: nftables read through `nft -j` (JSON, whose layout is versioned, not
the text `nft list` prints), and the iptables rules the testbed adds.

iptables has no JSON output; its rules are read as `iptables -S` prints them because that
is what `iptables -D` takes back (`-A CHAIN spec` → `-D CHAIN spec`), the one round trip
removal needs. Both tools may be missing on a host: then there is nothing to list."""

from __future__ import annotations

import json
import shlex
from typing import Any

from shortflow.host.commands import HostError, in_ns, run


def _run(args: list[str], ns: str | None, *, check: bool) -> tuple[int, str, str]:
    """Runs `args` in `ns`; a missing tool is (127, "", what was said)."""
    try:
        r = in_ns(ns, *args, check=check) if ns else run(args, check=check)
    except HostError as e:
        if "not found" in str(e) and not check:
            return 127, "", str(e)
        raise
    return r.returncode, r.stdout, r.stderr


def objects(args: list[str], ns: str | None = None) -> list[dict[str, Any]]:
    """`nft -j ARGS` as its list of objects (`{"table": {...}}`, `{"rule": {...}}`, …) without
    the metainfo; empty when nft is missing or lists nothing."""
    code, out, _ = _run(["nft", "-j", *args], ns, check=False)
    if code != 0 or not out.strip():
        return []
    try:
        doc = json.loads(out)
    except json.JSONDecodeError as e:
        raise HostError(f"`nft -j {' '.join(args)}` printed something that is not JSON ({e})") from None
    return [o for o in doc.get("nftables", []) if "metainfo" not in o]


def tables(family: str, ns: str | None = None) -> list[str]:
    """Names of the nftables tables of `family` in `ns` (None: this namespace)."""
    return [str(o["table"]["name"]) for o in objects(["list", "tables", family], ns) if "table" in o]


def rules(family: str, table: str, ns: str | None = None) -> list[dict[str, Any]]:
    """The rules of one table, each as nft's JSON object (`chain`, `handle`, `expr`)."""
    return [o["rule"] for o in objects(["list", "table", family, table], ns) if "rule" in o]


def delete_table(family: str, table: str, ns: str | None = None) -> bool:
    """Deletes a table whole, its chains and rules with it; False when nft refused or is missing."""
    return _run(["nft", "delete", "table", family, table], ns, check=False)[0] == 0


def ruleset(ns: str | None = None) -> list[dict[str, Any]]:
    """Everything nftables holds in `ns`."""
    return objects(["list", "ruleset"], ns)


def iptables_rules(ns: str | None = None) -> list[str]:
    """The filter table's rules as `iptables -S` prints them (`-A CHAIN spec`)."""
    _, out, _ = _run(["iptables", "-S"], ns, check=False)
    return [line for line in out.splitlines() if line.startswith("-A ")]


def iptables_add(chain: str, spec: list[str], ns: str | None = None) -> None:
    """`iptables -A CHAIN SPEC…` in `ns`."""
    _run(["iptables", "-A", chain, *spec], ns, check=True)


def iptables_delete(rule: str, ns: str | None = None) -> bool:
    """Deletes a rule given as `iptables -S` printed it; False when it was not there."""
    return _run(["iptables", "-D", *shlex.split(rule[3:])], ns, check=False)[0] == 0
