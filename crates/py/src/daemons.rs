//! The daemons' command lines, run inside the extension module: a package installed with
//! pip carries no daemon binaries, so `python -m shortflow.host.daemons netem|synopt ARGS…`
//! lands here. Conversion only: the daemon is the crate's own `run_cli`.

use std::ffi::OsString;

use pyo3::prelude::*;

/// Runs the link emulator's command line (`argv[0]` is the program name) until it stops;
/// returns its exit status. The GIL is released: the emulator owns the process.
#[pyfunction]
fn run_netem(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| shortflow_netem::run_cli(argv.into_iter().map(OsString::from)))
}

/// Runs the SYN optimizer's command line (`argv[0]` is the program name) until it stops;
/// returns its exit status. The GIL is released: the daemon owns the process (its signal
/// handlers, its real-time priority).
#[pyfunction]
fn run_synopt(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| shortflow_synopt::cli::run_cli(argv.into_iter().map(OsString::from)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_netem, m)?)?;
    m.add_function(wrap_pyfunction!(run_synopt, m)?)
}
