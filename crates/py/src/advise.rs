//! Bindings of `shortflow_sim::advise`: connection models in as dicts, the replays' verdict
//! out as dicts. A model is a dict: `conn_id`, `rtt_s`, `lost_syns`, `lost_synacks`,
//! `epochs` (request, response_delay_us, response, interval_us), `lost_c2s`, `lost_s2c`
//! (stream offsets), `server_iw` (None or segments), `observed_s`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use shortflow_sim::advise::{self, ConnModel, Side};

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

#[pyfunction]
fn advise_run<'py>(
    py: Python<'py>,
    models: Vec<Bound<'py, PyDict>>,
    vantage: &str,
    threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let models: Vec<ConnModel> = models.iter().enumerate().map(|(i, d)| model(i, d)).collect::<PyResult<_>>()?;
    let side = side(vantage)?;
    let a = py.detach(|| advise::advise(&models, side, threads));
    Ok(pythonize::pythonize(py, &a)?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(advise_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(advise_run, m)?)?;
    Ok(())
}
