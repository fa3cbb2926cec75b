"""`shortflow tune apply|reload|status|revert`: start-up settings for real hosts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from shortflow.cli.common import emit_table, examples, fail, say, warn, write_json
from shortflow.exceptions import PrivilegeError, ShortflowError, TuneError
from shortflow.units import parse_duration, parse_size

tune_app = typer.Typer(help="Tune TCP start-up on this host: SYN RTO, initial window, minimum RTO, "
                            "delayed ACKs (BPF sock_ops, route and sysctl fallbacks); revert restores exactly.",
                       no_args_is_help=True,
                       epilog=examples("sudo shortflow tune apply --syn-rto 200ms --dry-run",
                                       "sudo shortflow tune apply --syn-rto 200ms --iw 10", "sudo shortflow tune status",
                                       "sudo shortflow tune revert"))
if TYPE_CHECKING:
    from shortflow.tune import TuneSettings

#: Where apply journals its changes unless told otherwise (one tune state per host).
DEFAULT_STATE = Path("/run/shortflow/tune-state.json")
STATE_OPTION = typer.Option("--state", help="State file recording what was changed (for status and revert).")


def _duration(flag: str, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return parse_duration(text, what=flag)
    except ValueError as e:
        fail(e, 2)


def _settings(syn_rto: str | None, iw: int | None, iw_map: Path | None, rto_min: str | None, delack_max: str | None,
              quickack: bool, ssai: str | None, sfr_factor: float | None, sfr_cutout: str, scope: list[str],
              sets: list[str]) -> TuneSettings:
    from shortflow.tune import TuneSettings, load_prefixes
    from shortflow.tune.settings import parse_set

    s = TuneSettings(syn_rto_s=_duration("--syn-rto", syn_rto), iw=iw, rto_min_s=_duration("--rto-min", rto_min),
                     delack_max_s=_duration("--delack-max", delack_max), quickack=quickack, sfr_factor=sfr_factor)
    if iw is not None and iw < 1:
        fail(TuneError(f"--iw {iw}: expected a number of segments >= 1"), 2)
    if ssai is not None:
        if ssai not in ("on", "off"):
            fail(TuneError(f"--slow-start-after-idle {ssai!r}: expected on or off"), 2)
        s.slow_start_after_idle = ssai == "on"
    try:
        s.sfr_cutout_bytes = parse_size(sfr_cutout, what="--sfr-cutout")
    except ValueError as e:
        fail(e, 2)
    for item in scope:
        kind, _, value = item.partition("=")
        if kind == "cgroup" and value:
            s.cgroup = Path(value)
        elif kind == "port" and value.isascii() and value.isdigit():
            s.port = int(value)
        else:
            fail(TuneError(f"--scope {item!r}: expected cgroup=PATH or port=N"), 2)
    for item in sets:
        try:
            name, amount = parse_set(item)
        except TuneError as e:
            fail(e, 2)
        s.sysctls[name] = amount
    if iw_map is not None:
        try:
            s.prefixes = load_prefixes(iw_map)
        except TuneError as e:
            fail(e, 2)
    if s.empty():
        fail(TuneError("nothing to apply: give at least one of --syn-rto, --iw, --iw-map, --rto-min, "
                       "--delack-max, --quickack, --slow-start-after-idle, --sfr-factor, --set"), 2)
    return s


@tune_app.command("apply", epilog=examples("sudo shortflow tune apply --syn-rto 200ms --iw 10 --dry-run",
                                          "sudo shortflow tune apply --sfr-factor 2 --scope port=443",
                                          "sudo shortflow tune apply --iw-map prefixes.toml --fallback routes"))
def apply_cmd(
    syn_rto: Annotated[Optional[str], typer.Option("--syn-rto", help="Initial SYN (and SYN/ACK) RTO, e.g. 200ms.")] = None,
    iw: Annotated[Optional[int], typer.Option("--iw", help="Initial window in segments.")] = None,
    iw_map: Annotated[Optional[Path], typer.Option("--iw-map", help="Per-prefix iw/syn_rto (TOML: \"10.0.0.0/8\" = { iw = 10 }).")] = None,
    rto_min: Annotated[Optional[str], typer.Option("--rto-min", help="Minimum RTO, e.g. 50ms (8ms-200ms).")] = None,
    delack_max: Annotated[Optional[str], typer.Option("--delack-max", help="Delayed-ACK maximum, e.g. 40ms.")] = None,
    quickack: Annotated[bool, typer.Option("--quickack", help="Never delay ACKs (route quickack).")] = False,
    ssai: Annotated[Optional[str], typer.Option("--slow-start-after-idle", help="on or off (sysctl).")] = None,
    sfr_factor: Annotated[Optional[float], typer.Option("--sfr-factor", help="Super Fast Retransmit: min RTO = handshake RTT x this.")] = None,
    sfr_cutout: Annotated[str, typer.Option("--sfr-cutout", help="... until this many bytes are acknowledged.")] = "64kB",
    scope: Annotated[Optional[list[str]], typer.Option("--scope", help="cgroup=PATH (default: the cgroup v2 root) and/or port=N.")] = None,
    sets: Annotated[Optional[list[str]], typer.Option("--set", help="A sysctl of the kernel table by its row's name "
                                                       "(syn_retries=3, rto_max=60s; an unknown name lists them).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would change; change nothing.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Apply values refused as unsafe.")] = False,
    fallback: Annotated[Optional[str], typer.Option("--fallback", help="routes: route metrics and sysctls only, no BPF.")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Detach shortflow's tuner program already on the cgroup first.")] = False,
    state: Annotated[Path, STATE_OPTION] = DEFAULT_STATE,
) -> None:
    """Apply start-up settings (BPF sock_ops on a cgroup; route metrics and sysctls), journalled."""
    from shortflow import tune
    from shortflow.tune.routes import shown

    if fallback not in (None, "routes"):
        fail(TuneError(f"--fallback {fallback!r}: the only fallback is `routes`"), 2)
    s = _settings(syn_rto, iw, iw_map, rto_min, delack_max, quickack, ssai, sfr_factor, sfr_cutout, scope or [], sets or [])
    try:
        if dry_run:
            p = tune.plan(s, fallback_routes=fallback == "routes", force=force)
            for line in p.lines():
                say(f"would {line}")
            for w in p.warnings:
                say(f"forced: {w}")
            for n in p.notices:
                warn(n)
            return
        result = tune.apply(s, state_path=state, fallback_routes=fallback == "routes", force=force, replace=replace)
    except (KeyboardInterrupt, tune.Interrupted) as e:
        fail(TuneError(f"{e or 'interrupted'}: every change made so far was undone"), 130)
    except (TuneError, PrivilegeError) as e:
        fail(e, 2)
    except ShortflowError as e:
        fail(e, 1)
    for note in result.get("notes", []):
        say(note)
    bpf = result.get("bpf")
    if bpf:
        say(f"attached BPF program {bpf['prog_id']} to {bpf['cgroup']} (pins {bpf['pin_dir']})")
    for c in result["changes"]:
        say(f"{c['kind']}: {shown(c, 'before')!r} -> {shown(c, 'after')!r}")
    for n in result.get("notices", []):
        warn(n)
    for line in (bpf or {}).get("selfcheck_refusals", []):
        warn(f"forced, but the kernel refused: {line}")
    # The hint names the state file unless it is the default one: `revert` alone would
    # look for the default and find nothing (or another apply's).
    again = "" if state == DEFAULT_STATE else f" --state {state}"
    say(f"state: {state} (`shortflow tune revert{again}` restores it all)")


@tune_app.command("reload", epilog=examples("sudo shortflow tune reload --iw-map prefixes.toml"))
def reload_cmd(
    iw_map: Annotated[Path, typer.Option("--iw-map", help="The new per-prefix file.")],
    force: Annotated[bool, typer.Option("--force", help="Apply values refused as unsafe.")] = False,
    state: Annotated[Path, STATE_OPTION] = DEFAULT_STATE,
) -> None:
    """Replace the per-prefix settings without detaching the program."""
    from shortflow import tune

    try:
        n = tune.reload_prefixes(tune.load_prefixes(iw_map), state_path=state, force=force)
    except (TuneError, PrivilegeError) as e:
        fail(e, 2)
    say(f"{n} prefixes loaded from {iw_map}")


@tune_app.command("status", epilog=examples("sudo shortflow tune status", "sudo shortflow tune status --json"))
def status_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print the state and counters as JSON.")] = False,
    state: Annotated[Path, STATE_OPTION] = DEFAULT_STATE,
) -> None:
    """What is applied, whether the program is still attached, and its counters (exit 0
    whenever it can say so; 1 when the state file cannot be read or trusted)."""
    from shortflow import tune
    from shortflow.tune.routes import shown

    try:
        st = tune.status(state_path=state)
    except TuneError as e:
        fail(e, 1)
    if as_json:
        write_json("-", st)
        return
    for note in st.get("notes", []):
        say(note)
    if st.get("in_progress"):
        say(f"apply in progress (pid {st['in_progress']}): what it has done so far is journalled; "
            "status leaves it alone")
    if st["applied"] is None:
        found = st.get("found") or []
        say(f"nothing applied ({state} does not exist)" + (": shortflow's tuner objects on this host:" if found else ""))
        for line in found:
            say(f"  {line}")
        if any("an orphan" in line or "interrupted apply" in line for line in found):
            say("`shortflow tune revert --orphans` removes the orphans and rolls back interrupted applies "
                "(a committed apply's objects stay: revert it with its state file)")
        return
    s = st["settings"]
    say(f"applied {st['applied']} (id {st['id']})")
    rows = [[k, str(s[k])] for k in ("syn_rto_s", "iw", "rto_min_s", "delack_max_s", "quickack", "slow_start_after_idle",
                                     "sfr_factor", "port", "cgroup") if s.get(k) not in (None, False)]
    rows += [[f"set {name}", f"{value:g}"] for name, value in s.get("sysctls", {}).items()]
    rows += [[f"prefix {p['network']}", f"iw={p['iw']} syn_rto_s={p['syn_rto_s']}"] for p in s.get("prefixes", [])]
    emit_table("", ["setting", "value"], rows)
    bpf = st.get("bpf")
    if bpf:
        attached = "attached" if bpf["still_attached"] else "NOT attached any more"
        say(f"BPF program {bpf['prog_id']} on {bpf['cgroup']}: {attached}")
        for k, v in (bpf.get("counters") or {}).items():
            say(f"  {k}: {v}")
        for line in bpf.get("refusals", []):
            warn(f"refused: {line}")
    for c in st["changes"]:
        say(f"{c['kind']}: {shown(c, 'before')!r} -> {shown(c, 'after')!r}")
    for n in st.get("notices", []):
        warn(n)


@tune_app.command("revert", epilog=examples("sudo shortflow tune revert",
                                           "sudo shortflow tune revert --orphans --scope cgroup=/sys/fs/cgroup/web"))
def revert_cmd(
    state: Annotated[Path, STATE_OPTION] = DEFAULT_STATE,
    force: Annotated[bool, typer.Option("--force", help="Restore routes and sysctls changed since apply too.")] = False,
    orphans: Annotated[bool, typer.Option("--orphans", help="Without a state file: roll back interrupted applies and remove the tuner objects no apply's journal accounts for (a committed apply's are left).")] = False,
    scope: Annotated[Optional[str], typer.Option("--scope", help="With --orphans: cgroup=PATH, only the programs attached there (and their pins).")] = None,
) -> None:
    """Restore exactly what `apply` changed (last change first); `--orphans` needs no state file."""
    from shortflow import tune

    cgroup = None
    if scope is not None:
        kind, _, value = scope.partition("=")
        if kind != "cgroup" or not value or not orphans:
            fail(TuneError(f"--scope {scope!r}: revert takes only --orphans --scope cgroup=PATH"), 2)
        cgroup = Path(value)
    try:
        done = tune.revert(state_path=state, force=force, orphans_too=orphans, cgroup=cgroup)
    except (TuneError, PrivilegeError) as e:
        fail(e, 2)
    for line in done:
        say(line)
    say("reverted")


def register(app: typer.Typer) -> None:
    app.add_typer(tune_app, name="tune")
