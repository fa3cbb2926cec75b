//! Bindings of `shortflow_sim::advise`: connection models in as dicts, the replays' verdict
//! out as dicts, batch by batch. A model is a dict: `conn_id`, `rtt_s`, `lost_syns`, `lost_synacks`,
//! `epochs` (request, response_delay_us, response, interval_us), `lost_c2s`, `lost_s2c`
//! (stream offsets), `server_iw` (None or segments), `options` (None or SACK, timestamps,
//! window scaling), `client_mss`, `server_mss` (None or bytes), `client_rto_min_s`, `server_rto_min_s` (None or s),
//! `bottleneck_bps`, `queueing_s` (None or the path's), `client_ack_every_segment`,
//! `server_ack_every_segment` (None or bool), `client_delack_s`, `server_delack_s` (None or s), `observed_s`.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::Serialize;
use shortflow_sim::advise::{
    faithful_baseline, groups_effects, AccountPart, Baseline, ConnModel, Fix, Member, MemberEffect, Outcome, Ranking, Side,
};

use crate::document::convert;

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
        options: get("options")?.extract()?,
        mss: [get("client_mss")?.extract()?, get("server_mss")?.extract()?],
        rto_min_s: [get("client_rto_min_s")?.extract()?, get("server_rto_min_s")?.extract()?],
        bottleneck_bps: get("bottleneck_bps")?.extract()?,
        queueing_s: get("queueing_s")?.extract()?,
        ack_every_segment: [get("client_ack_every_segment")?.extract()?, get("server_ack_every_segment")?.extract()?],
        delack_s: [get("client_delack_s")?.extract()?, get("server_delack_s")?.extract()?],
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

fn io_error(e: std::io::Error) -> PyErr {
    PyOSError::new_err(format!("advise's spill of per-connection savings: {e}"))
}

/// A replay's outcome as Python sees it: (duration_s or None, extra packets, spurious).
type OutcomeTuple = (Option<f64>, u32, u32);

fn outcome_tuple(o: &Outcome) -> OutcomeTuple {
    (o.duration_s, o.extra_packets, o.spurious)
}

/// What `replay_batch` hands Python.
#[derive(Serialize)]
struct BatchDoc<'a> {
    baseline: &'a [Baseline],
    faithful: Vec<(usize, OutcomeTuple)>,
    saved_s: &'a [Vec<f64>],
}

/// An account's part as `take_parts` hands it over and `absorb` takes it back.
#[derive(Serialize)]
struct PartDoc<'a> {
    helped: u64,
    slower: u64,
    extra: i64,
    spurious: i64,
    total: f64,
    saved: &'a [f64],
}

fn fix_of(d: &Bound<'_, PyDict>) -> PyResult<Fix> {
    let get = |k: &str| d.get_item(k)?.ok_or_else(|| PyValueError::new_err(format!("fix: no {k:?}")));
    Ok(Fix { name: get("fix")?.extract()?, apply: get("apply")?.extract()?, overrides: get("scenario_overrides")?.extract()? })
}

/// The faithful models of a batch (indices) with their baseline outcomes, as
/// `AdviseRanking.replay_batch` finds them, without replaying any fix.
#[pyfunction]
fn advise_faithful(py: Python<'_>, batch: Vec<Bound<'_, PyDict>>, threads: usize) -> PyResult<Vec<(usize, OutcomeTuple)>> {
    let ms = models(&batch)?;
    let found = py.detach(|| faithful_baseline(&ms, threads));
    Ok(found.iter().map(|(i, o)| (*i, outcome_tuple(o))).collect())
}

fn models(list: &[Bound<'_, PyDict>]) -> PyResult<Vec<ConnModel>> {
    list.iter().enumerate().map(|(i, d)| model(i, d)).collect()
}

/// The fixes' accounts over a capture's connections, fed in batches (`shortflow_sim::
/// advise::Ranking`): `replay_batch` per batch of models, then `pairs` and `replay_pairs`
/// over the faithful ones, then `finish`.
#[pyclass(module = "shortflow._core")]
pub struct AdviseRanking {
    /// None once finished.
    inner: Mutex<Option<Ranking>>,
}

fn finished() -> PyErr {
    PyValueError::new_err("the ranking was finished")
}

impl AdviseRanking {
    fn with<T>(&self, f: impl FnOnce(&mut Ranking) -> PyResult<T>) -> PyResult<T> {
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(guard.as_mut().ok_or_else(finished)?)
    }
}

#[pymethods]
impl AdviseRanking {
    /// The accounts of the vantage's fixes; per-connection savings spill to files in
    /// `spill_dir` (None: kept in memory).
    #[new]
    #[pyo3(signature = (vantage, spill_dir=None))]
    fn new(vantage: &str, spill_dir: Option<PathBuf>) -> PyResult<Self> {
        let r = Ranking::new(side(vantage)?, spill_dir.as_deref()).map_err(io_error)?;
        Ok(Self { inner: Mutex::new(Some(r)) })
    }

    /// Replays a batch of models unchanged and under every single fix on `threads`
    /// threads: ``baseline`` (a dict per model), ``faithful`` ((index, outcome) per
    /// faithful model; an outcome is (duration_s, extra_packets, spurious)) and ``saved_s``
    /// (per fix, in `fixes()` order, seconds saved per faithful model).
    fn replay_batch<'py>(&self, py: Python<'py>, batch: Vec<Bound<'py, PyDict>>, threads: usize) -> PyResult<Bound<'py, PyAny>> {
        let ms = models(&batch)?;
        let b = self.with(|r| py.detach(|| r.replay_batch(&ms, threads)).map_err(io_error))?;
        let faithful = b.faithful.iter().map(|(i, o)| (*i, outcome_tuple(o))).collect();
        convert(py, &BatchDoc { baseline: &b.baseline, faithful, saved_s: &b.saved_s })
    }

    /// The fixes accounted so far, in order: dicts with ``fix``, ``apply``,
    /// ``scenario_overrides``.
    fn fixes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.with(|r| convert(py, &r.fixes().collect::<Vec<_>>()))
    }

    /// After every batch: the pairs of the best three single fixes, as `fixes()` gives
    /// them; replay the faithful models under them with `replay_pairs`.
    fn pairs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pairs = self.with(|r| r.pairs().map_err(io_error))?;
        convert(py, &pairs)
    }

    /// Replays faithful models with their baseline outcomes (as `replay_batch` gave them)
    /// under the pairs; each pair's savings per model.
    fn replay_pairs(
        &self,
        py: Python<'_>,
        batch: Vec<Bound<'_, PyDict>>,
        outcomes: Vec<OutcomeTuple>,
        threads: usize,
    ) -> PyResult<Vec<Vec<f64>>> {
        if batch.len() != outcomes.len() {
            return Err(PyValueError::new_err(format!("{} models, {} outcomes", batch.len(), outcomes.len())));
        }
        let both: Vec<(ConnModel, Outcome)> = models(&batch)?
            .into_iter()
            .zip(outcomes)
            .map(|(m, (duration_s, extra_packets, spurious))| (m, Outcome { duration_s, extra_packets, spurious }))
            .collect();
        self.with(|r| py.detach(|| r.replay_pairs(&both, threads)).map_err(io_error))
    }

    /// Adds accounts for `pairs` (dicts as `pairs()` gives them, from another ranking),
    /// to replay with `replay_pairs`.
    fn add_pairs(&self, pairs: Vec<Bound<'_, PyDict>>) -> PyResult<()> {
        let fixes = pairs.iter().map(fix_of).collect::<PyResult<Vec<Fix>>>()?;
        self.with(|r| r.add_pairs(fixes).map_err(io_error))
    }

    /// The number of single fixes (the pairs' accounts follow them).
    fn singles(&self) -> PyResult<usize> {
        self.with(|r| Ok(r.singles()))
    }

    /// The accounts from the `first`-th on as parts (dicts: ``helped``, ``slower``,
    /// ``extra``, ``spurious``, ``total``, ``saved``), emptied, and the (connections,
    /// faithful, replays) counted so far, zeroed: for another ranking's `absorb`.
    fn take_parts<'py>(&self, py: Python<'py>, first: usize) -> PyResult<(Bound<'py, PyAny>, [u64; 3])> {
        let (parts, counts) = self.with(|r| {
            if first > r.fixes().count() {
                return Err(PyValueError::new_err(format!("no account {first}")));
            }
            r.take_parts(first).map_err(io_error)
        })?;
        let docs: Vec<PartDoc> = parts
            .iter()
            .map(|p| PartDoc {
                helped: p.helped,
                slower: p.slower,
                extra: p.extra,
                spurious: p.spurious,
                total: p.total,
                saved: &p.saved,
            })
            .collect();
        Ok((convert(py, &docs)?, counts))
    }

    /// Adds another ranking's parts (`take_parts`) to the accounts from the `first`-th on,
    /// and its counts.
    fn absorb<'py>(&self, first: usize, parts: Vec<Bound<'py, PyDict>>, counts: [u64; 3]) -> PyResult<()> {
        fn get<'py>(d: &Bound<'py, PyDict>, k: &str) -> PyResult<Bound<'py, PyAny>> {
            d.get_item(k)?.ok_or_else(|| PyValueError::new_err(format!("part: no {k:?}")))
        }
        let parts = parts
            .iter()
            .map(|d| {
                Ok(AccountPart {
                    helped: get(d, "helped")?.extract()?,
                    slower: get(d, "slower")?.extract()?,
                    extra: get(d, "extra")?.extract()?,
                    spurious: get(d, "spurious")?.extract()?,
                    total: get(d, "total")?.extract()?,
                    saved: get(d, "saved")?.extract()?,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        self.with(|r| {
            if first + parts.len() > r.fixes().count() {
                return Err(PyValueError::new_err(format!("{} parts from account {first}: more than the accounts", parts.len())));
            }
            r.absorb(first, &parts, counts).map_err(io_error)
        })
    }

    /// Connection replays run so far.
    fn replays(&self) -> PyResult<u64> {
        self.with(|r| Ok(r.replays()))
    }

    /// The fixes best first, each a dict (``fix``, ``apply``, ``scenario_overrides``,
    /// ``connections_helped``, ``saved_s_total``/``_median``/``_p95`` and their
    /// ``*_ci`` intervals, ``extra_packets``, ``spurious_retransmissions``,
    /// ``connections_slower``).
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let r = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take().ok_or_else(finished)?;
        let (fixes, _) = py.detach(|| r.finish(false)).map_err(io_error)?;
        convert(py, &fixes)
    }
}

/// One member's effect as Python sees it: (the group's replay unchanged holds it
/// (`Member::held_together`), seconds saved alone, seconds saved among its neighbours,
/// seconds its neighbours cost it, made slower among them); None where a replay did not
/// complete.
type EffectTuple = (bool, Option<f64>, Option<f64>, f64, bool);

/// One group's effects as Python sees them: (None, per fix per member), or (the error, []).
type GroupEffects = (Option<String>, Vec<Vec<EffectTuple>>);

fn effect_tuple(m: &Member, e: &MemberEffect) -> EffectTuple {
    (m.held_together(e.shared_s[0]), e.lone_saved_s(), e.shared_saved_s(), e.neighbours_s(), e.slower_together())
}

/// Groups of connections that overlapped on one path (each a list of (start_s, model)),
/// replayed alone and together, unchanged and under each of `fixes` (dicts as `fixes()`
/// gives them), on `threads` threads: per group (None, per fix per member an effect
/// tuple), or (the error, []) for a group whose scenario does not load.
#[pyfunction]
fn advise_shared(
    py: Python<'_>,
    groups: Vec<Vec<(f64, Bound<'_, PyDict>)>>,
    fixes: Vec<Bound<'_, PyDict>>,
    threads: usize,
) -> PyResult<Vec<GroupEffects>> {
    let fixes = fixes.iter().map(fix_of).collect::<PyResult<Vec<Fix>>>()?;
    let groups = groups
        .iter()
        .map(|g| g.iter().enumerate().map(|(i, (start_s, d))| Ok(Member { start_s: *start_s, model: model(i, d)? })).collect())
        .collect::<PyResult<Vec<Vec<Member>>>>()?;
    let found = py.detach(|| groups_effects(&groups, &fixes, threads));
    Ok(found
        .into_iter()
        .zip(&groups)
        .map(|(g, members)| match g {
            Ok(per_fix) => {
                (None, per_fix.iter().map(|es| members.iter().zip(es).map(|(m, e)| effect_tuple(m, e)).collect()).collect())
            }
            Err(e) => (Some(e), Vec::new()),
        })
        .collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(advise_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(advise_shared, m)?)?;
    m.add_function(wrap_pyfunction!(advise_faithful, m)?)?;
    m.add_class::<AdviseRanking>()
}
