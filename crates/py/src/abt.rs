//! Bindings of `shortflow_scenario::abt`: tmix's connection-vector text, read and written.
//! A vector is a dict: `start_us`, `id`, `window` (initiator, acceptor), `min_rtt_us`,
//! `loss` (initiator→acceptor, acceptor→initiator), and either `epochs`, a list of
//! (request, response_delay_us, response, interval_us), or `concurrent`, the initiator's
//! and the acceptor's lists of (bytes, wait_us).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::Serialize;
use shortflow_scenario::abt::{self, Adu, ConnVector, Epoch, Units};

use crate::document::convert;

type Epochs = Vec<(u64, u64, u64, u64)>;
type Sides = (Vec<(u64, u64)>, Vec<(u64, u64)>);

/// Epochs given as (request, response_delay_us, response, interval_us) tuples.
pub(crate) fn epochs_of(tuples: Epochs) -> Vec<Epoch> {
    tuples
        .into_iter()
        .map(|(request, response_delay_us, response, interval_us)| Epoch { request, response_delay_us, response, interval_us })
        .collect()
}

/// A vector as Python sees it: either `epochs` or `concurrent` is there.
#[derive(Serialize)]
struct VectorDoc {
    start_us: u64,
    id: u64,
    window: [u64; 2],
    min_rtt_us: u64,
    loss: [f64; 2],
    #[serde(skip_serializing_if = "Option::is_none")]
    epochs: Option<Epochs>,
    #[serde(skip_serializing_if = "Option::is_none")]
    concurrent: Option<Sides>,
}

impl VectorDoc {
    fn of(v: ConnVector) -> Self {
        let (epochs, concurrent) = match v.units {
            Units::Sequential(epochs) => {
                (Some(epochs.iter().map(|e| (e.request, e.response_delay_us, e.response, e.interval_us)).collect()), None)
            }
            Units::Concurrent([a, b]) => {
                let side = |s: &[Adu]| s.iter().map(|x| (x.bytes, x.wait_us)).collect::<Vec<_>>();
                (None, Some((side(&a), side(&b))))
            }
        };
        VectorDoc { start_us: v.start_us, id: v.id, window: v.window, min_rtt_us: v.min_rtt_us, loss: v.loss, epochs, concurrent }
    }
}

/// The vectors of a tmix connection-vector text; a ValueError names the line at fault.
#[pyfunction]
fn abt_parse<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    let vectors = abt::parse(text).map_err(|e| PyValueError::new_err(e.to_string()))?;
    convert(py, &vectors.into_iter().map(VectorDoc::of).collect::<Vec<_>>())
}

/// tmix's text of `vectors` (dicts as `abt_parse` returns them).
#[pyfunction]
fn abt_format(vectors: Vec<Bound<'_, PyDict>>) -> PyResult<String> {
    let mut out = Vec::with_capacity(vectors.len());
    for (i, d) in vectors.iter().enumerate() {
        let get = |k: &str| d.get_item(k)?.ok_or_else(|| PyValueError::new_err(format!("vector {i}: no {k:?}")));
        let window: (u64, u64) = get("window")?.extract()?;
        let loss: (f64, f64) = get("loss")?.extract()?;
        let units = match (d.get_item("epochs")?, d.get_item("concurrent")?) {
            (Some(e), None) => Units::Sequential(epochs_of(e.extract()?)),
            (None, Some(c)) => {
                let (a, b): Sides = c.extract()?;
                let side = |s: Vec<(u64, u64)>| s.into_iter().map(|(bytes, wait_us)| Adu { bytes, wait_us }).collect();
                Units::Concurrent([side(a), side(b)])
            }
            _ => return Err(PyValueError::new_err(format!("vector {i}: give either \"epochs\" or \"concurrent\""))),
        };
        out.push(ConnVector {
            start_us: get("start_us")?.extract()?,
            id: get("id")?.extract()?,
            window: [window.0, window.1],
            min_rtt_us: get("min_rtt_us")?.extract()?,
            loss: [loss.0, loss.1],
            units,
        });
    }
    Ok(abt::format(&out))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(abt_parse, m)?)?;
    m.add_function(wrap_pyfunction!(abt_format, m)?)?;
    Ok(())
}
