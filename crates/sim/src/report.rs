//! What a run reports: one record per connection (the keys `shortflow simulate --json`
//! writes) and a summary.

use serde::Serialize;

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RequestReport {
    /// When the request's first byte was sent, from the connection's first SYN.
    pub sent_s: f64,
    /// When the client had the whole response, from the first SYN.
    pub complete_s: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ConnReport {
    pub id: u32,
    /// The topology's client–server pair that carried it.
    pub pair: u32,
    /// Request and response bytes the workload gave it (all exchanges).
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Server think time of all exchanges (PackMime's server delay), s.
    pub think_s: f64,
    /// Simulated time of the client's first SYN.
    pub start_s: f64,
    /// When the client sent the first request byte, from its first SYN.
    pub request_sent_s: Option<f64>,
    /// When the client had received the whole (last) response, from its first SYN.
    pub complete_s: Option<f64>,
    pub established: bool,
    /// SYNs the client side put on the wire (TCP's and the SYN optimizer's).
    pub syn_transmissions: u32,
    /// SYN/ACKs the server side put on the wire.
    pub synack_transmissions: u32,
    /// Data and FIN segments sent again, both ends.
    pub retransmissions: u32,
    /// Retransmission-timer expiries, both ends, handshake included.
    pub timeouts: u32,
    /// Entries into fast recovery, both ends (Linux TCPSackRecovery + TCPRenoRecovery).
    pub fast_retransmits: u32,
    /// Segments RACK marked lost (RFC 8985), both ends.
    pub rack_losses: u32,
    /// Tail loss probes sent, both ends (Linux TCPLossProbes).
    pub tlp_probes: u32,
    /// Timeouts found spurious by F-RTO (`tcp::spurious`; Linux TCPSpuriousRTOs), both ends.
    pub spurious_timeouts: u32,
    /// D-SACKs received, both ends (Linux TCPDSACKRecv).
    pub dsacks: u32,
    /// How much later Linux's timer wheel may fire the retransmission, probe and
    /// reordering timers this connection waited for (profiles with jiffies; else 0).
    pub timer_slack_s: f64,
    /// ACKs sent by a delayed-ACK timer, both ends.
    pub delayed_acks: u32,
    /// Copies the SYN optimizer sent.
    pub optimizer_resends: u32,
    /// Client's view: SYN/ACK arrival minus the last SYN sent before it.
    pub handshake_rtt_s: Option<f64>,
    /// Response bytes the client received in order.
    pub bytes_received: u64,
    /// Packets of this connection lost in the network (scripted, random or queue).
    pub packets_dropped: u32,
    /// Data segments that arrived carrying only bytes the receiver had: unneeded
    /// retransmissions (a spurious timeout's, a spurious SFR's).
    pub spurious_retransmits: u32,
    /// Segments Super Fast Retransmit resent (document 001), and its timeout.
    pub sfr_retransmits: u32,
    pub sfr_timeout_s: Option<f64>,
    /// Document 004's C(f) = RTO_min / RTO_current of each timer that expired (only with
    /// the delayed-ACK-aware minimum RTO).
    pub rto_costs: Vec<f64>,
    pub requests: Vec<RequestReport>,
    /// (time from first SYN, response bytes received so far) at each in-order arrival;
    /// only when the run was asked for a timeline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<(f64, u64)>>,
}

impl ConnReport {
    /// Bytes its lists hold beyond the report itself (a run's memory budget counts them).
    pub fn heap_bytes(&self) -> usize {
        self.rto_costs.capacity() * std::mem::size_of::<f64>()
            + self.requests.capacity() * std::mem::size_of::<RequestReport>()
            + self.timeline.as_ref().map_or(0, |t| t.capacity() * std::mem::size_of::<(f64, u64)>())
    }
}

/// One direction of the shared (bottleneck) link.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct LinkReport {
    pub direction: String,
    pub bytes: u64,
    /// Busy time over the workload's duration (or the run's length).
    pub utilisation: f64,
    pub drops: u64,
}

/// How a target load was reached: the rate found and the utilisation measured.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Calibration {
    pub target: f64,
    pub measured: f64,
    pub connections_per_second: f64,
    pub runs: u32,
}

/// Counts over all the connections of a run, added up as each one finishes: what a run
/// keeps of its connections when it is asked for totals only (`RunOptions::totals_only`,
/// the trace generator's runs of millions of connections), and always reported.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Totals {
    pub connections: u64,
    /// Connections whose client reached ESTABLISHED (it got a SYN/ACK).
    pub established: u64,
    /// Connections whose client had every response.
    pub completed: u64,
    pub syn_transmissions: u64,
    pub synack_transmissions: u64,
    pub retransmissions: u64,
    pub timeouts: u64,
    /// What the capture point saw (0 without a capture): packets, SYNs, SYN/ACKs.
    pub packets_captured: u64,
    pub syns_captured: u64,
    pub synacks_captured: u64,
    /// Connections with more than one SYN (SYN/ACK) in the capture.
    pub multiple_syns_captured: u64,
    pub multiple_synacks_captured: u64,
    /// Connections whose capture holds the client's ACK of a SYN/ACK: the handshake is
    /// complete as the capture shows it (what an analyzer of the capture calls successful).
    pub handshakes_captured: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Summary {
    pub connections: usize,
    pub completed: usize,
    pub mean_complete_s: Option<f64>,
    pub simulated_s: f64,
    pub events: u64,
    /// Always 0 in a correct model (checked by the property tests).
    pub events_scheduled_in_past: u64,
    pub packets_dropped: u64,
    /// The run stopped at the scenario's time_limit with connections incomplete.
    pub time_limit_reached: bool,
    pub peak_open_connections: usize,
    pub totals: Totals,
    pub bottleneck: Vec<LinkReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RunReport {
    pub scenario: String,
    pub source: String,
    pub seed: u64,
    pub capture_point: String,
    pub connections: Vec<ConnReport>,
    pub summary: Summary,
    /// Things the user should know about this run (e.g. it was cut by its time limit).
    pub warnings: Vec<String>,
}

impl RunReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("reports are plain data")
    }
}
