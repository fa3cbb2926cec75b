"""`shortflow.sweep()`: the product of parameter grids, several seeds each, one simulation
per task on a Dask cluster (a local one by default), gathered into one Arrow table.

Each task runs `shortflow._core.simulate` in a worker (the Rust core releases the GIL);
this module only builds the runs, submits them and tabulates the reports.

>>> from shortflow.sweeps import split_values
>>> split_values("1,2,[1, 2],{a=1, b=2}")
['1', '2', '[1, 2]', '{a=1, b=2}']
"""

from __future__ import annotations

import itertools
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shortflow.cluster import dask_client
from shortflow.exceptions import ScenarioError, ShortflowError
from shortflow.scenario import Scenario

if TYPE_CHECKING:
    import pyarrow as pa

ProgressFn = Callable[[int, int], None]

#: Per-run summary columns (see crates/sim/src/report.rs).
SUMMARY_COLUMNS = (
    "connections", "completed", "mean_complete_s", "median_complete_s", "p95_complete_s", "simulated_s",
    "events", "packets_dropped", "peak_open_connections", "utilisation_c2s", "utilisation_s2c",
    "load_target", "load_measured", "connections_per_second", "timeouts", "retransmissions",
    "sfr_retransmits", "spurious_retransmits", "goodput_bps", "wall_s",
)


def split_values(text: str) -> list[str]:
    """Splits ``v1,v2,...`` at the commas outside brackets, braces and quotes."""
    out, depth, quote, cur = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    out.append(cur.strip())
    return [v for v in out if v]


def parse_grid(items: Iterable[str]) -> dict[str, list[str]]:
    """``["key=v1,v2", ...]`` → ``{"key": ["v1", "v2"]}`` (ValueError names the item)."""
    grid: dict[str, list[str]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--grid {item!r}: write key=v1,v2,... (e.g. workload.load=25%,50%)")
        vals = split_values(values)
        if not vals:
            raise ValueError(f"--grid {item!r}: no values after '='")
        if key in grid:
            raise ValueError(f"--grid {key}: given twice")
        grid[key] = vals
    return grid


@dataclass(frozen=True)
class Run:
    """One task: the grid point, the seed and the overrides that make it."""

    point: tuple[tuple[str, str], ...]
    seed: int
    overrides: tuple[str, ...]


#: Runs one sweep makes at most: each is planned (and checked) before any starts, and its
#: result kept until the table is written.
MAX_RUNS = 1_000_000
#: Local worker processes at most, per core: more only share the cores and multiply the
#: memory (each holds a simulation).
MAX_WORKERS_PER_CORE = 4


class SweepWorkerKilled(ShortflowError):
    """A run of the sweep killed every worker it was tried on."""


def plan(scenario: Scenario, grid: Mapping[str, Sequence[str]], seeds: int) -> list[Run]:
    """Every grid point × seed, each checked now (a bad value fails before any run)."""
    if seeds < 1:
        raise ValueError("--seeds must be at least 1")
    keys = list(grid)
    points = math.prod(len(grid[k]) for k in keys)
    if points * seeds > MAX_RUNS:
        raise ValueError(f"{points:,} grid points × {seeds:,} seeds = {points * seeds:,} runs: a sweep makes at most "
                         f"{MAX_RUNS:,} (split it, or fewer seeds)")
    runs = []
    for values in itertools.product(*(grid[k] for k in keys)):
        point = tuple(zip(keys, values))
        for seed in range(1, seeds + 1):
            ov = tuple(f"{k}={v}" for k, v in point) + (f"seed={seed}",)
            try:
                scenario.with_overrides(*ov)  # raises ScenarioError naming the key
            except ScenarioError as e:
                # A grid key's typo is on --grid, not on --set.
                if any(str(e).startswith(f"--set {k}=") for k in keys):
                    raise ScenarioError(f"--grid {str(e).removeprefix('--set ')}") from None
                raise
            runs.append(Run(point, seed, ov))
    return runs


def _quantile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def run_one(text: str, source: str, overrides: Sequence[str], flows: bool) -> dict[str, Any]:
    """Runs one simulation (in a worker) and returns its summary row, and its connections
    when `flows`. Top-level so that Dask can ship it to other processes."""
    from shortflow import _core

    t = time.perf_counter()
    raw = json.loads(_core.simulate(text, source, list(overrides)))
    wall = time.perf_counter() - t
    s = raw["summary"]
    conns = raw["connections"]
    done = [c["complete_s"] for c in conns if c["complete_s"] is not None]
    links = {link["direction"]: link for link in s.get("bottleneck", [])}
    cal = s.get("calibration") or {}
    span = s["simulated_s"] or 1.0
    row = {
        "connections": s["connections"],
        "completed": s["completed"],
        "mean_complete_s": s["mean_complete_s"],
        "median_complete_s": _quantile(done, 0.5),
        "p95_complete_s": _quantile(done, 0.95),
        "simulated_s": s["simulated_s"],
        "events": s["events"],
        "packets_dropped": s["packets_dropped"],
        "peak_open_connections": s.get("peak_open_connections"),
        "utilisation_c2s": links.get("client_to_server", {}).get("utilisation"),
        "utilisation_s2c": links.get("server_to_client", {}).get("utilisation"),
        "load_target": cal.get("target"),
        "load_measured": cal.get("measured"),
        "connections_per_second": cal.get("connections_per_second"),
        "timeouts": sum(c["timeouts"] for c in conns),
        "retransmissions": sum(c["retransmissions"] for c in conns),
        "sfr_retransmits": sum(c.get("sfr_retransmits", 0) for c in conns),
        "spurious_retransmits": sum(c.get("spurious_retransmits", 0) for c in conns),
        "goodput_bps": 8 * sum(c["bytes_received"] for c in conns) / span,
        "wall_s": wall,
    }
    out: dict[str, Any] = {"row": row}
    if flows:
        from shortflow.simulate import SimulationResult

        res = SimulationResult(Scenario(text, source, tuple(overrides)), conns, s, raw)
        out["flows"] = res.flows
    return out


def sweep(
    scenario: Scenario | str | os.PathLike[str],
    grid: Mapping[str, Sequence[str]] | Iterable[str],
    seeds: int = 1,
    *,
    overrides: Iterable[str] = (),
    scheduler: str | None = None,
    workers: int | None = None,
    flows: bool = False,
    progress: ProgressFn | None = None,
    pandas: bool = False,
) -> Any:
    """Runs `scenario` at every point of `grid` (``{"key": [values]}`` or
    ``["key=v1,v2", ...]``) with seeds 1..`seeds`, one task per run on the Dask cluster at
    `scheduler` (or a local cluster of `workers` processes). Returns a `pyarrow.Table` (a
    pandas frame with `pandas`): one row per run, the grid keys as columns, ``seed`` and
    `SUMMARY_COLUMNS`; with `flows`, one row per connection (the run's keys and seed, then
    `SimulationResult.flows`' columns). Grid keys are typed (`typed_column`); the table's
    metadata names the scenario, its overrides, the grid and the seeds (`metadata`).
    `progress(done, total)` is called as runs finish.
    """
    sc = scenario if isinstance(scenario, Scenario) else Scenario.load(Path(scenario))
    extra = tuple(overrides)
    if extra:
        sc = sc.with_overrides(*extra)
    g = dict(grid) if isinstance(grid, Mapping) else parse_grid(grid)
    g = {k: [str(v) for v in vs] for k, vs in g.items()}
    cores = os.cpu_count() or 1
    if workers is not None and not 1 <= workers <= MAX_WORKERS_PER_CORE * cores:
        raise ValueError(f"--workers {workers}: from 1 to {MAX_WORKERS_PER_CORE * cores} here "
                         f"({MAX_WORKERS_PER_CORE} per core; more only share the cores and multiply the memory)")
    runs = plan(sc, g, seeds)
    results: list[dict[str, Any] | None] = [None] * len(runs)
    with dask_client(scheduler, workers) as client:
        from distributed import as_completed
        from distributed.scheduler import KilledWorker

        futures = {
            client.submit(run_one, sc.text, sc.source, list(sc.overrides + r.overrides), flows, pure=False): i
            for i, r in enumerate(runs)
        }
        done = 0
        for fut in as_completed(futures):
            try:
                results[futures[fut]] = fut.result()
            except KilledWorker:
                r = runs[futures[fut]]
                raise SweepWorkerKilled(
                    f"the worker running {' '.join(r.overrides)} died (killed, or out of memory: the kernel's OOM "
                    "killer says so in `dmesg`); the run was tried on other workers and killed them too") from None
            done += 1
            if progress:
                progress(done, len(runs))
    table = _tabulate(runs, [r for r in results if r is not None], list(g), flows)
    table = table.replace_schema_metadata(metadata(sc, g, seeds))
    return table.to_pandas() if pandas else table


def typed_column(values: Sequence[str]) -> tuple[list[Any], str]:
    """A grid key's values as the numbers they stand for, and their unit: TOML numbers as
    written (``2``, ``0.5``), durations in seconds (``100ms`` → 0.1, "s"), sizes in bytes
    (``35kB`` → 35000, "B"), rates in bit/s (``10Mbit``, "bit/s"), percentages as fractions
    (``25%`` → 0.25, "fraction"). The same unit for every value, or the text as written
    ("", strings) when they are not all one kind.

    >>> typed_column(["2", "4", "10"])
    ([2, 4, 10], '')
    >>> typed_column(["10ms", "0.2s"])
    ([0.01, 0.2], 's')
    >>> typed_column(["25%", "50%"])
    ([0.25, 0.5], 'fraction')
    >>> typed_column(["[1, 2]", "[3]"])
    (['[1, 2]', '[3]'], '')
    """
    import tomllib

    from shortflow.units import parse_duration, parse_rate, parse_size

    def number(v: str) -> int | float | None:
        try:
            x = tomllib.loads(f"v = {v}")["v"]
        except tomllib.TOMLDecodeError:
            return None
        return x if isinstance(x, int | float) and not isinstance(x, bool) else None

    def percent(v: str) -> float:
        if not v.endswith("%"):
            raise ValueError(v)
        return float(v[:-1]) / 100

    numbers = [number(v) for v in values]
    if all(x is not None for x in numbers):
        if any(isinstance(x, float) for x in numbers):
            return [float(x) for x in numbers if x is not None], ""
        return numbers, ""
    texts = [v.strip().strip("\"'") for v in values]
    parsers: list[tuple[Callable[[str], int | float], str]] = [
        (parse_duration, "s"), (parse_size, "B"), (parse_rate, "bit/s"), (percent, "fraction")]
    for parse, unit in parsers:
        try:
            return [parse(v) for v in texts], unit
        except ValueError:
            continue
    return list(values), ""


def _tabulate(runs: list[Run], results: list[dict[str, Any]], keys: list[str], flows: bool) -> pa.Table:
    """The runs' table: each grid key a typed column (`typed_column`; its unit and the
    values as written in the field's metadata), then the seed and the summary or flows."""
    import pyarrow as pa

    written = {k: list(dict.fromkeys(dict(r.point)[k] for r in runs)) for k in keys}
    typed = {k: dict(zip(written[k], typed_column(written[k])[0])) for k in keys}
    fields = []
    for k in keys:
        arr = pa.array(list(typed[k].values()))
        unit = typed_column(written[k])[1]
        fields.append(pa.field(k, arr.type, metadata={"unit": unit, "written": json.dumps(written[k])}))
    if not flows:
        cols: list[Any] = [pa.array([typed[k][dict(r.point)[k]] for r in runs], f.type) for k, f in zip(keys, fields)]
        cols.append(pa.array([r.seed for r in runs], pa.int64()))
        cols += [pa.array([res["row"][c] for res in results]) for c in SUMMARY_COLUMNS]
        schema = pa.schema([*fields, pa.field("seed", pa.int64()), *(pa.field(c, a.type) for c, a in
                                                                     zip(SUMMARY_COLUMNS, cols[len(keys) + 1:]))])
        return pa.Table.from_arrays(cols, schema=schema)
    parts = []
    for run, res in zip(runs, results):
        t: pa.Table = res["flows"]
        n = t.num_rows
        front = [pa.array([typed[k][dict(run.point)[k]]] * n, f.type) for k, f in zip(keys, fields)]
        front.append(pa.array([run.seed] * n, pa.int64()))
        schema = pa.schema([*fields, pa.field("seed", pa.int64()), *t.schema])
        parts.append(pa.Table.from_arrays([*front, *t.columns], schema=schema))
    return pa.concat_tables(parts)


def metadata(scenario: Scenario, grid: Mapping[str, Sequence[str]], seeds: int) -> dict[str, str]:
    """The table's key-value metadata (the Parquet file's): what made it, enough to make
    it again."""
    from shortflow import __version__

    return {
        "shortflow_version": __version__,
        "scenario": scenario.source,
        "scenario_name": scenario.name,
        "overrides": json.dumps(list(scenario.overrides)),
        "grid": json.dumps({k: list(v) for k, v in grid.items()}),
        "seeds": str(seeds),
    }


def spread(table: pa.Table, metric: str, by: Sequence[str]) -> list[dict[str, Any]]:
    """Mean, standard deviation, 95 % confidence half-width (Student's t,
    `shortflow.stats.mean_ci`) and count of `metric` over the seeds, per combination of
    the `by` columns."""
    from shortflow.stats import mean_ci, mean_sd

    rows = table.select([*by, metric]).to_pylist()
    groups: dict[tuple[Any, ...], list[float]] = {}
    for r in rows:
        if r[metric] is not None:
            groups.setdefault(tuple(r[k] for k in by), []).append(float(r[metric]))
    out = []
    for key, xs in groups.items():
        mean, ci = mean_ci(xs)
        out.append({**dict(zip(by, key)), "mean": mean, "sd": mean_sd(xs)[1], "ci95": ci,
                    "n": len(xs), "min": min(xs), "max": max(xs)})
    return out


def plot(table: pa.Table, metric: str, x: str, path: str | os.PathLike[str]) -> None:
    """`metric` against grid key `x`: the seeds' mean with their min–max spread, one line
    per value of the other grid keys."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if x not in table.column_names or metric not in table.column_names:
        raise ValueError(f"--plot: the table has no column {x if x not in table.column_names else metric!r}")
    others = [c for c in table.column_names if c not in SUMMARY_COLUMNS and c not in (x, "seed", metric)]
    stats = spread(table, metric, [x, *others])
    fig, ax = plt.subplots(figsize=(6, 4))
    lines: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for s in stats:
        lines.setdefault(tuple(s[o] for o in others), []).append(s)

    for label, pts in lines.items():
        # A typed key's values are numbers (`typed_column`): the axis is their scale.
        pts.sort(key=lambda p: p[x])
        xs = [p[x] for p in pts]
        ys = [p["mean"] for p in pts]
        lo = [p["mean"] - p["min"] for p in pts]
        hi = [p["max"] - p["mean"] for p in pts]
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3,
                    label=", ".join(f"{o}={v}" for o, v in zip(others, label)) or metric)
    unit = (table.schema.field(x).metadata or {}).get(b"unit", b"").decode()
    ax.set_xlabel(f"{x} ({unit})" if unit else x)
    ax.set_ylabel(metric)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
