//! Document 000's Table 1, for SYNs and for SYN/ACKs, accumulated as connections finish.
//!
//! Definitions, checked against the paper's own numbers (LWM1: 737,188 tries, 730,523
//! successful, 5,162 successful with more than one SYN):
//! - a *connection try* is a connection whose SYN was seen; it is *successful* when the
//!   client's ACK of the SYN/ACK was seen;
//! - "SYNs per successful connection" = SYNs of successful tries / successful tries;
//! - "duplicate SYN every X connections" = successful / successful with multiple SYNs
//!   (730,523 / 5,162 = 141.5, printed as 142 in the paper).

use super::counters;
use super::ladder::GapClass;
use super::table::{secs, Vantage};
use crate::track::{Cause, Conn, Handshake};

/// Counts for one kind of handshake packet (SYN or SYN/ACK).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandshakeCounts {
    /// Connections in which this packet kind was seen at least once.
    pub with_packet: u64,
    /// Of those, connections whose handshake completed.
    pub successful: u64,
    /// Connections with more than one transmission.
    pub multiple: u64,
    pub multiple_successful: u64,
    pub multiple_unsuccessful: u64,
    /// Connections with a repeat whose gap is on neither RTO ladder.
    pub multiple_outside_standard: u64,
    /// Transmissions in successful connections.
    pub packets_in_successful: u64,
    /// Transmissions beyond the first, over all connections.
    pub retransmissions: u64,
    /// Repeat gaps by class: RFC 6298 ladder, RFC 2988 ladder, outside.
    pub gaps_rfc6298: u64,
    pub gaps_rfc2988: u64,
    pub gaps_outside: u64,
    /// SYN/ACK repeats that answered a repeated SYN (not the server's timer).
    pub gaps_answer: u64,
}

impl HandshakeCounts {
    fn add_conn(&mut self, count: u32, gaps_ns: &[u64], answers: u64, successful: bool) {
        if count == 0 {
            return;
        }
        self.with_packet += 1;
        let multiple = count > 1;
        let mut outside = false;
        for (i, &g) in gaps_ns.iter().enumerate() {
            if i < 64 && answers & (1 << i) != 0 {
                self.gaps_answer += 1;
                continue;
            }
            match GapClass::classify(secs(g)) {
                GapClass::Rfc6298 { .. } => self.gaps_rfc6298 += 1,
                GapClass::Rfc2988 { .. } => self.gaps_rfc2988 += 1,
                GapClass::Outside => {
                    self.gaps_outside += 1;
                    outside = true;
                }
                GapClass::Answer => self.gaps_answer += 1,
            }
        }
        self.retransmissions += u64::from(count - 1);
        if successful {
            self.successful += 1;
            self.packets_in_successful += u64::from(count);
        }
        if multiple {
            self.multiple += 1;
            if successful {
                self.multiple_successful += 1;
            } else {
                self.multiple_unsuccessful += 1;
            }
            if outside {
                self.multiple_outside_standard += 1;
            }
        }
    }

    fn add(&mut self, o: &Self) {
        self.with_packet += o.with_packet;
        self.successful += o.successful;
        self.multiple += o.multiple;
        self.multiple_successful += o.multiple_successful;
        self.multiple_unsuccessful += o.multiple_unsuccessful;
        self.multiple_outside_standard += o.multiple_outside_standard;
        self.packets_in_successful += o.packets_in_successful;
        self.retransmissions += o.retransmissions;
        self.gaps_rfc6298 += o.gaps_rfc6298;
        self.gaps_rfc2988 += o.gaps_rfc2988;
        self.gaps_outside += o.gaps_outside;
        self.gaps_answer += o.gaps_answer;
    }

    /// Packets per successful connection (NaN when there is none).
    pub fn per_successful(&self) -> f64 {
        ratio(self.packets_in_successful, self.successful)
    }

    /// One repeat every X successful connections (infinite when there is none).
    pub fn repeat_every(&self) -> f64 {
        if self.multiple_successful == 0 {
            f64::INFINITY
        } else {
            self.successful as f64 / self.multiple_successful as f64
        }
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        f64::NAN
    } else {
        a as f64 / b as f64
    }
}

/// The trace-level summary: Table 1 for SYNs (over connection tries) and for SYN/ACKs.
/// Serializable: files analysed in other processes (a Dask cluster) send their summaries
/// back, and `add` sums them as it does for files read on threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// Packets read from the capture(s), TCP or not.
    pub packets: u64,
    pub tcp_packets: u64,
    /// Every connection tracked, including those seen without their SYN.
    pub connections: u64,
    pub syn: HandshakeCounts,
    pub synack: HandshakeCounts,
    /// Completed handshakes by the capture point their timing shows.
    pub vantage_client: u64,
    pub vantage_server: u64,
    pub vantage_unknown: u64,
    /// Connections without a timed handshake whose hop counts place the capture (see
    /// `Vantage::by_ttl`), and those seen in one direction only.
    pub vantage_ttl_client: u64,
    pub vantage_ttl_server: u64,
    pub one_directional: u64,
    /// Tries still waiting for an answer when the capture ended: neither successful nor not.
    pub open_tries: u64,
    pub refused_rst: u64,
    /// Tries refused by an ICMP destination-unreachable quoting their SYN.
    pub refused_icmp: u64,
    pub syn_retries_after_rst: u64,
    pub capture_duplicates: u64,
    /// Packets after their connection's close linger (see `track::LatePacket`).
    pub late_packets: u64,
    pub fast_open: u64,
    /// Data retransmissions by class (segments), and the spurious ones among them.
    pub timeout_retransmissions: u64,
    pub fast_retransmissions: u64,
    pub tlp_probes: u64,
    pub path_mtu_retransmissions: u64,
    /// Resent within half an RTT of their last sending (`RetxClass::Unprompted`).
    pub unprompted_retransmissions: u64,
    pub spurious_retransmissions: u64,
    /// Data segments seen after data their sender sent later (not retransmissions).
    pub out_of_order: u64,
    pub rto_events: u64,
    pub fast_recoveries: u64,
    pub delayed_acks: u64,
    pub delayed_ack_stalls: u64,
    pub zero_window_stalls: u64,
    /// Connections whose BSD-tick receiver was recognised.
    pub tick_receivers: u64,
    /// Time by cause over all connections (ns), indexed by `Cause`; sums to `duration_ns`.
    pub time_ns: [u64; Cause::COUNT],
    pub duration_ns: u64,
    /// Document 001's predictor: connections with data RTT samples and a handshake RTT,
    /// those whose mean data RTT is within 10 % of it, and those whose largest is ≤ 3×.
    pub rtt_ratio_connections: u64,
    pub rtt_ratio_within_10pct: u64,
    pub rtt_max_within_3x: u64,
    /// The counter columns added up (`counters`).
    #[serde(default)]
    pub counters: counters::Totals,
}

impl Summary {
    pub fn add_conn(&mut self, c: &Conn) {
        self.connections += 1;
        let ok = c.established_ts.is_some();
        if c.handshake == Handshake::Open {
            self.open_tries += 1;
        }
        self.refused_rst += u64::from(c.handshake == Handshake::RefusedRst);
        self.refused_icmp += u64::from(c.handshake == Handshake::RefusedIcmp);
        self.syn_retries_after_rst += u64::from(c.syn_retries_after_rst);
        self.capture_duplicates += u64::from(c.capture_duplicates);
        self.fast_open += u64::from(c.fast_open);
        for h in &c.halves {
            self.timeout_retransmissions += u64::from(h.retx_timeout);
            self.fast_retransmissions += u64::from(h.retx_fast);
            self.tlp_probes += u64::from(h.retx_tlp);
            self.path_mtu_retransmissions += u64::from(h.retx_path_mtu);
            self.unprompted_retransmissions += u64::from(h.retx_unprompted);
            self.spurious_retransmissions += u64::from(h.spurious);
            self.out_of_order += u64::from(h.reordered);
            self.rto_events += u64::from(h.rto_events);
            self.fast_recoveries += u64::from(h.fast_recoveries);
            self.delayed_acks += u64::from(h.delayed_acks);
            self.delayed_ack_stalls += u64::from(h.delack_stalls);
            self.zero_window_stalls += u64::from(h.zw_stalls);
        }
        self.tick_receivers += u64::from(c.halves.iter().any(|h| h.tick_receiver()));
        for (t, x) in self.time_ns.iter_mut().zip(c.lost_ns) {
            *t += x;
        }
        self.duration_ns += c.last_ts.saturating_sub(c.first_ts);
        if let (Some(a), Some(b), true) = (c.synack_delay_ns(), c.ack_delay_ns(), c.rtt.n > 0) {
            let hs = (a + b) as f64;
            if hs > 0.0 {
                self.rtt_ratio_connections += 1;
                self.rtt_ratio_within_10pct += u64::from((c.rtt.mean / hs - 1.0).abs() <= 0.1);
                self.rtt_max_within_3x += u64::from(c.rtt.max as f64 <= 3.0 * hs);
            }
        }
        if c.syn_seen {
            self.syn.add_conn(c.syns.count, &c.syns.gaps_ns, 0, ok);
        }
        self.synack.add_conn(c.synacks.count, &c.synacks.gaps_ns, c.synacks.answer_mask, ok);
        let timing = Vantage::by_timing(c);
        if ok {
            match timing {
                Vantage::Client => self.vantage_client += 1,
                Vantage::Server => self.vantage_server += 1,
                Vantage::Unknown => self.vantage_unknown += 1,
            }
        }
        if timing == Vantage::Unknown {
            match Vantage::by_ttl(c) {
                Vantage::Client => self.vantage_ttl_client += 1,
                Vantage::Server => self.vantage_ttl_server += 1,
                Vantage::Unknown => {}
            }
        }
        self.one_directional += u64::from(c.packets[0] == 0 || c.packets[1] == 0);
        self.counters.add_conn(c);
    }

    pub fn add(&mut self, o: &Summary) {
        self.packets += o.packets;
        self.tcp_packets += o.tcp_packets;
        self.connections += o.connections;
        self.syn.add(&o.syn);
        self.synack.add(&o.synack);
        self.vantage_client += o.vantage_client;
        self.vantage_server += o.vantage_server;
        self.vantage_unknown += o.vantage_unknown;
        self.vantage_ttl_client += o.vantage_ttl_client;
        self.vantage_ttl_server += o.vantage_ttl_server;
        self.one_directional += o.one_directional;
        self.open_tries += o.open_tries;
        self.refused_rst += o.refused_rst;
        self.refused_icmp += o.refused_icmp;
        self.syn_retries_after_rst += o.syn_retries_after_rst;
        self.capture_duplicates += o.capture_duplicates;
        self.late_packets += o.late_packets;
        self.fast_open += o.fast_open;
        self.timeout_retransmissions += o.timeout_retransmissions;
        self.fast_retransmissions += o.fast_retransmissions;
        self.tlp_probes += o.tlp_probes;
        self.path_mtu_retransmissions += o.path_mtu_retransmissions;
        self.unprompted_retransmissions += o.unprompted_retransmissions;
        self.spurious_retransmissions += o.spurious_retransmissions;
        self.out_of_order += o.out_of_order;
        self.rto_events += o.rto_events;
        self.fast_recoveries += o.fast_recoveries;
        self.delayed_acks += o.delayed_acks;
        self.delayed_ack_stalls += o.delayed_ack_stalls;
        self.zero_window_stalls += o.zero_window_stalls;
        self.tick_receivers += o.tick_receivers;
        for (t, x) in self.time_ns.iter_mut().zip(o.time_ns) {
            *t += x;
        }
        self.duration_ns += o.duration_ns;
        self.rtt_ratio_connections += o.rtt_ratio_connections;
        self.rtt_ratio_within_10pct += o.rtt_ratio_within_10pct;
        self.rtt_max_within_3x += o.rtt_max_within_3x;
        self.counters.add(&o.counters);
    }

    pub fn connection_tries(&self) -> u64 {
        self.syn.with_packet
    }

    pub fn successful(&self) -> u64 {
        self.syn.successful
    }

    /// Tries that failed: neither answered nor cut off by the end of the capture.
    pub fn unsuccessful(&self) -> u64 {
        self.syn.with_packet - self.syn.successful - self.open_tries
    }

    /// The trace's capture point: the majority of timed handshakes, else of the hop-count
    /// votes of the connections without one (see `Vantage`).
    pub fn vantage(&self) -> Vantage {
        self.vantage_with_basis().0
    }

    /// The capture point and, in words, what it was inferred from, or why it could not be.
    pub fn vantage_with_basis(&self) -> (Vantage, String) {
        let majority = |c: u64, s: u64| match c.cmp(&s) {
            std::cmp::Ordering::Greater => Vantage::Client,
            std::cmp::Ordering::Less => Vantage::Server,
            std::cmp::Ordering::Equal => Vantage::Unknown,
        };
        let (c, s) = (self.vantage_client, self.vantage_server);
        let by_timing = majority(c, s);
        if by_timing != Vantage::Unknown {
            return (
                by_timing,
                format!("handshake timing: SYN→SYN/ACK longer than SYN/ACK→ACK in {c} handshakes, shorter in {s}"),
            );
        }
        let (tc, ts) = (self.vantage_ttl_client, self.vantage_ttl_server);
        let one_way = if self.one_directional > 0 {
            format!("; {} of {} connections seen in one direction only", self.one_directional, self.connections)
        } else {
            String::new()
        };
        let by_ttl = majority(tc, ts);
        if by_ttl != Vantage::Unknown {
            let text = format!(
                "hop counts, no timed handshake to decide{one_way}: the client's packets left with an initial TTL (32, 64, 128, 255) while the server's did not or were not seen in {tc} connections, the reverse in {ts}"
            );
            return (by_ttl, text);
        }
        let why = if self.connections == 0 {
            "undecided: no TCP connection".to_string()
        } else if c + s > 0 {
            format!("undecided: {c} timed handshakes put the capture near the client, as many near the server, and hop counts do not decide")
        } else {
            format!(
                "undecided: no handshake timed in both halves{one_way}; and no side's packets carry an initial TTL while the other's do not (a capture on the path, past routers both ways, or on one LAN)"
            )
        };
        (Vantage::Unknown, why)
    }
}
