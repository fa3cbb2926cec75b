"""`pip install` of the built wheel gives a shortflow whose commands work with nothing of
the repository around: the BPF object comes inside the extension module (no clang, no
daemon binary on PATH), and so do the link emulator's and the SYN
optimizer's daemons."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with only the wheel (and its dependencies) installed."""
    maturin = Path(sys.executable).with_name("maturin")
    if not maturin.exists():
        pytest.skip("maturin is not in this environment (`make build` installs it)")
    tmp = tmp_path_factory.mktemp("wheel")
    # --release shares the build cache of `make build`: only the extension is linked again.
    subprocess.run([str(maturin), "build", "--release", "-q", "-o", str(tmp / "dist")], cwd=ROOT, check=True,
                   capture_output=True, timeout=1200)
    (wheel,) = (tmp / "dist").glob("shortflow-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], check=True, capture_output=True, timeout=1200)
    return venv


def shortflow(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # Nothing of the repository: not its directory, its PATH entries or its daemon variables.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHORTFLOW_") or k == "SHORTFLOW_RUN_ID_PREFIX"}
    env["PATH"] = f"{venv / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin"
    env.pop("PYTHONPATH", None)
    return subprocess.run([str(venv / "bin" / "shortflow"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize(("daemon", "help_says"), [("netem", "NFQUEUE link emulator"), ("synopt", "SYN optimizer")])
def test_the_wheel_carries_the_bpf_object_and_the_daemons(installed: Path, tmp_path: Path, daemon: str,
                                                          help_says: str) -> None:
    probe = ("from shortflow import _core; from shortflow.host import daemons; "
             f"print(len(_core.bpf_object('tune') or b''), daemons.find_binary('{daemon}'), daemons.command('{daemon}'))")
    r = subprocess.run([str(installed / "bin" / "python"), "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    size, binary, command = r.stdout.split(" ", 2)
    assert int(size) > 1000 and binary == "None" and "shortflow.host.daemons" in command, r.stdout
    # The daemon's own command line (clap's help), run from the extension module.
    r = subprocess.run([str(installed / "bin" / "python"), "-m", "shortflow.host.daemons", daemon, "--help"],
                       cwd=tmp_path, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and help_says in r.stdout, r.stdout + r.stderr


def test_commands_run_from_the_installed_package(installed: Path, tmp_path: Path) -> None:
    assert shortflow(installed, "--version", cwd=tmp_path).returncode == 0
    r = shortflow(installed, "synopt", "--help", cwd=tmp_path)
    assert r.returncode == 0 and "SYN" in r.stdout, r.stderr
    r = shortflow(installed, "simulate", "002-initial-window", "--json", "-", cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["connections"], r.stderr
    if os.geteuid() == 0:
        r = shortflow(installed, "tune", "apply", "--syn-rto", "200ms", "--dry-run", cwd=tmp_path)
        assert r.returncode == 0 and "would" in r.stdout, r.stderr


@pytest.mark.netns
def test_testbed_runs_from_the_installed_package(installed: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the testbed needs root (network namespaces)")
    if shutil.which("nginx") is None:
        pytest.skip("the testbed serves with nginx (`make deps` installs it)")
    s = tmp_path / "s.toml"
    s.write_text(textwrap.dedent("""
        [path]
        rtt = "20ms"
        [drop]
        data = [2]
        [workload]
        response = "20kB"
    """))
    r = shortflow(installed, "testbed", "run", str(s), "--json", str(tmp_path / "r.json"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    (c,) = result["connections"]
    assert c["status"] == 200 and c["response_bytes"] == 20_000
    # The emulator ran from the extension module and dropped what the scenario said.
    assert [(d["kind"], d["nth"]) for d in result["link"]["drops"]] == [("data", 2)]


@pytest.mark.netns
def test_synopt_runs_from_the_installed_package(installed: Path, tmp_path: Path) -> None:
    """`shortflow synopt` of the wheel starts the daemon from the extension module: it
    creates its nftables table, says ready, and on SIGTERM deletes the table whole."""
    if os.geteuid() != 0:
        pytest.skip("synopt needs root (nftables, NFLOG, raw sockets)")
    if shutil.which("nft") is None:
        pytest.skip("nft is not installed (`make deps` installs the nftables package)")
    from netns import namespace_pair

    env = {k: v for k, v in os.environ.items() if not k.startswith("SHORTFLOW_")}
    env["PATH"] = f"{installed / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin"
    env.pop("PYTHONPATH", None)
    with namespace_pair() as p:
        d = subprocess.Popen(["ip", "netns", "exec", p.client, str(installed / "bin" / "shortflow"), "synopt", "-d", "200",
                              "-r", "1", "-c", "-p", "80", "--rt-priority", "0"],
                             cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        p.procs.append(d)
        assert d.stdout is not None
        line = d.stdout.readline()
        assert line.startswith("ready "), line + (d.stderr.read() if d.stderr else "")
        run_id = line.split()[1]
        # The daemon is the extension module's copy: python runs it, no binary exists.
        assert "shortflow.host.daemons" in Path(f"/proc/{d.pid}/cmdline").read_text().replace("\0", " ")
        assert f"table inet sf-{run_id}-synopt" in p.exec(p.client, "nft", "list", "tables").stdout
        d.send_signal(signal.SIGTERM)
        _, err = d.communicate(timeout=10)
        assert d.returncode == 0, err
        assert "synopt" not in p.exec(p.client, "nft", "list", "ruleset").stdout
