//! Scenario files: one TOML file describes the path, both hosts, the losses, the workload,
//! the mechanisms and where the capture is taken. `load` checks it all and returns the
//! typed `Scenario` the simulator runs; every error names the file and the dotted key.

pub mod mechanisms;
mod overrides;
pub mod ranges;
pub mod raw;

pub use mechanisms::{Mechanisms, MinRto004Config, SfrConfig, Side, Sides, SynOptimizerConfig};

use raw::*;
use toml::Table;

use serde::{Deserialize, Serialize};

use crate::error::ScenarioError;
use crate::profile::{
    self, AckCount, CongestionControlName, DelayedAck, InitialWindow, RecoveryName, SpuriousRtoName, StackConfig,
};
use crate::sizes::{self, SizeDist};
use crate::time::Duration;

/// The router's egress queue discipline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueConfig {
    DropTailPackets(u32),
    DropTailBytes(u64),
    /// RED (Floyd & Jacobson 1993), thresholds in packets, hard limit in packets;
    /// `gentle`: between max_th and 2·max_th the drop probability rises from max_p to 1
    /// (Floyd 2000, ns-2's `gentle_`) instead of forcing every drop.
    Red {
        min_th: f64,
        max_th: f64,
        max_p: f64,
        weight: f64,
        limit: u32,
        gentle: bool,
    },
}

/// N client and N server hosts on their own access links across one shared link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DumbbellConfig {
    pub pairs: u32,
    pub bandwidth_bps: u64,
    pub delay: Duration,
    pub queue: QueueConfig,
    pub access_bandwidth_bps: u64,
    /// One-way delay of client i's (server i's) link: entry i modulo the list's length.
    pub client_delay: Vec<Duration>,
    pub server_delay: Vec<Duration>,
}

/// The network a scenario's connections cross: the one path, or the dumbbell when the
/// file has one (`Scenario::topology`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TopologyConfig<'a> {
    /// Client — router — server (`[path]`).
    Single(&'a PathConfig),
    /// N pairs across one shared link (`[dumbbell]`).
    Dumbbell(&'a DumbbellConfig),
}

impl TopologyConfig<'_> {
    /// The shared link's rate (the router's egress on the single path).
    pub fn bottleneck_bps(&self) -> u64 {
        match self {
            TopologyConfig::Single(p) => p.bandwidth_bps,
            TopologyConfig::Dumbbell(d) => d.bandwidth_bps,
        }
    }
}

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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathConfig {
    pub rtt: Duration,
    /// Each connection's two-way delay is drawn uniformly from `rtt` to this (None: `rtt`).
    pub rtt_max: Option<Duration>,
    pub bandwidth_bps: u64,
    pub access_bandwidth_bps: u64,
    pub queue: QueueConfig,
}

/// Scripted drops: 1-based occurrence numbers per packet kind, counted over the whole run,
/// retransmissions included (as the testbed's link emulator counts them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DropConfig {
    /// Client SYNs.
    pub syn: Vec<u32>,
    /// Server SYN/ACKs.
    pub synack: Vec<u32>,
    /// Client pure ACKs (no payload, no SYN/FIN/RST): the handshake's third packet is #1.
    pub ack: Vec<u32>,
    /// Server data segments (payload > 0).
    pub data: Vec<u32>,
    /// Client data segments.
    pub client_data: Vec<u32>,
    /// Server stream offsets (0 = the first data byte after the SYN/ACK): the segment that
    /// carries each is lost at its first transmission (an offset listed k times, at its
    /// first k), wherever a stack's segment boundaries fall (`shortflow_sim::byte_loss`).
    pub data_bytes: Vec<u64>,
    /// Client stream offsets, as `data_bytes`.
    pub client_data_bytes: Vec<u64>,
}

/// Gilbert-Elliott two-state loss (Gilbert 1960, Elliott 1963).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GilbertConfig {
    pub p_good_to_bad: f64,
    pub p_bad_to_good: f64,
    pub loss_good: f64,
    pub loss_bad: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossConfig {
    Bernoulli(f64),
    Gilbert(GilbertConfig),
}

/// Bernoulli loss probabilities of one packet kind each (the kinds `[drop]` names), drawn
/// besides the direction's loss.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct KindLoss {
    pub syn: f64,
    pub synack: f64,
    pub ack: f64,
    pub data: f64,
    pub client_data: f64,
}

impl KindLoss {
    pub fn any(&self) -> bool {
        [self.syn, self.synack, self.ack, self.data, self.client_data].iter().any(|&p| p > 0.0)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandomLossConfig {
    pub forward: LossConfig,
    pub reverse: LossConfig,
    pub seed: u64,
    pub kinds: KindLoss,
    /// Each connection draws from a stream of its own (`random_loss.per_connection`).
    #[serde(default)]
    pub per_connection: bool,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapturePoint {
    Client,
    Router,
    Server,
}

/// The capture's link type (the writer, `shortflow_wire::capture`, frames each one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaptureLink {
    Ethernet,
    /// LINKTYPE_RAW ("raw"): the IP version from the packet.
    RawIpv4,
    Null,
    Loop,
    Sll,
    Sll2,
    Ipv4,
    Ipv6,
}

impl CaptureLink {
    /// Every link type under its name in scenario files (`capture.link`) and in
    /// `shortflow generate --link`: the one table both read.
    pub const NAMES: [(&'static str, CaptureLink); 8] = [
        ("ethernet", CaptureLink::Ethernet),
        ("raw", CaptureLink::RawIpv4),
        ("null", CaptureLink::Null),
        ("loop", CaptureLink::Loop),
        ("sll", CaptureLink::Sll),
        ("sll2", CaptureLink::Sll2),
        ("ipv4", CaptureLink::Ipv4),
        ("ipv6", CaptureLink::Ipv6),
    ];

    pub fn from_name(name: &str) -> Option<Self> {
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|&(_, l)| l)
    }

    pub fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, l)| *l == self).map(|&(n, _)| n).expect("every link type is named")
    }

    /// The names, in order, for messages that list what is accepted.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::NAMES.iter().map(|&(n, _)| n)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    pub name: String,
    pub source: String,
    pub seed: u64,
    pub time_limit: Duration,
    pub path: PathConfig,
    /// The dumbbell, when the file has one (then `path` is unused).
    pub dumbbell: Option<DumbbellConfig>,
    pub client: StackConfig,
    pub server: StackConfig,
    pub drop: DropConfig,
    pub random_loss: RandomLossConfig,
    pub workload: WorkloadConfig,
    /// The mechanisms under test, each `None` when the file does not configure it (their
    /// fields stand in the scenario's own table).
    #[serde(flatten)]
    pub mechanisms: Mechanisms,
    pub capture_point: CapturePoint,
    pub capture_link: CaptureLink,
    /// The capture writes IPv6 packets.
    pub capture_ipv6: bool,
    /// 802.1Q VLAN id of every captured frame (Ethernet).
    pub capture_vlan: Option<u16>,
    /// What the model implied from the keys the file set, as the kernel implies it (e.g.
    /// `server.sack = false` turns RACK and TLP off), one sentence each.
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Scenario {
    /// The network its connections cross.
    pub fn topology(&self) -> TopologyConfig<'_> {
        match &self.dumbbell {
            Some(d) => TopologyConfig::Dumbbell(d),
            None => TopologyConfig::Single(&self.path),
        }
    }
}

/// Reads scenario `text` (from `source`, named in errors), applies `overrides`
/// (`key=value`) and checks everything.
/// The file's TOML table with `overrides` applied, before any check: what the testbed
/// reads, so that both worlds see the same document.
pub fn document(text: &str, source: &str, overrides: &[String]) -> Result<Table, ScenarioError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(ScenarioError::new(
            source,
            "",
            format!("{} bytes: a scenario file has at most {MAX_FILE_BYTES}", text.len()),
        ));
    }
    let mut doc: Table = text.parse().map_err(|e: toml::de::Error| {
        let at = e.span().map(|s| line_column(text, s.start)).unwrap_or_default();
        ScenarioError::new(source, "", format!("{at}not valid TOML: {}", e.message()))
    })?;
    for o in overrides {
        overrides::apply(&mut doc, o).map_err(|(key, why)| ScenarioError::new(source, key, format!("{why} (in --set {o})")))?;
    }
    Ok(doc)
}

/// Largest scenario file read (a scenario is a page of TOML; this refuses a wrong file).
pub const MAX_FILE_BYTES: usize = 4 << 20;

/// `line L, column C: ` of byte `at` in `text` (both from 1, columns in characters).
fn line_column(text: &str, at: usize) -> String {
    // The char boundary at or before `at` (str::floor_char_boundary is newer than our MSRV).
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {column}: ")
}

pub fn load(text: &str, source: &str, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    let doc = document(text, source, overrides)?;
    let raw: RawScenario = serde_path_to_error::deserialize(toml::Value::Table(doc)).map_err(|e| {
        // The path already ends with the offending key (unknown ones included).
        let key = e.path().to_string();
        let key = if key == "." { String::new() } else { key };
        let message = e.into_inner().message().to_string();
        let message = match message.strip_prefix("unknown field `").and_then(|m| m.split_once('`')) {
            Some((_, rest)) => format!("unknown key{rest}"),
            None => message,
        };
        ScenarioError::new(source, key, message)
    })?;
    resolve(raw, source)
}

fn err(source: &str, key: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError::new(source, key, message)
}

fn resolve(raw: RawScenario, src: &str) -> Result<Scenario, ScenarioError> {
    let seed = raw.seed.unwrap_or(1);
    let mut notes = Vec::new();
    let mut client = host(&raw.client, src, "client", "linux", &mut notes)?;
    let mut server = host(&raw.server, src, "server", "linux", &mut notes)?;
    // One kernel runs both ends of the testbed: one jiffies clock, its reading at time 0
    // drawn from the seed (splitmix64), so timer-wheel phases are reproducible.
    let origin = jiffies_origin(seed);
    client.jiffies_origin_ns = origin;
    server.jiffies_origin_ns = origin;
    let workload = workload(&raw.workload, src)?;
    let dumbbell = match &raw.dumbbell {
        None => None,
        Some(d) => Some(dumbbell(d, src)?),
    };
    if dumbbell.is_some()
        && (raw.path.rtt.is_some() || raw.path.rtt_max.is_some() || raw.path.bandwidth.is_some() || raw.path.queue.is_some())
    {
        return Err(err(src, "path", "a scenario has either [path] (one client, one server) or [dumbbell], not both"));
    }
    let path = match &dumbbell {
        // The dumbbell's pair 0 stands for `path` where a single path is asked about.
        Some(d) => PathConfig {
            rtt: Duration(2 * (d.client_delay[0].0 + d.delay.0 + d.server_delay[0].0)),
            rtt_max: None,
            bandwidth_bps: d.bandwidth_bps,
            access_bandwidth_bps: d.access_bandwidth_bps,
            queue: d.queue.clone(),
        },
        None => path(&raw.path, src)?,
    };
    let mechanisms = mechanisms::resolve(&raw.mechanisms, src, workload.port)?;
    let capture_point = match raw.capture.point.as_deref().unwrap_or("client") {
        "client" => CapturePoint::Client,
        "router" => CapturePoint::Router,
        "server" => CapturePoint::Server,
        other => return Err(err(src, "capture.point", format!("{other:?}: expected \"client\", \"router\" or \"server\""))),
    };
    let link = raw.capture.link.as_deref().unwrap_or("ethernet");
    let Some(capture_link) = CaptureLink::from_name(link) else {
        return Err(err(src, "capture.link", {
            let quoted: Vec<String> = CaptureLink::names().map(|n| format!("{n:?}")).collect();
            let (last, rest) = quoted.split_last().expect("link types exist");
            format!("{link:?}: expected {} or {last}", rest.join(", "))
        }));
    };
    // LINKTYPE_IPV4 and LINKTYPE_IPV6 carry packets of one IP version only.
    let capture_ipv6 = match (capture_link, raw.capture.ipv6) {
        (CaptureLink::Ipv6, Some(false)) => {
            return Err(err(src, "capture.ipv6", "false, but link = \"ipv6\" (LINKTYPE_IPV6) carries only IPv6 packets"))
        }
        (CaptureLink::Ipv4, Some(true)) => {
            return Err(err(src, "capture.ipv6", "true, but link = \"ipv4\" (LINKTYPE_IPV4) carries only IPv4 packets"))
        }
        (CaptureLink::Ipv6, _) => true,
        (_, v) => v.unwrap_or(false),
    };
    if let Some(v) = raw.capture.vlan {
        if capture_link != CaptureLink::Ethernet {
            return Err(err(src, "capture.vlan", "an 802.1Q tag is part of an Ethernet frame: needs link = \"ethernet\""));
        }
        if v > 4095 {
            return Err(err(src, "capture.vlan", format!("{v}: a VLAN id is 0 to 4095 (12 bits)")));
        }
    }
    let sc = Scenario {
        name: raw.name.clone().unwrap_or_else(|| src.to_string()),
        source: src.to_string(),
        seed,
        time_limit: raw.time_limit.map_or(Duration::from_secs(3600), |d| d.0),
        path,
        dumbbell,
        client,
        server,
        drop: drops(&raw.drop, src)?,
        random_loss: random_loss(&raw.random_loss, src, seed)?,
        workload,
        mechanisms,
        capture_point,
        capture_link,
        capture_ipv6,
        capture_vlan: raw.capture.vlan,
        notes,
    };
    ranges::check_scenario(&sc, src)?;
    Ok(sc)
}

/// A jiffies reading (up to 2^20 ticks of 4 ms) and a phase within the tick, from `seed`.
fn jiffies_origin(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    z % ((1u64 << 20) * 4_000_000)
}

fn path(p: &RawPath, src: &str) -> Result<PathConfig, ScenarioError> {
    let rtt = p.rtt.ok_or_else(|| err(src, "path.rtt", "missing: the two-way propagation delay (e.g. rtt = \"20ms\")"))?.0;
    let bandwidth_bps = p.bandwidth.map_or(1_000_000_000, |r| r.0);
    let queue = match &p.queue {
        None => QueueConfig::DropTailPackets(1000),
        Some(q) => queue(q, src, "path.queue", bandwidth_bps, rtt)?,
    };
    let rtt_max = match p.rtt_max {
        Some(m) if m.0 < rtt => {
            return Err(err(src, "path.rtt_max", format!("{} is below path.rtt ({rtt}): the range is rtt to rtt_max", m.0)))
        }
        m => m.map(|m| m.0),
    };
    Ok(PathConfig { rtt, rtt_max, bandwidth_bps, access_bandwidth_bps: p.access_bandwidth.map_or(bandwidth_bps, |r| r.0), queue })
}

fn delays(d: &Option<RawDelays>, src: &str, key: &str, pairs: u32) -> Result<Vec<Duration>, ScenarioError> {
    match d {
        None => Ok(vec![Duration::from_millis(1)]),
        Some(RawDelays::One(x)) => Ok(vec![x.0]),
        Some(RawDelays::Each(v)) if v.len() == pairs as usize => Ok(v.iter().map(|x| x.0).collect()),
        Some(RawDelays::Each(v)) => {
            Err(err(src, key, format!("{} delays for {pairs} pairs: give one delay or one per pair", v.len())))
        }
    }
}

fn dumbbell(d: &RawDumbbell, src: &str) -> Result<DumbbellConfig, ScenarioError> {
    // Checked here, before the per-pair delays are laid out for that many pairs.
    ranges::check_key(src, "dumbbell.pairs", u64::from(d.pairs))?;
    let client_delay = delays(&d.client_delay, src, "dumbbell.client_delay", d.pairs)?;
    let server_delay = delays(&d.server_delay, src, "dumbbell.server_delay", d.pairs)?;
    // The BDP that "bdp" sizes a queue to: the shared rate times the mean pair's RTT.
    let n = d.pairs as usize;
    let mean_rtt = (0..n)
        .map(|i| 2 * (client_delay[i % client_delay.len()].0 + d.delay.0 .0 + server_delay[i % server_delay.len()].0))
        .sum::<u64>()
        / n as u64;
    let queue = match &d.queue {
        None => QueueConfig::DropTailPackets(100),
        Some(q) => queue(q, src, "dumbbell.queue", d.bandwidth.0, Duration(mean_rtt))?,
    };
    Ok(DumbbellConfig {
        pairs: d.pairs,
        bandwidth_bps: d.bandwidth.0,
        delay: d.delay.0,
        queue,
        access_bandwidth_bps: d.access_bandwidth.map_or(100_000_000, |r| r.0),
        client_delay,
        server_delay,
    })
}

/// A packet limit: N, or "bdp" = rate × RTT in packets of `pkt` bytes (at least 1).
fn limit(l: &RawLimit, src: &str, key: &str, rate_bps: u64, rtt: Duration, pkt: u32) -> Result<u32, ScenarioError> {
    match l {
        RawLimit::Packets(n) => Ok(*n),
        RawLimit::Named(s) if s == "bdp" => {
            let bytes = rate_bps as f64 / 8.0 * rtt.as_secs_f64();
            Ok(((bytes / f64::from(pkt)).ceil() as u32).max(1))
        }
        RawLimit::Named(s) => Err(err(src, key, format!("{s:?}: expected a number of packets or \"bdp\""))),
    }
}

fn queue(q: &RawQueue, src: &str, at: &str, rate_bps: u64, rtt: Duration) -> Result<QueueConfig, ScenarioError> {
    let red_keys = q.min_threshold.is_some()
        || q.max_threshold.is_some()
        || q.max_p.is_some()
        || q.weight.is_some()
        || q.thresh.is_some()
        || q.maxthresh.is_some()
        || q.q_weight.is_some()
        || q.linterm.is_some()
        || q.gentle.is_some();
    let pkt = q.mean_pktsize.unwrap_or(1000);
    let key = |k: &str| format!("{at}.{k}");
    let packets = match (&q.packets, &q.limit) {
        (Some(_), Some(_)) => return Err(err(src, &key("limit"), "is ns-2's name for packets: set one of them")),
        (Some(l), None) => Some(limit(l, src, &key("packets"), rate_bps, rtt, pkt)?),
        (None, Some(l)) => Some(limit(l, src, &key("limit"), rate_bps, rtt, pkt)?),
        (None, None) => None,
    };
    let either = |a: Option<f64>, b: Option<f64>, ours: &str, ns2: &str| -> Result<Option<f64>, ScenarioError> {
        match (a, b) {
            (Some(_), Some(_)) => Err(err(src, &key(ns2), format!("is ns-2's name for {ours}: set one of them"))),
            (a, b) => Ok(a.or(b)),
        }
    };
    match q.kind.as_str() {
        "droptail" => {
            if red_keys {
                return Err(err(src, at, "min_threshold/max_threshold/max_p/weight (thresh/maxthresh/q_weight/linterm/gentle) are RED's keys (kind = \"red\")"));
            }
            match (packets, q.bytes) {
                (Some(n), None) if n > 0 => Ok(QueueConfig::DropTailPackets(n)),
                (None, Some(b)) if b.0 > 0 => Ok(QueueConfig::DropTailBytes(b.0)),
                _ => Err(err(
                    src,
                    at,
                    "a drop-tail queue has either packets = N (or \"bdp\") or bytes = \"64kB\" (not both, not zero)",
                )),
            }
        }
        "red" => {
            let limit = packets.ok_or_else(|| err(src, &key("packets"), "RED needs its hard limit in packets (or \"bdp\")"))?;
            let bdp_sized = matches!(q.packets.as_ref().or(q.limit.as_ref()), Some(RawLimit::Named(_)));
            let min_th = either(q.min_threshold, q.thresh, "min_threshold", "thresh")?;
            let max_th = either(q.max_threshold, q.maxthresh, "max_threshold", "maxthresh")?;
            // A BDP-sized RED without thresholds: min_th = limit/6, max_th = 3·min_th (Floyd's
            // rule of thumb, max_th = 3 min_th; both under the limit).
            let min_th = min_th.unwrap_or(if bdp_sized { (f64::from(limit) / 6.0).max(1.0) } else { 5.0 });
            let max_th = max_th.unwrap_or(3.0 * min_th);
            let max_p = match (q.max_p, q.linterm) {
                (Some(_), Some(_)) => return Err(err(src, &key("linterm"), "is 1/max_p in ns-2: set max_p or linterm")),
                (Some(p), None) => p,
                (None, Some(l)) if l >= 1.0 => 1.0 / l,
                (None, Some(_)) => return Err(err(src, &key("linterm"), "must be at least 1 (it is 1/max_p)")),
                (None, None) => 0.1,
            };
            let weight = either(q.weight, q.q_weight, "weight", "q_weight")?.unwrap_or(0.002);
            if !(0.0 < min_th && min_th < max_th && max_th <= f64::from(limit)) {
                return Err(err(src, at, "RED needs 0 < min_threshold < max_threshold <= packets"));
            }
            if !((0.0..=1.0).contains(&max_p) && weight > 0.0 && weight <= 1.0) {
                return Err(err(src, at, "RED's max_p is in [0, 1] and weight in (0, 1]"));
            }
            Ok(QueueConfig::Red { min_th, max_th, max_p, weight, limit, gentle: q.gentle.unwrap_or(false) })
        }
        other => Err(err(src, &key("kind"), format!("{other:?}: expected \"droptail\" or \"red\""))),
    }
}

/// What SACK off implies, as the kernel implies it: without SACK (tcp_is_reno) Linux runs
/// no RACK (tcp_identify_packet_loss calls tcp_newreno_mark_lost instead of
/// tcp_rack_mark_lost) and no tail loss probe (tcp_schedule_loss_probe returns at
/// `!tcp_is_sack(tp)`); its PRR stays, duplicate ACKs counting as SACKed segments
/// (tcp_add_reno_sack). A mechanism the profile had on is turned off with a note; one the
/// file itself turns on is a contradiction, refused in one message naming every key
/// involved and the fix.
fn sack_off(c: &mut StackConfig, h: &RawHost, src: &str, side: &str, notes: &mut Vec<String>) -> Result<(), ScenarioError> {
    let needs = c.recovery.needs_sack();
    let involved = [
        (needs, h.recovery.is_some(), "recovery", format!("{:?}", c.recovery.name())),
        (c.rack, h.rack.is_some(), "rack", "true".to_string()),
        (c.tlp, h.tlp.is_some(), "tlp", "true".to_string()),
    ];
    let explicit: Vec<(&str, &String)> =
        involved.iter().filter(|(on, set, ..)| *on && *set).map(|(_, _, k, v)| (*k, v)).collect();
    if !explicit.is_empty() {
        let why = if h.sack.is_some() { "the file sets sack = false" } else { "the profile has no SACK" };
        let with_values: Vec<String> = explicit.iter().map(|(k, v)| format!("{side}.{k} = {v}")).collect();
        let keys: Vec<String> = explicit.iter().map(|(k, _)| format!("{side}.{k}")).collect();
        return Err(err(
            src,
            &format!("{side}.sack"),
            format!(
                "false ({why}), but {} work on SACK information: set {side}.sack = true, or drop {} (without SACK \
                 the model does what the kernel does: no RACK, no TLP, duplicate ACKs counted as SACKs)",
                with_values.join(", "),
                keys.join(" and "),
            ),
        ));
    }
    let implied: Vec<&str> = involved.iter().filter(|(on, ..)| *on).map(|(_, _, k, _)| *k).collect();
    if implied.is_empty() {
        return Ok(());
    }
    if needs {
        c.recovery = RecoveryName::NewReno; // RFC 6675 without SACK: RFC 6582
    }
    c.rack = false;
    c.tlp = false;
    let what: Vec<String> = implied
        .iter()
        .map(|k| match *k {
            "recovery" => format!("{side}.recovery = \"newreno\""),
            k => format!("{side}.{k} = false"),
        })
        .collect();
    let prr =
        if c.recovery == RecoveryName::Prr { "; PRR stays, duplicate ACKs counted as SACKs (tcp_add_reno_sack)" } else { "" };
    notes.push(format!(
        "{side}.sack = false implies {}, as the kernel without SACK (tcp_is_reno: tcp_newreno_mark_lost, \
         no tcp_schedule_loss_probe){prr}",
        what.join(", ")
    ));
    Ok(())
}

fn host(h: &RawHost, src: &str, side: &str, default: &str, notes: &mut Vec<String>) -> Result<StackConfig, ScenarioError> {
    let key = |k: &str| format!("{side}.{k}");
    let name = h.stack.as_deref().unwrap_or(default);
    let mut c = profile::profile(name).ok_or_else(|| {
        err(src, &key("stack"), format!("unknown stack profile {name:?} (known: {})", profile::PROFILE_NAMES.join(", ")))
    })?;
    macro_rules! set {
        ($field:expr, $value:expr) => {
            if let Some(v) = $value {
                $field = v;
            }
        };
    }
    set!(c.rto.initial, h.syn_rto.map(|d| d.0));
    set!(c.rto.min, h.rto_min.map(|d| d.0));
    set!(c.rto.max, h.rto_max.map(|d| d.0));
    set!(c.rto.granularity, h.clock_granularity.map(|d| d.0));
    set!(c.rto.min_on_variance, h.rto_min_on_variance);
    if let Some(d) = h.rto_after_syn_loss {
        c.rto.after_syn_loss = Some(d.0);
    }
    set!(c.syn_retries, h.syn_retries);
    set!(c.synack_retries, h.synack_retries);
    set!(c.synack_on_duplicate_syn, h.synack_on_duplicate_syn);
    set!(c.iw_one_after_handshake_loss, h.iw_one_after_handshake_loss);
    set!(c.linux_handshake, h.linux_handshake);
    set!(c.slow_start_after_idle, h.slow_start_after_idle);
    set!(c.abc_limit, h.abc_limit);
    set!(c.dupack_threshold, h.dupack_threshold);
    set!(c.ack.ack_every, h.ack_every);
    set!(c.ack.quick_acks, h.quick_acks);
    set!(c.coalesce_writes, h.coalesce_writes);
    if c.rto.min > c.rto.max {
        return Err(err(src, &key("rto_min"), "is larger than rto_max"));
    }
    match (&h.initial_window, h.slow_start_initial) {
        (Some(_), Some(_)) => {
            return Err(err(src, &key("slow_start_initial"), "is Solaris's name for initial_window: set one of them"))
        }
        (Some(RawWindow::Segments(n)), None) => c.initial_window = InitialWindow::Segments(*n),
        (Some(RawWindow::Named(s)), None) if s == "rfc3390" => c.initial_window = InitialWindow::Rfc3390,
        (Some(RawWindow::Named(s)), None) => {
            return Err(err(src, &key("initial_window"), format!("{s:?}: expected a number of segments or \"rfc3390\"")))
        }
        (None, Some(n)) => c.initial_window = InitialWindow::Segments(n),
        (None, None) => {}
    }
    if c.initial_window == InitialWindow::Segments(0) {
        return Err(err(src, &key("initial_window"), "must be at least 1 segment"));
    }
    if let Some(cc) = &h.congestion_control {
        // "reno"/"newreno" name Reno's window rules, and for a profile without SACK also
        // that recovery (their meaning before congestion control became a plug-in).
        match cc.as_str() {
            "reno" | "newreno" => {
                c.congestion_control = CongestionControlName::Reno;
                if matches!(c.recovery, RecoveryName::Reno | RecoveryName::NewReno) {
                    c.recovery = RecoveryName::from_name(cc).expect("reno and newreno are recoveries");
                }
            }
            "cubic" => c.congestion_control = CongestionControlName::Cubic,
            // BBR is modelled as the kernel's tcp_bbr.c on the Linux sender (rate samples,
            // pacing, PRR-free recovery): no other profile has that sender.
            "bbr" if c.profile == "linux" => c.congestion_control = CongestionControlName::Bbr,
            "bbr" => {
                return Err(err(
                    src,
                    &key("congestion_control"),
                    format!("\"bbr\" is Linux's tcp_bbr.c: it needs stack = \"linux\", not {:?}", c.profile),
                ))
            }
            other => {
                return Err(err(
                    src,
                    &key("congestion_control"),
                    format!("{other:?}: the simulator models \"reno\", \"newreno\", \"cubic\" and \"bbr\""),
                ))
            }
        }
    }
    set!(c.timestamps, h.timestamps);
    set!(c.sack, h.sack);
    set!(c.window_scaling, h.window_scaling);
    set!(c.rack, h.rack);
    set!(c.tlp, h.tlp);
    set!(c.hystart, h.hystart);
    set!(c.timer_slack, h.timer_slack);
    if let Some(p) = h.processing_time {
        c.processing_time = p.0;
    }
    if let Some(l) = h.timer_lag {
        if c.jiffy.is_none() {
            return Err(err(src, &key("timer_lag"), format!("the {:?} profile has no jiffies timers to run late", c.profile)));
        }
        c.timer_lag = l.0;
    }
    if let Some(r) = &h.recovery {
        c.recovery = RecoveryName::from_name(r)
            .ok_or_else(|| err(src, &key("recovery"), format!("{r:?}: unknown recovery (known: {})", RecoveryName::known())))?;
    }
    if let Some(s) = &h.spurious_rto {
        c.spurious_rto = SpuriousRtoName::from_name(s).ok_or_else(|| {
            let known = SpuriousRtoName::known();
            err(src, &key("spurious_rto"), format!("{s:?}: unknown spurious-timeout response (known: {known})"))
        })?;
    }
    if !c.sack {
        sack_off(&mut c, h, src, side, notes)?;
    }
    if c.timer_slack && c.jiffy.is_none() {
        return Err(err(src, &key("timer_slack"), format!("the {:?} profile has no jiffies timers to be slack", c.profile)));
    }
    ack_policy(&mut c, h, src, side)?;
    if let Some(m) = h.mss {
        if !(64..=65_495).contains(&m.0) {
            return Err(err(src, &key("mss"), "must be between 64B and 65495B"));
        }
        c.mss = m.0 as u32;
    }
    if let Some(m) = h.mtu {
        if c.mtu.is_none() {
            return Err(err(
                src,
                &key("mtu"),
                format!("the {:?} profile sends with the MSS it announces: set mss instead", c.profile),
            ));
        }
        if !(576..=65_535).contains(&m.0) {
            return Err(err(src, &key("mtu"), "must be between 576B (RFC 791) and 65535B"));
        }
        c.mtu = Some(m.0 as u32);
        if h.mss.is_none() {
            // The route's advmss follows its MTU (ipv4_default_advmss: mtu − 40).
            c.mss = m.0 as u32 - 40;
        }
    }
    if let Some(w) = h.receive_window {
        if w.0 == 0 || w.0 > u64::from(u32::MAX) {
            return Err(err(src, &key("receive_window"), "must be between 1B and 4GB"));
        }
        c.receive_window = w.0 as u32;
        if let Some(lr) = &mut c.linux_receiver {
            // As the testbed sets it: tcp_rmem[1] = 2 × window (tcp_adv_win_scale 1),
            // tcp_rmem[2] at least 6 MB, route initrwnd = the window in segments.
            let buf = 2 * w.0;
            lr.rmem = [4096, buf, buf.max(6_291_456)];
            lr.init_rcv_wnd = Some(w.0.div_ceil(u64::from(c.mss)) as u32);
        }
    }
    if c.ack.ack_every == 0 {
        return Err(err(src, &key("ack_every"), "must be at least 1"));
    }
    if c.dupack_threshold == 0 {
        return Err(err(src, &key("dupack_threshold"), "must be at least 1"));
    }
    Ok(c)
}

fn ack_policy(c: &mut StackConfig, h: &RawHost, src: &str, side: &str) -> Result<(), ScenarioError> {
    let key = |k: &str| format!("{side}.{k}");
    let timeout = h.delayed_ack_timeout.map(|d| d.0);
    if let Some(mode) = &h.delayed_ack {
        c.ack.delayed = match mode.as_str() {
            "off" => DelayedAck::Off,
            "timer" => DelayedAck::Timer(timeout.unwrap_or(Duration::from_millis(200))),
            "bsd_tick" => DelayedAck::Tick { period: timeout.unwrap_or(Duration::from_millis(200)), phase: Duration::ZERO },
            other => {
                return Err(err(src, &key("delayed_ack"), format!("{other:?}: expected \"timer\", \"bsd_tick\" or \"off\"")))
            }
        };
    } else if let Some(t) = timeout {
        c.ack.delayed = match c.ack.delayed {
            DelayedAck::Tick { phase, .. } => DelayedAck::Tick { period: t, phase },
            _ => DelayedAck::Timer(t),
        };
    }
    if let Some(p) = h.delayed_ack_phase {
        match &mut c.ack.delayed {
            DelayedAck::Tick { period, phase } if p.0 < *period => *phase = p.0,
            DelayedAck::Tick { .. } => return Err(err(src, &key("delayed_ack_phase"), "must be shorter than the tick period")),
            _ => return Err(err(src, &key("delayed_ack_phase"), "applies only to delayed_ack = \"bsd_tick\"")),
        }
    }
    if matches!(c.ack.delayed, DelayedAck::Timer(d) | DelayedAck::Tick { period: d, .. } if d == Duration::ZERO) {
        return Err(err(src, &key("delayed_ack_timeout"), "must be longer than 0ms (use delayed_ack = \"off\")"));
    }
    if let Some(q) = h.quickack {
        if q && h.delayed_ack.as_deref().is_some_and(|m| m != "off") {
            return Err(err(src, &key("quickack"), "quickack = true contradicts delayed_ack"));
        }
        if q {
            c.ack.delayed = DelayedAck::Off;
        }
    }
    if let Some(count) = &h.ack_count {
        c.ack.count = match count.as_str() {
            "bytes" => AckCount::Bytes,
            "segments" => AckCount::Segments,
            other => return Err(err(src, &key("ack_count"), format!("{other:?}: expected \"bytes\" or \"segments\""))),
        };
    }
    Ok(())
}

/// Byte offsets per `drop.*_bytes` list: as many as the occurrence lists hold.
const MAX_BYTE_DROPS: usize = 10_000;

fn drops(d: &RawDrop, src: &str) -> Result<DropConfig, ScenarioError> {
    for (k, v) in [("syn", &d.syn), ("synack", &d.synack), ("ack", &d.ack), ("data", &d.data), ("client_data", &d.client_data)] {
        if v.contains(&0) {
            return Err(err(src, &format!("drop.{k}"), "occurrence numbers start at 1"));
        }
    }
    for (k, v) in [("data_bytes", &d.data_bytes), ("client_data_bytes", &d.client_data_bytes)] {
        if v.len() > MAX_BYTE_DROPS {
            return Err(err(src, &format!("drop.{k}"), format!("{} offsets: at most {MAX_BYTE_DROPS} per list", v.len())));
        }
    }
    Ok(DropConfig {
        syn: d.syn.clone(),
        synack: d.synack.clone(),
        ack: d.ack.clone(),
        data: d.data.clone(),
        client_data: d.client_data.clone(),
        data_bytes: d.data_bytes.clone(),
        client_data_bytes: d.client_data_bytes.clone(),
    })
}

fn random_loss(r: &RawRandomLoss, src: &str, seed: u64) -> Result<RandomLossConfig, ScenarioError> {
    let prob = |key: &str, p: f64| {
        if (0.0..=1.0).contains(&p) {
            Ok(p)
        } else {
            Err(err(src, key, format!("{p} is not a probability between 0 and 1")))
        }
    };
    let one = |dir: &str, p: Option<f64>, g: &Option<RawGilbert>| -> Result<LossConfig, ScenarioError> {
        match (p, g) {
            (Some(_), Some(_)) => {
                Err(err(src, &format!("random_loss.gilbert_{dir}"), format!("set either random_loss.{dir} or gilbert_{dir}")))
            }
            (p, None) => Ok(LossConfig::Bernoulli(prob(&format!("random_loss.{dir}"), p.unwrap_or(0.0))?)),
            (None, Some(g)) => {
                let k = format!("random_loss.gilbert_{dir}");
                Ok(LossConfig::Gilbert(GilbertConfig {
                    p_good_to_bad: prob(&format!("{k}.p_good_to_bad"), g.p_good_to_bad)?,
                    p_bad_to_good: prob(&format!("{k}.p_bad_to_good"), g.p_bad_to_good)?,
                    loss_good: prob(&format!("{k}.loss_good"), g.loss_good)?,
                    loss_bad: prob(&format!("{k}.loss_bad"), g.loss_bad.unwrap_or(1.0))?,
                }))
            }
        }
    };
    let per_connection = r.per_connection.unwrap_or(false);
    if per_connection && (r.gilbert_forward.is_some() || r.gilbert_reverse.is_some()) {
        return Err(err(
            src,
            "random_loss.per_connection",
            "draws Bernoulli losses only: a Gilbert-Elliott chain runs over the whole direction",
        ));
    }
    Ok(RandomLossConfig {
        per_connection,
        forward: one("forward", r.forward, &r.gilbert_forward)?,
        reverse: one("reverse", r.reverse, &r.gilbert_reverse)?,
        seed: r.seed.unwrap_or(seed),
        kinds: KindLoss {
            syn: prob("random_loss.syn", r.syn.unwrap_or(0.0))?,
            synack: prob("random_loss.synack", r.synack.unwrap_or(0.0))?,
            ack: prob("random_loss.ack", r.ack.unwrap_or(0.0))?,
            data: prob("random_loss.data", r.data.unwrap_or(0.0))?,
            client_data: prob("random_loss.client_data", r.client_data.unwrap_or(0.0))?,
        },
    })
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

fn workload(w: &RawWorkload, src: &str) -> Result<WorkloadConfig, ScenarioError> {
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
    let response = w.response.map_or(13_549, |s| s.0);
    let response_writes = match &w.response_writes {
        None => vec![response],
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
            writes
        }
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "[path]\nrtt = \"100ms\"\n";

    #[test]
    fn minimal_file_gets_defaults() {
        let s = load(MINIMAL, "s.toml", &[]).unwrap();
        assert_eq!(s.path.rtt, Duration::from_millis(100));
        assert_eq!(s.client.profile, "linux");
        assert_eq!(s.workload.response, 13_549);
    }

    #[test]
    fn unknown_key_names_file_and_key() {
        let e = load("[path]\nrtt = \"1ms\"\nbandwith = \"1Mbit\"\n", "s.toml", &[]).unwrap_err();
        assert_eq!((e.file.as_str(), e.key.as_str()), ("s.toml", "path.bandwith"));
        assert!(e.to_string().starts_with("s.toml: path.bandwith: unknown key"), "{e}");
        let e = load(MINIMAL, "s.toml", &["client.nagle=true".into()]).unwrap_err();
        assert_eq!(e.key, "client.nagle");
        let e = load("colour = 1\n[path]\nrtt = \"1ms\"\n", "s.toml", &[]).unwrap_err();
        assert_eq!(e.key, "colour");
    }

    #[test]
    fn missing_or_unknown_unit_names_the_key() {
        let e = load("[path]\nrtt = 100\n", "a.toml", &[]).unwrap_err();
        assert_eq!(e.key, "path.rtt");
        assert!(e.message.contains("no unit"), "{e}");
        let e = load(MINIMAL, "a.toml", &["workload.response=35".into()]).unwrap_err();
        assert_eq!(e.key, "workload.response");
        let e = load(MINIMAL, "a.toml", &["path.bandwidth=10Mbaud".into()]).unwrap_err();
        assert_eq!(e.key, "path.bandwidth");
        assert!(e.message.contains("unknown unit"), "{e}");
        let e = load("[path]\n", "a.toml", &[]).unwrap_err();
        assert_eq!(e.key, "path.rtt");
    }

    #[test]
    fn overrides_and_profiles() {
        let s = load(
            MINIMAL,
            "s.toml",
            &[
                "client.stack=rfc2988".into(),
                "client.rto_min=200ms".into(),
                "server.slow_start_initial=2".into(),
                "mechanisms.syn_optimizer={side=\"client\", delay=\"200ms\", retries=3}".into(),
            ],
        )
        .unwrap();
        assert_eq!(s.client.rto.initial, Duration::from_secs(3));
        assert_eq!(s.client.rto.min, Duration::from_millis(200));
        assert_eq!(s.server.initial_window, InitialWindow::Segments(2));
        assert_eq!(s.mechanisms.syn_optimizer.unwrap().retries, 3);
        let e = load(MINIMAL, "s.toml", &["client.stack=vms".into()]).unwrap_err();
        assert_eq!(e.key, "client.stack");
        let e = load(MINIMAL, "s.toml", &["workload.response_writes=[\"1kB\"]".into()]).unwrap_err();
        assert_eq!(e.key, "workload.response_writes");
    }

    /// BBR is the Linux sender's: named on a `linux` host it is taken, on another profile it
    /// is refused with the key and the reason.
    #[test]
    fn bbr_is_for_the_linux_stack_only() {
        let s = load(MINIMAL, "s.toml", &["server.congestion_control=\"bbr\"".into()]).unwrap();
        assert_eq!((s.server.congestion_control.name(), s.client.congestion_control.name()), ("bbr", "cubic"));
        let sets = ["client.stack=\"rfc6298\"".into(), "client.congestion_control=\"bbr\"".into()];
        let e = load(MINIMAL, "s.toml", &sets).unwrap_err();
        assert_eq!(e.key, "client.congestion_control");
        assert!(e.message.contains("needs stack = \"linux\"") && e.message.contains("rfc6298"), "{}", e.message);
    }

    /// `sack = false` in the linux profile implies what the kernel implies (no RACK, no
    /// TLP, the recovery `tcp_is_reno` runs) with a note; a file that turns one of them on beside it
    /// is refused once, naming every key involved.
    #[test]
    fn sack_off_implies_what_the_kernel_implies_and_contradictions_are_refused_at_once() {
        let s = load(MINIMAL, "s.toml", &["server.sack=false".into()]).unwrap();
        let sv = &s.server;
        assert_eq!((sv.sack, sv.rack, sv.tlp, sv.recovery), (false, false, false, RecoveryName::Prr));
        assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
        let note = &s.notes[0];
        for k in ["server.sack = false", "server.rack = false", "server.tlp = false", "PRR stays"] {
            assert!(note.contains(k), "{note}");
        }
        // The client is untouched, and the defaults imply nothing.
        assert_eq!((s.client.rack, s.client.tlp, s.client.recovery), (true, true, RecoveryName::Prr));
        assert!(load(MINIMAL, "s.toml", &[]).unwrap().notes.is_empty());
        // What the file says beside it stays when it needs no SACK.
        let s = load(MINIMAL, "s.toml", &["client.sack=false".into(), "client.recovery=reno".into()]).unwrap();
        assert_eq!((s.client.recovery.name(), s.client.rack, s.client.tlp), ("reno", false, false));
        assert!(!s.notes[0].contains("recovery"), "{:?}", s.notes);

        let e = load(MINIMAL, "s.toml", &["server.sack=false".into(), "server.rack=true".into(), "server.tlp=true".into()])
            .unwrap_err();
        assert_eq!(e.key, "server.sack");
        for k in ["server.rack = true", "server.tlp = true", "set server.sack = true", "drop server.rack and server.tlp"] {
            assert!(e.message.contains(k), "{e}");
        }
        let e = load(MINIMAL, "s.toml", &["client.sack=false".into(), "client.recovery=rfc6675".into()]).unwrap_err();
        assert!(e.message.contains("client.recovery = \"rfc6675\"") && !e.message.contains("rack"), "{e}");
        // Linux's PRR runs without SACK too.
        let s = load(MINIMAL, "s.toml", &["client.sack=false".into(), "client.recovery=prr".into()]).unwrap();
        assert_eq!(s.client.recovery, RecoveryName::Prr);
        // A profile without SACK: the key that needs it is named with the reason.
        let e = load(MINIMAL, "s.toml", &["client.stack=bsd".into(), "client.tlp=true".into()]).unwrap_err();
        assert!(e.message.contains("the profile has no SACK") && e.message.contains("client.tlp = true"), "{e}");
    }

    #[test]
    fn spurious_rto_defaults_by_profile_and_names_what_it_knows() {
        let s = load(MINIMAL, "s.toml", &["client.stack=rfc2988".into()]).unwrap();
        assert_eq!((s.client.spurious_rto.name(), s.server.spurious_rto.name()), ("off", "linux"));
        let s = load(MINIMAL, "s.toml", &["client.stack=rfc2988".into(), "client.spurious_rto=frto".into()]).unwrap();
        assert_eq!(s.client.spurious_rto, SpuriousRtoName::Frto);
        let e = load(MINIMAL, "s.toml", &["server.spurious_rto=eifel".into()]).unwrap_err();
        assert_eq!(e.key, "server.spurious_rto");
        assert!(e.message.contains("known: off, frto, linux"), "{e}");
    }

    #[test]
    fn web_keys_are_checked_and_errors_name_them() {
        let db = "[dumbbell]\npairs = 4\nbandwidth = \"10Mbit\"\ndelay = \"10ms\"\n";
        let s = load(
            db,
            "d.toml",
            &["workload.kind=packmime".into(), "workload.load=\"50%\"".into(), "workload.duration=\"10s\"".into()],
        )
        .unwrap();
        assert_eq!(s.workload.kind.rate(), Some(ArrivalRate::Load(0.5)));
        assert_eq!(s.dumbbell.as_ref().unwrap().pairs, 4);
        let bad = |ov: &[&str]| {
            let ov: Vec<String> = ov.iter().map(|s| s.to_string()).collect();
            load(db, "d.toml", &ov).unwrap_err().key
        };
        assert_eq!(bad(&["workload.kind=packmime", "workload.duration=\"1s\""]), "workload.load");
        assert_eq!(bad(&["workload.kind=packmime", "workload.load=\"150%\"", "workload.duration=\"1s\""]), "workload.load");
        assert_eq!(bad(&["workload.kind=poisson", "workload.connections_per_second=5"]), "workload.duration");
        assert_eq!(bad(&["workload.flows=3"]), "workload.flows");
        assert_eq!(bad(&["dumbbell.client_delay=[\"1ms\", \"2ms\"]"]), "dumbbell.client_delay");
        assert_eq!(bad(&["dumbbell.queue={kind=\"red\", packets=\"bdq\"}"]), "dumbbell.queue.packets");
        assert_eq!(bad(&["dumbbell.queue={kind=\"red\", packets=100, max_p=0.1, linterm=10}"]), "dumbbell.queue.linterm");
        assert_eq!(bad(&["mechanisms.sfr={side=\"middle\"}"]), "mechanisms.sfr.side");
        assert_eq!(bad(&["path.rtt=\"10ms\""]), "path");
        assert_eq!(
            bad(&[
                "workload.kind=poisson",
                "workload.connections_per_second=5",
                "workload.duration=\"1s\"",
                "workload.response_dist={kind=\"empirical\", file=\"no-such.csv\"}"
            ]),
            "workload.response_dist.file"
        );
        // BDP sizing: 10 Mbit/s × 2·(1 + 10 + 1) ms = 30 kB = 30 packets of 1000 B; RED thresholds 5 and 15.
        let s = load(
            db,
            "d.toml",
            &["dumbbell.queue={kind=\"red\", packets=\"bdp\", q_weight=0.01, linterm=20, gentle=true}".into()],
        )
        .unwrap();
        assert_eq!(
            s.dumbbell.unwrap().queue,
            QueueConfig::Red { min_th: 5.0, max_th: 15.0, max_p: 0.05, weight: 0.01, limit: 30, gentle: true }
        );
    }

    #[test]
    fn generator_keys_are_checked_with_their_key() {
        let bad = |sets: &[&str], key: &str, says: &str| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let e = load(MINIMAL, "g.toml", &sets).unwrap_err();
            assert_eq!(e.key, key, "{e}");
            assert!(e.to_string().contains(says), "{e}");
        };
        bad(&["path.rtt_max=\"50ms\""], "path.rtt_max", "below path.rtt");
        bad(&["path.rtt_max=\"61s\""], "path.rtt_max", "");
        bad(&["random_loss.syn=1.5"], "random_loss.syn", "not a probability");
        bad(&["random_loss.client_data=-0.1"], "random_loss.client_data", "not a probability");
        bad(&["capture.link=\"token-ring\""], "capture.link", "\"sll2\"");
        bad(&["capture.link=\"ipv6\"", "capture.ipv6=false"], "capture.ipv6", "only IPv6");
        bad(&["capture.link=\"ipv4\"", "capture.ipv6=true"], "capture.ipv6", "only IPv4");
        bad(&["capture.link=\"raw\"", "capture.vlan=7"], "capture.vlan", "Ethernet");
        bad(&["capture.vlan=4096"], "capture.vlan", "0 to 4095");
        bad(&["workload.max_connections=10"], "workload.max_connections", "\"poisson\"");
        let poisson = |extra: &str| format!("{MINIMAL}[workload]\nkind = \"poisson\"\nconnections_per_second = 10.0\n{extra}");
        let e = load(&poisson(""), "p.toml", &[]).unwrap_err();
        assert_eq!(e.key, "workload.duration", "{e}");
        assert!(e.message.contains("or max_connections"), "{e}");
        assert_eq!(load(&poisson("max_connections = 0\n"), "p.toml", &[]).unwrap_err().key, "workload.max_connections");
        let e = load(
            &poisson("max_connections = 5\nresponse_dist = { kind = \"uniform\", min = \"9kB\", max = \"1kB\" }\n"),
            "p.toml",
            &[],
        );
        assert_eq!(e.unwrap_err().key, "workload.response_dist.max");
        let ok = load(
            &poisson("max_connections = 5\nresponse_dist = { kind = \"uniform\", min = \"1B\", max = \"1kB\" }\n"),
            "p.toml",
            &[],
        );
        match ok.unwrap().workload.kind {
            WorkloadKind::Poisson(p) => {
                assert_eq!((p.max_connections, p.response), (Some(5), SizeDist::Uniform { min: 1, max: 1000 }))
            }
            k => panic!("{k:?}"),
        }
        let dumbbell = "[dumbbell]\npairs = 2\nbandwidth = \"10Mbit\"\ndelay = \"5ms\"\n[path]\nrtt_max = \"90ms\"\n";
        assert_eq!(load(dumbbell, "d.toml", &[]).unwrap_err().key, "path");
        let s = load(
            MINIMAL,
            "g.toml",
            &["path.rtt_max=\"200ms\"".into(), "random_loss.synack=0.25".into(), "capture.link=\"ipv6\"".into()],
        )
        .unwrap();
        assert_eq!(s.path.rtt_max, Some(Duration::from_millis(200)));
        assert_eq!(s.random_loss.kinds, KindLoss { synack: 0.25, ..KindLoss::default() });
        assert!(s.capture_ipv6 && s.capture_link == CaptureLink::Ipv6);
        // Unset, the keys change nothing.
        let plain = load(MINIMAL, "g.toml", &[]).unwrap();
        assert_eq!((plain.path.rtt_max, plain.random_loss.kinds.any(), plain.capture_ipv6), (None, false, false));
    }
}
