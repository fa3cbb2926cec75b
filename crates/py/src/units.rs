//! The one unit grammar (`shortflow_scenario::units`) for Python: conversion only.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use shortflow_scenario::units::{self, UnitError};

fn to_py(e: UnitError, what: Option<String>) -> PyErr {
    let e = match what {
        Some(w) => e.for_subject(w),
        None => e,
    };
    PyValueError::new_err(e.to_string())
}

/// Nanoseconds in a duration such as `"200ms"`; `what` names the value in the error.
#[pyfunction]
#[pyo3(signature = (text, what=None))]
fn duration_ns(text: &str, what: Option<String>) -> PyResult<u64> {
    units::duration_ns(text).map_err(|e| to_py(e, what))
}

/// Bytes in a size such as `"35kB"`; `what` names the value in the error.
#[pyfunction]
#[pyo3(signature = (text, what=None))]
fn size_bytes(text: &str, what: Option<String>) -> PyResult<u64> {
    units::size_bytes(text).map_err(|e| to_py(e, what))
}

/// Bits per second in a rate such as `"10Mbit"`; `what` names the value in the error.
#[pyfunction]
#[pyo3(signature = (text, what=None))]
fn rate_bps(text: &str, what: Option<String>) -> PyResult<u64> {
    units::rate_bps(text).map_err(|e| to_py(e, what))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(duration_ns, m)?)?;
    m.add_function(wrap_pyfunction!(size_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(rate_bps, m)?)?;
    Ok(())
}
