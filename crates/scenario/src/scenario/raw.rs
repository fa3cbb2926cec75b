//! The scenario file as written: serde structs that refuse unknown keys. Values with units
//! are `Dur`/`Size`/`Rate`, which refuse a bare number or an unknown unit.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, Deserializer};
use serde::Deserialize;
use std::borrow::Cow;

pub use super::mechanisms::RawMechanisms;
use crate::time::Duration;
use crate::units;

fn duration(text: &str) -> Result<Duration, units::UnitError> {
    units::duration_ns(text).map(Duration)
}

macro_rules! unit_type {
    ($name:ident, $inner:ty, $parse:path, $expect:literal, $unit:literal) => {
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub struct $name(pub $inner);

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                // A decimal number and its unit, written out (crate::units).
                json_schema!({
                    "type": "string",
                    "pattern": "^[0-9.eE+-]+ ?[A-Za-zµμ/]+$",
                    "x-unit": $unit,
                    "examples": [$expect],
                })
            }
        }

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

unit_type!(Dur, Duration, duration, "\"200ms\"", "duration");
unit_type!(Size, u64, units::size_bytes, "\"13549B\"", "size");
unit_type!(Rate, u64, units::rate_bps, "\"100Mbit\"", "rate");

#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    /// Shown in reports; default: the file name.
    pub name: Option<String>,
    /// Free text, for the reader.
    pub description: Option<String>,
    /// Seeds every random draw of the run (losses, workload, jiffies phase).
    #[schemars(extend("default" = "1"))]
    pub seed: Option<u64>,
    /// The run stops at this simulated time even if connections are still open.
    #[schemars(extend("default" = "3600s"))]
    #[schemars(extend("x-range" = ["1ms", "8760h"], "x-range-why" = "a simulated year at most"))]
    pub time_limit: Option<Dur>,
    /// One client, one router, one server: the links and the router's queue.
    #[serde(default)]
    pub path: RawPath,
    /// N client and N server hosts across one shared bottleneck (instead of `path`).
    pub dumbbell: Option<RawDumbbell>,
    /// The client host's TCP stack: a profile and per-field overrides.
    #[serde(default)]
    pub client: RawHost,
    /// The server host's TCP stack: a profile and per-field overrides.
    #[serde(default)]
    pub server: RawHost,
    /// Scripted losses: which occurrence of which packet kind is dropped.
    #[serde(default)]
    pub drop: RawDrop,
    /// Random losses on the path, per direction (client to server is forward).
    #[serde(default)]
    pub random_loss: RawRandomLoss,
    /// What the client asks and the server answers.
    #[serde(default)]
    pub workload: RawWorkload,
    /// Start-up fixes under test (documents 000, 001, 004).
    #[serde(default)]
    pub mechanisms: RawMechanisms,
    /// Where the simulator's pcap is taken and its framing.
    #[serde(default)]
    pub capture: RawCapture,
}

#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RawPath {
    /// Two-way propagation delay, split evenly over the four link crossings.
    #[schemars(extend("x-range" = ["0s", "60s"], "x-range-why" = "a minute covers a geostationary path many times over"))]
    pub rtt: Option<Dur>,
    /// Each connection's own two-way delay, drawn uniformly from rtt to rtt_max (the
    /// flows of a busy link come from near and far); the extra delay is added to the
    /// connection's packets on both ends' links, not to the shared queue.
    #[schemars(extend("x-range" = ["0s", "60s"], "x-range-why" = "as path.rtt"))]
    pub rtt_max: Option<Dur>,
    /// Rate of the router's egress links (the bottleneck).
    #[schemars(extend("default" = "1Gbit"))]
    #[schemars(extend("x-range" = ["1kbit", 1_000_000_000_000u64], "x-range-why" = "1 kbit/s to 1 Tbit/s"))]
    pub bandwidth: Option<Rate>,
    /// Rate of the client's and server's own links (default: `bandwidth`).
    #[schemars(extend("default" = "path.bandwidth"))]
    #[schemars(extend("x-range" = ["1kbit", 1_000_000_000_000u64], "x-range-why" = "1 kbit/s to 1 Tbit/s"))]
    pub access_bandwidth: Option<Rate>,
    /// The router's egress queue.
    #[schemars(extend("default" = "{ kind = \"droptail\", packets = 1000 }"))]
    pub queue: Option<RawQueue>,
}

/// One delay for every host, or one per host (pair i takes entry i).
#[derive(Debug, Deserialize, JsonSchema, Clone)]
#[serde(untagged)]
pub enum RawDelays {
    One(Dur),
    Each(Vec<Dur>),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDumbbell {
    /// Number of client/server pairs.
    #[schemars(extend("x-range" = [1, 100_000], "x-range-why" = "every pair is two hosts with links of their own, laid out before the run; a hundred thousand is far past any testbed"))]
    pub pairs: u32,
    /// Rate of the shared link (each direction).
    #[schemars(extend("x-range" = ["1kbit", 1_000_000_000_000u64], "x-range-why" = "1 kbit/s to 1 Tbit/s"))]
    pub bandwidth: Rate,
    /// One-way propagation delay of the shared link.
    pub delay: Dur,
    /// The shared link's queue (default: drop-tail, 100 packets).
    #[schemars(extend("default" = "{ kind = \"droptail\", packets = 100 }"))]
    pub queue: Option<RawQueue>,
    /// Rate of every host's own link (default 100 Mbit/s).
    #[schemars(extend("default" = "100Mbit"))]
    #[schemars(extend("x-range" = ["1kbit", 1_000_000_000_000u64], "x-range-why" = "1 kbit/s to 1 Tbit/s"))]
    pub access_bandwidth: Option<Rate>,
    /// One-way delay of each client's and each server's own link (default 1 ms).
    #[schemars(extend("default" = "1ms"))]
    pub client_delay: Option<RawDelays>,
    /// One-way delay of each server's own link (default 1 ms): one, or one per pair.
    #[schemars(extend("default" = "1ms"))]
    pub server_delay: Option<RawDelays>,
}

/// A queue limit: a number of packets, or "bdp" (the bandwidth-delay product of the
/// path in packets of `mean_pktsize`).
#[derive(Debug, Deserialize, JsonSchema, Clone)]
#[serde(untagged)]
pub enum RawLimit {
    Packets(u32),
    Named(String),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawQueue {
    /// "droptail" or "red".
    pub kind: String,
    /// Limit in packets, or "bdp".
    #[schemars(extend("x-range" = [1, 1_000_000], "x-range-why" = "a router buffer of a million packets is already absurd"))]
    pub packets: Option<RawLimit>,
    /// ns-2's names for RED (`Queue/RED`): thresh_, maxthresh_, q_weight_, linterm_ (1/max_p),
    /// gentle_, limit_ and mean_pktsize_ (bytes, for "bdp").
    pub thresh: Option<f64>,
    /// ns-2's name for max_threshold.
    pub maxthresh: Option<f64>,
    /// ns-2's name for weight.
    pub q_weight: Option<f64>,
    /// ns-2's 1/max_p.
    pub linterm: Option<f64>,
    /// RED: between max_threshold and twice it, the drop probability rises to 1 (Floyd
    /// 2000). Default false, RED as Floyd & Jacobson 1993 define it; ns-2.35's `Queue/RED`
    /// defaults to true (ns-default.tcl, since 2001): write `gentle = true` for ns-2's RED.
    pub gentle: Option<bool>,
    /// ns-2's name for packets.
    #[schemars(extend("x-range" = [1, 1_000_000], "x-range-why" = "a router buffer of a million packets is already absurd"))]
    pub limit: Option<RawLimit>,
    /// Bytes per packet when sizing "bdp" (default 1000).
    pub mean_pktsize: Option<u32>,
    /// Drop-tail limit in bytes (instead of packets).
    #[schemars(extend("x-range" = ["1B", "1GB"], "x-range-why" = "1 GB of router buffer at most"))]
    pub bytes: Option<Size>,
    /// RED thresholds and limits in packets (Floyd & Jacobson 1993).
    pub min_threshold: Option<f64>,
    /// RED: upper threshold (packets, default 3 × min_threshold).
    pub max_threshold: Option<f64>,
    /// RED: drop probability at max_threshold (default 0.1).
    pub max_p: Option<f64>,
    /// RED: weight of the queue average (default 0.002).
    pub weight: Option<f64>,
}

/// Initial window: a number of segments or "rfc3390".
#[derive(Debug, Clone)]
pub enum RawWindow {
    Segments(u32),
    Named(String),
}

impl JsonSchema for RawWindow {
    fn schema_name() -> Cow<'static, str> {
        "RawWindow".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "oneOf": [{ "type": "integer", "minimum": 1 }, { "const": "rfc3390" }] })
    }
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

#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RawHost {
    /// Named stack profile: rfc2988, rfc6298, linux, solaris, bsd or windows (crates/scenario/src/profile).
    #[schemars(extend("default" = "linux"))]
    pub stack: Option<String>,
    /// Initial RTO: the SYN (SYN/ACK) timer and the RTO before any RTT sample (RFC 6298 (2.1)).
    #[schemars(extend("x-range" = ["1ms", crate::kernel::TCP_RTO_MAX.as_nanos()], "x-range-why" = "a zero RTO would resend at once; TCP_RTO_MAX (120 s) is the kernel's ceiling"))]
    pub syn_rto: Option<Dur>,
    /// Lower bound of the RTO (RFC 6298 (2.4); Linux route rto_min).
    #[schemars(extend("x-range" = ["0s", crate::kernel::TCP_RTO_MAX.as_nanos()], "x-range-why" = "0 is document 004's noMINRTO: the RTO is then SRTT + max(G, 4·RTTVAR) alone"))]
    pub rto_min: Option<Dur>,
    /// Upper bound of the RTO, back-off included (RFC 6298 (2.5)).
    #[schemars(extend("x-range" = ["1ms", "1h"], "x-range-why" = "RFC 6298 (2.5) asks only for at least 60 s; an hour at most"))]
    pub rto_max: Option<Dur>,
    /// G in RTO = SRTT + max(G, 4·RTTVAR) (RFC 6298 (2.3)).
    #[schemars(extend("x-range" = ["0s", "1s"], "x-range-why" = "a timer tick of a second at most"))]
    pub clock_granularity: Option<Dur>,
    /// Linux: the minimum bounds the variance term, RTO = SRTT + max(min, 4·RTTVAR).
    pub rto_min_on_variance: Option<bool>,
    /// RTO when data starts after a lost SYN or SYN/ACK (RFC 6298 (5.7): 3 s).
    #[schemars(extend("x-range" = ["1ms", crate::kernel::TCP_RTO_MAX.as_nanos()], "x-range-why" = "as syn_rto"))]
    pub rto_after_syn_loss: Option<Dur>,
    /// SYN retransmissions before the client gives up.
    #[schemars(extend("x-range" = [0, 127], "x-range-why" = "Linux's MAX_TCP_SYNCNT (net.ipv4.tcp_syn_retries)"))]
    pub syn_retries: Option<u32>,
    /// SYN/ACK retransmissions before the server drops the half-open connection.
    #[schemars(extend("x-range" = [0, 255], "x-range-why" = "net.ipv4.tcp_synack_retries is a u8"))]
    pub synack_retries: Option<u32>,
    /// A duplicate SYN makes the server resend its SYN/ACK.
    pub synack_on_duplicate_syn: Option<bool>,
    /// Initial congestion window: segments, or "rfc3390".
    #[schemars(extend("x-range" = [1, 1_000], "x-range-why" = "segments; RFC 6928 stops at 10, 1000 covers every experiment"))]
    pub initial_window: Option<RawWindow>,
    /// Solaris's name for the initial window in segments (document 003).
    pub slow_start_initial: Option<u32>,
    /// After a lost SYN or SYN/ACK the initial window is one segment (RFC 5681 3.1).
    pub iw_one_after_handshake_loss: Option<bool>,
    /// Linux's rules after a handshake resend: an RTT sample from the timestamp echo, the
    /// initial window cut to one segment only after more than one resend, and a duplicate
    /// SYN's SYN/ACK pushing the SYN/ACK timer back (tcp_rtt_tsopt_us, tcp_init_transfer,
    /// tcp_check_req). Replaces `iw_one_after_handshake_loss` when on.
    pub linux_handshake: Option<bool>,
    /// Restart from the initial window after an idle RTO (RFC 5681 4.1).
    pub slow_start_after_idle: Option<bool>,
    /// Slow-start growth per ACK in segments (RFC 3465 L); 0: as many as acknowledged.
    #[schemars(extend("x-range" = [0, 1_000], "x-range-why" = "segments per ACK (0: no limit)"))]
    pub abc_limit: Option<u32>,
    /// "reno", "newreno", "cubic" or "bbr" (Linux's tcp_bbr.c, paced; `linux` stack only).
    pub congestion_control: Option<String>,
    /// Duplicate ACKs that trigger fast retransmit.
    #[schemars(extend("x-range" = [1, 1_000], "x-range-why" = "duplicate ACKs"))]
    pub dupack_threshold: Option<u32>,
    /// "timer", "bsd_tick" or "off".
    pub delayed_ack: Option<String>,
    /// The delayed-ACK timer (or BSD tick period).
    #[schemars(extend("x-range" = ["1ms", "500ms"], "x-range-why" = "RFC 1122 (4.2.3.2): an ACK is delayed less than 0.5 s"))]
    pub delayed_ack_timeout: Option<Dur>,
    /// Where the first BSD tick after the start falls (boot time modulo the period).
    pub delayed_ack_phase: Option<Dur>,
    /// ACK at once when this many segments are unacknowledged.
    #[schemars(extend("x-range" = [1, 64], "x-range-why" = "segments per ACK"))]
    pub ack_every: Option<u32>,
    /// "bytes" or "segments".
    pub ack_count: Option<String>,
    /// The first this-many data segments are acknowledged at once.
    #[schemars(extend("x-range" = [0, 100_000], "x-range-why" = "quick ACKs at the start"))]
    pub quick_acks: Option<u32>,
    /// Linux route `quickack 1`: never delay an ACK.
    pub quickack: Option<bool>,
    /// Maximum segment size this host announces (payload bytes; Linux route advmss).
    pub mss: Option<Size>,
    /// The MTU of this host's path (Linux route mtu): a Linux host sends at most MTU − 40
    /// payload bytes (and the peer's MSS), and announces MTU − 40 unless `mss` is set.
    pub mtu: Option<Size>,
    /// Receive window this host advertises.
    #[schemars(extend("x-range" = ["1B", 1u64 << 30], "x-range-why" = "RFC 7323 (2.3): window scaling stops at 2^30 bytes"))]
    pub receive_window: Option<Size>,
    /// false: a segment never spans two application writes (Solaris 2.x).
    pub coalesce_writes: Option<bool>,
    /// Loss recovery by name: "reno", "newreno", "rfc6675", "prr".
    pub recovery: Option<String>,
    /// Spurious-timeout detection: "off", "frto", "linux".
    pub spurious_rto: Option<String>,
    /// TCP timestamps (RFC 7323): 12 option bytes in every segment.
    pub timestamps: Option<bool>,
    /// SACK (RFC 2018) and D-SACK (RFC 2883).
    pub sack: Option<bool>,
    /// Window scaling (RFC 7323).
    pub window_scaling: Option<bool>,
    /// RACK loss detection (RFC 8985); needs sack.
    pub rack: Option<bool>,
    /// Tail loss probe (RFC 8985 section 7); needs sack.
    pub tlp: Option<bool>,
    /// HyStart for "cubic" (tcp_cubic.c).
    pub hystart: Option<bool>,
    /// Model Linux's timer-wheel slack (profiles with jiffies).
    pub timer_slack: Option<bool>,
    /// The time the host takes to answer a segment (document 003's IRIX Indy: 4-5 ms).
    #[schemars(extend("x-range" = ["0s", "1s"], "x-range-why" = "a host that takes a second to answer a segment is not answering"))]
    pub processing_time: Option<Dur>,
    /// How late this host's jiffies timers run after their slot (a loaded timer softirq).
    #[schemars(extend("x-range" = ["0s", "1s"], "x-range-why" = "a timer softirq a second late is a hung machine"))]
    pub timer_lag: Option<Dur>,
}

#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RawDrop {
    /// Client SYNs to drop, by occurrence number (1 = the first, retransmissions counted).
    #[serde(default)]
    #[schemars(extend("x-range" = [1, 1_000_000], "x-range-why" = "occurrence numbers start at 1; at most 10,000 per list"))]
    pub syn: Vec<u32>,
    /// Server SYN/ACKs to drop.
    #[serde(default)]
    #[schemars(extend("x-range" = [1, 1_000_000], "x-range-why" = "occurrence numbers start at 1; at most 10,000 per list"))]
    pub synack: Vec<u32>,
    /// Client pure ACKs to drop (the handshake's third packet is 1).
    #[serde(default)]
    #[schemars(extend("x-range" = [1, 1_000_000], "x-range-why" = "occurrence numbers start at 1; at most 10,000 per list"))]
    pub ack: Vec<u32>,
    /// Server data segments to drop.
    #[serde(default)]
    #[schemars(extend("x-range" = [1, 1_000_000], "x-range-why" = "occurrence numbers start at 1; at most 10,000 per list"))]
    pub data: Vec<u32>,
    /// Client data segments to drop.
    #[serde(default)]
    #[schemars(extend("x-range" = [1, 1_000_000], "x-range-why" = "occurrence numbers start at 1; at most 10,000 per list"))]
    pub client_data: Vec<u32>,
    /// Server stream offsets (0 = the first data byte): the segment carrying each is lost at its first transmission (an offset listed k times: at its first k).
    #[serde(default)]
    pub data_bytes: Vec<u64>,
    /// Client stream offsets: the segment carrying each is lost at its first transmission (k times listed: its first k).
    #[serde(default)]
    pub client_data_bytes: Vec<u64>,
}

#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RawRandomLoss {
    /// Bernoulli loss probability, client to server.
    #[schemars(extend("default" = "0.0"))]
    pub forward: Option<f64>,
    /// Bernoulli loss probability, server to client.
    #[schemars(extend("default" = "0.0"))]
    pub reverse: Option<f64>,
    /// Seed of the loss draws (default: the scenario's seed).
    #[schemars(extend("default" = "seed"))]
    pub seed: Option<u64>,
    /// Draw each connection's Bernoulli losses from a stream of its own (keyed by its client port and each packet's rank among the connection's packets of its kind), so a change in one connection leaves the others' losses as they were (default false).
    pub per_connection: Option<bool>,
    /// Gilbert-Elliott bursty loss, client to server (instead of forward).
    pub gilbert_forward: Option<RawGilbert>,
    /// Gilbert-Elliott bursty loss, server to client (instead of reverse).
    pub gilbert_reverse: Option<RawGilbert>,
    /// Bernoulli loss probability of each client SYN, besides its direction's loss.
    #[schemars(extend("default" = "0.0"))]
    pub syn: Option<f64>,
    /// Bernoulli loss probability of each server SYN/ACK, besides its direction's loss.
    #[schemars(extend("default" = "0.0"))]
    pub synack: Option<f64>,
    /// Bernoulli loss probability of each client pure ACK (the handshake's third packet
    /// and every later one), besides its direction's loss.
    #[schemars(extend("default" = "0.0"))]
    pub ack: Option<f64>,
    /// Bernoulli loss probability of each server data segment, besides its direction's loss.
    #[schemars(extend("default" = "0.0"))]
    pub data: Option<f64>,
    /// Bernoulli loss probability of each client data segment, besides its direction's loss.
    #[schemars(extend("default" = "0.0"))]
    pub client_data: Option<f64>,
}

#[derive(Debug, Deserialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawGilbert {
    /// Probability per packet of moving from the good to the bad state.
    pub p_good_to_bad: f64,
    /// Probability per packet of moving from the bad to the good state.
    pub p_bad_to_good: f64,
    /// Loss probability in the good state.
    #[serde(default)]
    pub loss_good: f64,
    /// Loss probability in the bad state (default 1).
    pub loss_bad: Option<f64>,
}

/// A size distribution: kind "fixed" (size), "pareto" (mean, shape), "empirical" (file,
/// a CSV of sizes, relative to the scenario file) or "uniform" (min, max).
#[derive(Debug, Deserialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawDist {
    /// "fixed", "pareto", "empirical" or "uniform".
    pub kind: String,
    /// fixed: the size.
    pub size: Option<Size>,
    /// pareto: the mean size.
    pub mean: Option<Size>,
    /// pareto: the shape (above 1).
    pub shape: Option<f64>,
    /// empirical: a CSV of sizes, relative to the scenario file.
    pub file: Option<String>,
    /// uniform: the smallest size (every size from min to max equally likely).
    pub min: Option<Size>,
    /// uniform: the largest size.
    pub max: Option<Size>,
}

#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    /// "http" (default), "poisson", "packmime", "bulk" or "abt".
    #[schemars(extend("default" = "http"))]
    pub kind: Option<String>,
    /// abt: a file of tmix connection vectors (`shortflow analyze --abt`), relative to the scenario file.
    pub file: Option<String>,
    /// abt: the connection vectors themselves, in tmix's text (instead of file).
    pub vectors: Option<String>,
    /// New connections per second (poisson, packmime).
    pub connections_per_second: Option<f64>,
    /// Target utilisation of the bottleneck's server-to-client direction, "50%": the
    /// connection rate is calibrated to reach it (poisson, packmime).
    pub load: Option<String>,
    /// Connections arrive during this time (poisson, packmime).
    pub duration: Option<Dur>,
    /// poisson: arrivals stop after this many connections (or at duration, if set, when
    /// that comes first).
    #[schemars(extend("x-range" = [1, 1_000_000_000], "x-range-why" = "a totals-only run holds only the open connections: the bound is the run's time"))]
    pub max_connections: Option<u64>,
    /// poisson: the distribution of request sizes (instead of request).
    pub request_dist: Option<RawDist>,
    /// poisson: the distribution of response sizes (instead of response).
    pub response_dist: Option<RawDist>,
    /// PackMime: HTTP/1.1 persistent connections (pages and objects); off as in ns-2.
    #[schemars(extend("default" = "false"))]
    pub http_1_1: Option<bool>,
    /// bulk: number of long-lived flows, the bytes each asks for, spacing of their starts.
    #[schemars(extend("default" = "1"))]
    pub flows: Option<u32>,
    /// bulk: the bytes each flow asks for.
    pub size: Option<Size>,
    /// bulk: the spacing of the flows' starts.
    #[schemars(extend("default" = "0s"))]
    pub spacing: Option<Dur>,
    /// Bytes the client sends per request.
    #[schemars(extend("default" = "300B"))]
    #[schemars(extend("x-range" = ["1B", "1GB"], "x-range-why" = "a request has at least one byte; 1 GB keeps a run in memory"))]
    pub request: Option<Size>,
    /// Bytes the server answers per request.
    #[schemars(extend("default" = "13549B"))]
    #[schemars(extend("x-range" = ["1B", "1GB"], "x-range-why" = "an HTTP response has at least one byte (its header), and a zero-byte one would complete on the kernel but never in a model that waits for data; 1 GB at most"))]
    pub response: Option<Size>,
    /// How the server's application hands the response to TCP (sizes summing to response).
    #[schemars(extend("default" = "[workload.response]"))]
    #[schemars(extend("x-range" = [1, 10_000], "x-range-why" = "number of writes", "x-range-of" = "length"))]
    pub response_writes: Option<Vec<Size>>,
    /// HTTP response headers sent before the body, in the first write (nginx: ~245 B).
    #[schemars(extend("x-range" = ["0B", "1MB"], "x-range-why" = "HTTP headers of a megabyte are already absurd"))]
    pub response_headers: Option<Size>,
    /// Pause between a response and the next request (closed loop).
    #[schemars(extend("default" = "0s"))]
    #[schemars(extend("x-range" = ["0s", "1h"], "x-range-why" = "an hour at most"))]
    pub think_time: Option<Dur>,
    /// Requests per connection.
    #[schemars(extend("default" = "1"))]
    #[schemars(extend("x-range" = [1, 100_000], "x-range-why" = "requests per connection"))]
    pub requests: Option<u32>,
    /// Idle gap between a complete response and the next request on the same connection.
    #[schemars(extend("default" = "0s"))]
    #[schemars(extend("x-range" = ["0s", "1h"], "x-range-why" = "an hour at most"))]
    pub idle: Option<Dur>,
    /// Connections, one after another (or all at once with parallel).
    #[schemars(extend("default" = "1"))]
    #[schemars(extend("x-range" = [1, 1_000_000], "x-range-why" = "each connection keeps its report in memory"))]
    pub connections: Option<u32>,
    /// Open the connections together, interval apart.
    #[schemars(extend("default" = "false"))]
    pub parallel: Option<bool>,
    /// Sequential: pause after a connection ends; parallel: spacing of starts.
    #[schemars(extend("default" = "0s"))]
    #[schemars(extend("x-range" = ["0s", "1h"], "x-range-why" = "an hour at most"))]
    pub interval: Option<Dur>,
    /// Who closes first: "server" or "client".
    #[schemars(extend("default" = "server"))]
    pub close: Option<String>,
    /// The server's port.
    #[schemars(extend("default" = "80"))]
    #[schemars(extend("x-range" = [1, 65_535], "x-range-why" = "a TCP port"))]
    pub port: Option<u16>,
}

#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RawCapture {
    /// "client", "router" or "server": where the simulator's capture is taken.
    #[schemars(extend("default" = "client"))]
    pub point: Option<String>,
    /// The pcap's link type: "ethernet", "raw" (LINKTYPE_RAW), "null", "loop", "sll",
    /// "sll2", "ipv4" or "ipv6" (LINKTYPE_IPV4/IPV6, raw packets of that version only).
    #[schemars(extend("default" = "ethernet"))]
    pub link: Option<String>,
    /// Write the packets with IPv6 addresses and headers (the simulated links still carry
    /// IPv4-sized packets); link = "ipv6" implies it.
    #[schemars(extend("default" = "false"))]
    pub ipv6: Option<bool>,
    /// An 802.1Q VLAN id on every frame (link = "ethernet" only).
    pub vlan: Option<u16>,
}
