//! What a run reports: one record per connection (the keys `shortflow simulate --json`
//! writes) and a summary.

use serde::Serialize;

shortflow_scenario::document! {
    /// One exchange of a connection, as the client saw it.
    #[derive(Default)]
    pub struct RequestReport {
        /// When the request's first byte was sent, from the connection's first SYN.
        "s" sent_s: f64,
        /// When the client had the whole response, from the first SYN (none if it never did).
        "s" complete_s: Option<f64>,
    }
}

shortflow_scenario::document! {
    /// One connection of a run: the keys `shortflow simulate --json` writes for it.
    #[derive(Default)]
    pub struct ConnReport {
        /// The connection's number in the run, in order of its first SYN.
        "" id: u32,
        /// The topology's client–server pair that carried it.
        "" pair: u32,
        /// Request bytes the workload gave it (all exchanges).
        "bytes" request_bytes: u64,
        /// Response bytes the workload gave it (all exchanges).
        "bytes" response_bytes: u64,
        /// Server think time of all exchanges (PackMime's server delay).
        "s" think_s: f64,
        /// Simulated time of the client's first SYN.
        "s" start_s: f64,
        /// When the client sent the first request byte, from its first SYN.
        "s" request_sent_s: Option<f64>,
        /// When the client had received the whole (last) response, from its first SYN.
        "s" complete_s: Option<f64>,
        /// The client reached ESTABLISHED (it got a SYN/ACK).
        "" established: bool,
        /// SYNs the client side put on the wire (TCP's and the SYN optimizer's).
        "" syn_transmissions: u32,
        /// SYN/ACKs the server side put on the wire.
        "" synack_transmissions: u32,
        /// Data and FIN segments sent again, both ends.
        "" retransmissions: u32,
        /// Retransmission-timer expiries, both ends, handshake included.
        "" timeouts: u32,
        /// Entries into fast recovery, both ends (Linux TCPSackRecovery + TCPRenoRecovery).
        "" fast_retransmits: u32,
        /// Segments RACK marked lost (RFC 8985), both ends.
        "" rack_losses: u32,
        /// Tail loss probes sent, both ends (Linux TCPLossProbes).
        "" tlp_probes: u32,
        /// Timeouts found spurious by F-RTO (`tcp::spurious`; Linux TCPSpuriousRTOs), both ends.
        "" spurious_timeouts: u32,
        /// D-SACKs received, both ends (Linux TCPDSACKRecv).
        "" dsacks: u32,
        /// How much later Linux's timer wheel may fire the retransmission, probe and
        /// reordering timers this connection waited for (profiles with jiffies; else 0).
        "s" timer_slack_s: f64,
        /// ACKs sent by a delayed-ACK timer, both ends.
        "" delayed_acks: u32,
        /// Copies the SYN optimizer sent.
        "" optimizer_resends: u32,
        /// Client's view: SYN/ACK arrival minus the last SYN sent before it.
        "s" handshake_rtt_s: Option<f64>,
        /// Response bytes the client received in order.
        "bytes" bytes_received: u64,
        /// Packets of this connection lost in the network (scripted, random or queue).
        "" packets_dropped: u32,
        /// Data segments that arrived carrying only bytes the receiver had: unneeded
        /// retransmissions (a spurious timeout's, a spurious SFR's).
        "" spurious_retransmits: u32,
        /// Segments Super Fast Retransmit resent (document 001).
        "" sfr_retransmits: u32,
        /// Super Fast Retransmit's timeout (document 001), when it ran.
        "s" sfr_timeout_s: Option<f64>,
        /// Document 004's C(f) = RTO_min / RTO_current of each timer that expired (only with
        /// the delayed-ACK-aware minimum RTO).
        "" rto_costs: Vec<f64>,
        /// Each exchange's times (`RequestReport`).
        "" requests: Vec<RequestReport>,
        /// (time from first SYN, response bytes received so far) at each in-order arrival;
        /// only when the run was asked for a timeline.
        #[serde(skip_serializing_if = "Option::is_none")]
        "" timeline: Option<Vec<(f64, u64)>>,
    }
}

/// A column of the flows table (`SimulationResult.flows`, `simulate --flows`): its name —
/// the analyzer's connection-table column where it measures the same quantity, else the
/// report's key — the `ConnReport` key it is taken from, and its Arrow type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowColumn {
    pub name: &'static str,
    pub key: &'static str,
    pub arrow: &'static str,
}

const fn flow(name: &'static str, key: &'static str, arrow: &'static str) -> FlowColumn {
    FlowColumn { name, key, arrow }
}

/// The flows table's columns, in order (each one's unit and meaning: its key's).
pub const FLOW_COLUMNS: &[FlowColumn] = &[
    flow("conn_id", "id", "uint32"),
    flow("first_ts_s", "start_s", "float64"),
    flow("syn_count", "syn_transmissions", "uint32"),
    flow("synack_count", "synack_transmissions", "uint32"),
    flow("established", "established", "bool"),
    flow("handshake_rtt_s", "handshake_rtt_s", "float64"),
    flow("bytes_c2s", "request_bytes", "uint64"),
    flow("bytes_s2c", "bytes_received", "uint64"),
    flow("pair", "pair", "uint32"),
    flow("request_bytes", "request_bytes", "uint64"),
    flow("response_bytes", "response_bytes", "uint64"),
    flow("think_s", "think_s", "float64"),
    flow("request_sent_s", "request_sent_s", "float64"),
    flow("complete_s", "complete_s", "float64"),
    flow("retransmissions", "retransmissions", "uint32"),
    flow("timeouts", "timeouts", "uint32"),
    flow("fast_retransmits", "fast_retransmits", "uint32"),
    flow("delayed_acks", "delayed_acks", "uint32"),
    flow("packets_dropped", "packets_dropped", "uint32"),
    flow("spurious_retransmits", "spurious_retransmits", "uint32"),
    flow("sfr_retransmits", "sfr_retransmits", "uint32"),
    flow("sfr_timeout_s", "sfr_timeout_s", "float64"),
    flow("optimizer_resends", "optimizer_resends", "uint32"),
    flow("rto_costs", "rto_costs", "list<item: double>"),
];

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flow_column_takes_a_key_of_the_report() {
        let keys: Vec<&str> = ConnReport::fields().iter().map(|f| f.name).collect();
        for c in FLOW_COLUMNS {
            assert!(keys.contains(&c.key), "flows column {} takes {}, which the report does not have", c.name, c.key);
        }
        let json = serde_json::to_value(ConnReport::default()).unwrap();
        let written: Vec<&String> = json.as_object().unwrap().keys().collect();
        // The report writes each declared field but the timeline, which only a run asked for one has.
        assert_eq!(written.len(), keys.len() - 1);
        assert!(written.iter().all(|k| keys.contains(&k.as_str())));
    }
}
