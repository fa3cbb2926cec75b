//! Bindings of `shortflow_sim::advise`: connection models in as dicts, the replays' verdict
//! out as dicts. A model is a dict: `conn_id`, `rtt_s`, `lost_syns`, `lost_synacks`,
//! `epochs` (request, response_delay_us, response, interval_us), `lost_c2s`, `lost_s2c`
//! (stream offsets), `server_iw` (None or segments), `observed_s`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use shortflow_sim::advise::{self, ConnModel, Interval, Side};

fn model(i: usize, d: &Bound<'_, PyDict>) -> PyResult<ConnModel> {
    let get = |k: &str| d.get_item(k)?.ok_or_else(|| PyValueError::new_err(format!("model {i}: no {k:?}")));
    let epochs: Vec<(u64, u64, u64, u64)> = get("epochs")?.extract()?;
    Ok(ConnModel {
        conn_id: get("conn_id")?.extract()?,
        rtt_s: get("rtt_s")?.extract()?,
        lost_syns: get("lost_syns")?.extract()?,
        lost_synacks: get("lost_synacks")?.extract()?,
        epochs: crate::abt::epochs_of(epochs),
        lost_c2s: get("lost_c2s")?.extract()?,
        lost_s2c: get("lost_s2c")?.extract()?,
        server_iw: get("server_iw")?.extract()?,
        observed_s: get("observed_s")?.extract()?,
    })
}

fn side(vantage: &str) -> PyResult<Side> {
    match vantage {
        "server" => Ok(Side::Server),
        "client" => Ok(Side::Client),
        other => Err(PyValueError::new_err(format!("vantage {other:?}: expected \"server\" or \"client\""))),
    }
}

/// The TOML scenario of one connection model (`shortflow simulate` reads it).
#[pyfunction]
fn advise_scenario(m: Bound<'_, PyDict>) -> PyResult<String> {
    Ok(model(0, &m)?.scenario_toml())
}

fn interval(py: Python<'_>, x: Interval) -> PyResult<Py<PyAny>> {
    Ok((x.low, x.high).into_pyobject(py)?.into_any().unbind())
}

/// Replays `models` unchanged and under the vantage's fixes on `threads` threads: a dict
/// with `baseline` (one dict per model), `faithful_ids`, `fixes` (best first) and `replays`.
#[pyfunction]
fn advise_run<'py>(
    py: Python<'py>,
    models: Vec<Bound<'py, PyDict>>,
    vantage: &str,
    threads: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let models: Vec<ConnModel> = models.iter().enumerate().map(|(i, d)| model(i, d)).collect::<PyResult<_>>()?;
    let side = side(vantage)?;
    let a = py.detach(|| advise::advise(&models, side, threads));
    let out = PyDict::new(py);
    let baseline = PyList::empty(py);
    for b in &a.baseline {
        let d = PyDict::new(py);
        d.set_item("conn_id", b.conn_id)?;
        d.set_item("observed_s", b.observed_s)?;
        d.set_item("replay_s", b.replay_s)?;
        d.set_item("faithful", b.faithful)?;
        d.set_item("reason", &b.reason)?;
        baseline.append(d)?;
    }
    let fixes = PyList::empty(py);
    for r in &a.fixes {
        let d = PyDict::new(py);
        d.set_item("fix", &r.fix.name)?;
        d.set_item("apply", &r.fix.apply)?;
        d.set_item("scenario_overrides", r.fix.overrides.clone())?;
        d.set_item("connections_helped", r.connections_helped)?;
        d.set_item("saved_s_total", r.saved_s_total)?;
        d.set_item("saved_s_median", r.saved_s_median)?;
        d.set_item("saved_s_p95", r.saved_s_p95)?;
        d.set_item("saved_s_total_ci", interval(py, r.total_ci)?)?;
        d.set_item("saved_s_median_ci", interval(py, r.median_ci)?)?;
        d.set_item("saved_s_p95_ci", interval(py, r.p95_ci)?)?;
        d.set_item("extra_packets", r.extra_packets)?;
        d.set_item("spurious_retransmissions", r.spurious_retransmissions)?;
        d.set_item("connections_slower", r.connections_slower)?;
        d.set_item("saved_s", r.saved_s.clone())?;
        fixes.append(d)?;
    }
    out.set_item("baseline", baseline)?;
    out.set_item("faithful_ids", a.faithful_ids.clone())?;
    out.set_item("fixes", fixes)?;
    out.set_item("replays", a.replays)?;
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(advise_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(advise_run, m)?)?;
    Ok(())
}
