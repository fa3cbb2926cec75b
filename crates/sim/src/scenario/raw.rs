//! The scenario file as written: serde structs that refuse unknown keys. Values with units
//! are `Dur`/`Size`/`Rate`, which refuse a bare number or an unknown unit.

use serde::de::{self, Deserializer};
use serde::Deserialize;

use crate::time::Duration;
use crate::units;

macro_rules! unit_type {
    ($name:ident, $inner:ty, $parse:path, $expect:literal) => {
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub struct $name(pub $inner);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str($expect)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$name, E> {
                        $parse(s).map($name).map_err(E::custom)
                    }
                    fn visit_i64<E: de::Error>(self, n: i64) -> Result<$name, E> {
                        Err(E::custom(format!("{n} has no unit: write it as a string with its unit, e.g. {}", $expect)))
                    }
                    fn visit_f64<E: de::Error>(self, n: f64) -> Result<$name, E> {
                        Err(E::custom(format!("{n} has no unit: write it as a string with its unit, e.g. {}", $expect)))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

unit_type!(Dur, Duration, units::duration, "\"200ms\"");
unit_type!(Size, u64, units::size, "\"13549B\"");
unit_type!(Rate, u64, units::rate, "\"100Mbit\"");

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: Option<String>,
    pub description: Option<String>,
    pub seed: Option<u64>,
    /// The run stops at this simulated time even if connections are still open.
    pub time_limit: Option<Dur>,
    #[serde(default)]
    pub path: RawPath,
    /// N client and N server hosts across one shared bottleneck (instead of `path`).
    pub dumbbell: Option<RawDumbbell>,
    #[serde(default)]
    pub client: RawHost,
    #[serde(default)]
    pub server: RawHost,
    #[serde(default)]
    pub drop: RawDrop,
    #[serde(default)]
    pub random_loss: RawRandomLoss,
    #[serde(default)]
    pub workload: RawWorkload,
    #[serde(default)]
    pub mechanisms: RawMechanisms,
    #[serde(default)]
    pub capture: RawCapture,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawPath {
    /// Two-way propagation delay, split evenly over the four link crossings.
    pub rtt: Option<Dur>,
    /// Rate of the router's egress links (the bottleneck).
    pub bandwidth: Option<Rate>,
    /// Rate of the client's and server's own links (default: `bandwidth`).
    pub access_bandwidth: Option<Rate>,
    /// The router's egress queue.
    pub queue: Option<RawQueue>,
}

/// One delay for every host, or one per host (pair i takes entry i).
#[derive(Debug, Deserialize, Clone)]
#[serde(untagged)]
pub enum RawDelays {
    One(Dur),
    Each(Vec<Dur>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDumbbell {
    pub pairs: u32,
    /// Rate of the shared link (each direction).
    pub bandwidth: Rate,
    /// One-way propagation delay of the shared link.
    pub delay: Dur,
    pub queue: Option<RawQueue>,
    /// Rate of every host's own link (default 100 Mbit/s).
    pub access_bandwidth: Option<Rate>,
    /// One-way delay of each client's and each server's own link (default 1 ms).
    pub client_delay: Option<RawDelays>,
    pub server_delay: Option<RawDelays>,
}

/// A queue limit: a number of packets, or "bdp" (the bandwidth-delay product of the
/// path in packets of `mean_pktsize`).
#[derive(Debug, Deserialize, Clone)]
#[serde(untagged)]
pub enum RawLimit {
    Packets(u32),
    Named(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawQueue {
    pub kind: String,
    pub packets: Option<RawLimit>,
    /// ns-2's names for RED (`Queue/RED`): thresh_, maxthresh_, q_weight_, linterm_ (1/max_p),
    /// gentle_, limit_ and mean_pktsize_ (bytes, for "bdp").
    pub thresh: Option<f64>,
    pub maxthresh: Option<f64>,
    pub q_weight: Option<f64>,
    pub linterm: Option<f64>,
    pub gentle: Option<bool>,
    pub limit: Option<RawLimit>,
    pub mean_pktsize: Option<u32>,
    pub bytes: Option<Size>,
    /// RED thresholds and limits in packets (Floyd & Jacobson 1993).
    pub min_threshold: Option<f64>,
    pub max_threshold: Option<f64>,
    pub max_p: Option<f64>,
    pub weight: Option<f64>,
}

/// Initial window: a number of segments or "rfc3390".
#[derive(Debug, Clone)]
pub enum RawWindow {
    Segments(u32),
    Named(String),
}

impl<'de> Deserialize<'de> for RawWindow {
    // By hand rather than `untagged`, whose error ("did not match any variant") says
    // nothing about what is expected.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = RawWindow;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number of segments (at least 1) or \"rfc3390\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<RawWindow, E> {
                Ok(RawWindow::Named(s.to_string()))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<RawWindow, E> {
                u32::try_from(n)
                    .ok()
                    .filter(|&n| n >= 1)
                    .map(RawWindow::Segments)
                    .ok_or_else(|| E::custom(format!("{n}: expected a number of segments (at least 1) or \"rfc3390\"")))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawHost {
    pub stack: Option<String>,
    pub syn_rto: Option<Dur>,
    pub rto_min: Option<Dur>,
    pub rto_max: Option<Dur>,
    pub clock_granularity: Option<Dur>,
    pub rto_min_on_variance: Option<bool>,
    pub rto_after_syn_loss: Option<Dur>,
    pub syn_retries: Option<u32>,
    pub synack_retries: Option<u32>,
    pub synack_on_duplicate_syn: Option<bool>,
    pub initial_window: Option<RawWindow>,
    /// Solaris's name for the initial window in segments (document 003).
    pub slow_start_initial: Option<u32>,
    pub iw_one_after_handshake_loss: Option<bool>,
    pub slow_start_after_idle: Option<bool>,
    pub abc_limit: Option<u32>,
    pub congestion_control: Option<String>,
    pub dupack_threshold: Option<u32>,
    /// "timer", "bsd_tick" or "off".
    pub delayed_ack: Option<String>,
    pub delayed_ack_timeout: Option<Dur>,
    /// Where the first BSD tick after the start falls (boot time modulo the period).
    pub delayed_ack_phase: Option<Dur>,
    pub ack_every: Option<u32>,
    /// "bytes" or "segments".
    pub ack_count: Option<String>,
    pub quick_acks: Option<u32>,
    /// Linux route `quickack 1`: never delay an ACK.
    pub quickack: Option<bool>,
    pub mss: Option<Size>,
    pub receive_window: Option<Size>,
    pub coalesce_writes: Option<bool>,
    /// Loss recovery by name: "reno", "newreno", "rfc6675", "prr".
    pub recovery: Option<String>,
    pub timestamps: Option<bool>,
    pub sack: Option<bool>,
    pub window_scaling: Option<bool>,
    pub rack: Option<bool>,
    pub tlp: Option<bool>,
    pub hystart: Option<bool>,
    /// Model Linux's timer-wheel slack (profiles with jiffies).
    pub timer_slack: Option<bool>,
    /// The time the host takes to answer a segment (document 003's IRIX Indy: 4-5 ms).
    pub processing_time: Option<Dur>,
    /// How late this host's jiffies timers run after their slot (a loaded timer softirq).
    pub timer_lag: Option<Dur>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawDrop {
    #[serde(default)]
    pub syn: Vec<u32>,
    #[serde(default)]
    pub synack: Vec<u32>,
    #[serde(default)]
    pub ack: Vec<u32>,
    #[serde(default)]
    pub data: Vec<u32>,
    #[serde(default)]
    pub client_data: Vec<u32>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawRandomLoss {
    pub forward: Option<f64>,
    pub reverse: Option<f64>,
    pub seed: Option<u64>,
    pub gilbert_forward: Option<RawGilbert>,
    pub gilbert_reverse: Option<RawGilbert>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawGilbert {
    pub p_good_to_bad: f64,
    pub p_bad_to_good: f64,
    #[serde(default)]
    pub loss_good: f64,
    pub loss_bad: Option<f64>,
}

/// A size distribution: kind "fixed" (size), "pareto" (mean, shape) or "empirical" (file,
/// a CSV of sizes, relative to the scenario file).
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawDist {
    pub kind: String,
    pub size: Option<Size>,
    pub mean: Option<Size>,
    pub shape: Option<f64>,
    pub file: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    /// "http" (default), "poisson", "packmime" or "bulk".
    pub kind: Option<String>,
    /// New connections per second (poisson, packmime).
    pub connections_per_second: Option<f64>,
    /// Target utilisation of the bottleneck's server-to-client direction, "50%": the
    /// connection rate is calibrated to reach it (poisson, packmime).
    pub load: Option<String>,
    /// Connections arrive during this time (poisson, packmime).
    pub duration: Option<Dur>,
    pub request_dist: Option<RawDist>,
    pub response_dist: Option<RawDist>,
    /// PackMime: HTTP/1.1 persistent connections (pages and objects); off as in ns-2.
    pub http_1_1: Option<bool>,
    /// bulk: number of long-lived flows, the bytes each asks for, spacing of their starts.
    pub flows: Option<u32>,
    pub size: Option<Size>,
    pub spacing: Option<Dur>,
    pub request: Option<Size>,
    pub response: Option<Size>,
    pub response_writes: Option<Vec<Size>>,
    /// HTTP response headers sent before the body, in the first write (nginx: ~245 B).
    pub response_headers: Option<Size>,
    pub think_time: Option<Dur>,
    pub requests: Option<u32>,
    pub idle: Option<Dur>,
    pub connections: Option<u32>,
    pub parallel: Option<bool>,
    pub interval: Option<Dur>,
    pub close: Option<String>,
    pub port: Option<u16>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawMechanisms {
    pub syn_optimizer: Option<RawSynOptimizer>,
    /// Super Fast Retransmit (document 001).
    pub sfr: Option<RawSfr>,
    /// The delayed-ACK-aware minimum RTO (document 004).
    pub min_rto_004: Option<RawMinRto004>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSfr {
    /// Timeout = factor × handshake RTT (the paper's "multiplication factor", 3).
    pub factor: Option<f64>,
    /// Off once this much data is acknowledged (the paper's "cut-out limit", 80 kB).
    pub cutout: Option<Size>,
    /// The data sender it runs on: "server" (default), "client" or "both".
    pub side: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMinRto004 {
    /// R: the extended minimum for the last packet of an odd train (default 200 ms, the
    /// peer's delayed-ACK timer).
    pub extended: Option<Dur>,
    pub side: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSynOptimizer {
    pub side: String,
    pub delay: Dur,
    pub retries: u32,
    pub port: Option<u16>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawCapture {
    pub point: Option<String>,
    /// "ethernet" or "raw" (raw IPv4).
    pub link: Option<String>,
}
