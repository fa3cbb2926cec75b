//! `[mechanisms]`: the start-up fixes under test (documents 000, 001, 004), each as written
//! in the file (`Raw…`), as the simulator runs it (`…Config`) and the resolution between
//! the two, side by side (each number's bounds declared on its raw field, read by `ranges`);
//! their behaviour is `shortflow_sim::mechanisms`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::err;
use super::raw::{Dur, Size};
use crate::error::ScenarioError;
use crate::time::Duration;

#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RawMechanisms {
    /// Document 000's SYN optimizer: resend an unanswered SYN (client) or SYN/ACK (server) after delay.
    pub syn_optimizer: Option<RawSynOptimizer>,
    /// Super Fast Retransmit (document 001).
    pub sfr: Option<RawSfr>,
    /// The delayed-ACK-aware minimum RTO (document 004).
    pub min_rto_004: Option<RawMinRto004>,
}

/// The mechanisms a scenario runs (None: not configured).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Mechanisms {
    pub syn_optimizer: Option<SynOptimizerConfig>,
    pub sfr: Option<SfrConfig>,
    pub min_rto_004: Option<MinRto004Config>,
}

/// The mechanisms of `raw`, checked; `port` is the workload's server port.
pub(super) fn resolve(raw: &RawMechanisms, src: &str, port: u16) -> Result<Mechanisms, ScenarioError> {
    Ok(Mechanisms {
        syn_optimizer: raw.syn_optimizer.as_ref().map(|r| syn_optimizer(r, src, port)).transpose()?,
        sfr: raw.sfr.as_ref().map(|r| sfr(r, src)).transpose()?,
        min_rto_004: raw.min_rto_004.as_ref().map(|r| min_rto_004(r, src)).transpose()?,
    })
}

/// Which data senders a mechanism runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sides {
    Client,
    Server,
    Both,
}

impl Sides {
    pub fn includes(self, client: bool) -> bool {
        matches!((self, client), (Sides::Both, _) | (Sides::Client, true) | (Sides::Server, false))
    }

    /// `side` as written at `key` ("server" when absent).
    fn resolve(side: &Option<String>, src: &str, key: &str) -> Result<Sides, ScenarioError> {
        match side.as_deref().unwrap_or("server") {
            "server" => Ok(Sides::Server),
            "client" => Ok(Sides::Client),
            "both" => Ok(Sides::Both),
            other => Err(err(src, key, format!("{other:?}: expected \"server\", \"client\" or \"both\""))),
        }
    }
}

/// One endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Client,
    Server,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSynOptimizer {
    /// "client" (resends SYNs) or "server" (resends SYN/ACKs).
    pub side: String,
    /// Resend when nothing answered within this delay.
    #[schemars(extend("x-range" = ["1ms", crate::kernel::TCP_RTO_MAX.as_nanos()], "x-range-why" = "1 ms to TCP_RTO_MAX (120 s)"))]
    pub delay: Dur,
    /// At most this many resends.
    #[schemars(extend("x-range" = [0, 127], "x-range-why" = "as many as the kernel's SYN retries (MAX_TCP_SYNCNT)"))]
    pub retries: u32,
    /// The server port it watches.
    #[schemars(extend("default" = "workload.port"))]
    #[schemars(extend("x-range" = [1, 65_535], "x-range-why" = "a TCP port"))]
    pub port: Option<u16>,
}

/// Document 000's syn_optimizer: keep a copy of each SYN (client) or SYN/ACK (server) to
/// `port`; resend it when nothing answered within `delay`, at most `retries` times.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SynOptimizerConfig {
    pub side: Side,
    pub delay: Duration,
    pub retries: u32,
    pub port: u16,
}

fn syn_optimizer(o: &RawSynOptimizer, src: &str, port: u16) -> Result<SynOptimizerConfig, ScenarioError> {
    let side = match o.side.as_str() {
        "client" => Side::Client,
        "server" => Side::Server,
        other => return Err(err(src, "mechanisms.syn_optimizer.side", format!("{other:?}: expected \"client\" or \"server\""))),
    };
    Ok(SynOptimizerConfig { side, delay: o.delay.0, retries: o.retries, port: o.port.unwrap_or(port) })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSfr {
    /// Timeout = factor × handshake RTT (the paper's "multiplication factor", 3).
    #[schemars(extend("default" = "3.0"))]
    pub factor: Option<f64>,
    /// Off once this much data is acknowledged (the paper's "cut-out limit", 80 kB).
    #[schemars(extend("default" = "80000B"))]
    pub cutout: Option<Size>,
    /// The data sender it runs on: "server" (default), "client" or "both".
    #[schemars(extend("default" = "server"))]
    pub side: Option<String>,
}

/// Super Fast Retransmit (document 001).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SfrConfig {
    pub factor: f64,
    pub cutout: u64,
    pub sides: Sides,
}

fn sfr(r: &RawSfr, src: &str) -> Result<SfrConfig, ScenarioError> {
    let factor = r.factor.unwrap_or(3.0);
    if !(factor > 0.0 && factor.is_finite()) {
        return Err(err(src, "mechanisms.sfr.factor", "must be a positive number"));
    }
    Ok(SfrConfig {
        factor,
        cutout: r.cutout.map_or(80_000, |c| c.0),
        sides: Sides::resolve(&r.side, src, "mechanisms.sfr.side")?,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMinRto004 {
    /// R: the extended minimum for the last packet of an odd train (default 200 ms, the
    /// peer's delayed-ACK timer).
    #[schemars(extend("default" = "200ms"))]
    pub extended: Option<Dur>,
    /// The data sender it runs on: "server" (default), "client" or "both".
    #[schemars(extend("default" = "server"))]
    pub side: Option<String>,
}

/// The delayed-ACK-aware minimum RTO (document 004).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MinRto004Config {
    pub extended: Duration,
    pub sides: Sides,
}

fn min_rto_004(r: &RawMinRto004, src: &str) -> Result<MinRto004Config, ScenarioError> {
    Ok(MinRto004Config {
        extended: r.extended.map_or(Duration::from_millis(200), |d| d.0),
        sides: Sides::resolve(&r.side, src, "mechanisms.min_rto_004.side")?,
    })
}
