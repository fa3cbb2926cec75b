//! `[workload]`: what the client asks and the server answers, and how connections arrive.

use serde::{Deserialize, Serialize};

use super::err;
use super::raw::*;
use crate::error::ScenarioError;
use crate::sizes::{self, SizeDist};
use crate::time::Duration;

/// A connection rate, or a target utilisation the rate is calibrated to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalRate {
    PerSecond(f64),
    /// Fraction of the bottleneck's server-to-client capacity (0.5 for "50%").
    Load(f64),
}

impl ArrivalRate {
    pub fn per_second(&self) -> Option<f64> {
        match self {
            ArrivalRate::PerSecond(r) => Some(*r),
            ArrivalRate::Load(_) => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoissonConfig {
    pub rate: ArrivalRate,
    /// Arrivals stop after this many connections (None: at the workload's duration only).
    pub max_connections: Option<u64>,
    pub request: SizeDist,
    pub response: SizeDist,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackMimeConfig {
    pub rate: ArrivalRate,
    pub http_1_1: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BulkConfig {
    pub flows: u32,
    pub size: u64,
    pub spacing: Duration,
}

/// Connections replayed from tmix connection vectors (`crate::abt`): each at its start
/// time, with its requests, responses and quiet times, over its own RTT.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbtConfig {
    pub vectors: Vec<crate::abt::ConnVector>,
    /// Where they were given (`workload.file` or `workload.vectors`), for errors.
    pub key: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    #[default]
    Http,
    Poisson(PoissonConfig),
    PackMime(PackMimeConfig),
    Bulk(BulkConfig),
    Abt(AbtConfig),
}

impl WorkloadKind {
    /// The keys that say how much work the workload makes (how many connections, how fast,
    /// for how long): what to lower when a run needs more than its budget.
    pub fn size_keys(&self) -> &'static str {
        match self {
            WorkloadKind::Http => "workload.connections",
            WorkloadKind::Poisson(_) => "workload.connections_per_second, workload.duration or workload.max_connections",
            WorkloadKind::PackMime(_) => "workload.connections_per_second (or load) or workload.duration",
            WorkloadKind::Bulk(_) => "workload.flows",
            WorkloadKind::Abt(_) => "the connection vectors (workload.file or workload.vectors)",
        }
    }

    pub fn rate(&self) -> Option<ArrivalRate> {
        match self {
            WorkloadKind::Poisson(p) => Some(p.rate),
            WorkloadKind::PackMime(p) => Some(p.rate),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Closer {
    #[default]
    Server,
    Client,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct WorkloadConfig {
    pub kind: WorkloadKind,
    /// Open-loop workloads: arrivals stop after this time.
    pub duration: Duration,
    pub request: u64,
    pub response: u64,
    /// How the server's application hands the response to TCP (sizes sum to `response`).
    pub response_writes: Vec<u64>,
    /// Header bytes the server writes before the body, with the first write (the testbed's
    /// nginx sends ~245 B with `tcp_nopush`, in the same segments as the body's start).
    pub response_headers: u64,
    pub think_time: Duration,
    pub requests: u32,
    /// Idle gap between a complete response and the next request on the same connection.
    pub idle: Duration,
    pub connections: u32,
    pub parallel: bool,
    /// Sequential: pause after a connection ends before the next; parallel: spacing of starts.
    pub interval: Duration,
    pub close: Closer,
    pub port: u16,
}

/// "50%" → 0.5.
fn percent(text: &str, src: &str, key: &str) -> Result<f64, ScenarioError> {
    let v = text
        .strip_suffix('%')
        .and_then(|n| n.trim().parse::<f64>().ok())
        .ok_or_else(|| err(src, key, format!("{text:?}: write a percentage, e.g. \"50%\"")))?;
    if !(v > 0.0 && v < 100.0) {
        return Err(err(src, key, format!("{text:?}: a load is between 0% and 100%")));
    }
    Ok(v / 100.0)
}

fn dist(d: &Option<RawDist>, fixed: u64, src: &str, key: &str) -> Result<SizeDist, ScenarioError> {
    let Some(d) = d else { return Ok(SizeDist::Fixed(fixed)) };
    let k = |s: &str| format!("{key}.{s}");
    match d.kind.as_str() {
        "fixed" => Ok(SizeDist::Fixed(d.size.ok_or_else(|| err(src, &k("size"), "a fixed size needs size = \"1kB\""))?.0)),
        "pareto" => {
            let mean = d.mean.ok_or_else(|| err(src, &k("mean"), "a Pareto size needs its mean (e.g. mean = \"10kB\")"))?.0;
            let shape = d.shape.ok_or_else(|| err(src, &k("shape"), "a Pareto size needs its shape (e.g. 1.2)"))?;
            if !(shape > 1.0 && shape.is_finite()) || mean == 0 {
                return Err(err(src, &k("shape"), "a Pareto shape above 1 (finite mean) and a mean above 0B"));
            }
            Ok(SizeDist::Pareto { mean: mean as f64, shape })
        }
        "empirical" => {
            let file = d.file.as_ref().ok_or_else(|| err(src, &k("file"), "an empirical size needs file = \"sizes.csv\""))?;
            let base = std::path::Path::new(src).parent().unwrap_or(std::path::Path::new("."));
            let path = base.join(file);
            let text = sizes::read_sizes_file(&path).map_err(|e| err(src, &k("file"), format!("{}: {e}", path.display())))?;
            let v = sizes::parse_csv(&text).map_err(|e| err(src, &k("file"), format!("{}: {e}", path.display())))?;
            Ok(SizeDist::Empirical(v))
        }
        "uniform" => {
            let min = d.min.ok_or_else(|| err(src, &k("min"), "a uniform size needs min = \"1B\" and max"))?.0;
            let max = d.max.ok_or_else(|| err(src, &k("max"), "a uniform size needs min and max = \"20kB\""))?.0;
            if min == 0 || max < min {
                return Err(err(src, &k("max"), format!("{min}B to {max}B: need 1B <= min <= max")));
            }
            Ok(SizeDist::Uniform { min, max })
        }
        other => Err(err(src, &k("kind"), format!("{other:?}: expected \"fixed\", \"pareto\", \"empirical\" or \"uniform\""))),
    }
}

/// The vectors of an abt workload, from its file (relative to the scenario file) or inline
/// text.
fn abt_vectors(w: &RawWorkload, src: &str) -> Result<AbtConfig, ScenarioError> {
    let (key, text) = match (&w.file, &w.vectors) {
        (Some(_), Some(_)) => return Err(err(src, "workload.vectors", "give either file or vectors")),
        (Some(file), None) => {
            let base = std::path::Path::new(src).parent().unwrap_or(std::path::Path::new("."));
            let path = base.join(file);
            let text =
                std::fs::read_to_string(&path).map_err(|e| err(src, "workload.file", format!("{}: {e}", path.display())))?;
            ("workload.file", text)
        }
        (None, Some(text)) => ("workload.vectors", text.clone()),
        (None, None) => {
            return Err(err(src, "workload.file", "an abt workload needs file = \"vectors.abt\" or vectors = \"SEQ …\""))
        }
    };
    let vectors = crate::abt::parse(&text).map_err(|e| err(src, key, e.to_string()))?;
    if vectors.is_empty() {
        return Err(err(src, key, "no connection vector (SEQ or CONC line)"));
    }
    Ok(AbtConfig { vectors, key: key.to_string() })
}

pub(super) fn workload(w: &RawWorkload, src: &str) -> Result<WorkloadConfig, ScenarioError> {
    let kind = kind(w, src)?;
    let response = w.response.map_or(13_549, |s| s.0);
    let response_writes = response_writes(w, response, src)?;
    let response_headers = w.response_headers.map_or(0, |s| s.0);
    let close = match w.close.as_deref().unwrap_or("server") {
        "server" => Closer::Server,
        "client" => Closer::Client,
        other => return Err(err(src, "workload.close", format!("{other:?}: expected \"server\" or \"client\""))),
    };
    let request = w.request.map_or(300, |s| s.0);
    if request == 0 {
        return Err(err(src, "workload.request", "must be at least 1B"));
    }
    let requests = w.requests.unwrap_or(1);
    let connections = match &kind {
        // Every vector is a connection; they may all be open at once.
        WorkloadKind::Abt(a) => a.vectors.len() as u32,
        _ => w.connections.unwrap_or(1),
    };
    if requests == 0 || connections == 0 {
        return Err(err(src, if requests == 0 { "workload.requests" } else { "workload.connections" }, "must be at least 1"));
    }
    Ok(WorkloadConfig {
        kind,
        duration: w.duration.map_or(Duration::ZERO, |d| d.0),
        request,
        response,
        response_writes,
        response_headers,
        think_time: w.think_time.map_or(Duration::ZERO, |d| d.0),
        requests,
        idle: w.idle.map_or(Duration::ZERO, |d| d.0),
        connections,
        parallel: w.parallel.unwrap_or(false),
        interval: w.interval.map_or(Duration::ZERO, |d| d.0),
        close,
        port: w.port.unwrap_or(80),
    })
}

/// The workload's kind and its own keys, each refused under another kind.
fn kind(w: &RawWorkload, src: &str) -> Result<WorkloadKind, ScenarioError> {
    let kind_name = w.kind.as_deref().unwrap_or("http");
    let rate = || -> Result<ArrivalRate, ScenarioError> {
        match (w.connections_per_second, &w.load) {
            (Some(_), Some(_)) => Err(err(src, "workload.load", "set either connections_per_second or load")),
            (Some(r), None) if r > 0.0 && r.is_finite() => Ok(ArrivalRate::PerSecond(r)),
            (Some(_), None) => Err(err(src, "workload.connections_per_second", "must be above 0")),
            (None, Some(l)) => Ok(ArrivalRate::Load(percent(l, src, "workload.load")?)),
            (None, None) => {
                Err(err(src, "workload.load", format!("a {kind_name} workload needs load = \"50%\" or connections_per_second")))
            }
        }
    };
    let only = |present: bool, key: &str, kinds: &str| -> Result<(), ScenarioError> {
        if present {
            Err(err(src, &format!("workload.{key}"), format!("applies only to kind = {kinds}")))
        } else {
            Ok(())
        }
    };
    only(w.http_1_1.is_some() && kind_name != "packmime", "http_1_1", "\"packmime\"")?;
    only((w.flows.is_some() || w.size.is_some() || w.spacing.is_some()) && kind_name != "bulk", "flows", "\"bulk\"")?;
    only((w.request_dist.is_some() || w.response_dist.is_some()) && kind_name != "poisson", "response_dist", "\"poisson\"")?;
    only(w.response_headers.is_some() && kind_name != "http", "response_headers", "\"http\"")?;
    only(w.max_connections.is_some() && kind_name != "poisson", "max_connections", "\"poisson\"")?;
    only(w.file.is_some() && kind_name != "abt", "file", "\"abt\"")?;
    only(w.vectors.is_some() && kind_name != "abt", "vectors", "\"abt\"")?;
    let open_loop = matches!(kind_name, "poisson" | "packmime");
    only(
        (w.connections_per_second.is_some() || w.load.is_some() || w.duration.is_some()) && !open_loop,
        "load",
        "\"poisson\" or \"packmime\"",
    )?;
    let kind = match kind_name {
        "http" => WorkloadKind::Http,
        "poisson" => WorkloadKind::Poisson(PoissonConfig {
            rate: rate()?,
            // Its range (1 to 10^9) is checked with the others (`ranges`).
            max_connections: w.max_connections,
            request: dist(&w.request_dist, w.request.map_or(300, |s| s.0), src, "workload.request_dist")?,
            response: dist(&w.response_dist, w.response.map_or(13_549, |s| s.0), src, "workload.response_dist")?,
        }),
        "packmime" => WorkloadKind::PackMime(PackMimeConfig { rate: rate()?, http_1_1: w.http_1_1.unwrap_or(false) }),
        "bulk" => WorkloadKind::Bulk(BulkConfig {
            flows: w.flows.unwrap_or(1),
            size: w.size.map_or(1 << 40, |s| s.0),
            spacing: w.spacing.map_or(Duration::ZERO, |d| d.0),
        }),
        "abt" => WorkloadKind::Abt(abt_vectors(w, src)?),
        other => {
            return Err(err(
                src,
                "workload.kind",
                format!("{other:?}: expected \"http\", \"poisson\", \"packmime\", \"bulk\" or \"abt\""),
            ))
        }
    };
    if open_loop && w.duration.is_none() && w.max_connections.is_none() {
        return Err(err(
            src,
            "workload.duration",
            format!("a {kind_name} workload needs duration = \"300s\" (arrivals stop then) or max_connections"),
        ));
    }
    Ok(kind)
}

/// How the server hands the response to TCP: `response_writes`, adding up to `response`.
fn response_writes(w: &RawWorkload, response: u64, src: &str) -> Result<Vec<u64>, ScenarioError> {
    match &w.response_writes {
        None => Ok(vec![response]),
        Some(v) => {
            let writes: Vec<u64> = v.iter().map(|s| s.0).collect();
            let total: u64 = writes.iter().sum();
            if total != response || writes.contains(&0) {
                return Err(err(
                    src,
                    "workload.response_writes",
                    format!("the writes add up to {total}B, the response is {response}B (and none may be 0B)"),
                ));
            }
            Ok(writes)
        }
    }
}
