//! The one conversion of a result document to Python: a `Serialize` value becomes dicts
//! (structs and maps, keys in declaration order), lists (sequences), tuples (tuples and
//! arrays), int, float, str, bool and None. Columns for numpy stay arrays (`columns`).

use pyo3::prelude::*;
use serde::Serialize;

/// `value` as Python objects.
pub fn convert<'py, T: Serialize + ?Sized>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, value)?)
}
