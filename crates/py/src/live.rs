//! Bindings of the live analysis (`shortflow_trace::live`): a `Watcher` object whose
//! reading runs with the GIL released, handing over rows as `analyze` returns columns.

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use shortflow_trace::diag::document::CaptureCounts;
use shortflow_trace::live::{LiveStats, WatchOptions, Watcher as CoreWatcher};
use shortflow_trace::read::live::LiveOptions;
use shortflow_trace::track::TrackerConfig;

use crate::error::CaptureError;
use crate::trace::{columns, summary};

/// A live analysis of one interface (see `shortflow.watch`).
#[pyclass(module = "shortflow._core")]
pub struct Watcher {
    /// None once finished.
    inner: Mutex<Option<CoreWatcher>>,
}

fn closed() -> PyErr {
    PyValueError::new_err("the watcher was finished")
}

fn stats_dict<'py>(py: Python<'py>, s: &LiveStats) -> PyResult<Bound<'py, PyAny>> {
    crate::document::convert(py, &CaptureCounts::of(s))
}

#[pymethods]
impl Watcher {
    // Defaults written as literals: the signature Python shows (and the stub's test reads)
    // prints an expression as `...`. 67108864 is 64 MiB.
    #[new]
    #[pyo3(signature = (interface, *, snaplen=256, promiscuous=false, buffer_bytes=67108864, filter=None,
                        idle_timeout_s=None, close_linger_s=None, max_connections=200_000, pcap=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        interface: &str,
        snaplen: u32,
        promiscuous: bool,
        buffer_bytes: u32,
        filter: Option<String>,
        idle_timeout_s: Option<f64>,
        close_linger_s: Option<f64>,
        max_connections: usize,
        pcap: Option<std::path::PathBuf>,
    ) -> PyResult<Self> {
        let defaults = TrackerConfig::default();
        let tracker = TrackerConfig {
            idle_timeout_ns: idle_timeout_s.map_or(defaults.idle_timeout_ns, |s| (s * 1e9) as u64),
            close_linger_ns: close_linger_s.map_or(defaults.close_linger_ns, |s| (s * 1e9) as u64),
            ..defaults
        };
        let capture = LiveOptions { snaplen, promiscuous, buffer_bytes, filter, ..LiveOptions::default() };
        let o = WatchOptions { capture, tracker, max_connections, pcap };
        let w = CoreWatcher::open(interface, &o).map_err(|e| CaptureError::new_err(e.to_string()))?;
        Ok(Self { inner: Mutex::new(Some(w)) })
    }

    /// Reads packets for about `seconds` with the GIL released.
    fn run_for(&self, py: Python<'_>, seconds: f64) -> PyResult<()> {
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let w = guard.as_mut().ok_or_else(closed)?;
        let stop = AtomicBool::new(false);
        let wait = Duration::from_secs_f64(seconds.max(0.0));
        py.detach(|| w.run_for(wait, &stop)).map_err(|e| CaptureError::new_err(e.to_string()))
    }

    /// The columns of the connections ended since the last call.
    fn take_ended<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let rows = guard.as_mut().ok_or_else(closed)?.take_ended();
        py.import("numpy")?;
        columns(py, rows)
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        stats_dict(py, &guard.as_mut().ok_or_else(closed)?.stats())
    }

    /// Ends every open connection; returns `(columns, summary, stats)`.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let w = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take().ok_or_else(closed)?;
        let (rows, s, stats) = py.detach(|| w.finish()).map_err(|e| CaptureError::new_err(e.to_string()))?;
        py.import("numpy")?;
        Ok((columns(py, rows)?, summary(py, &s)?, stats_dict(py, &stats)?))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Watcher>()
}
