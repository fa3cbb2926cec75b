//! One TCP connection's handshake and its counters, as seen from the capture point.

use crate::wire::{Endpoint, Segment};

/// Why a connection left the tracker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum EndReason {
    /// Both sides sent a FIN.
    Fin = 0,
    /// A RST was seen.
    Rst = 1,
    /// No packet for the idle timeout.
    Idle = 2,
    /// A new SYN with another ISN reused the 4-tuple.
    Reused = 3,
    /// Still open when the trace ended.
    #[default]
    Open = 4,
}

impl EndReason {
    pub const NAMES: [&'static str; 5] = ["fin", "rst", "idle", "reused", "open"];
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Every transmission of one handshake packet (SYN or SYN/ACK) with the same sequence
/// number: how many, when the first and last were seen, and the gap before each repeat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transmissions {
    pub count: u32,
    pub first_ts: u64,
    pub last_ts: u64,
    /// Gap in ns between each repeat and the transmission before it (count − 1 entries).
    pub gaps_ns: Vec<u64>,
}

impl Transmissions {
    fn record(&mut self, ts: u64) {
        if self.count == 0 {
            self.first_ts = ts;
        } else {
            // Captures merged from several interfaces may step back in time: a negative gap
            // is recorded as zero rather than wrapping.
            self.gaps_ns.push(ts.saturating_sub(self.last_ts));
        }
        self.count += 1;
        self.last_ts = ts;
    }
}

#[derive(Debug, Clone, Default)]
pub struct Conn {
    /// Order of first appearance in the trace.
    pub id: u64,
    pub client: Endpoint,
    pub server: Endpoint,
    /// The connection was seen from its SYN (a *connection try* in document 000's terms);
    /// false when the capture started mid-connection or only saw the SYN/ACK.
    pub syn_seen: bool,
    pub client_isn: u32,
    pub server_isn: Option<u32>,
    pub first_ts: u64,
    pub last_ts: u64,
    pub syns: Transmissions,
    pub synacks: Transmissions,
    /// First SYN/ACK seen after the last SYN: the answer the handshake RTT is measured to.
    pub synack_after_last_syn_ts: Option<u64>,
    /// The client's ACK of the SYN/ACK (third packet of the handshake).
    pub established_ts: Option<u64>,
    pub fin_from_client: bool,
    pub fin_from_server: bool,
    pub rst: bool,
    pub packets: [u32; 2],
    pub payload_bytes: [u64; 2],
    pub end: EndReason,
}

const C2S: usize = 0;
const S2C: usize = 1;

impl Conn {
    /// A connection first seen in `seg`: its client is the SYN's sender, or, for a
    /// connection seen mid-way, the side with the higher (ephemeral) port.
    pub fn start(id: u64, ts: u64, seg: &Segment) -> Self {
        let synack = seg.flags.syn() && seg.flags.ack();
        let from_client = if seg.flags.syn() { !synack } else { seg.src.port > seg.dst.port };
        let (client, server) = if from_client { (seg.src, seg.dst) } else { (seg.dst, seg.src) };
        let mut c = Conn { id, client, server, first_ts: ts, last_ts: ts, ..Default::default() };
        if seg.flags.syn() && !synack {
            c.syn_seen = true;
            c.client_isn = seg.seq;
        }
        c.observe(ts, seg);
        c
    }

    /// A SYN on this 4-tuple starts a new connection unless it repeats this one's SYN.
    pub fn is_new_try(&self, seg: &Segment) -> bool {
        !self.syn_seen || seg.seq != self.client_isn || seg.src != self.client || self.closed()
    }

    pub fn closed(&self) -> bool {
        self.rst || (self.fin_from_client && self.fin_from_server)
    }

    pub fn close_reason(&self) -> EndReason {
        if self.rst {
            EndReason::Rst
        } else {
            EndReason::Fin
        }
    }

    pub fn ended(mut self, reason: EndReason) -> Self {
        self.end = reason;
        self
    }

    #[inline(always)]
    pub fn observe(&mut self, ts: u64, seg: &Segment) {
        let from_client = seg.src == self.client;
        let dir = if from_client { C2S } else { S2C };
        self.last_ts = ts;
        self.packets[dir] += 1;
        self.payload_bytes[dir] += u64::from(seg.payload_len);
        let f = seg.flags;
        if f.syn() {
            if from_client && !f.ack() {
                self.syns.record(ts);
            } else if !from_client && f.ack() {
                self.on_synack(ts, seg);
            }
        } else if from_client && f.ack() && self.established_ts.is_none() {
            // The third packet of the handshake (or, if it was lost, the first data segment
            // that carries the same acknowledgment). Without a SYN/ACK in the capture (one
            // direction only) any ACK from the client shows the handshake completed.
            let acks_synack = self.server_isn.is_none_or(|isn| seg.ack == isn.wrapping_add(1));
            if self.syn_seen && acks_synack {
                self.established_ts = Some(ts);
            }
        }
        if f.fin() {
            if from_client {
                self.fin_from_client = true;
            } else {
                self.fin_from_server = true;
            }
        }
        if f.rst() {
            self.rst = true;
        }
    }

    fn on_synack(&mut self, ts: u64, seg: &Segment) {
        self.server_isn = Some(seg.seq);
        self.synacks.record(ts);
        if self.syn_seen && self.synack_after_last_syn_ts.is_none_or(|t| t < self.syns.last_ts) {
            self.synack_after_last_syn_ts = Some(ts);
        }
    }

    /// Last SYN → first SYN/ACK after it (≈ the RTT when captured near the client).
    pub fn synack_delay_ns(&self) -> Option<u64> {
        let t = self.synack_after_last_syn_ts?;
        (self.syn_seen && t >= self.syns.last_ts).then(|| t - self.syns.last_ts)
    }

    /// Last SYN/ACK before the handshake ACK → that ACK (≈ the RTT near the server).
    pub fn ack_delay_ns(&self) -> Option<u64> {
        let t = self.established_ts?;
        (self.synacks.count > 0 && t >= self.synacks.last_ts).then(|| t - self.synacks.last_ts)
    }
}
