//! The BPF objects compiled at build time (`build.rs`), handed to Python as bytes.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// `tune.bpf.o` as built with the extension; empty when clang was missing at build time.
const TUNE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tune.bpf.o"));

/// The compiled object of BPF program `name`, or None when it was not built in.
#[pyfunction]
fn bpf_object<'py>(py: Python<'py>, name: &str) -> Option<Bound<'py, PyBytes>> {
    let obj = match name {
        "tune" => TUNE,
        _ => return None,
    };
    (!obj.is_empty()).then(|| PyBytes::new(py, obj))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(bpf_object, m)?)
}
