//! `shortflow._core`: the Python face of the Rust crates. Conversion only: every decision
//! is made in the core crates.

use pyo3::prelude::*;

mod abt;
mod advise;
mod bpf;
mod daemons;
mod document;
mod error;
mod live;
mod segments;
mod sim;
mod stream;
mod trace;
mod units;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    error::register(m)?;
    abt::register(m)?;
    advise::register(m)?;
    daemons::register(m)?;
    bpf::register(m)?;
    trace::register(m)?;
    live::register(m)?;
    segments::register(m)?;
    sim::register(m)?;
    stream::register(m)?;
    units::register(m)?;
    Ok(())
}
