//! One Python exception per core error kind, all under `ShortflowError`.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(shortflow, ShortflowError, PyException, "Base of every shortflow error.");
create_exception!(
    shortflow,
    TraceReadError,
    ShortflowError,
    "A capture file could not be read (names the file and byte offset)."
);

create_exception!(
    shortflow,
    FilterError,
    ShortflowError,
    "A filter expression libpcap does not accept (its own message), or libpcap is missing."
);

create_exception!(
    shortflow,
    CaptureError,
    ShortflowError,
    "A live interface could not be opened or read (names the interface; says which capability is missing)."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ShortflowError", py.get_type::<ShortflowError>())?;
    m.add("TraceReadError", py.get_type::<TraceReadError>())?;
    m.add("FilterError", py.get_type::<FilterError>())?;
    m.add("CaptureError", py.get_type::<CaptureError>())?;
    Ok(())
}
