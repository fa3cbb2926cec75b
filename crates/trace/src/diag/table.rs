//! The per-connection table, built column by column as connections finish.
//!
//! Columns are plain vectors (strings as offsets + UTF-8 bytes, lists as offsets + values),
//! the layout Arrow uses, so the Python side wraps them without copying row by row.

use std::fmt::Write as _;

use super::counters;
use super::ladder::GapClass;
use super::ColumnDef;
use crate::track::{Cause, Conn, C2S, NEVER, S2C};

/// Where the capture was taken.
///
/// From a complete handshake's timing first: near the client the SYN → SYN/ACK gap holds
/// the round trip, near the server the SYN/ACK → ACK gap does. Without one (a capture that
/// saw one direction only, or no SYN/ACK → ACK pair), from the hop count: a side whose
/// packets carry an initial TTL had no router between it and the capture point. Timing
/// cannot stand in for it there: seen from one direction only, every gap (SYN → SYN retry,
/// SYN → ACK) is the same near the sender and near the receiver, shifted by the one-way
/// delay; only the jitter of the path differs, too little to tell on a LAN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Vantage {
    Unknown = 0,
    Client = 1,
    Server = 2,
}

/// The TTL / hop limit an IP sender starts with: 64 (Linux, macOS, the BSDs; RFC 1700's
/// recommendation), 128 (Windows), 255 (Solaris, network gear; the IPv6 maximum), 32
/// (old Windows).
pub const INITIAL_TTLS: [u8; 4] = [32, 64, 128, 255];

impl Vantage {
    pub const NAMES: [&'static str; 3] = ["unknown", "client", "server"];
    /// Each capture point in words, as the command line says where a trace was captured.
    pub const WORDS: [&'static str; 3] = ["undecided", "near the client", "near the server"];

    /// The handshake's timing, else the hop count (see the type's documentation).
    pub fn of(conn: &Conn) -> Self {
        match Self::by_timing(conn) {
            Self::Unknown => Self::by_ttl(conn),
            v => v,
        }
    }

    /// From a complete handshake: SYN → SYN/ACK and SYN/ACK → ACK both seen in order.
    pub fn by_timing(conn: &Conn) -> Self {
        match (conn.synack_delay_ns(), conn.ack_delay_ns()) {
            (Some(a), Some(b)) if a > b => Self::Client,
            (Some(a), Some(b)) if b > a => Self::Server,
            _ => Self::Unknown,
        }
    }

    /// From the first TTL of each side: the side that starts at an initial value while
    /// the other does not (or was not seen: a one-directional capture) is the near one.
    pub fn by_ttl(conn: &Conn) -> Self {
        let initial = |side: usize| conn.packets[side] > 0 && INITIAL_TTLS.contains(&conn.first_ttl[side]);
        match (initial(C2S), initial(S2C)) {
            (true, false) => Self::Client,
            (false, true) => Self::Server,
            _ => Self::Unknown,
        }
    }
}

/// UTF-8 strings as Arrow lays them out: `offsets[i]..offsets[i+1]` into `data`.
#[derive(Debug, Default, Clone)]
pub struct StringColumn {
    pub offsets: Vec<i32>,
    pub data: Vec<u8>,
}

impl StringColumn {
    fn push_str(&mut self, s: &str) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.data.extend_from_slice(s.as_bytes());
        self.offsets.push(self.data.len() as i32);
    }

    fn push_ip(&mut self, ip: std::net::IpAddr) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        match ip {
            // Dotted quads by hand: this runs once per connection per side, and the
            // general formatter was a visible share of the whole analysis.
            std::net::IpAddr::V4(v4) => {
                for (i, octet) in v4.octets().into_iter().enumerate() {
                    if i > 0 {
                        self.data.push(b'.');
                    }
                    push_decimal(&mut self.data, octet);
                }
            }
            std::net::IpAddr::V6(v6) => {
                let _ = write!(AppendUtf8(&mut self.data), "{v6}");
            }
        }
        self.offsets.push(self.data.len() as i32);
    }
}

fn push_decimal(out: &mut Vec<u8>, x: u8) {
    if x >= 100 {
        out.push(b'0' + x / 100);
    }
    if x >= 10 {
        out.push(b'0' + (x / 10) % 10);
    }
    out.push(b'0' + x % 10);
}

/// Formats straight into the column's byte buffer (no temporary String per row).
struct AppendUtf8<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for AppendUtf8<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Variable-length lists: `offsets[i]..offsets[i+1]` into `values`.
#[derive(Debug, Default, Clone)]
pub struct ListColumn<T> {
    pub offsets: Vec<i32>,
    pub values: Vec<T>,
}

impl<T> ListColumn<T> {
    fn push(&mut self, items: impl IntoIterator<Item = T>) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.values.extend(items);
        self.offsets.push(self.values.len() as i32);
    }
}

schema! {
    /// The connection table's columns, in order.
    SCHEMA;
    "trace": "dictionary<values=string, indices=int32, ordered=0>", "", "the capture file the connection was read from";
    "conn_id": "uint64", "", "order of first appearance in its file";
    "client_ip": "string", "", "the client's address (sender of the SYN, else the higher port's side)";
    "client_port": "uint16", "", "the client's port";
    "server_ip": "string", "", "the server's address";
    "server_port": "uint16", "", "the server's port";
    "syn_seen": "bool", "", "the connection's SYN was captured (a connection try)";
    "client_isn": "uint32", "", "the client's initial sequence number";
    "first_seen": "timestamp[ns]", "ns since the Unix epoch", "capture time of the first packet";
    "duration_s": "double", "s", "first to last packet";
    "response_complete_s": "double", "s", "first packet to the acknowledgement of the last data byte (to that byte when its ACK was not captured); NaN without data";
    "request_sent_s": "double", "s", "first packet to the client's first data segment; NaN without client data";
    "response_whole_s": "double", "s", "first packet to the last server data segment that brought bytes not seen before here (beyond the highest, or repairing a loss before the capture point): the response whole at the capture point; NaN without server data";
    "syn_count": "uint32", "", "SYN transmissions (capture duplicates and retries after a RST excluded)";
    "synack_count": "uint32", "", "SYN/ACK transmissions";
    "established": "bool", "", "the handshake completed (a SYN/ACK, or the client's ACK of one)";
    "handshake": "dictionary<values=string, indices=int8, ordered=0>", "", "answered, refused_rst, refused_icmp (an ICMP destination-unreachable quoted the SYN), never_answered, open (cut off by the capture's end) or not_seen";
    "handshake_rtt_s": "double", "s", "SYN→SYN/ACK plus SYN/ACK→ACK as seen at the capture point";
    "synack_delay_s": "double", "s", "last SYN to the SYN/ACK answering it";
    "ack_delay_s": "double", "s", "last SYN/ACK to the handshake ACK";
    "vantage": "dictionary<values=string, indices=int8, ordered=0>", "", "capture point: client or server from this handshake's timing, else from which side's packets carry an initial TTL; unknown";
    "syn_gaps_s": "list<item: double>", "s", "gap before each repeated SYN";
    "syn_gap_class": "list<item: dictionary<values=string, indices=int8, ordered=0>>", "", "each SYN gap's RTO ladder step or outside";
    "synack_gaps_s": "list<item: double>", "s", "gap before each repeated SYN/ACK";
    "synack_gap_class": "list<item: dictionary<values=string, indices=int8, ordered=0>>", "", "each SYN/ACK gap's ladder step or outside";
    "syn_ladder": "string", "", "the whole SYN retry sequence's ladder(s): rfc6298, rfc2988, linux_linear, bsd, windows_3s (| when several fit), outside, or empty";
    "syn_retries_after_rst": "uint32", "", "the same SYN sent again after the server's RST";
    "capture_duplicates": "uint32", "", "packets recorded twice by the capture (not counted anywhere else)";
    "late_packets": "uint32", "", "packets after the close linger, within TIME-WAIT (a FIN or data resent late): this connection's, not a new one; counted only here";
    "fast_open": "bool", "", "TCP Fast Open: data or the option on the SYN";
    "outcome": "dictionary<values=string, indices=int8, ordered=0>", "", "how the connection left the tracker: fin, rst, idle, reused or open";
    "packets_c2s": "uint32", "", "packets client to server";
    "packets_s2c": "uint32", "", "packets server to client";
    "bytes_c2s": "uint64", "bytes", "TCP payload bytes client to server (retransmissions included)";
    "bytes_s2c": "uint64", "bytes", "TCP payload bytes server to client (retransmissions included)";
    "rtt_samples": "uint32", "", "data RTT samples (Karn: none from retransmitted segments unless timestamps tell)";
    "rtt_min_s": "double", "s", "smallest data RTT sample";
    "rtt_mean_s": "double", "s", "mean data RTT";
    "rtt_max_s": "double", "s", "largest data RTT sample";
    "rtt_std_s": "double", "s", "standard deviation of the data RTT samples";
    "rtt_ratio": "double", "", "mean data RTT / handshake RTT (document 001's predictor)";
    "retx_timeout_c2s": "uint32", "", "client data segments resent after a retransmission timeout";
    "retx_timeout_s2c": "uint32", "", "server data segments resent after a retransmission timeout";
    "retx_fast_c2s": "uint32", "", "client data segments resent by fast retransmit / recovery";
    "retx_fast_s2c": "uint32", "", "server data segments resent by fast retransmit / recovery";
    "retx_tlp_c2s": "uint32", "", "client tail loss probes";
    "retx_tlp_s2c": "uint32", "", "server tail loss probes";
    "retx_path_mtu_c2s": "uint32", "", "client data segments resent smaller after the path said one was too big (ICMP fragmentation needed, ICMPv6 packet too big)";
    "retx_path_mtu_s2c": "uint32", "", "server data segments resent smaller after the path said one was too big";
    "retx_unprompted_c2s": "uint32", "", "client data segments resent within half an RTT of their last sending, before any ACK or timer could ask (re-cut by the sender, or captured twice in different cuts): no loss repair";
    "retx_unprompted_s2c": "uint32", "", "server data segments resent within half an RTT of their last sending: no loss repair";
    "retx_c2s": "uint32", "", "client data segments sent again: the five classes above added up";
    "retx_s2c": "uint32", "", "server data segments sent again: the five classes above added up";
    "retx_spurious_c2s": "uint32", "", "client retransmissions found unneeded (D-SACK, timestamps, early ACK)";
    "retx_spurious_s2c": "uint32", "", "server retransmissions found unneeded";
    "lost_offsets_c2s": "list<item: uint64>", "bytes", "where the client's data was lost: for each resend of its segments (by timeout, fast or early recovery, or a probe), the stream offset of the first byte resent (0 = the first data byte; an offset k times: k copies lost; at most 10,000)";
    "lost_offsets_s2c": "list<item: uint64>", "bytes", "where the server's data was lost, as lost_offsets_c2s";
    "out_of_order_c2s": "uint32", "", "client data segments seen after data sent later (overtaken on the way, by their IPv4 IDs or TCP timestamps): new data, not retransmissions";
    "out_of_order_s2c": "uint32", "", "server data segments seen after data sent later";
    "rto_events": "uint32", "", "retransmission-timer expiries (both directions, data phase)";
    "rto_backoff_max": "uint8", "", "largest back-off step of the data phase (0: first expiry)";
    "fast_recoveries": "uint32", "", "fast-recovery episodes (both directions)";
    "max_idle_s": "double", "s", "longest gap between two packets (document 001: > 0.5 s marks a timeout)";
    "iw_segments": "uint32", "", "server's first flight: segments sent before an ACK could return";
    "iw_bytes": "uint64", "bytes", "server's first flight in bytes";
    "rounds": "uint32", "", "round trips the server took for its responses";
    "rounds_ideal": "uint32", "", "round trips a slow start from that initial window needs (RFC 5681)";
    "delayed_acks": "uint32", "", "ACKs that came back later than the path explains (both directions)";
    "delack_stalls": "uint32", "", "a sender idle until a delayed ACK came (document 003)";
    "delack_tick_200ms": "bool", "", "a receiver's delayed ACKs fall on a fixed 200 ms grid (BSD tick)";
    "zero_window_stalls": "uint32", "", "times a receiver advertised a zero window with data outstanding";
    "sack_permitted": "bool", "", "both SYNs offered SACK (RFC 2018)";
    "timestamps": "bool", "", "both SYNs carried TCP timestamps (RFC 7323)";
    "window_scaling": "bool", "", "both SYNs carried a window scale (RFC 7323)";
    "mss_client": "uint16", "bytes", "the MSS the client's SYN announced (0: none seen)";
    "mss_server": "uint16", "bytes", "the MSS the server's SYN/ACK announced (0: none seen)";
    "rto_margin_c2s_s": "double", "s", "the client's first retransmission timeout, seen near the client: the timer's run (from the last ACK of new data, or the send that found nothing outstanding) less the smoothed RTT then, what the RTO added to SRTT (Linux: max(rto_min, 4·RTTVAR)); NaN without one after an RTT sample and before any tail probe";
    "rto_margin_s2c_s": "double", "s", "the server's first retransmission timeout, seen near the server: as rto_margin_c2s_s";
    "ack_clock_c2s_bps": "double", "bit/s", "the bottleneck's rate for the client's data, from the ACK clock: the longest train of the server's ACKs of new data (no pause, no delayed ACK), payload bits over the train's span; NaN without a train of three ACKs";
    "ack_clock_s2c_bps": "double", "bit/s", "the bottleneck's rate for the server's data, from the client's ACKs: as ack_clock_c2s_bps";
    "segments_per_ack_c2s": "double", "", "full segments of the client's data per server ACK once the server's quick ACKs are spent (1: it acknowledges every segment, 2: every other); NaN with fewer than eight such ACKs";
    "segments_per_ack_s2c": "double", "", "full segments of the server's data per client ACK once the client's quick ACKs are spent: as segments_per_ack_c2s";
    "delack_least_c2s_s": "double", "s", "the least delay of the server's delayed ACKs, seen near the server (its delayed-ACK timer's floor); NaN without one, or seen far from it (the path's queueing would be in it)";
    "delack_least_s2c_s": "double", "s", "the least delay of the client's delayed ACKs, seen near the client: as delack_least_c2s_s";
    "time_network_s": "double", "s", "time the path explains (the time_*_s columns add up to duration_s, each instant in one)";
    "time_handshake_s": "double", "s", "waiting for SYN or SYN/ACK retransmissions";
    "time_slow_start_s": "double", "s", "slow-start round trips beyond the first";
    "time_timeout_s": "double", "s", "loss repair by retransmission timeout";
    "time_fast_retransmit_s": "double", "s", "loss repair by fast retransmit, or early (fewer than three duplicate ACKs, RACK)";
    "time_delayed_ack_s": "double", "s", "delayed-ACK stalls";
    "time_zero_window_s": "double", "s", "zero-window stalls";
    "time_application_s": "double", "s", "one side thinking while the other waits: the server's time to answer";
    "time_tlp_s": "double", "s", "waiting for a tail loss probe (one per tail episode, before any timeout)";
    "time_idle_s": "double", "s", "nothing outstanding and nobody waiting: a side sending again of its own accord, a connection at rest (not in the time users waited)";
    "time_teardown_s": "double", "s", "after the last data byte was acknowledged and a side began to close: FIN resends, last ACKs (not in the time users waited)";
    "time_receive_window_s": "double", "s", "the sender waiting on the receiver's (non-zero) window, its last data having filled it";
}

/// One row per connection. Times are seconds (f64) except `first_seen` (ns); absent
/// values are NaN. The column order and meaning are `SCHEMA`'s.
#[derive(Debug, Default, Clone)]
pub struct ConnectionTable {
    pub trace: Vec<u32>,
    pub conn_id: Vec<u64>,
    pub client_ip: StringColumn,
    pub client_port: Vec<u16>,
    pub server_ip: StringColumn,
    pub server_port: Vec<u16>,
    pub syn_seen: Vec<bool>,
    pub client_isn: Vec<u32>,
    pub first_seen: Vec<u64>,
    pub duration_s: Vec<f64>,
    pub response_complete_s: Vec<f64>,
    pub request_sent_s: Vec<f64>,
    pub response_whole_s: Vec<f64>,
    pub syn_count: Vec<u32>,
    pub synack_count: Vec<u32>,
    pub established: Vec<bool>,
    pub handshake: Vec<u8>,
    pub handshake_rtt_s: Vec<f64>,
    pub synack_delay_s: Vec<f64>,
    pub ack_delay_s: Vec<f64>,
    pub vantage: Vec<u8>,
    pub syn_gaps_s: ListColumn<f64>,
    pub syn_gap_class: ListColumn<u8>,
    pub synack_gaps_s: ListColumn<f64>,
    pub synack_gap_class: ListColumn<u8>,
    pub lost_offsets_c2s: ListColumn<u64>,
    pub lost_offsets_s2c: ListColumn<u64>,
    pub syn_ladder: StringColumn,
    pub syn_retries_after_rst: Vec<u32>,
    pub capture_duplicates: Vec<u32>,
    pub late_packets: Vec<u32>,
    pub fast_open: Vec<bool>,
    pub outcome: Vec<u8>,
    pub packets_c2s: Vec<u32>,
    pub packets_s2c: Vec<u32>,
    pub bytes_c2s: Vec<u64>,
    pub bytes_s2c: Vec<u64>,
    pub rtt_samples: Vec<u32>,
    pub rtt_min_s: Vec<f64>,
    pub rtt_mean_s: Vec<f64>,
    pub rtt_max_s: Vec<f64>,
    pub rtt_std_s: Vec<f64>,
    pub rtt_ratio: Vec<f64>,
    pub retx_timeout_c2s: Vec<u32>,
    pub retx_timeout_s2c: Vec<u32>,
    pub retx_fast_c2s: Vec<u32>,
    pub retx_fast_s2c: Vec<u32>,
    pub retx_tlp_c2s: Vec<u32>,
    pub retx_tlp_s2c: Vec<u32>,
    pub retx_path_mtu_c2s: Vec<u32>,
    pub retx_path_mtu_s2c: Vec<u32>,
    pub retx_unprompted_c2s: Vec<u32>,
    pub retx_unprompted_s2c: Vec<u32>,
    pub retx_c2s: Vec<u32>,
    pub retx_s2c: Vec<u32>,
    pub retx_spurious_c2s: Vec<u32>,
    pub retx_spurious_s2c: Vec<u32>,
    pub out_of_order_c2s: Vec<u32>,
    pub out_of_order_s2c: Vec<u32>,
    pub rto_events: Vec<u32>,
    pub rto_backoff_max: Vec<u8>,
    pub fast_recoveries: Vec<u32>,
    pub max_idle_s: Vec<f64>,
    pub iw_segments: Vec<u32>,
    pub iw_bytes: Vec<u64>,
    pub rounds: Vec<u32>,
    pub rounds_ideal: Vec<u32>,
    pub delayed_acks: Vec<u32>,
    pub delack_stalls: Vec<u32>,
    pub delack_tick_200ms: Vec<bool>,
    pub sack_permitted: Vec<bool>,
    pub timestamps: Vec<bool>,
    pub window_scaling: Vec<bool>,
    pub mss_client: Vec<u16>,
    pub mss_server: Vec<u16>,
    pub rto_margin_c2s_s: Vec<f64>,
    pub rto_margin_s2c_s: Vec<f64>,
    pub ack_clock_c2s_bps: Vec<f64>,
    pub ack_clock_s2c_bps: Vec<f64>,
    pub segments_per_ack_c2s: Vec<f64>,
    pub segments_per_ack_s2c: Vec<f64>,
    pub delack_least_c2s_s: Vec<f64>,
    pub delack_least_s2c_s: Vec<f64>,
    pub zero_window_stalls: Vec<u32>,
    pub time_network_s: Vec<f64>,
    pub time_handshake_s: Vec<f64>,
    pub time_slow_start_s: Vec<f64>,
    pub time_timeout_s: Vec<f64>,
    pub time_fast_retransmit_s: Vec<f64>,
    pub time_delayed_ack_s: Vec<f64>,
    pub time_zero_window_s: Vec<f64>,
    pub time_application_s: Vec<f64>,
    pub time_tlp_s: Vec<f64>,
    pub time_idle_s: Vec<f64>,
    pub time_teardown_s: Vec<f64>,
    pub time_receive_window_s: Vec<f64>,
    /// The counter columns (`counters::NAMES`), after the columns above.
    pub counters: counters::Columns,
}

/// Rows added as connections end, in chunks allocated whole: columns growing by doubling
/// copied themselves (`realloc` below the mmap threshold, see `crate::mem`), each copy a
/// fresh page touched per 4 kB.
#[derive(Debug, Default)]
pub struct TableBuilder {
    chunks: Vec<ConnectionTable>,
}

/// Rows per chunk: a column of 8-byte values is 64 kB.
const CHUNK_ROWS: usize = 8192;

impl TableBuilder {
    pub fn push(&mut self, trace: u32, c: &Conn) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < CHUNK_ROWS => chunk.push(trace, c),
            _ => {
                let mut chunk = ConnectionTable::with_capacity(CHUNK_ROWS);
                chunk.push(trace, c);
                self.chunks.push(chunk);
            }
        }
    }

    /// The chunks, to merge with the other builders' (see `ConnectionTable::merge_by_conn_id`).
    pub fn into_chunks(self) -> Vec<ConnectionTable> {
        self.chunks
    }

    /// The rows in order of `conn_id`.
    pub fn finish(self) -> ConnectionTable {
        ConnectionTable::merge_by_conn_id(self.chunks, 1)
    }
}

/// The columns the summary's percentiles are taken over (`percentile_values`).
pub const PERCENTILE_COLUMNS: [&str; 4] = ["duration_s", "handshake_rtt_s", "rtt_ratio", "max_idle_s"];

/// A connection's values of `PERCENTILE_COLUMNS`, as its row has them: the table's and a
/// digest's (`super::digest`) one definition.
pub fn percentile_values(c: &Conn) -> [f64; PERCENTILE_COLUMNS.len()] {
    let hs = match (c.synack_delay_ns(), c.ack_delay_ns()) {
        (Some(a), Some(b)) => Some(a + b),
        _ => None,
    };
    let rtt_ratio = match hs {
        Some(h) if c.rtt.n > 0 && h > 0 => c.rtt.mean / h as f64,
        _ => f64::NAN,
    };
    [secs(c.last_ts.saturating_sub(c.first_ts)), opt_secs(hs), rtt_ratio, secs(c.max_idle_ns)]
}

pub(crate) fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn opt_secs(ns: Option<u64>) -> f64 {
    ns.map_or(f64::NAN, secs)
}

/// Applies `$m!` to every plain-vector column of [`ConnectionTable`] (strings and lists
/// apart), so the bindings hand them all over without a list of their own.
#[macro_export]
macro_rules! plain_columns {
    ($m:ident) => {
        $m!(
            trace,
            conn_id,
            client_port,
            server_port,
            syn_seen,
            client_isn,
            first_seen,
            duration_s,
            response_complete_s,
            request_sent_s,
            response_whole_s,
            syn_count,
            synack_count,
            established,
            handshake,
            handshake_rtt_s,
            synack_delay_s,
            ack_delay_s,
            vantage,
            syn_retries_after_rst,
            capture_duplicates,
            late_packets,
            fast_open,
            outcome,
            packets_c2s,
            packets_s2c,
            bytes_c2s,
            bytes_s2c,
            rtt_samples,
            rtt_min_s,
            rtt_mean_s,
            rtt_max_s,
            rtt_std_s,
            rtt_ratio,
            retx_timeout_c2s,
            retx_timeout_s2c,
            retx_fast_c2s,
            retx_fast_s2c,
            retx_tlp_c2s,
            retx_tlp_s2c,
            retx_path_mtu_c2s,
            retx_path_mtu_s2c,
            retx_unprompted_c2s,
            retx_unprompted_s2c,
            retx_c2s,
            retx_s2c,
            retx_spurious_c2s,
            retx_spurious_s2c,
            out_of_order_c2s,
            out_of_order_s2c,
            rto_events,
            rto_backoff_max,
            fast_recoveries,
            max_idle_s,
            iw_segments,
            iw_bytes,
            rounds,
            rounds_ideal,
            delayed_acks,
            delack_stalls,
            delack_tick_200ms,
            zero_window_stalls,
            sack_permitted,
            timestamps,
            window_scaling,
            mss_client,
            mss_server,
            rto_margin_c2s_s,
            rto_margin_s2c_s,
            ack_clock_c2s_bps,
            ack_clock_s2c_bps,
            segments_per_ack_c2s,
            segments_per_ack_s2c,
            delack_least_c2s_s,
            delack_least_s2c_s,
            time_network_s,
            time_handshake_s,
            time_slow_start_s,
            time_timeout_s,
            time_fast_retransmit_s,
            time_delayed_ack_s,
            time_zero_window_s,
            time_application_s,
            time_tlp_s,
            time_idle_s,
            time_teardown_s,
            time_receive_window_s
        )
    };
}

cause_columns!(ConnectionTable);

impl ConnectionTable {
    pub fn len(&self) -> usize {
        self.conn_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.conn_id.is_empty()
    }

    /// An empty table with room for `rows` rows in every column (the strings' bytes
    /// for IPv4 addresses; the lists' items grow as needed).
    fn with_capacity(rows: usize) -> Self {
        let mut t = Self::default();
        macro_rules! reserve {
            ($($f:ident),*) => { $( t.$f.reserve_exact(rows); )* };
        }
        crate::plain_columns!(reserve);
        for column in &mut t.counters {
            column.reserve_exact(rows);
        }
        for s in [&mut t.client_ip, &mut t.server_ip] {
            s.offsets.reserve_exact(rows + 1);
            s.data.reserve_exact(rows * "255.255.255.255".len());
        }
        for offsets in [
            &mut t.syn_ladder.offsets,
            &mut t.syn_gaps_s.offsets,
            &mut t.synack_gaps_s.offsets,
            &mut t.syn_gap_class.offsets,
            &mut t.synack_gap_class.offsets,
            &mut t.lost_offsets_c2s.offsets,
            &mut t.lost_offsets_s2c.offsets,
        ] {
            offsets.reserve_exact(rows + 1);
        }
        t
    }

    pub fn push(&mut self, trace: u32, c: &Conn) {
        self.trace.push(trace);
        self.conn_id.push(c.id);
        self.client_ip.push_ip(c.client.ip());
        self.client_port.push(c.client.port);
        self.server_ip.push_ip(c.server.ip());
        self.server_port.push(c.server.port);
        self.syn_seen.push(c.syn_seen);
        self.client_isn.push(c.client_isn);
        self.first_seen.push(c.first_ts);
        let [duration_s, handshake_rtt_s, rtt_ratio, max_idle_s] = percentile_values(c);
        self.duration_s.push(duration_s);
        let complete = c.response_complete_ts;
        self.response_complete_s.push(if complete == NEVER { f64::NAN } else { secs(complete.saturating_sub(c.first_ts)) });
        let since_first = |ts: Option<u64>| opt_secs(ts.map(|t| t.saturating_sub(c.first_ts)));
        self.request_sent_s.push(since_first(c.halves[C2S].coverage.first_ts()));
        self.response_whole_s.push(since_first(c.halves[S2C].coverage.last_new_ts()));
        self.syn_count.push(c.syns.count);
        self.synack_count.push(c.synacks.count);
        self.established.push(c.established_ts.is_some());
        self.handshake.push(c.handshake as u8);
        let (a, b) = (c.synack_delay_ns(), c.ack_delay_ns());
        self.synack_delay_s.push(opt_secs(a));
        self.ack_delay_s.push(opt_secs(b));
        self.handshake_rtt_s.push(handshake_rtt_s);
        self.vantage.push(Vantage::of(c) as u8);
        push_gaps(&mut self.syn_gaps_s, &mut self.syn_gap_class, &c.syns.gaps_ns, 0);
        push_gaps(&mut self.synack_gaps_s, &mut self.synack_gap_class, &c.synacks.gaps_ns, c.synacks.answer_mask);
        if c.syns.gaps_ns.is_empty() {
            self.syn_ladder.push_str("");
        } else {
            let gaps: Vec<f64> = c.syns.gaps_ns.iter().map(|&g| secs(g)).collect();
            self.syn_ladder.push_str(&super::ladder::fingerprint(&gaps));
        }
        self.syn_retries_after_rst.push(c.syn_retries_after_rst);
        self.capture_duplicates.push(c.capture_duplicates);
        self.late_packets.push(0);
        self.fast_open.push(c.fast_open);
        self.outcome.push(c.end as u8);
        self.packets_c2s.push(c.packets[0]);
        self.packets_s2c.push(c.packets[1]);
        self.bytes_c2s.push(c.payload_bytes[0]);
        self.bytes_s2c.push(c.payload_bytes[1]);
        let r = &c.rtt;
        let have = r.n > 0;
        self.rtt_samples.push(r.n);
        self.rtt_min_s.push(if have { secs(r.min) } else { f64::NAN });
        self.rtt_mean_s.push(if have { r.mean / 1e9 } else { f64::NAN });
        self.rtt_max_s.push(if have { secs(r.max) } else { f64::NAN });
        self.rtt_std_s.push(if have { r.std() / 1e9 } else { f64::NAN });
        self.rtt_ratio.push(rtt_ratio);
        let (cs, sc) = (&c.halves[C2S], &c.halves[S2C]);
        self.retx_timeout_c2s.push(cs.retx_timeout);
        self.retx_timeout_s2c.push(sc.retx_timeout);
        self.retx_fast_c2s.push(cs.retx_fast);
        self.retx_fast_s2c.push(sc.retx_fast);
        self.retx_tlp_c2s.push(cs.retx_tlp);
        self.retx_tlp_s2c.push(sc.retx_tlp);
        self.retx_path_mtu_c2s.push(cs.retx_path_mtu);
        self.retx_path_mtu_s2c.push(sc.retx_path_mtu);
        self.retx_unprompted_c2s.push(cs.retx_unprompted);
        self.retx_unprompted_s2c.push(sc.retx_unprompted);
        self.retx_c2s.push(cs.retransmissions());
        self.retx_s2c.push(sc.retransmissions());
        self.retx_spurious_c2s.push(cs.spurious);
        self.retx_spurious_s2c.push(sc.spurious);
        self.lost_offsets_c2s.push(cs.lost_offsets.iter().copied());
        self.lost_offsets_s2c.push(sc.lost_offsets.iter().copied());
        self.out_of_order_c2s.push(cs.reordered);
        self.out_of_order_s2c.push(sc.reordered);
        self.rto_events.push(cs.rto_events + sc.rto_events);
        self.rto_backoff_max.push(cs.backoff_max.max(sc.backoff_max));
        self.fast_recoveries.push(cs.fast_recoveries + sc.fast_recoveries);
        self.max_idle_s.push(max_idle_s);
        self.iw_segments.push(sc.iw_segments);
        self.iw_bytes.push(sc.iw_bytes);
        self.rounds.push(sc.rounds);
        self.rounds_ideal.push(sc.ideal_rounds);
        self.delayed_acks.push(cs.delayed_acks + sc.delayed_acks);
        self.delack_stalls.push(cs.delack_stalls + sc.delack_stalls);
        self.delack_tick_200ms.push(cs.tick_receiver() || sc.tick_receiver());
        self.zero_window_stalls.push(cs.zw_stalls + sc.zw_stalls);
        let (sack, stamps, scaling) = c.options();
        self.sack_permitted.push(sack);
        self.timestamps.push(stamps);
        self.window_scaling.push(scaling);
        let [mss_client, mss_server] = c.mss_announced();
        self.mss_client.push(mss_client);
        self.mss_server.push(mss_server);
        self.rto_margin_c2s_s.push(cs.rto_margin_ns.map_or(f64::NAN, secs));
        self.rto_margin_s2c_s.push(sc.rto_margin_ns.map_or(f64::NAN, secs));
        for (h, rate, per_ack, least) in [
            (cs, &mut self.ack_clock_c2s_bps, &mut self.segments_per_ack_c2s, &mut self.delack_least_c2s_s),
            (sc, &mut self.ack_clock_s2c_bps, &mut self.segments_per_ack_s2c, &mut self.delack_least_s2c_s),
        ] {
            rate.push(h.clock.rate_bps().unwrap_or(f64::NAN));
            per_ack.push(h.clock.segments_per_ack(h.mss).unwrap_or(f64::NAN));
            least.push(h.clock.least_delay_ns().map_or(f64::NAN, secs));
        }
        self.push_causes(&c.lost_ns.map(secs));
        for (column, v) in self.counters.iter_mut().zip(counters::of(c)) {
            column.push(v);
        }
    }

    /// The rows of `parts` (the chunks of one file's tracker, or of its shards' trackers,
    /// whose connection ids are distinct) in order of `conn_id`, moved from the parts a
    /// column at a time on `threads` threads. Each part's column is freed once moved, so
    /// the extra memory is a column per thread, not a second table; and the rows are
    /// copied once (concatenating the parts first, then sorting, copied the ~80 MB table
    /// of the benchmark trace twice, a page fault per 4 kB each time).
    pub fn merge_by_conn_id(mut parts: Vec<ConnectionTable>, threads: usize) -> ConnectionTable {
        if parts.len() == 1 && parts[0].conn_id.is_sorted() {
            return parts.pop().expect("one part");
        }
        // What the trackers freed goes back before the merged columns are mapped afresh.
        crate::mem::return_freed_memory();
        let order = Order::by_conn_id(&parts);
        let order = &order;
        let mut out = ConnectionTable::default();
        let mut jobs: Vec<Box<dyn FnOnce() + Send + '_>> = Vec::new();
        macro_rules! merge {
            ($($f:ident),*) => { $(
                let columns: Vec<_> = parts.iter_mut().map(|p| std::mem::take(&mut p.$f)).collect();
                let dst = &mut out.$f;
                jobs.push(Box::new(move || *dst = MergeColumn::merge(columns, order)));
            )* };
        }
        crate::plain_columns!(merge);
        merge!(
            client_ip,
            server_ip,
            syn_ladder,
            syn_gaps_s,
            syn_gap_class,
            synack_gaps_s,
            synack_gap_class,
            lost_offsets_c2s,
            lost_offsets_s2c
        );
        for (i, dst) in out.counters.iter_mut().enumerate() {
            let columns: Vec<_> = parts.iter_mut().map(|p| std::mem::take(&mut p.counters[i])).collect();
            jobs.push(Box::new(move || *dst = MergeColumn::merge(columns, order)));
        }
        let per_thread = jobs.len().div_ceil(threads.max(1));
        std::thread::scope(|s| {
            let mut chunks = Vec::new();
            while !jobs.is_empty() {
                let rest = jobs.split_off(per_thread.min(jobs.len()));
                chunks.push(std::mem::replace(&mut jobs, rest));
            }
            let mut chunks = chunks.into_iter();
            let here = chunks.next();
            for chunk in chunks {
                s.spawn(move || chunk.into_iter().for_each(|job| job()));
            }
            here.into_iter().flatten().for_each(|job| job());
        });
        drop(jobs); // empty: its borrows of `out` end here
        out
    }

    /// Counts a late packet (see `track::LatePacket`) on its connection's row; the table
    /// must be sorted by `conn_id` (one file's rows). False when no row has that id.
    pub fn add_late_packet(&mut self, conn_id: u64) -> bool {
        match self.conn_id.binary_search(&conn_id) {
            Ok(row) => {
                self.late_packets[row] += 1;
                true
            }
            Err(_) => false,
        }
    }

    /// Appends another table's rows (several traces into one result).
    pub fn append(&mut self, mut other: ConnectionTable) {
        if self.is_empty() {
            // The first (or only) trace's table becomes the result as it is: copying its
            // columns into empty ones cost a page fault per 4 kB of a ~100 MB table.
            *self = other;
            return;
        }
        macro_rules! cat {
            ($($f:ident),*) => { $( self.$f.append(&mut other.$f); )* };
        }
        crate::plain_columns!(cat);
        for (a, b) in self.counters.iter_mut().zip(&mut other.counters) {
            a.append(b);
        }
        append_strings(&mut self.client_ip, other.client_ip);
        append_strings(&mut self.server_ip, other.server_ip);
        append_strings(&mut self.syn_ladder, other.syn_ladder);
        append_list(&mut self.syn_gaps_s, other.syn_gaps_s);
        append_list(&mut self.syn_gap_class, other.syn_gap_class);
        append_list(&mut self.synack_gaps_s, other.synack_gaps_s);
        append_list(&mut self.synack_gap_class, other.synack_gap_class);
        append_list(&mut self.lost_offsets_c2s, other.lost_offsets_c2s);
        append_list(&mut self.lost_offsets_s2c, other.lost_offsets_s2c);
    }
}

fn push_gaps(gaps: &mut ListColumn<f64>, classes: &mut ListColumn<u8>, gaps_ns: &[u64], answers: u64) {
    gaps.push(gaps_ns.iter().map(|&g| secs(g)));
    classes.push(gaps_ns.iter().enumerate().map(|(i, &g)| {
        if i < 64 && answers & (1 << i) != 0 {
            GapClass::Answer.code()
        } else {
            GapClass::classify(secs(g)).code()
        }
    }));
}

/// Where a row of the merged table comes from: a part and a row of it.
#[derive(Debug, Clone, Copy)]
struct Row {
    part: u32,
    row: u32,
}

/// The merged table's order, both ways: row k of the result is `rows[k]`, and row i of
/// part p goes to `ranks[p][i]`.
struct Order {
    rows: Vec<Row>,
    ranks: Vec<Vec<u32>>,
}

impl Order {
    fn by_conn_id(parts: &[ConnectionTable]) -> Self {
        let mut keyed: Vec<(u64, Row)> = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
        for (part, t) in parts.iter().enumerate() {
            keyed.extend(t.conn_id.iter().enumerate().map(|(row, &id)| (id, Row { part: part as u32, row: row as u32 })));
        }
        keyed.sort_unstable_by_key(|&(id, _)| id);
        let mut ranks: Vec<Vec<u32>> = parts.iter().map(|p| vec![0; p.len()]).collect();
        let rows: Vec<Row> = keyed.into_iter().map(|(_, r)| r).collect();
        for (k, r) in rows.iter().enumerate() {
            ranks[r.part as usize][r.row as usize] = k as u32;
        }
        Order { rows, ranks }
    }
}

/// A column that can be built from the same column of several parts, in the order
/// `order`.
trait MergeColumn: Sized + Send {
    fn merge(parts: Vec<Self>, order: &Order) -> Self;
}

impl<T: Copy + Default + Send> MergeColumn for Vec<T> {
    /// Each part's values are written to their places: the parts are read in sequence,
    /// one index checked per value (fetching each row from its part checked two).
    fn merge(parts: Vec<Self>, order: &Order) -> Self {
        // Zeroed pages for the primitives (`vec!` allocates them zeroed), written once.
        let mut out = vec![T::default(); order.rows.len()];
        for (part, ranks) in parts.into_iter().zip(&order.ranks) {
            for (v, &k) in part.into_iter().zip(ranks) {
                out[k as usize] = v;
            }
        }
        out
    }
}

impl MergeColumn for StringColumn {
    fn merge(parts: Vec<Self>, order: &Order) -> Self {
        let parts: Vec<_> = parts.iter().map(|p| (&p.offsets[..], &p.data[..])).collect();
        let (offsets, data) = gather_ranges(&parts, &order.rows);
        StringColumn { offsets, data }
    }
}

impl<T: Copy + Send> MergeColumn for ListColumn<T> {
    fn merge(parts: Vec<Self>, order: &Order) -> Self {
        let parts: Vec<_> = parts.iter().map(|p| (&p.offsets[..], &p.values[..])).collect();
        let (offsets, values) = gather_ranges(&parts, &order.rows);
        ListColumn { offsets, values }
    }
}

/// Variable-length rows laid out as Arrow lays them out (`offsets[i]..offsets[i+1]` into
/// the values), gathered from several parts in the order `order`.
fn gather_ranges<T: Copy>(parts: &[(&[i32], &[T])], order: &[Row]) -> (Vec<i32>, Vec<T>) {
    let mut offsets = Vec::with_capacity(order.len() + 1);
    let mut values = Vec::with_capacity(parts.iter().map(|(_, v)| v.len()).sum());
    offsets.push(0);
    for r in order {
        let (offs, vals) = parts[r.part as usize];
        let (a, b) = (offs[r.row as usize] as usize, offs[r.row as usize + 1] as usize);
        values.extend_from_slice(&vals[a..b]);
        offsets.push(values.len() as i32);
    }
    (offsets, values)
}

fn append_strings(a: &mut StringColumn, b: StringColumn) {
    if b.offsets.is_empty() {
        return;
    }
    if a.offsets.is_empty() {
        *a = b;
        return;
    }
    let base = a.data.len() as i32;
    a.offsets.extend(b.offsets[1..].iter().map(|o| o + base));
    a.data.extend_from_slice(&b.data);
}

fn append_list<T>(a: &mut ListColumn<T>, mut b: ListColumn<T>) {
    if b.offsets.is_empty() {
        return;
    }
    if a.offsets.is_empty() {
        *a = b;
        return;
    }
    let base = a.values.len() as i32;
    a.offsets.extend(b.offsets[1..].iter().map(|o| o + base));
    a.values.append(&mut b.values);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_formatted_ipv4_equals_the_standard_formatter() {
        let mut col = StringColumn::default();
        let addrs = ["0.0.0.0", "10.0.9.1", "192.168.100.255", "255.255.255.255", "1.20.199.7"];
        for a in addrs {
            col.push_ip(a.parse().unwrap());
        }
        col.push_ip("2001:db8::1".parse().unwrap());
        let text = String::from_utf8(col.data.clone()).unwrap();
        let items: Vec<&str> = col.offsets.windows(2).map(|w| &text[w[0] as usize..w[1] as usize]).collect();
        assert_eq!(items, [&addrs[..], &["2001:db8::1"]].concat());
    }

    /// A table of the rows `ids`, each column's value derived from its row's id.
    fn rows_with_ids(ids: &[u64]) -> ConnectionTable {
        let mut t = ConnectionTable::default();
        macro_rules! fill {
            ($($f:ident),*) => { $( t.$f = vec![Default::default(); ids.len()]; )* };
        }
        crate::plain_columns!(fill);
        t.conn_id = ids.to_vec();
        t.duration_s = ids.iter().map(|&i| i as f64 / 2.0).collect();
        t.client_port = ids.iter().map(|&i| i as u16).collect();
        for &i in ids {
            t.client_ip.push_str(&format!("10.0.0.{i}"));
            t.server_ip.push_str("");
            t.syn_ladder.push_str(if i % 2 == 0 { "linux" } else { "" });
            t.syn_gaps_s.push((0..i % 3).map(|k| k as f64));
            t.syn_gap_class.push((0..i % 3).map(|k| k as u8));
            t.synack_gaps_s.push([]);
            t.synack_gap_class.push([]);
            t.lost_offsets_c2s.push([]);
            t.lost_offsets_s2c.push((0..i % 2).map(|k| k * 1448));
        }
        t
    }

    #[test]
    fn merged_parts_are_the_rows_in_order_of_their_ids() {
        // Ids interleaved across parts and out of order within them, as a tracker's
        // chunks and its shards' hand them over.
        let parts = vec![rows_with_ids(&[3, 0, 7]), rows_with_ids(&[5]), rows_with_ids(&[6, 1, 2, 4])];
        for threads in [1, 3] {
            let merged = ConnectionTable::merge_by_conn_id(parts.clone(), threads);
            let want = rows_with_ids(&[0, 1, 2, 3, 4, 5, 6, 7]);
            assert_eq!(merged.conn_id, want.conn_id);
            assert_eq!(merged.duration_s, want.duration_s);
            assert_eq!(merged.client_port, want.client_port);
            assert_eq!((&merged.client_ip.offsets, &merged.client_ip.data), (&want.client_ip.offsets, &want.client_ip.data));
            assert_eq!((&merged.syn_ladder.offsets, &merged.syn_ladder.data), (&want.syn_ladder.offsets, &want.syn_ladder.data));
            assert_eq!(
                (&merged.syn_gaps_s.offsets, &merged.syn_gaps_s.values),
                (&want.syn_gaps_s.offsets, &want.syn_gaps_s.values)
            );
            assert_eq!(
                (&merged.lost_offsets_s2c.offsets, &merged.lost_offsets_s2c.values),
                (&want.lost_offsets_s2c.offsets, &want.lost_offsets_s2c.values)
            );
        }
    }
}
