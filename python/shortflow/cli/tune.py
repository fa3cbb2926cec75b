"""`shortflow tune apply|reload|status|revert`: start-up settings for real hosts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from shortflow.exceptions import PrivilegeError, ShortflowError, TuneError
from shortflow.units import parse_duration, parse_size

tune_app = typer.Typer(help="Tune TCP start-up on this host: SYN RTO, initial window, minimum RTO, "
                            "delayed ACKs (BPF sock_ops, route and sysctl fallbacks); revert restores exactly.",
                       no_args_is_help=True)
err = Console(stderr=True)
out = Console()

STATE_OPTION = typer.Option("--state", help="State file recording what was changed (for status and revert).")


def _fail(e: BaseException, code: int) -> typer.Exit:
    err.print(f"[red]error:[/] {e}", highlight=False)
    return typer.Exit(code)


def _duration(flag: str, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return parse_duration(text, what=flag)
    except ValueError as e:
        raise _fail(e, 2) from None


def _settings(syn_rto: str | None, iw: int | None, iw_map: Path | None, rto_min: str | None, delack_max: str | None,
              quickack: bool, ssai: str | None, sfr_factor: float | None, sfr_cutout: str, scope: list[str]):  # noqa: ANN202
    from shortflow.tune import TuneSettings, load_prefixes

    s = TuneSettings(syn_rto_s=_duration("--syn-rto", syn_rto), iw=iw, rto_min_s=_duration("--rto-min", rto_min),
                     delack_max_s=_duration("--delack-max", delack_max), quickack=quickack, sfr_factor=sfr_factor)
    if iw is not None and iw < 1:
        raise _fail(TuneError(f"--iw {iw}: expected a number of segments >= 1"), 2)
    if ssai is not None:
        if ssai not in ("on", "off"):
            raise _fail(TuneError(f"--slow-start-after-idle {ssai!r}: expected on or off"), 2)
        s.slow_start_after_idle = ssai == "on"
    try:
        s.sfr_cutout_bytes = parse_size(sfr_cutout, what="--sfr-cutout")
    except ValueError as e:
        raise _fail(e, 2) from None
    for item in scope:
        kind, _, value = item.partition("=")
        if kind == "cgroup" and value:
            s.cgroup = Path(value)
        elif kind == "port" and value.isdigit():
            s.port = int(value)
        else:
            raise _fail(TuneError(f"--scope {item!r}: expected cgroup=PATH or port=N"), 2)
    if iw_map is not None:
        try:
            s.prefixes = load_prefixes(iw_map)
        except TuneError as e:
            raise _fail(e, 2) from None
    if s.empty():
        raise _fail(TuneError("nothing to apply: give at least one of --syn-rto, --iw, --iw-map, --rto-min, "
                              "--delack-max, --quickack, --slow-start-after-idle, --sfr-factor"), 2)
    return s


@tune_app.command("apply")
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
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would change; change nothing.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Apply values refused as unsafe.")] = False,
    fallback: Annotated[Optional[str], typer.Option("--fallback", help="routes: route metrics and sysctls only, no BPF.")] = None,
    state: Annotated[Path, STATE_OPTION] = Path("/run/shortflow/tune-state.json"),
) -> None:
    """Apply start-up settings (BPF sock_ops on a cgroup; route metrics and sysctls)."""
    from shortflow import tune

    if fallback not in (None, "routes"):
        raise _fail(TuneError(f"--fallback {fallback!r}: the only fallback is `routes`"), 2)
    s = _settings(syn_rto, iw, iw_map, rto_min, delack_max, quickack, ssai, sfr_factor, sfr_cutout, scope or [])
    try:
        if dry_run:
            p = tune.plan(s, fallback_routes=fallback == "routes", force=force)
            for line in p.lines():
                out.print(f"would {line}", highlight=False)
            for w in p.warnings:
                out.print(f"[yellow]forced:[/] {w}", highlight=False)
            for n in p.notices:
                err.print(f"[yellow]warning:[/] {n}", highlight=False, soft_wrap=True)
            return
        result = tune.apply(s, state_path=state, fallback_routes=fallback == "routes", force=force)
    except (TuneError, PrivilegeError) as e:
        raise _fail(e, 2) from None
    except ShortflowError as e:
        raise _fail(e, 1) from None
    bpf = result.get("bpf")
    if bpf:
        out.print(f"attached BPF program {bpf['prog_id']} to {bpf['cgroup']} (pins {bpf['pin_dir']})", highlight=False)
    for c in result["changes"]:
        out.print(f"{c['kind']}: {c['before']!r} -> {c['after']!r}", highlight=False)
    for n in result.get("notices", []):
        err.print(f"[yellow]warning:[/] {n}", highlight=False, soft_wrap=True)
    for line in (bpf or {}).get("selfcheck_refusals", []):
        err.print(f"[red]forced, but the kernel refused:[/] {line}", highlight=False, soft_wrap=True)
    out.print(f"state: {state} (`shortflow tune revert` restores it all)", highlight=False)


@tune_app.command("reload")
def reload_cmd(
    iw_map: Annotated[Path, typer.Option("--iw-map", help="The new per-prefix file.")],
    force: Annotated[bool, typer.Option("--force", help="Apply values refused as unsafe.")] = False,
    state: Annotated[Path, STATE_OPTION] = Path("/run/shortflow/tune-state.json"),
) -> None:
    """Replace the per-prefix settings without detaching the program."""
    from shortflow import tune

    try:
        n = tune.reload_prefixes(tune.load_prefixes(iw_map), state_path=state, force=force)
    except (TuneError, PrivilegeError) as e:
        raise _fail(e, 2) from None
    out.print(f"{n} prefixes loaded from {iw_map}", highlight=False)


@tune_app.command("status")
def status_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print the state and counters as JSON.")] = False,
    state: Annotated[Path, STATE_OPTION] = Path("/run/shortflow/tune-state.json"),
) -> None:
    """What is applied, whether the program is still attached, and its counters."""
    from shortflow import tune

    try:
        st = tune.status(state_path=state)
    except TuneError as e:
        raise _fail(e, 1) from None
    if as_json:
        out.print_json(json.dumps(st))
        return
    s = st["settings"]
    out.print(f"applied {st['applied']} (id {st['id']})", highlight=False)
    t = Table("setting", "value")
    for k in ("syn_rto_s", "iw", "rto_min_s", "delack_max_s", "quickack", "slow_start_after_idle", "sfr_factor", "port", "cgroup"):
        if s.get(k) not in (None, False):
            t.add_row(k, str(s[k]))
    for p in s.get("prefixes", []):
        t.add_row(f"prefix {p['network']}", f"iw={p['iw']} syn_rto_s={p['syn_rto_s']}")
    out.print(t)
    bpf = st.get("bpf")
    if bpf:
        attached = "attached" if bpf["still_attached"] else "[red]NOT attached any more[/]"
        out.print(f"BPF program {bpf['prog_id']} on {bpf['cgroup']}: {attached}", highlight=False)
        for k, v in (bpf.get("counters") or {}).items():
            out.print(f"  {k}: {v}", highlight=False)
        for line in bpf.get("refusals", []):
            err.print(f"[red]refused:[/] {line}", highlight=False, soft_wrap=True)
    for c in st["changes"]:
        out.print(f"{c['kind']}: {c['before']!r} -> {c['after']!r}", highlight=False)
    for n in st.get("notices", []):
        err.print(f"[yellow]warning:[/] {n}", highlight=False, soft_wrap=True)


@tune_app.command("revert")
def revert_cmd(state: Annotated[Path, STATE_OPTION] = Path("/run/shortflow/tune-state.json")) -> None:
    """Restore exactly what `apply` changed."""
    from shortflow import tune

    try:
        done = tune.revert(state_path=state)
    except (TuneError, PrivilegeError) as e:
        raise _fail(e, 2) from None
    for line in done:
        out.print(line, highlight=False)
    out.print("reverted", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(tune_app, name="tune")
