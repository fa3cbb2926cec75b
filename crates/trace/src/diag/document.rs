//! The summary document — what `analyze --summary-json` writes and the Python API's
//! summaries hold — declared once: each field with its unit and meaning beside it. The
//! bindings convert it with serde, and the Python layer takes its keys (in order), units
//! and meanings from `fields()`; it fills only the fields made from the Python side's
//! tables (`percentiles`, `version`, `files`), declared here as `()` and never serialized.

use serde::{Serialize, Serializer};
use shortflow_scenario::document;
pub use shortflow_scenario::fields::FieldDoc;

use super::counters::Totals;
use super::summary::{HandshakeCounts, Summary};
use super::table::Vantage;
use crate::track::Cause;

/// A value for each cause (or each cause users wait through), keyed by `Cause::NAMES`,
/// in the causes' order.
#[derive(Debug, Clone, PartialEq)]
pub struct ByCause<T>(pub Vec<(Cause, T)>);

impl<T: Serialize> Serialize for ByCause<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(c, v)| (Cause::NAMES[*c as usize], v)))
    }
}

/// None for a ratio that has no value (NaN without a denominator, infinite without a repeat).
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

document! {
    /// Document 000's Table 1, its SYN rows, over the connection tries.
    pub struct Table1 {
        /// Connections whose SYN was seen.
        "" connection_tries: u64,
        /// Tries whose handshake completed (the client's ACK of the SYN/ACK was seen).
        "" successful: u64,
        /// Tries that failed: neither answered nor still open when the capture ended.
        "" unsuccessful: u64,
        /// Tries with more than one SYN.
        "" multiple_syns: u64,
        /// Successful tries with more than one SYN.
        "" multiple_syns_successful: u64,
        /// Failed tries with more than one SYN.
        "" multiple_syns_unsuccessful: u64,
        /// Tries with a repeated SYN whose gap is on neither RTO ladder (RFC 6298's, RFC 2988's).
        "" multiple_syns_outside_standard: u64,
        /// SYNs per successful try (none without one).
        "" syns_per_successful: Option<f64>,
        /// One successful try with a repeated SYN every this many successful tries (none without one).
        "" duplicate_syn_every: Option<f64>,
        /// SYNs beyond each try's first.
        "" syn_retransmissions: u64,
        /// SYN/ACKs beyond each connection's first.
        "" synack_retransmissions: u64,
        /// Packets read, TCP or not.
        "" packets: u64,
        /// Connections tracked, those seen without their SYN included.
        "" connections: u64,
    }
}

impl Table1 {
    pub fn of(s: &Summary) -> Self {
        Self {
            connection_tries: s.connection_tries(),
            successful: s.successful(),
            unsuccessful: s.unsuccessful(),
            multiple_syns: s.syn.multiple,
            multiple_syns_successful: s.syn.multiple_successful,
            multiple_syns_unsuccessful: s.syn.multiple_unsuccessful,
            multiple_syns_outside_standard: s.syn.multiple_outside_standard,
            syns_per_successful: finite(s.syn.per_successful()),
            duplicate_syn_every: finite(s.syn.repeat_every()),
            syn_retransmissions: s.syn.retransmissions,
            synack_retransmissions: s.synack.retransmissions,
            packets: s.packets,
            connections: s.connections,
        }
    }
}

document! {
    /// Document 000's Table 1, its SYN/ACK rows, over the connections in which a SYN/ACK was seen.
    pub struct SynackTable {
        /// Connections in which a SYN/ACK was seen.
        "" connections_with_synack: u64,
        /// Of those, connections whose handshake completed.
        "" successful: u64,
        /// Of those, connections whose handshake did not complete.
        "" unsuccessful: u64,
        /// Connections with more than one SYN/ACK.
        "" multiple_synacks: u64,
        /// Successful connections with more than one SYN/ACK.
        "" multiple_synacks_successful: u64,
        /// Unsuccessful connections with more than one SYN/ACK.
        "" multiple_synacks_unsuccessful: u64,
        /// Connections with a repeated SYN/ACK whose gap is on neither RTO ladder.
        "" multiple_synacks_outside_standard: u64,
        /// SYN/ACKs per successful connection (none without one).
        "" synacks_per_successful: Option<f64>,
        /// One successful connection with a repeated SYN/ACK every this many (none without one).
        "" duplicate_synack_every: Option<f64>,
        /// SYN/ACKs beyond each connection's first.
        "" synack_retransmissions: u64,
    }
}

impl SynackTable {
    pub fn of(c: &HandshakeCounts) -> Self {
        Self {
            connections_with_synack: c.with_packet,
            successful: c.successful,
            unsuccessful: c.with_packet - c.successful,
            multiple_synacks: c.multiple,
            multiple_synacks_successful: c.multiple_successful,
            multiple_synacks_unsuccessful: c.multiple_unsuccessful,
            multiple_synacks_outside_standard: c.multiple_outside_standard,
            synacks_per_successful: finite(c.per_successful()),
            duplicate_synack_every: finite(c.repeat_every()),
            synack_retransmissions: c.retransmissions,
        }
    }
}

document! {
    /// Document 001's predictor of the data phase's RTT by the handshake's.
    pub struct RttRatio {
        /// Connections with data RTT samples and a handshake RTT.
        "" connections: u64,
        /// Of those, the share whose mean data RTT is within 10 % of the handshake's (none without any).
        "" within_10pct_share: Option<f64>,
        /// Of those, the share whose largest data RTT is at most 3 times the handshake's (none without any).
        "" max_within_3x_share: Option<f64>,
    }
}

document! {
    /// The votes the capture point was inferred from.
    pub struct VantageCounts {
        /// Completed handshakes whose timing puts the capture near the client.
        "" client: u64,
        /// Completed handshakes whose timing puts the capture near the server.
        "" server: u64,
        /// Completed handshakes whose timing decides nothing.
        "" unknown: u64,
        /// Connections without a timed handshake whose hop counts put the capture near the client.
        "" ttl_client: u64,
        /// Connections without a timed handshake whose hop counts put the capture near the server.
        "" ttl_server: u64,
    }
}

document! {
    /// The data phase's and the handshake's corner cases counted over the whole trace, and
    /// the time account: where the connection-seconds went.
    pub struct Diagnosis {
        /// Tries still waiting for an answer when the capture ended: neither successful nor not.
        "" open_tries: u64,
        /// Tries refused by a RST.
        "" refused_rst: u64,
        /// Tries refused by an ICMP destination-unreachable quoting their SYN.
        "" refused_icmp: u64,
        /// SYNs sent again after a RST refused the try.
        "" syn_retries_after_rst: u64,
        /// Packets the capture holds twice (the same packet seen at two points of the path).
        "" capture_duplicates: u64,
        /// Packets after their connection's close linger.
        "" late_packets: u64,
        /// Connections seen in one direction only.
        "" one_directional: u64,
        /// Connections opened with TCP Fast Open.
        "" fast_open: u64,
        /// Data segments resent after a retransmission timeout.
        "" timeout_retransmissions: u64,
        /// Data segments resent by fast retransmit (or early: SACK, RACK).
        "" fast_retransmissions: u64,
        /// Tail loss probes.
        "" tlp_probes: u64,
        /// Data segments resent smaller for the path's MTU.
        "" path_mtu_retransmissions: u64,
        /// Data segments resent within half an RTT of their last sending, before anything could ask.
        "" unprompted_retransmissions: u64,
        /// Retransmissions of data the receiver already had.
        "" spurious_retransmissions: u64,
        /// Data segments seen after data their sender sent later (not retransmissions).
        "" out_of_order_segments: u64,
        /// Retransmission-timer expiries.
        "" rto_events: u64,
        /// Entries into fast recovery.
        "" fast_recoveries: u64,
        /// ACKs a receiver delayed.
        "" delayed_acks: u64,
        /// Stalls of a sender with nothing more to send, held until a delayed ACK came.
        "" delayed_ack_stalls: u64,
        /// Stalls of a sender stopped by a zero receive window.
        "" zero_window_stalls: u64,
        /// Connections whose BSD-tick receiver was recognised.
        "" tick_receivers: u64,
        /// The counter columns' totals (`counters`), one key each.
        #[serde(flatten)]
        "" counters: Totals,
        /// The connections' durations added up: every connection-second.
        "s" duration_s: f64,
        /// The connection-seconds users waited through (every cause but idle and teardown).
        "s" waited_s: f64,
        /// The connection-seconds by cause (`time_<cause>_s` added up over the table).
        "s" time_lost_s: ByCause<f64>,
        /// Each cause's share of `duration_s` (none without any).
        "" time_lost_share: ByCause<Option<f64>>,
        /// Each waited cause's share of `waited_s` (none without any).
        "" time_waited_share: ByCause<Option<f64>>,
        /// Document 001's predictor.
        "" rtt_ratio: RttRatio,
    }
}

impl Diagnosis {
    pub fn of(s: &Summary) -> Self {
        let seconds = |c: Cause| s.time_ns[c as usize] as f64 / 1e9;
        let total = s.duration_ns as f64 / 1e9;
        let waited = Cause::ALL.iter().filter(|c| c.waited()).fold(0.0, |sum, &c| sum + seconds(c));
        let n = s.rtt_ratio_connections;
        Self {
            open_tries: s.open_tries,
            refused_rst: s.refused_rst,
            refused_icmp: s.refused_icmp,
            syn_retries_after_rst: s.syn_retries_after_rst,
            capture_duplicates: s.capture_duplicates,
            late_packets: s.late_packets,
            one_directional: s.one_directional,
            fast_open: s.fast_open,
            timeout_retransmissions: s.timeout_retransmissions,
            fast_retransmissions: s.fast_retransmissions,
            tlp_probes: s.tlp_probes,
            path_mtu_retransmissions: s.path_mtu_retransmissions,
            unprompted_retransmissions: s.unprompted_retransmissions,
            spurious_retransmissions: s.spurious_retransmissions,
            out_of_order_segments: s.out_of_order,
            rto_events: s.rto_events,
            fast_recoveries: s.fast_recoveries,
            delayed_acks: s.delayed_acks,
            delayed_ack_stalls: s.delayed_ack_stalls,
            zero_window_stalls: s.zero_window_stalls,
            tick_receivers: s.tick_receivers,
            counters: s.counters,
            duration_s: total,
            waited_s: waited,
            time_lost_s: ByCause(Cause::ALL.iter().map(|&c| (c, seconds(c))).collect()),
            time_lost_share: ByCause(Cause::ALL.iter().map(|&c| (c, (total > 0.0).then(|| seconds(c) / total))).collect()),
            time_waited_share: ByCause(
                Cause::ALL.iter().filter(|c| c.waited()).map(|&c| (c, (waited > 0.0).then(|| seconds(c) / waited))).collect(),
            ),
            rtt_ratio: RttRatio {
                connections: n,
                within_10pct_share: share(s.rtt_ratio_within_10pct, n),
                max_within_3x_share: share(s.rtt_max_within_3x, n),
            },
        }
    }
}

document! {
    /// The summary of an analysis (all its traces): `analyze --summary-json`'s document.
    pub struct SummaryDocument {
        /// Document 000's Table 1 for SYNs.
        #[serde(flatten)]
        "" table1: Table1,
        /// The whole-trace counts and the time account.
        #[serde(flatten)]
        "" diagnosis: Diagnosis,
        /// p50, p90 and p99 of the connections' duration_s, handshake_rtt_s, rtt_ratio and max_idle_s.
        // Made by the Python layer from the table (`PERCENTILE_COLUMNS`).
        #[serde(skip)]
        "" percentiles: (),
        /// Document 000's Table 1 for SYN/ACKs.
        "" synack: SynackTable,
        /// The capture point: client, server or unknown.
        "" vantage: &'static str,
        /// What the capture point was inferred from, or why it is undecided, in words.
        "" vantage_basis: String,
        /// The votes the capture point was inferred from.
        "" vantage_counts: VantageCounts,
        /// The version of shortflow that wrote the document.
        // Filled by the Python layer.
        #[serde(skip)]
        "" version: (),
        /// One section per trace: its path, error, Table 1, diagnosis, vantage and percentiles.
        // `FileSection`s, filled by the Python layer (the path as the user named it, the percentiles).
        #[serde(skip)]
        "" files: (),
    }
}

impl SummaryDocument {
    pub fn of(s: &Summary) -> Self {
        let (vantage, basis) = s.vantage_with_basis();
        Self {
            table1: Table1::of(s),
            diagnosis: Diagnosis::of(s),
            percentiles: (),
            synack: SynackTable::of(&s.synack),
            vantage: Vantage::NAMES[vantage as usize],
            vantage_basis: basis,
            vantage_counts: VantageCounts {
                client: s.vantage_client,
                server: s.vantage_server,
                unknown: s.vantage_unknown,
                ttl_client: s.vantage_ttl_client,
                ttl_server: s.vantage_ttl_server,
            },
            version: (),
            files: (),
        }
    }
}

document! {
    /// One trace's section of the summary document (`files`).
    pub struct FileSection {
        /// The trace, as it was named.
        "" path: String,
        /// Why the trace could not be read to its end (the file and the byte offset), or none.
        "" error: Option<String>,
        /// The trace's Table 1 for SYNs.
        #[serde(flatten)]
        "" table1: Table1,
        /// The trace's counts and time account.
        #[serde(flatten)]
        "" diagnosis: Diagnosis,
        /// The trace's capture point.
        "" vantage: &'static str,
        /// What the trace's capture point was inferred from, in words.
        "" vantage_basis: String,
        /// The trace's percentiles, as the document's.
        // Made by the Python layer, where it has the trace's rows.
        #[serde(skip)]
        "" percentiles: (),
    }
}

impl FileSection {
    pub fn of(path: String, error: Option<String>, s: &Summary) -> Self {
        let (vantage, basis) = s.vantage_with_basis();
        Self {
            path,
            error,
            table1: Table1::of(s),
            diagnosis: Diagnosis::of(s),
            vantage: Vantage::NAMES[vantage as usize],
            vantage_basis: basis,
            percentiles: (),
        }
    }
}

document! {
    /// What the reading of a capture counted (a file's, or a live interface's so far): its
    /// packets, how many were TCP, why the others were skipped, and the span of their times.
    pub struct ReadCounts {
        /// Packets read, TCP or not.
        "" packets: u64,
        /// Of those, TCP segments (tunnelled ones included).
        "" tcp_packets: u64,
        /// Skipped: not IP (ARP, a link's own frames, …).
        "" skipped_not_ip: u64,
        /// Skipped: IP but not TCP.
        "" skipped_not_tcp: u64,
        /// ICMP destination-unreachable and packet-too-big messages quoting a TCP segment
        /// (among those skipped as not TCP).
        "" icmp_unreachable: u64,
        /// IP fragments, but for the piece that completes a datagram.
        "" skipped_fragment: u64,
        /// Skipped: malformed, or cut by the snap length before the end of the TCP header.
        "" skipped_malformed: u64,
        /// 802.11 frames the link sent again (one packet on the air twice).
        "" skipped_link_repeat: u64,
        /// Packets the filter left out (counted in `packets`, never decoded).
        "" filtered_out: u64,
        /// The first packet's time (none without a packet).
        "s since the Unix epoch" first_ts_s: Option<f64>,
        /// The last packet's time (none without a packet).
        "s since the Unix epoch" last_ts_s: Option<f64>,
    }
}

impl ReadCounts {
    pub fn of(f: &crate::FileStats) -> Self {
        let s = |t: Option<u64>| t.map(|t| t as f64 / 1e9);
        Self {
            packets: f.packets,
            tcp_packets: f.tcp_packets,
            skipped_not_ip: f.skipped_not_ip,
            skipped_not_tcp: f.skipped_not_tcp,
            icmp_unreachable: f.icmp_unreachable,
            skipped_fragment: f.skipped_fragment,
            skipped_malformed: f.skipped_malformed,
            skipped_link_repeat: f.skipped_link_repeat,
            filtered_out: f.filtered_out,
            first_ts_s: s(f.first_ts_ns),
            last_ts_s: s(f.last_ts_ns),
        }
    }
}

document! {
    /// A live capture's counts so far (`watch`): the reading's, the kernel's, the tracker's.
    pub struct CaptureCounts {
        /// What the reading counted.
        #[serde(flatten)]
        "" read: ReadCounts,
        /// Packets that reached the capture socket.
        "" kernel_received: u64,
        /// Packets the kernel dropped because the capture's ring was full.
        "" ring_drops: u64,
        /// Packets the interface or its driver dropped.
        "" interface_drops: u64,
        /// Connections ended early to keep the bound on open connections.
        "" evicted: u64,
        /// Connections ended so far.
        "" ended: u64,
        /// Connections open now.
        "" open_connections: usize,
    }
}

impl CaptureCounts {
    pub fn of(s: &crate::live::LiveStats) -> Self {
        Self {
            read: ReadCounts::of(&s.read),
            kernel_received: s.kernel_received,
            ring_drops: s.ring_drops,
            interface_drops: s.interface_drops,
            evicted: s.evicted,
            ended: s.ended,
            open_connections: s.open_connections,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documents_keys_are_its_fields_in_order() {
        let mut s = Summary { packets: 7, duration_ns: 3_000_000_000, ..Summary::default() };
        s.time_ns[Cause::Idle as usize] = 1_000_000_000;
        s.time_ns[Cause::Network as usize] = 2_000_000_000;
        let text = serde_json::to_string(&SummaryDocument::of(&s)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let declared: Vec<&str> = SummaryDocument::fields()
            .iter()
            .map(|f| f.name)
            .filter(|n| !["percentiles", "version", "files"].contains(n))
            .collect();
        assert_eq!(v.as_object().unwrap().len(), declared.len());
        // Written in the declared order (a nested key comes after its top-level namesake).
        let at: Vec<usize> = declared.iter().map(|n| text.find(&format!("\"{n}\":")).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert_eq!(v["waited_s"], 2.0);
        assert_eq!(v["time_waited_share"]["network"], 1.0);
        assert!(v["time_waited_share"].get("idle").is_none());
        assert_eq!(v["time_lost_share"]["idle"].as_f64().unwrap(), 1.0 / 3.0);
        assert!(v["syns_per_successful"].is_null() && v["rtt_ratio"]["within_10pct_share"].is_null());
    }

    #[test]
    fn a_field_declared_once_has_its_unit_and_meaning() {
        let f = SummaryDocument::fields();
        let waited = f.iter().find(|f| f.name == "waited_s").unwrap();
        assert_eq!(waited.unit, "s");
        assert!(waited.meaning().starts_with("The connection-seconds users waited through"), "{}", waited.meaning());
        // The percentiles' meaning names the columns they are taken over.
        let p = f.iter().find(|f| f.name == "percentiles").unwrap().meaning();
        assert!(super::super::table::PERCENTILE_COLUMNS.iter().all(|c| p.contains(c)), "{p}");
        let names: Vec<_> = FileSection::fields().iter().map(|f| f.name).collect();
        assert_eq!(names.first(), Some(&"path"));
        assert_eq!(names.last(), Some(&"percentiles"));
    }
}
