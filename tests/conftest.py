"""Shared fixtures. Tests marked `netns` need root and network namespaces; they run where
they can (CI here runs as root) and skip with the reason where they cannot."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import uuid

import pytest


def netns_unavailable_reason() -> str | None:
    """Why namespace tests cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "needs root to create network namespaces (run the suite as root, as CI does)"
    for tool in ("ip", "iptables", "tcpdump"):
        if shutil.which(tool) is None:
            return f"needs {tool!r} (installed by `make deps`)"
    probe = f"sf-probe-{uuid.uuid4().hex[:6]}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"cannot create a network namespace here: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker("netns") for item in items):
        return
    reason = netns_unavailable_reason()
    if reason:
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if item.get_closest_marker("netns"):
                item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def no_leftovers_of_the_project():
    """At the end of the session, nothing the project can create may remain that appeared
    during it: `sf-<id>-` namespaces, veths, rules, BPF pins, cgroups, work directories, and
    the unnamed host state (BPF attachments, root-namespace sysctls and routes);
    `leftover_snapshot` says how other sessions' objects are told apart. Only checked as
    root: listing needs it."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        yield
        return
    from leftover_snapshot import leaked, snapshot
    from shortflow.testbed.names import RUN_ID_PREFIX_ENV

    # Every run this session starts (in this process or a child) gets an id beginning with
    # this tag, so a testbed running beside the tests is not mistaken for our leftovers.
    tag = secrets.token_hex(2)[:3]
    os.environ[RUN_ID_PREFIX_ENV] = tag
    before = snapshot()
    yield
    new = leaked(before, snapshot(), tag)
    assert not new, f"tests left these behind: {new}"


@pytest.fixture
def lone_ns():
    """A network namespace of the test's own (`sf-<run id>-lone`, only a loopback in it),
    deleted on every exit path."""
    from shortflow.host.runid import fresh_run_id

    name = f"sf-{fresh_run_id()}-lone"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)
