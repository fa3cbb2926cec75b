//! Bindings of `shortflow-sim`: check and run scenario files. Conversion only.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use pyo3::create_exception;
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use shortflow_sim::{scenario, Budget, PcapStream, RunOptions};

use crate::error::ShortflowError;

create_exception!(
    shortflow,
    ScenarioError,
    ShortflowError,
    "A scenario file is invalid; the message names the file and the key."
);
create_exception!(
    shortflow,
    SimulationLimitError,
    ShortflowError,
    "A run reached its memory or event budget; the message says what to change."
);

/// Why a run produced no report: its budget, or the capture file.
enum RunFailure {
    Limit(shortflow_sim::LimitError),
    Io(std::io::Error),
}

fn scenario_error(py: Python<'_>, e: shortflow_sim::ScenarioError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let value = err.value(py);
    let _ = value.setattr("file", e.file.as_str());
    let _ = value.setattr("key", e.key.as_str());
    err
}

/// Checks a scenario (with overrides) and returns its name.
#[pyfunction]
#[pyo3(signature = (scenario_text, source_name, overrides=Vec::new()))]
fn check_scenario(py: Python<'_>, scenario_text: &str, source_name: &str, overrides: Vec<String>) -> PyResult<String> {
    scenario::load(scenario_text, source_name, &overrides).map(|s| s.name).map_err(|e| scenario_error(py, e))
}

/// The resolved scenario (every default filled in, every value normalised: durations in
/// ns, sizes in bytes, rates in bit/s), as JSON text: what the testbed realises.
#[pyfunction]
#[pyo3(signature = (scenario_text, source_name, overrides=Vec::new()))]
fn resolve_scenario(py: Python<'_>, scenario_text: &str, source_name: &str, overrides: Vec<String>) -> PyResult<String> {
    let sc = scenario::load(scenario_text, source_name, &overrides).map_err(|e| scenario_error(py, e))?;
    Ok(serde_json::to_string(&sc).expect("a resolved scenario is plain data"))
}

/// The named stack profiles as JSON text: {name: {"source": citation, "config": StackConfig}}.
#[pyfunction]
fn stack_profiles() -> String {
    use shortflow_scenario::profile;
    let all: serde_json::Map<String, serde_json::Value> = profile::PROFILE_NAMES
        .iter()
        .map(|n| {
            let v = serde_json::json!({ "source": profile::profile_source(n), "config": profile::profile(n) });
            (n.to_string(), v)
        })
        .collect();
    serde_json::Value::Object(all).to_string()
}

/// Every Linux knob behind a stack-profile field and Linux's timer constants, as JSON text
/// (`shortflow_scenario::kernel::table_json`).
#[pyfunction]
fn kernel_knobs() -> String {
    shortflow_scenario::kernel::table_json().to_string()
}

/// Every key of the scenario file (key, kind, unit, default, range, help), as JSON text.
#[pyfunction]
fn scenario_keys() -> String {
    serde_json::to_string(&shortflow_scenario::schema::keys()).expect("plain data")
}

/// The keys as the Markdown table of docs/scenario.md.
#[pyfunction]
fn scenario_keys_markdown() -> String {
    shortflow_scenario::schema::keys_markdown()
}

/// The JSON Schema of a scenario file, as pretty JSON text (ends with a newline).
#[pyfunction]
fn scenario_schema() -> String {
    serde_json::to_string_pretty(&shortflow_scenario::schema::json_schema()).expect("a schema is JSON") + "\n"
}

/// Runs a scenario; returns the report as JSON text. With `pcap`, writes what the
/// scenario's capture point saw; with `rate`, a rate-driven workload runs at that many
/// connections/s instead of its own rate or load. Runs with the GIL released, within
/// `max_memory` bytes and `max_events` events (0: no limit), raising SimulationLimitError beyond.
/// With `totals_only`, the report keeps the run's totals and no connection.
#[pyfunction]
#[pyo3(signature = (scenario_text, source_name, overrides=Vec::new(), *, pcap=None, timeline=false, rate=None, max_memory=0, max_events=0, totals_only=false))]
#[allow(clippy::too_many_arguments)]
fn simulate(
    py: Python<'_>,
    scenario_text: &str,
    source_name: &str,
    overrides: Vec<String>,
    pcap: Option<PathBuf>,
    timeline: bool,
    rate: Option<f64>,
    max_memory: u64,
    max_events: u64,
    totals_only: bool,
) -> PyResult<String> {
    let sc = scenario::load(scenario_text, source_name, &overrides).map_err(|e| scenario_error(py, e))?;
    shortflow_sim::workload::abt::check_replayable(&sc, source_name).map_err(|e| scenario_error(py, e))?;
    if rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
        return Err(pyo3::exceptions::PyValueError::new_err("rate: connections per second must be above 0"));
    }
    let opts = RunOptions { capture: pcap.is_some(), timeline, totals_only };
    let budget = Budget { max_memory, max_events };
    py.detach(|| -> Result<String, RunFailure> {
        let Some(path) = &pcap else {
            let (report, _) = shortflow_sim::try_run(sc, opts, rate, &budget).map_err(RunFailure::Limit)?;
            return Ok(report.to_json());
        };
        // The pcap is written while the run goes: opened (and its header written) first,
        // so an unwritable path fails before the run; removed again when the run fails,
        // rather than left truncated.
        let named = |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
        let file = File::create(path).map_err(|e| RunFailure::Io(named(e)))?;
        let run = || -> Result<String, RunFailure> {
            let mut stream = PcapStream::for_scenario(BufWriter::new(file), &sc).map_err(|e| RunFailure::Io(named(e)))?;
            let report = shortflow_sim::try_run_to(sc, opts, rate, &budget, &mut stream).map_err(RunFailure::Limit)?;
            stream.finish().map_err(|e| RunFailure::Io(named(e)))?;
            Ok(report.to_json())
        };
        run().inspect_err(|_| {
            let _ = std::fs::remove_file(path);
        })
    })
    .map_err(|e| match e {
        RunFailure::Limit(e) => SimulationLimitError::new_err(e.to_string()),
        RunFailure::Io(e) => PyOSError::new_err(e.to_string()),
    })
}

/// The keys of a connection's report (`simulate --json`), in order: (key, unit, Rust type, meaning).
#[pyfunction]
fn report_fields() -> Vec<(&'static str, &'static str, &'static str, String)> {
    shortflow_sim::ConnReport::fields().iter().map(|f| (f.name, f.unit, f.ty, f.meaning())).collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(report_fields, m)?)?;
    m.add("FLOW_COLUMNS", shortflow_sim::report::FLOW_COLUMNS.iter().map(|c| (c.name, c.key, c.arrow)).collect::<Vec<_>>())?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("SimulationLimitError", m.py().get_type::<SimulationLimitError>())?;
    m.add_function(wrap_pyfunction!(check_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(stack_profiles, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_knobs, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_keys, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_keys_markdown, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_schema, m)?)?;
    Ok(())
}
