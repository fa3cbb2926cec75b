//! Bindings of `shortflow_trace::stream`: a `ConnectionStream` whose reading runs on a
//! thread of its own, handing over the ended connections' rows and exchanges in batches
//! as `analyze` returns its columns; at most two batches wait, so the reading keeps pace
//! with the consumer and memory follows the connections open.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use shortflow_trace::stream::{stream_file, Batch};
use shortflow_trace::track::TrackerConfig;
use shortflow_trace::{Analysis, ConnectionTable, ExchangeTable, FileStats, Options, Progress, Summary};

use crate::trace::{columns, compile_filter, exchange_columns, to_python};

type Reading = JoinHandle<(Summary, Vec<FileStats>)>;

/// The ended connections of captures, batch by batch (see `shortflow.advise`).
#[pyclass(module = "shortflow._core")]
pub struct ConnectionStream {
    batches: Mutex<Receiver<Batch>>,
    reading: Mutex<Option<Reading>>,
    progress: Arc<Progress>,
}

#[pymethods]
impl ConnectionStream {
    #[new]
    #[pyo3(signature = (paths, *, rows=4096, idle_timeout_s=None, close_linger_s=None, filter=None))]
    fn new(
        paths: Vec<PathBuf>,
        rows: usize,
        idle_timeout_s: Option<f64>,
        close_linger_s: Option<f64>,
        filter: Option<&str>,
    ) -> PyResult<Self> {
        if paths.is_empty() {
            return Err(PyValueError::new_err("no trace given"));
        }
        let defaults = TrackerConfig::default();
        let tracker = TrackerConfig {
            idle_timeout_ns: idle_timeout_s.map_or(defaults.idle_timeout_ns, |s| (s * 1e9) as u64),
            close_linger_ns: close_linger_s.map_or(defaults.close_linger_ns, |s| (s * 1e9) as u64),
            ..defaults
        };
        let opts = Options { tracker, filter: compile_filter(filter)?, ..Options::default() };
        let progress = Arc::new(Progress::default());
        let (tx, rx) = sync_channel::<Batch>(1);
        let state = progress.clone();
        let reading = std::thread::spawn(move || {
            let mut summary = Summary::default();
            let mut files = Vec::with_capacity(paths.len());
            for (i, path) in paths.iter().enumerate() {
                let (s, stats) = stream_file(path, i as u32, &opts, &state, rows, |b| tx.send(b).is_ok());
                summary.add(&s);
                files.push(stats);
            }
            (summary, files)
        });
        Ok(Self { batches: Mutex::new(rx), reading: Mutex::new(Some(reading)), progress })
    }

    /// The next batch as `(columns, exchange_columns)` (numpy arrays, as `analyze`'s), or
    /// None when every capture has been read. Waits with the GIL released.
    fn next_batch<'py>(&self, py: Python<'py>) -> PyResult<Option<(Bound<'py, PyDict>, Bound<'py, PyDict>)>> {
        let next = py.detach(|| self.batches.lock().unwrap_or_else(|p| p.into_inner()).recv());
        let Ok(b) = next else { return Ok(None) };
        py.import("numpy")?;
        Ok(Some((columns(py, b.table)?, exchange_columns(py, b.exchanges)?)))
    }

    /// After the last batch: `analyze`'s answer without its tables (``summary``,
    /// ``dictionaries``, ``files``). Stops the reading first if batches were left.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let reading = self.reading.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(reading) = reading else { return Err(PyValueError::new_err("the stream was finished")) };
        self.progress.cancel.store(true, Ordering::Relaxed);
        // The reader may wait on a full channel: empty it so it sees the cancel.
        let (summary, files) = py.detach(|| {
            let rx = self.batches.lock().unwrap_or_else(|p| p.into_inner());
            while !reading.is_finished() {
                let _ = rx.recv_timeout(std::time::Duration::from_millis(10));
            }
            reading.join().expect("the reading thread does not panic")
        });
        let a = Analysis { table: ConnectionTable::default(), exchanges: ExchangeTable::default(), summary, files };
        to_python(py, a, false, false)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ConnectionStream>()
}
