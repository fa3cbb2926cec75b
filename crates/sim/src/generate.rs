//! The synthetic-trace generator (`shortflow generate`) as a simulator workload: the
//! generator's options become one scenario (Poisson arrivals of short request/response
//! connections over a fast path, each connection's RTT drawn from a range, SYNs, SYN/ACKs
//! and the client's pure ACKs lost with their own probabilities), run by the one model of
//! a handshake there is, the simulator, with its capture streamed to the caller's writer
//! and only the run's totals kept. The ground truth returned is the simulator's own count
//! of what the capture point saw, so tests can hold the analyzer to it.

use std::io::Write;

use shortflow_wire::capture::PcapWriter;

use crate::capture::PcapStream;
use crate::scenario::{self, CaptureLink, Scenario};
use crate::world::{Budget, LimitError, RunOptions, World};
use crate::ScenarioError;

/// Unix time of the capture's first instant (simulated time 0): 2023-11-14, as the
/// generator's traces always started.
pub const START_UNIX_S: u64 = 1_700_000_000;

/// Payload bytes of one full segment on the simulated path (1500 B MTU, timestamps on):
/// the unit of `response_segments_max`.
pub const SEGMENT_BYTES: u64 = 1448;

#[derive(Debug, Clone)]
pub struct GenOptions {
    pub connections: u64,
    pub seed: u64,
    /// New connections per second (Poisson arrivals).
    pub arrivals_per_s: f64,
    /// Each connection's RTT, drawn uniformly from this range.
    pub rtt_min_ns: u64,
    pub rtt_max_ns: u64,
    /// Loss probability of each SYN, SYN/ACK, and client pure ACK (the handshake's third
    /// packet and the later ones) on the path.
    pub syn_loss: f64,
    pub synack_loss: f64,
    pub ack_loss: f64,
    /// The client's SYN RTO and the server's SYN/ACK RTO (doubled per retry by the stack).
    pub client_rto_ns: u64,
    pub server_rto_ns: u64,
    pub syn_retries: u32,
    pub synack_retries: u32,
    /// Capture near the server instead of near the client.
    pub server_side: bool,
    pub ipv6: bool,
    /// Largest response, in full segments (each response 1 B to this many segments' bytes).
    pub response_segments_max: u32,
    pub link: CaptureLink,
    pub vlan: Option<u16>,
}

impl Default for GenOptions {
    fn default() -> Self {
        Self {
            connections: 1000,
            seed: 1,
            arrivals_per_s: 2000.0,
            rtt_min_ns: 10_000_000,
            rtt_max_ns: 200_000_000,
            syn_loss: 0.01,
            synack_loss: 0.005,
            ack_loss: 0.0,
            client_rto_ns: 1_000_000_000,
            server_rto_ns: 1_000_000_000,
            syn_retries: 5,
            synack_retries: 5,
            server_side: false,
            ipv6: false,
            response_segments_max: 20,
            link: CaptureLink::Ethernet,
            vlan: None,
        }
    }
}

/// What the generated capture holds, counted by the simulator as its capture point saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct GenTruth {
    pub packets: u64,
    /// Connections started (a connection whose every SYN was lost before a server-side
    /// capture point is counted, though the capture never shows it).
    pub connections: u64,
    /// Connections whose capture holds the client's ACK of a SYN/ACK.
    pub successful: u64,
    /// SYN and SYN/ACK transmissions in the capture.
    pub syns_captured: u64,
    pub synacks_captured: u64,
    /// Connections with more than one SYN (SYN/ACK) in the capture.
    pub multiple_syns: u64,
    pub multiple_synacks: u64,
}

/// The scenario of a generator run: read and checked by the scenario model like any file
/// (its errors name the key an option became).
pub fn scenario(o: &GenOptions) -> Result<Scenario, ScenarioError> {
    // link = "ipv6" carries IPv6 whatever `ipv6` says; "ipv4" cannot.
    if o.link == CaptureLink::Ipv4 && o.ipv6 {
        return Err(ScenarioError::new(
            "shortflow generate",
            "ipv6",
            "link type ipv4 (228) carries only IPv4 packets, but IPv6 was asked for",
        ));
    }
    let ipv6 = o.ipv6 || o.link == CaptureLink::Ipv6;
    let vlan = o.vlan.map_or(String::new(), |v| format!("vlan = {v}\n"));
    let text = format!(
        r#"name = "shortflow generate"
seed = {seed}
# The run ends when its last connection does; this only bounds it.
time_limit = "31536000s"

[path]
rtt = "{rtt_min}ns"
rtt_max = "{rtt_max}ns"
# A fast path that never queues: the losses are the options' alone.
bandwidth = "10Gbit"
queue = {{ kind = "droptail", packets = 1000000 }}

[client]
stack = "linux"
syn_rto = "{crto}ns"
syn_retries = {syn_retries}

[server]
stack = "linux"
syn_rto = "{srto}ns"
synack_retries = {synack_retries}

[random_loss]
syn = {syn_loss:?}
synack = {synack_loss:?}
ack = {ack_loss:?}

[workload]
kind = "poisson"
connections_per_second = {rate:?}
max_connections = {n}
request_dist = {{ kind = "fixed", size = "300B" }}
response_dist = {{ kind = "uniform", min = "1B", max = "{resp}B" }}
port = 80

[capture]
point = "{point}"
link = "{link}"
ipv6 = {ipv6}
{vlan}"#,
        seed = o.seed,
        rtt_min = o.rtt_min_ns,
        rtt_max = o.rtt_max_ns,
        crto = o.client_rto_ns,
        srto = o.server_rto_ns,
        syn_retries = o.syn_retries,
        synack_retries = o.synack_retries,
        syn_loss = o.syn_loss,
        synack_loss = o.synack_loss,
        ack_loss = o.ack_loss,
        rate = o.arrivals_per_s,
        n = o.connections,
        resp = u64::from(o.response_segments_max.max(1)) * SEGMENT_BYTES,
        point = if o.server_side { "server" } else { "client" },
        link = o.link.name(),
    );
    // An error names the option the refused key came from.
    scenario::load(&text, "shortflow generate", &[]).map_err(|e| {
        let option = option_of(&e.key).unwrap_or(&e.key).to_string();
        ScenarioError::new("shortflow generate", option, e.message)
    })
}

/// The generator option (as the Python API names it) a scenario key of `scenario` comes from.
fn option_of(key: &str) -> Option<&'static str> {
    Some(match key {
        "path.rtt" => "rtt_min_s",
        "path.rtt_max" => "rtt_max_s",
        "client.syn_rto" => "client_rto_s",
        "server.syn_rto" => "server_rto_s",
        "client.syn_retries" => "syn_retries",
        "server.synack_retries" => "synack_retries",
        "random_loss.syn" => "syn_loss",
        "random_loss.synack" => "synack_loss",
        "random_loss.ack" => "ack_loss",
        "workload.connections_per_second" => "arrivals_per_s",
        "workload.max_connections" => "connections",
        "workload.response_dist.max" => "response_segments_max",
        "capture.ipv6" => "ipv6",
        "capture.vlan" => "vlan",
        _ => return None,
    })
}

/// Why a generator run failed: its options (as the scenario key they became), its budget,
/// or the writer.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// `{option}: {why}` (the option as the Python API names it).
    #[error("{0}")]
    Options(#[from] ScenarioError),
    #[error("{0}")]
    Limit(#[from] LimitError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Runs the generator's scenario, each captured packet written through `writer` as the
/// run captures it (timestamps from `START_UNIX_S`); returns the truth and the writer's
/// output, flushed. Memory follows the connections open at once.
pub fn generate<W: Write>(o: &GenOptions, writer: PcapWriter<W>, budget: &Budget) -> Result<(GenTruth, W), GenError> {
    let sc = scenario(o)?;
    let mut stream = PcapStream::with_writer(writer, sc.capture_link, sc.capture_ipv6, sc.capture_vlan, sc.workload.port)
        .starting_at(START_UNIX_S * 1_000_000_000);
    let opts = RunOptions { capture: true, timeline: false, totals_only: true };
    let report = World::new(sc, opts).capture_to(&mut stream).try_run(budget)?;
    let out = stream.finish()?;
    let t = report.summary.totals;
    let truth = GenTruth {
        packets: t.packets_captured,
        connections: t.connections,
        successful: t.handshakes_captured,
        syns_captured: t.syns_captured,
        synacks_captured: t.synacks_captured,
        multiple_syns: t.multiple_syns_captured,
        multiple_synacks: t.multiple_synacks_captured,
    };
    Ok((truth, out))
}
