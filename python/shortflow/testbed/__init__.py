"""The same scenario file on the real Linux kernel: client, router and server network
namespaces, nginx and a built-in client, a user-space link emulator in the router
(`shortflow-netem`), captures on both router links, analyzed by the project analyzer.

Requires root. Everything it creates is named `sf-<run id>-…` and removed on every exit
path; `shortflow testbed clean` removes what an interrupted run left.
"""

from __future__ import annotations

from shortflow.testbed.scenario_real import RealScenario, load

__all__ = ["RealScenario", "load", "run"]


def run(scenario: str | RealScenario, pcap_dir: str | None = None, cgroup: str | None = None,
        cgroup_roles: tuple[str, ...] = ("client", "server"),
        sysctls: dict[str, dict[str, str | int]] | None = None) -> dict:  # type: ignore[type-arg]
    """Runs a scenario (file or loaded) on the real kernel; returns the result dict. With
    `cgroup`, the processes of `cgroup_roles` run in that cgroup v2 directory; `sysctls`
    ({role: {key: value}}) are set in the role's namespace after the stack's own (e.g.
    `net.ipv4.tcp_early_retrans = 0`: no tail loss probe, a tail loss waits for the RTO)."""
    from pathlib import Path

    from shortflow.testbed import runner

    s = scenario if isinstance(scenario, RealScenario) else load(scenario)
    return runner.run(s, Path(pcap_dir) if pcap_dir else None, Path(cgroup) if cgroup else None, cgroup_roles, sysctls)
