//! Document 000's Table 1, for SYNs and for SYN/ACKs, accumulated as connections finish.
//!
//! Definitions, checked against the paper's own numbers (LWM1: 737,188 tries, 730,523
//! successful, 5,162 successful with more than one SYN):
//! - a *connection try* is a connection whose SYN was seen; it is *successful* when the
//!   client's ACK of the SYN/ACK was seen;
//! - "SYNs per successful connection" = SYNs of successful tries / successful tries;
//! - "duplicate SYN every X connections" = successful / successful with multiple SYNs
//!   (730,523 / 5,162 = 141.5, printed as 142 in the paper).

use super::ladder::GapClass;
use super::table::{secs, Vantage};
use crate::track::Conn;

/// Counts for one kind of handshake packet (SYN or SYN/ACK).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
}

impl HandshakeCounts {
    fn add_conn(&mut self, count: u32, gaps_ns: &[u64], successful: bool) {
        if count == 0 {
            return;
        }
        self.with_packet += 1;
        let multiple = count > 1;
        let mut outside = false;
        for &g in gaps_ns {
            match GapClass::classify(secs(g)) {
                GapClass::Rfc6298 { .. } => self.gaps_rfc6298 += 1,
                GapClass::Rfc2988 { .. } => self.gaps_rfc2988 += 1,
                GapClass::Outside => {
                    self.gaps_outside += 1;
                    outside = true;
                }
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Packets read from the capture(s), TCP or not.
    pub packets: u64,
    pub tcp_packets: u64,
    /// Every connection tracked, including those seen without their SYN.
    pub connections: u64,
    pub syn: HandshakeCounts,
    pub synack: HandshakeCounts,
    /// Completed handshakes by inferred capture point.
    pub vantage_client: u64,
    pub vantage_server: u64,
    pub vantage_unknown: u64,
}

impl Summary {
    pub fn add_conn(&mut self, c: &Conn) {
        self.connections += 1;
        let ok = c.established_ts.is_some();
        if c.syn_seen {
            self.syn.add_conn(c.syns.count, &c.syns.gaps_ns, ok);
        }
        self.synack.add_conn(c.synacks.count, &c.synacks.gaps_ns, ok);
        if ok {
            match Vantage::of(c) {
                Vantage::Client => self.vantage_client += 1,
                Vantage::Server => self.vantage_server += 1,
                Vantage::Unknown => self.vantage_unknown += 1,
            }
        }
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
    }

    pub fn connection_tries(&self) -> u64 {
        self.syn.with_packet
    }

    pub fn successful(&self) -> u64 {
        self.syn.successful
    }

    pub fn unsuccessful(&self) -> u64 {
        self.syn.with_packet - self.syn.successful
    }

    /// The trace's capture point: the majority of completed handshakes.
    pub fn vantage(&self) -> Vantage {
        if self.vantage_client > self.vantage_server {
            Vantage::Client
        } else if self.vantage_server > self.vantage_client {
            Vantage::Server
        } else {
            Vantage::Unknown
        }
    }
}
