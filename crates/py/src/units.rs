//! The one unit grammar (`shortflow_scenario::units`) for Python: conversion only.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use shortflow_scenario::units::{self, UnitError};

use crate::error::ShortflowError;

/// `shortflow.UnitError`: a `ShortflowError` and a `ValueError` both (a bad unit is a bad
/// value: callers that catch `ValueError` keep working). Made with `type()` at first use
/// because `create_exception!` takes one base only.
static UNIT_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn unit_error_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    UNIT_ERROR
        .get_or_try_init(py, || {
            let bases = PyTuple::new(py, [py.get_type::<ShortflowError>(), py.get_type::<PyValueError>()])?;
            let ns = PyDict::new(py);
            ns.set_item("__module__", "shortflow")?;
            ns.set_item("__doc__", "A duration, size or rate that could not be read; the message names the option or key.")?;
            let t = py.get_type::<PyType>().call1(("UnitError", bases, ns))?;
            Ok(t.cast_into::<PyType>()?.unbind())
        })
        .map(|t| t.bind(py))
}

fn to_py(py: Python<'_>, e: UnitError, what: Option<String>) -> PyErr {
    let e = match what {
        Some(w) => e.for_subject(w),
        None => e,
    };
    let raise = || -> PyResult<PyErr> {
        let value = unit_error_type(py)?.call1((e.to_string(),))?;
        value.setattr("quantity", e.quantity.to_string())?;
        value.setattr("text", e.text.as_str())?;
        Ok(PyErr::from_value(value))
    };
    raise().unwrap_or_else(|err| err)
}

/// Nanoseconds in a duration such as `"200ms"`; `what` names the value in the error.
#[pyfunction]
#[pyo3(signature = (text, what=None))]
fn duration_ns(py: Python<'_>, text: &str, what: Option<String>) -> PyResult<u64> {
    units::duration_ns(text).map_err(|e| to_py(py, e, what))
}

/// Bytes in a size such as `"35kB"`; `what` names the value in the error.
#[pyfunction]
#[pyo3(signature = (text, what=None))]
fn size_bytes(py: Python<'_>, text: &str, what: Option<String>) -> PyResult<u64> {
    units::size_bytes(text).map_err(|e| to_py(py, e, what))
}

/// Bits per second in a rate such as `"10Mbit"`; `what` names the value in the error.
#[pyfunction]
#[pyo3(signature = (text, what=None))]
fn rate_bps(py: Python<'_>, text: &str, what: Option<String>) -> PyResult<u64> {
    units::rate_bps(text).map_err(|e| to_py(py, e, what))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("UnitError", unit_error_type(m.py())?)?;
    m.add_function(wrap_pyfunction!(duration_ns, m)?)?;
    m.add_function(wrap_pyfunction!(size_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(rate_bps, m)?)?;
    Ok(())
}
