//! A generator of synthetic short-flow traffic with known handshake losses.
//!
//! Each connection is a short HTTP-like exchange (handshake, one request, a response of a
//! few segments in slow-start rounds, FIN exchange) over a path with a random RTT. SYNs and
//! SYN/ACKs are lost at the given rates and repeated on the RTO ladder, as a stack would.
//! The capture point (near the client or near the server) decides which packets appear:
//! a SYN lost on the way is seen near the client only. Connections start as a Poisson
//! process and their packets are interleaved in time order, as on a busy link.
//!
//! Every run returns its ground truth, so tests can hold the analyzer to it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};

use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

use crate::diag::Vantage;
use crate::wire::{Endpoint, LinkType, Segment, TcpFlags};
use shortflow_wire::capture::{PcapWriter, SegmentOptions};

#[derive(Debug, Clone)]
pub struct GenConfig {
    pub connections: u64,
    pub seed: u64,
    /// New connections per second (Poisson arrivals).
    pub arrivals_per_s: f64,
    pub rtt_min_s: f64,
    pub rtt_max_s: f64,
    /// Probability that one transmission of a SYN (SYN/ACK) is lost on the path.
    pub syn_loss: f64,
    pub synack_loss: f64,
    /// Probability that the client's ACK of a SYN/ACK (with the request behind it) is lost:
    /// the server then repeats its SYN/ACK, and a capture near the client sees a duplicate.
    pub ack_loss: f64,
    /// Initial SYN and SYN/ACK RTO (1 s per RFC 6298; 3 s per RFC 2988), doubled per retry.
    pub client_rto_s: f64,
    pub server_rto_s: f64,
    /// SYN retries before the client gives up (the try is then unsuccessful).
    pub syn_retries: u32,
    pub synack_retries: u32,
    pub vantage: Vantage,
    pub ipv6: bool,
    /// Largest response, in segments of `mss` bytes (uniform 1..=max).
    pub response_segments_max: u32,
    pub mss: u32,
    pub initial_window: u32,
    /// Unix time of the first connection.
    pub start_s: u64,
}

impl Default for GenConfig {
    fn default() -> Self {
        Self {
            connections: 1000,
            seed: 1,
            arrivals_per_s: 2000.0,
            rtt_min_s: 0.010,
            rtt_max_s: 0.200,
            syn_loss: 0.01,
            synack_loss: 0.005,
            ack_loss: 0.0,
            client_rto_s: 1.0,
            server_rto_s: 1.0,
            syn_retries: 5,
            synack_retries: 5,
            vantage: Vantage::Client,
            ipv6: false,
            response_segments_max: 20,
            mss: 1448,
            initial_window: 10,
            start_s: 1_700_000_000,
        }
    }
}

/// What the generated capture contains, counted by the generator itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GenTruth {
    pub packets: u64,
    pub connections: u64,
    /// Connections whose handshake completed (the client's ACK was sent and captured).
    pub successful: u64,
    /// SYN and SYN/ACK transmissions that appear in the capture.
    pub syns_captured: u64,
    pub synacks_captured: u64,
    /// Connections with more than one SYN in the capture.
    pub multiple_syns: u64,
    pub multiple_synacks: u64,
}

struct Pkt {
    ts: u64,
    seg: Segment,
}

const NS: f64 = 1e9;

fn ns(s: f64) -> u64 {
    (s * NS).round() as u64
}

/// One connection's packets as seen at the capture point, in time order.
fn connection(i: u64, t0: u64, cfg: &GenConfig, rng: &mut impl Rng, truth: &mut GenTruth) -> Vec<Pkt> {
    let rtt = rng.random_range(cfg.rtt_min_s..=cfg.rtt_max_s);
    let d = ns(rtt / 2.0);
    let (client, server) = endpoints(i, cfg.ipv6);
    let near_client = cfg.vantage != Vantage::Server;
    // Capture time of a packet sent at `t` by the client (server): near its sender it is
    // seen when sent, near the other side one one-way delay later — if it was not lost.
    let seen_from_client = |t: u64, lost: bool| if near_client { Some(t) } else { (!lost).then_some(t + d) };
    let seen_from_server = |t: u64, lost: bool| if near_client { (!lost).then_some(t + d) } else { Some(t) };
    let mut out = Vec::with_capacity(32);
    let cisn: u32 = rng.random();
    let sisn: u32 = rng.random();
    let seg = |from_client: bool, seq: u32, ack: u32, flags: u8, len: u32| Segment {
        src: if from_client { client } else { server },
        dst: if from_client { server } else { client },
        seq,
        ack,
        flags: TcpFlags(flags),
        window: 65535,
        payload_len: len,
    };
    const S: u8 = TcpFlags::SYN;
    const A: u8 = TcpFlags::ACK;
    const F: u8 = TcpFlags::FIN;
    const P: u8 = TcpFlags::PSH;

    let hs = handshake(t0, d, cfg, rng);
    let mut syns_seen = 0;
    let mut synacks_seen = 0;
    for (t, kind, lost) in &hs.sent {
        match kind {
            Sent::Syn => {
                if let Some(ts) = seen_from_client(*t, *lost) {
                    out.push(Pkt { ts, seg: seg(true, cisn, 0, S, 0) });
                    syns_seen += 1;
                }
            }
            Sent::SynAck => {
                if let Some(ts) = seen_from_server(*t, *lost) {
                    out.push(Pkt { ts, seg: seg(false, sisn, cisn.wrapping_add(1), S | A, 0) });
                    synacks_seen += 1;
                }
            }
            Sent::Ack { with_request } => {
                if let Some(ts) = seen_from_client(*t, *lost) {
                    let (cseq, sseq) = (cisn.wrapping_add(1), sisn.wrapping_add(1));
                    out.push(Pkt { ts, seg: seg(true, cseq, sseq, A, 0) });
                    if *with_request {
                        out.push(Pkt { ts, seg: seg(true, cseq, sseq, A | P, 300) });
                    }
                }
            }
        }
    }
    truth.connections += 1;
    truth.syns_captured += syns_seen;
    truth.multiple_syns += u64::from(syns_seen > 1);
    truth.synacks_captured += synacks_seen;
    truth.multiple_synacks += u64::from(synacks_seen > 1);
    // The capture shows a completed handshake when it holds the client's ACK.
    let ack_captured = if near_client { hs.client_established.is_some() } else { hs.server_established.is_some() };
    truth.successful += u64::from(ack_captured);
    let Some(server_established) = hs.server_established else {
        out.sort_by_key(|p| p.ts);
        return out;
    };
    let tc = server_established - d;

    // Handshake ACK and request, then the response in slow-start rounds (IW segments,
    // doubling per round), the client ACKing every second segment, then the FINs.
    let (cseq, sseq) = (cisn.wrapping_add(1), sisn.wrapping_add(1));
    let request = 300;
    let cack = cseq.wrapping_add(request);
    let segments = rng.random_range(1..=cfg.response_segments_max.max(1));
    let mut sent = 0u32;
    let mut cwnd = cfg.initial_window.max(1);
    let mut round_start = tc + d; // the server has the request
    let gap = 12_000; // ns between back-to-back segments (≈ 1 Gbit/s serialisation)
    while sent < segments {
        let n = cwnd.min(segments - sent);
        for k in 0..n {
            let ts_send = round_start + u64::from(k) * gap;
            let seq = sseq.wrapping_add(sent * cfg.mss);
            let flags = if sent + 1 == segments { A | P | F } else { A };
            out.push(Pkt { ts: seen_from_server(ts_send, false).unwrap(), seg: seg(false, seq, cack, flags, cfg.mss) });
            sent += 1;
            if sent.is_multiple_of(2) || sent == segments {
                let fin = u32::from(sent == segments);
                let ack = sseq.wrapping_add(sent * cfg.mss + fin);
                let flags = if fin == 1 { A | F } else { A };
                out.push(Pkt { ts: seen_from_client(ts_send + d, false).unwrap(), seg: seg(true, cack, ack, flags, 0) });
            }
        }
        round_start += 2 * d + u64::from(n) * gap;
        cwnd *= 2;
    }
    // The server's ACK of the client's FIN.
    let last = round_start - 2 * d + d + d;
    out.push(Pkt {
        ts: seen_from_server(last, false).unwrap(),
        seg: seg(false, sseq.wrapping_add(segments * cfg.mss + 1), cack.wrapping_add(1), A, 0),
    });
    out.sort_by_key(|p| p.ts);
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Syn,
    SynAck,
    /// The client's ACK of a SYN/ACK; the first one carries the request right behind it.
    Ack {
        with_request: bool,
    },
}

#[derive(Debug, Default)]
struct Handshake {
    /// Every handshake packet sent: (send time, kind, lost on the path).
    sent: Vec<(u64, Sent, bool)>,
    /// When the client got its first SYN/ACK, and when the server got the client's ACK.
    client_established: Option<u64>,
    server_established: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    ClientSynTimer(u32),
    SynArrives,
    ServerSynAckTimer(u32),
    SynAckArrives,
    AckArrives,
}

/// The three-way handshake over a lossy path with one-way delay `d`: the client repeats
/// its SYN on its RTO ladder until a SYN/ACK arrives; the server answers every SYN that
/// arrives and repeats its SYN/ACK on its own ladder until the ACK arrives; the client
/// ACKs every SYN/ACK it receives (RFC 9293 3.5). Each packet is lost independently.
fn handshake(t0: u64, d: u64, cfg: &GenConfig, rng: &mut impl Rng) -> Handshake {
    let mut hs = Handshake::default();
    let mut queue: BinaryHeap<Reverse<(u64, Ev)>> = BinaryHeap::new();
    queue.push(Reverse((t0, Ev::ClientSynTimer(0))));
    let (crto, srto) = (ns(cfg.client_rto_s), ns(cfg.server_rto_s));
    let mut server_got_syn = false;
    while let Some(Reverse((t, ev))) = queue.pop() {
        match ev {
            Ev::ClientSynTimer(k) if hs.client_established.is_none() => {
                let lost = rng.random_bool(cfg.syn_loss);
                hs.sent.push((t, Sent::Syn, lost));
                if !lost {
                    queue.push(Reverse((t + d, Ev::SynArrives)));
                }
                if k < cfg.syn_retries {
                    queue.push(Reverse((t + (crto << k), Ev::ClientSynTimer(k + 1))));
                }
            }
            Ev::SynArrives | Ev::ServerSynAckTimer(_) if hs.server_established.is_none() => {
                if let Ev::ServerSynAckTimer(m) = ev {
                    if m < cfg.synack_retries {
                        queue.push(Reverse((t + (srto << (m + 1)), Ev::ServerSynAckTimer(m + 1))));
                    }
                } else if !server_got_syn {
                    server_got_syn = true;
                    queue.push(Reverse((t + srto, Ev::ServerSynAckTimer(0))));
                }
                let lost = rng.random_bool(cfg.synack_loss);
                hs.sent.push((t, Sent::SynAck, lost));
                if !lost {
                    queue.push(Reverse((t + d, Ev::SynAckArrives)));
                }
            }
            Ev::SynAckArrives => {
                let first = hs.client_established.is_none();
                hs.client_established.get_or_insert(t);
                let lost = rng.random_bool(cfg.ack_loss);
                hs.sent.push((t, Sent::Ack { with_request: first }, lost));
                if !lost {
                    queue.push(Reverse((t + d, Ev::AckArrives)));
                }
            }
            Ev::AckArrives => {
                hs.server_established.get_or_insert(t);
            }
            _ => {}
        }
    }
    hs
}

/// Unique 4-tuple per connection: client 10.a.b.c (or fd00::…) with an ephemeral port,
/// server 192.0.2.x:80 (documentation prefix; never a real address).
fn endpoints(i: u64, ipv6: bool) -> (Endpoint, Endpoint) {
    let port = 1024 + (i % 64_000) as u16;
    let host = (i / 64_000) as u32;
    let server_host = (i % 200) as u8 + 1;
    if ipv6 {
        let mut c = [0u8; 16];
        c[0] = 0xfd;
        c[12..].copy_from_slice(&host.to_be_bytes());
        let mut s = [0u8; 16];
        s[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        s[15] = server_host;
        (Endpoint::v6(c, port), Endpoint::v6(s, 80))
    } else {
        let h = host.to_be_bytes();
        (Endpoint::v4([10, h[1], h[2], h[3]], port), Endpoint::v4([192, 0, 2, server_host], 80))
    }
}

/// Writes `cfg.connections` interleaved connections to `writer` in time order.
pub fn generate<W: Write>(cfg: &GenConfig, writer: &mut PcapWriter<W>, opts: &SegmentOptions) -> io::Result<GenTruth> {
    // The IP-only link types fix the version: LINKTYPE_IPV6 means IPv6 packets whatever
    // `cfg.ipv6` says; LINKTYPE_IPV4 with IPv6 asked for is a contradiction.
    if opts.link == LinkType::Ipv4 && cfg.ipv6 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "link type ipv4 (228) carries only IPv4 packets, but IPv6 was asked for",
        ));
    }
    let v6_link = GenConfig { ipv6: true, ..cfg.clone() };
    let cfg = if opts.link == LinkType::Ipv6 { &v6_link } else { cfg };
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let arrivals = Exp::new(cfg.arrivals_per_s).map_err(|e| io::Error::other(e.to_string()))?;
    let mut truth = GenTruth::default();
    // Min-heap of (capture time, connection slot, packet index): connections are generated
    // as they start, so memory follows the number of connections in flight.
    let mut heap: BinaryHeap<Reverse<(u64, usize, usize)>> = BinaryHeap::new();
    let mut slots: Vec<Vec<Pkt>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut next_start = cfg.start_s * 1_000_000_000;
    let mut started = 0u64;
    loop {
        // Start every connection that begins before the earliest pending packet.
        while started < cfg.connections && heap.peek().is_none_or(|Reverse((t, _, _))| next_start <= *t) {
            let pkts = connection(started, next_start, cfg, &mut rng, &mut truth);
            started += 1;
            next_start += ns(arrivals.sample(&mut rng));
            if pkts.is_empty() {
                continue;
            }
            let slot = free.pop().unwrap_or_else(|| {
                slots.push(Vec::new());
                slots.len() - 1
            });
            heap.push(Reverse((pkts[0].ts, slot, 0)));
            slots[slot] = pkts;
        }
        let Some(Reverse((ts, slot, idx))) = heap.pop() else { break };
        writer.write_segment(ts, &slots[slot][idx].seg, opts)?;
        truth.packets += 1;
        if idx + 1 < slots[slot].len() {
            heap.push(Reverse((slots[slot][idx + 1].ts, slot, idx + 1)));
        } else {
            slots[slot] = Vec::new();
            free.push(slot);
        }
    }
    writer.flush()?;
    Ok(truth)
}
