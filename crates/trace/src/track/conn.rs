//! One TCP connection as seen from the capture point: its handshake, each direction's
//! sender (`Half`) and where its time went (`Cause`).

use super::cause::Cause;
use super::exchange::{DataSeen, Exchange, ExchangeRow, ADU_QUIET_NS};
use super::half::{AckOutcome, FlightBuffer, Half, PathTimes, RetxClass, SendEvent, MAX_ID_STEP, MS};
use crate::wire::{Endpoint, IcmpUnreachable, Segment, SegmentExtra, Unreachable};

/// How the handshake ended (document 000's "successful" is `Answered`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Handshake {
    /// A SYN/ACK was seen, or the client's ACK shows one arrived.
    Answered = 0,
    /// The server answered the SYN with a RST.
    RefusedRst = 1,
    /// The SYN was never answered.
    #[default]
    NeverAnswered = 2,
    /// Still waiting for an answer when the capture ended.
    Open = 3,
    /// Seen mid-stream, without its SYN.
    NotSeen = 4,
    /// An ICMP destination-unreachable quoting the SYN, and no answer after it.
    RefusedIcmp = 5,
}

impl Handshake {
    pub const NAMES: [&'static str; 6] = ["answered", "refused_rst", "never_answered", "open", "not_seen", "refused_icmp"];
}

/// What the tracker made of one packet, for drawing a connection's time-sequence graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PacketNote {
    /// 0 nothing new (pure ACK, SYN…), 1 new data, 2 timeout retransmission, 3 fast
    /// retransmission, 4 tail loss probe, 5 capture duplicate, 6 late (after the close
    /// linger, counted in `late_packets` only), 7 resent for the path's MTU, 8 resent
    /// sooner than anything could have asked for it (`RetxClass::Unprompted`).
    pub event: u8,
    /// The cause given the gap before this packet (`Cause`; the larger part when split),
    /// or `Cause::PENDING`.
    pub cause: u8,
    /// Sent by the connection's client.
    pub from_client: bool,
    /// What this packet decided about earlier ones of its connection (`SETTLES`,
    /// `REVISES_TLP`, `REVISES_TO_TLP`): causes are given when they are known, sometimes
    /// packets later.
    pub revise: u8,
}

impl PacketNote {
    pub const EVENTS: [&'static str; 9] = [
        "other",
        "new_data",
        "retx_timeout",
        "retx_fast",
        "tlp",
        "capture_duplicate",
        "late",
        "retx_path_mtu",
        "retx_unprompted",
    ];
    pub const RETX_TIMEOUT: u8 = 2;
    pub const TLP: u8 = 4;
    /// A copy the capture made of a packet it already had (`Conn::is_capture_duplicate`).
    pub const COPY: u8 = 5;
    pub const LATE: u8 = 6;
    /// The connection's packets noted `Cause::PENDING` take this packet's cause.
    pub const SETTLES: u8 = 1;
    /// This side's last tail loss probe was the first step of this timeout's back-off
    /// ladder: a timeout, its gap the timeout's.
    pub const REVISES_TLP: u8 = 2;
    /// This side's last timeout resend was a tail loss probe: this one came after the same
    /// silence, not twice it.
    pub const REVISES_TO_TLP: u8 = 4;
}

/// A stretch with no data outstanding in either direction (FINs may be), whose time waits
/// for its cause: the next data says who was waiting (`Conn::settle_quiet`), the end of the
/// connection makes it idle and teardown (`Conn::end_at`).
#[derive(Debug, Clone, Copy, Default)]
struct Quiet {
    /// When it began.
    since: u64,
    /// Time of the stretch so far.
    ns: u64,
    /// Of which after a side began to close (a FIN or a RST).
    closing_ns: u64,
    /// When the closing began (a FIN sent before the stretch: its start; `NEVER`: not yet).
    closing_since: u64,
    /// Of which each side was held by a zero window: its next data waited for that part.
    zero_window_ns: [u64; 2],
}

/// The header fields that tell a second recording of the same packet from a new one:
/// the time and TTL, which differ between the copies, and the rest packed in words that
/// compare at once (this runs for every packet).
#[derive(Debug, Clone, Copy, Default)]
struct Fingerprint {
    ts: u64,
    /// Sequence and acknowledgment numbers.
    numbers: u64,
    /// Payload length, window and IP ID.
    fields: u64,
    flags: u8,
    /// The IP header's options (`SegmentExtra::ip_options`).
    ip_options: u8,
    ttl: u8,
    /// The TCP timestamps and SACK blocks folded into one word (`options_digest`): a
    /// copy carries its original's, a sender's own repeat a later TSval or other blocks.
    options: u32,
}

/// The TCP options that change between a sender's own repeats, folded (compared for
/// equality only): TSval and TSecr (RFC 7323, a millisecond clock on Linux) and the SACK
/// blocks (each duplicate ACK of a SACK receiver reports more).
#[inline]
fn options_digest(extra: &SegmentExtra) -> u32 {
    let o = &extra.opts;
    let mut d = o.timestamps.map_or(0, |(v, e)| v ^ e.rotate_left(16));
    for &(l, r) in o.sack_blocks() {
        d = d.rotate_left(5) ^ l ^ r.rotate_left(11);
    }
    d
}

impl Fingerprint {
    #[inline]
    fn of(ts: u64, seg: &Segment, extra: &SegmentExtra) -> Self {
        Self {
            ts,
            numbers: u64::from(seg.seq) << 32 | u64::from(seg.ack),
            fields: u64::from(seg.payload_len) << 32 | u64::from(seg.window) << 16 | u64::from(extra.ip_id),
            flags: seg.flags.0,
            ip_options: extra.ip_options,
            ttl: extra.ttl,
            options: options_digest(extra),
        }
    }

    #[inline]
    fn ip_id(&self) -> u16 {
        self.fields as u16
    }

    /// Everything but the time and the TTL is the same.
    #[inline]
    fn same_headers(&self, other: &Self) -> bool {
        self.numbers == other.numbers
            && self.fields == other.fields
            && self.flags == other.flags
            && self.ip_options == other.ip_options
            && self.options == other.options
    }
}

/// A packet recorded twice (capture on both sides of a bridge or router, or by two
/// interfaces) is at most this far from its first copy.
pub const DUPLICATE_WINDOW_NS: u64 = 100_000;
/// ... or this far when both copies carry the same non-zero IP ID and their sender numbers
/// its datagrams (Linux `ip_select_ident_segs`, Windows' global counter: its own repeat
/// carries a new ID), so the window only guards against the ID wrapping, 65,536
/// datagrams later. Real captures show copies 190 µs apart (a SPAN port: arkime's
/// smb-smb1-ascii.pcap) and 1.2-1.6 ms apart (a second, header-only copy of each segment
/// a client sent); 5 ms stays below a TLP (10 ms floor, `tcp_schedule_loss_probe`) and a
/// SYN's RTO (1 s).
pub const DUPLICATE_WINDOW_SAME_ID_NS: u64 = 5_000_000;
/// ... or this far when, besides, its sender has sent other datagrams between the two (a
/// retransmission of a sender whose IDs count would carry a later ID than those): arkime's
/// wireshark-retrans.pcap has every packet two to four times, copies up to 51 ms late
/// after the sender's next packets. Half the minimum RTO (200 ms): no timeout is at stake;
/// a datagram the network itself delivered twice, much later, stays a packet of its own
/// (suricata-verify's filestore-v2.7-stream-depth: an old ACK again 161 ms on, which the
/// receiver answered).
pub const DUPLICATE_WINDOW_MOVED_ON_NS: u64 = 100_000_000;

/// ... or this far without an IP ID for a packet its sender does not repeat unchanged
/// (see `Conn::is_capture_duplicate`): a mirror port's copies of IPv6 traffic, or of a
/// stack that sends ID 0, come up to 2 ms late.
pub const DUPLICATE_WINDOW_NO_ID_NS: u64 = 2_000_000;

/// ... or this far for a SYN or SYN/ACK with no handshake packet of the peer in between
/// (see `Conn::is_capture_duplicate`).
pub const HANDSHAKE_COPY_WINDOW_NS: u64 = 1_000_000;

/// A copy is looked for among this many of its side's last packets: a router forwarding
/// a burst puts its copies after several originals (at 1 Gb/s a full segment takes 12 µs,
/// a router's ~50 µs holds four), and a receiver acknowledging a burst sends four or more
/// ACKs before a mirror port's copy of the first (300 µs late on a veth pair).
const RECENT_PACKETS: usize = 6;

/// A `Fingerprint` but its numbers, as `Recent` keeps it: 20 bytes, every connection
/// keeps twelve and the tracker's time goes to fetching connections' state. Its time in
/// units of 1,024 ns (a shift, not a division), modulo 2^32 (73 minutes): only ages up
/// to 100 ms are ever asked of it.
#[derive(Debug, Clone, Copy, Default)]
struct FingerprintRest {
    ts_units: u32,
    len: u32,
    window: u16,
    ip_id: u16,
    options: u32,
    flags: u8,
    ip_options: u8,
    ttl: u8,
}

/// `FingerprintRest`'s unit of time: 2^10 ns.
const TS_UNIT_SHIFT: u32 = 10;

impl FingerprintRest {
    fn of(fp: &Fingerprint) -> Self {
        Self {
            ts_units: (fp.ts >> TS_UNIT_SHIFT) as u32,
            len: (fp.fields >> 32) as u32,
            window: (fp.fields >> 16) as u16,
            ip_id: fp.fields as u16,
            options: fp.options,
            flags: fp.flags,
            ip_options: fp.ip_options,
            ttl: fp.ttl,
        }
    }
}

/// A side's last packets that were not copies (a ring, `RECENT_PACKETS` long), and when
/// its IP ID last changed (copies included). Their sequence and acknowledgment numbers lie
/// apart in one cache line: every packet is looked up there, and most match none.
#[derive(Debug, Clone, Copy)]
struct Recent {
    numbers: [u64; RECENT_PACKETS],
    /// The rest of each fingerprint.
    packets: [FingerprintRest; RECENT_PACKETS],
    /// Where the next goes (the newest is just before).
    next: u8,
    last_id: u16,
    id_changed_at: u64,
}

impl Default for Recent {
    fn default() -> Self {
        // An empty place matches no packet: no payload length reaches 2^32 - 1.
        let empty = FingerprintRest { len: u32::MAX, ..FingerprintRest::default() };
        Self { numbers: [0; RECENT_PACKETS], packets: [empty; RECENT_PACKETS], next: 0, last_id: 0, id_changed_at: 0 }
    }
}

impl Recent {
    fn newest(&self) -> usize {
        (usize::from(self.next) + RECENT_PACKETS - 1) % RECENT_PACKETS
    }

    /// The remembered packet at `i`, whole, its time read as at most 71 minutes before
    /// `now` (see `FingerprintRest`).
    fn get(&self, i: usize, now: u64) -> Fingerprint {
        let r = self.packets[i];
        // A capture merged from several interfaces may step back: an age "beyond half the
        // range" is a packet after `now`.
        // Its time's unit, whole: the start of the unit it was seen in.
        let unit = now >> TS_UNIT_SHIFT;
        let age = (unit as u32).wrapping_sub(r.ts_units) as i32;
        let then = if age >= 0 { unit.saturating_sub(age as u64) } else { unit.saturating_add(u64::from(age.unsigned_abs())) };
        let ts = then << TS_UNIT_SHIFT;
        Fingerprint {
            ts,
            numbers: self.numbers[i],
            fields: u64::from(r.len) << 32 | u64::from(r.window) << 16 | u64::from(r.ip_id),
            flags: r.flags,
            ip_options: r.ip_options,
            ttl: r.ttl,
            options: r.options,
        }
    }

    /// The newest remembered packet with `fp`'s headers.
    #[inline]
    fn find(&self, fp: &Fingerprint) -> Option<usize> {
        // Most packets match none: one comparison of the numbers each says so.
        if !self.numbers.contains(&fp.numbers) {
            return None;
        }
        let newest = self.newest();
        (0..RECENT_PACKETS)
            .map(|k| (newest + RECENT_PACKETS - k) % RECENT_PACKETS)
            .find(|&i| fp.same_headers(&self.get(i, fp.ts)))
    }

    /// `fp` becomes the newest.
    #[inline]
    fn remember(&mut self, fp: Fingerprint) {
        let at = usize::from(self.next);
        self.numbers[at] = fp.numbers;
        self.packets[at] = FingerprintRest::of(&fp);
        self.next = ((at + 1) % RECENT_PACKETS) as u8;
    }

    /// When the IP ID last changed before `ip_id` (the packet being looked at) came.
    #[inline]
    fn id_changed_before(&mut self, ts: u64, ip_id: u16) -> u64 {
        let before = self.id_changed_at;
        if ip_id != self.last_id {
            self.last_id = ip_id;
            self.id_changed_at = ts;
        }
        before
    }
}

/// Welford's running mean and variance of the RTT samples (ns).
#[derive(Debug, Clone, Copy, Default)]
pub struct RttStats {
    pub n: u32,
    pub mean: f64,
    m2: f64,
    pub min: u64,
    pub max: u64,
}

impl RttStats {
    fn add(&mut self, x: u64) {
        self.n += 1;
        let xf = x as f64;
        let d = xf - self.mean;
        self.mean += d / f64::from(self.n);
        self.m2 += d * (xf - self.mean);
        self.min = if self.n == 1 { x } else { self.min.min(x) };
        self.max = self.max.max(x);
    }

    pub fn std(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            (self.m2 / f64::from(self.n - 1)).sqrt()
        }
    }
}

/// Why a connection left the tracker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum EndReason {
    /// Both sides sent a FIN.
    Fin = 0,
    /// A RST was seen.
    Rst = 1,
    /// No packet for the idle timeout; or a try nothing answered, given up by its client
    /// (`Conn::try_given_up_at`).
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
    /// Bit i set: repeat i answered a repeated SYN instead of following the sender's own
    /// timer (SYN/ACKs only; RFC 9293 3.10.7.3: a SYN in SYN-RECEIVED is answered again).
    pub answer_mask: u64,
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
    /// IPv4 TTL / IPv6 hop limit of each side's first packet (0: none seen): an initial
    /// value (64, 128, 255) means no router between that side and the capture point.
    pub first_ttl: [u8; 2],
    pub payload_bytes: [u64; 2],
    pub end: EndReason,
    /// Each direction's sender: [client → server, server → client].
    pub halves: [Half; 2],
    /// Time by cause (ns), indexed by `Cause`; sums to `last_ts - first_ts`.
    pub lost_ns: [u64; Cause::COUNT],
    pub max_idle_ns: u64,
    pub rtt: RttStats,
    srtt: Option<(f64, f64)>,
    pub capture_duplicates: u32,
    /// SYNs with the client's ISN re-sent after the server refused with a RST.
    pub syn_retries_after_rst: u32,
    pub refused_rst: bool,
    /// The acknowledgment number of the last ACK the server sent while the client was in
    /// SYN-SENT that did not acknowledge the SYN (see `observe_ext`).
    challenge_ack: Option<u32>,
    /// The first ICMP destination-unreachable that quoted this connection's SYN.
    pub refused_icmp: Option<Unreachable>,
    /// TCP Fast Open: data or a cookie on the SYN (RFC 7413).
    pub fast_open: bool,
    pub handshake: Handshake,
    /// Each side's last packets that were not copies, where a copy is looked for.
    recent: [Recent; 2],
    /// Each side's SYN offered SACK (RFC 2018): with both, a duplicate ACK carries blocks.
    sack_ok: [bool; 2],
    /// Each side's SYN carried a timestamp (RFC 7323): with both, every segment does.
    ts_ok: [bool; 2],
    /// Both SYNs carried a window scale (RFC 7323 2.2): windows are scaled.
    wscale_ok: bool,
    /// The client SYN's window scale option and window, until the SYN/ACK says whether
    /// scaling holds.
    client_wscale: Option<u8>,
    client_syn_window: u16,
    /// The MSS each side's SYN announced (0: none seen): the largest segment the other
    /// side sends it.
    mss_announced: [u16; 2],
    /// The payload of each side's last packet (as captured: a TSO packet is one).
    last_len: [u32; 2],
    /// Each side's IP ID steps after a one-segment packet: [by 1, by other] (saturating).
    id_steps: [[u8; 2]; 2],
    /// Two different packets of this side carried the same non-zero IP ID: its sender
    /// does not number its datagrams (a crafted capture's constant ID, GSO with fixed
    /// IDs), so a shared ID says nothing (`is_capture_duplicate`).
    ids_constant: [bool; 2],
    /// Network time since each side's last packet, and since its last new data.
    net_since_send: [u64; 2],
    net_since_data: [u64; 2],
    /// What the last packet was and which cause its gap went to.
    pub last_note: PacketNote,
    pending_delack: Option<(usize, u64)>,
    /// The exchange (`Exchange::index`) whose span the pending delayed ACK was booked in.
    delack_exchange: u32,
    last_dir: usize,
    /// The stretch with nothing outstanding the connection is in, if it is (`Quiet`).
    quiet: Option<Quiet>,
    /// The direction of the last new data, if any was sent.
    last_data_dir: Option<u8>,
    /// Each side's last new data segment carried PSH: its sender's write ended there.
    data_pushed: [bool; 2],
    /// When the last new data was seen.
    last_data_ts: u64,
    /// When the last data byte was acknowledged (the last time nothing was outstanding
    /// after data), or, without that ACK in the capture, when it was sent (`NEVER`: no
    /// data).
    pub response_complete_ts: u64,
    /// Where the connection's teardown began (for the graph; `NEVER`: none).
    pub teardown_from_ts: u64,
    /// The time given to the gap before each side's last probe or timeout resend (moved
    /// when the next step of the ladder revises its class, `Half::take_revision`).
    resend_booked: [u64; 2],
    /// Without a timed handshake, the least raw RTT sample of each half's data: samples
    /// from one side only are kept, the far receiver's (`is_far_side_sample`).
    raw_rtt_min: [u32; 2],
    rtt_side: Option<u8>,
    /// The exchange in progress (`super::exchange`).
    exchange: Exchange,
    /// Exchanges finished while the connection goes on, not yet taken (`Tracker` takes
    /// them after each packet); the last one is `take_last_exchange`'s.
    pub exchanges_done: Vec<ExchangeRow>,
    /// The last finished exchange, while time of its span may still change cause
    /// (`HeldExchange`). Boxed: most connections never hold one.
    held_exchange: Option<Box<HeldExchange>>,
}

/// A finished exchange held back while a later packet may still find time of its span to
/// be another cause's: a delayed ACK booked in it that stalled nobody (`Conn::revert_delack`),
/// or path time it waited that was a window's, a round of slow start or the application's
/// (`Conn::move_path_time`). Such time is taken from this row, not from the exchange in
/// progress, so cause by cause the exchanges add up to their connection. Handed over once
/// neither can happen, or when the next exchange ends.
#[derive(Debug, Clone)]
struct HeldExchange {
    row: ExchangeRow,
    /// Of each wait for the path still running (`WAIT_SEND + d`: `Conn::net_since_send[d]`,
    /// `WAIT_DATA + d`: `Conn::net_since_data[d]`), the part in this row's span.
    path_waits: [u64; 4],
    /// The pending delayed ACK was booked in its span.
    delack: bool,
}

impl HeldExchange {
    fn settled(&self) -> bool {
        !self.delack && self.path_waits == [0; 4]
    }
}

/// The connection's account where it last rested, read for the exchange a packet with data
/// may end at that rest (`Conn::note_exchange_data`), and each path wait's part since the
/// held exchange's end (`HeldExchange::path_waits`) then. The packet's own moves of path
/// time that began before the rest (a server's answer finding its wait since the request
/// the server's) revise it: that time is the ended exchange's.
struct RestReading {
    since: u64,
    account: [u64; Cause::COUNT],
    path_waits: [u64; 4],
}

impl RestReading {
    fn new(since: u64, c: &Conn) -> Self {
        let waits = c.path_waits();
        let held = c.held_exchange.as_ref().map_or([0; 4], |h| h.path_waits);
        let path_waits = std::array::from_fn(|i| waits[i].saturating_sub(held[i]));
        Self { since, account: c.lost_ns, path_waits }
    }

    /// `moved` of path wait `wait` went to `to` (the held exchange's part aside).
    fn revise(&mut self, wait: usize, to: Cause, moved: u64) {
        let older = moved.min(self.path_waits[wait]).min(self.account[Cause::Network as usize]);
        self.account[Cause::Network as usize] -= older;
        self.account[to as usize] += older;
        self.path_waits[wait] -= older;
    }
}

/// Where in `HeldExchange::path_waits` the waits since each side's last packet, and since
/// its last new data, are.
const WAIT_SEND: usize = 0;
const WAIT_DATA: usize = 2;

pub const C2S: usize = 0;
pub const S2C: usize = 1;

/// A time that did not come (`Conn::response_complete_ts`, `Conn::teardown_from_ts`).
pub const NEVER: u64 = u64::MAX;

/// A side that ended a write and writes again within this much, its peer silent, is still
/// producing its answer (a server writing a page in pieces); quiet longer, it was at rest
/// and sends again of its own accord. A second: the longest a user's flow of thought
/// tolerates a wait (Nielsen, "Usability Engineering", 1993, 5.5), far beyond any path's
/// round trip, far below a keep-alive connection's rests.
const REST_NS: u64 = 1_000_000_000;

/// In a connection seen one way only, a silence before new data longer than this is its
/// sender's choice, not the path's: no ACK clock, loss repair or round trip (the RTT of
/// paths on Earth stays well below it) holds new data back a second.
const ONE_WAY_IDLE_NS: u64 = 1_000_000_000;

/// Linux gives up a SYN after 6 retries, 127 s after the first (`tcp_syn_retries`): no
/// retry is ever due later than this after the last.
const SYN_GIVE_UP_NS: u64 = 127 * 1_000_000_000;

/// How long after its last SYN a client's next retry would come, given the gap before that
/// SYN (none: it was the first): twice that gap (RFC 6298 5.5), or 3 s after a single SYN
/// (RFC 2988's initial RTO, the longest).
fn next_syn_due_ns(last_gap_ns: Option<u64>) -> u64 {
    let next = match last_gap_ns {
        Some(g) => g.saturating_mul(2),
        None => 3 * 1_000_000_000,
    };
    next.min(SYN_GIVE_UP_NS)
}

/// How long after its last SYN a try nothing answered is given up: when twice the wait
/// for its next retry has passed without one (the retry would be overdue by a whole
/// back-off). Tries held until the idle timeout made the memory of a SYN flood follow the
/// flood; a client's ladder never leaves more than one back-off between its SYNs.
pub(super) fn try_given_up_after_ns(last_gap_ns: Option<u64>) -> u64 {
    next_syn_due_ns(last_gap_ns).saturating_mul(2)
}

impl Conn {
    /// A connection first seen in `seg`: its client is the SYN's sender, or, for a
    /// connection seen mid-way, the side with the higher (ephemeral) port.
    pub fn start(id: u64, ts: u64, seg: &Segment) -> Self {
        Self::start_ext(id, ts, seg, &SegmentExtra::default())
    }

    /// Like [`Self::start`] with the IP fields and TCP options.
    pub fn start_ext(id: u64, ts: u64, seg: &Segment, extra: &SegmentExtra) -> Self {
        Self::start_with(id, ts, seg, extra, [FlightBuffer::default(), FlightBuffer::default()])
    }

    /// Like [`Self::start_ext`], reusing two in-flight buffers of ended connections.
    pub fn start_with(id: u64, ts: u64, seg: &Segment, extra: &SegmentExtra, buffers: [FlightBuffer; 2]) -> Self {
        let synack = seg.flags.syn() && seg.flags.ack();
        let from_client = if seg.flags.syn() { !synack } else { seg.src.port > seg.dst.port };
        let (client, server) = if from_client { (seg.src, seg.dst) } else { (seg.dst, seg.src) };
        let mut c = Conn {
            id,
            client,
            server,
            first_ts: ts,
            last_ts: ts,
            response_complete_ts: NEVER,
            teardown_from_ts: NEVER,
            exchange: Exchange::starting_at(ts),
            ..Default::default()
        };
        let [b0, b1] = buffers;
        c.halves[C2S].give_flight_buffer(b0);
        c.halves[S2C].give_flight_buffer(b1);
        if seg.flags.syn() && !synack {
            c.syn_seen = true;
            c.client_isn = seg.seq;
        }
        c.observe_ext(ts, seg, extra);
        c
    }

    /// The in-flight buffers of an ended connection, emptied, for the next one.
    pub fn take_flight_buffers(&mut self) -> [FlightBuffer; 2] {
        [self.halves[C2S].take_flight_buffer(), self.halves[S2C].take_flight_buffer()]
    }

    /// A SYN on this 4-tuple starts a new connection unless it repeats this one's SYN.
    pub fn is_new_try(&self, seg: &Segment) -> bool {
        let same = self.syn_seen && seg.seq == self.client_isn && seg.src == self.client;
        // A client re-sending the same SYN after a RST (a refused port) is still one try.
        !same || (self.closed() && !self.refused_rst)
    }

    pub fn closed(&self) -> bool {
        self.rst || (self.fin_from_client && self.fin_from_server)
    }

    /// How long after its last packet a closed connection still takes packets: `base`,
    /// or, while a side retransmits an unacknowledged FIN (or data) by timeout, long
    /// enough for its next back-off (`Half::next_expiry_within_ns`), at most `cap`. A FIN
    /// resent 0.4, 0.8, ... 12.8 s apart stays the connection's retransmission instead of
    /// turning into late packets once the gaps pass the linger.
    pub fn close_linger_ns(&self, base: u64, cap: u64) -> u64 {
        let backoff = self.halves.iter().filter_map(Half::next_expiry_within_ns).max().unwrap_or(0);
        base.saturating_add(backoff).min(cap.max(base))
    }

    pub fn close_reason(&self) -> EndReason {
        if self.rst {
            EndReason::Rst
        } else {
            EndReason::Fin
        }
    }

    pub fn ended(self, reason: EndReason) -> Self {
        self.ended_at(reason, None)
    }

    /// Ends the connection; `trace_end` is the capture's last timestamp when the capture
    /// ended with it still open (a try still inside the SYN retry ladder is `Open`).
    pub fn ended_at(mut self, reason: EndReason, trace_end: Option<u64>) -> Self {
        self.end_at(reason, trace_end);
        self
    }

    /// Like [`Self::ended_at`], in place: the tracker ends a connection where it lies and
    /// hands the sink a reference, instead of moving its ~1.7 kB out (and a default one
    /// in) and through the sink: those copies were a third of the core's cache misses.
    pub fn end_at(&mut self, reason: EndReason, trace_end: Option<u64>) {
        self.end = reason;
        for h in &mut self.halves {
            h.finish();
        }
        self.settle_end();
        if let Some((_, amount)) = self.pending_delack.take() {
            self.revert_delack(amount);
        }
        self.release_held_exchange();
        self.handshake = if !self.syn_seen {
            Handshake::NotSeen
        } else if self.established_ts.is_some() || self.synacks.count > 0 {
            Handshake::Answered
        } else if self.refused_rst {
            Handshake::RefusedRst
        } else if self.refused_icmp.is_some() {
            Handshake::RefusedIcmp
        } else if reason == EndReason::Open && trace_end.is_some_and(|t| t.saturating_sub(self.last_ts) < self.next_syn_due_ns())
        {
            Handshake::Open
        } else {
            Handshake::NeverAnswered
        };
    }

    /// The connection ended: a quiet stretch at its end was idle until a side began to
    /// close, teardown after. Data still outstanding (its ACK not in the capture) completed
    /// the response when it was sent.
    fn settle_end(&mut self) {
        if let Some(q) = self.quiet.take() {
            self.lost_ns[Cause::Idle as usize] += q.ns - q.closing_ns;
            self.lost_ns[Cause::Teardown as usize] += q.closing_ns;
            self.teardown_from_ts = q.closing_since;
        } else if self.last_data_dir.is_some()
            && (self.response_complete_ts == NEVER || self.response_complete_ts < self.last_data_ts)
        {
            self.response_complete_ts = self.last_data_ts;
        }
    }

    /// The ended connection's last exchange (none without data, or once taken): it runs to
    /// the connection's end, its teardown with it. Handed out apart from `exchanges_done`
    /// so that a connection of one exchange allocates nothing for it.
    pub fn take_last_exchange(&mut self) -> Option<ExchangeRow> {
        self.exchange
            .has_data()
            .then(|| self.exchange.finish(self.id, [self.first_ts, self.ready_ts()], self.last_ts, &self.lost_ns, true))
    }

    /// When the connection could first carry data: the handshake's end, else its first packet.
    fn ready_ts(&self) -> u64 {
        self.established_ts.unwrap_or(self.first_ts)
    }

    /// A packet of `d.dir` that brought data (new, or resent) meets the exchange in
    /// progress: the start of the next exchange ends it where the connection last rested
    /// (`rest`: when nothing was left outstanding, and the account then), or, without a
    /// rest (pipelined), here.
    fn note_exchange_data(
        &mut self,
        mut d: DataSeen,
        rest: Option<(u64, [u64; Cause::COUNT])>,
        path_after_rest: u64,
        write_ended: bool,
    ) {
        // A long rest after a write its side ended (PSH) ends that side's ADU, whoever
        // waited; a write left open goes on after it (a sender stalled mid-answer).
        d.after_rest |= write_ended && rest.is_some_and(|(since, _)| d.ts.saturating_sub(since) >= ADU_QUIET_NS);
        if self.exchange.begins_next(&d) {
            let (end, account) = rest.unwrap_or((d.ts, self.lost_ns));
            let row = self.exchange.finish(self.id, [self.first_ts, self.ready_ts()], end, &account, false);
            // What the held row still waited on is no longer told apart from this one's.
            self.release_held_exchange();
            let delack = self.pending_delack.is_some() && self.delack_exchange == row.index;
            let waits = self.path_waits();
            // Ended where the connection rested, the path's time of this packet's gap is the next one's.
            let after_end = if rest.is_some() { path_after_rest } else { 0 };
            let held = HeldExchange { row, path_waits: waits.map(|w| w.saturating_sub(after_end)), delack };
            if held.settled() {
                self.exchanges_done.push(held.row);
            } else {
                self.held_exchange = Some(Box::new(held));
            }
        }
        self.exchange.add(&d);
    }

    /// How long after its last SYN the client's next retry would come: twice the last gap
    /// (RFC 6298 5.5), or 3 s after a single SYN (RFC 2988's initial RTO, the longest).
    fn next_syn_due_ns(&self) -> u64 {
        next_syn_due_ns(self.syns.gaps_ns.last().copied())
    }

    /// When the client gave this try up, if it is a try only its SYNs have shown (no
    /// answer, no refusal, nothing else from the client): its next retry overdue.
    pub fn try_given_up_at(&self) -> Option<u64> {
        let only_syns = self.syn_seen
            && self.packets[S2C] == 0
            && self.packets[C2S] == self.syns.count
            && self.established_ts.is_none()
            && !self.refused_rst
            && self.refused_icmp.is_none();
        only_syns.then(|| self.last_ts.saturating_add(try_given_up_after_ns(self.syns.gaps_ns.last().copied())))
    }

    /// Moves up to `amount` of `from`'s time to `to`; returns what it moved.
    fn move_time(&mut self, from: Cause, to: Cause, amount: u64) -> u64 {
        let amount = amount.min(self.lost_ns[from as usize]);
        self.lost_ns[from as usize] -= amount;
        self.lost_ns[to as usize] += amount;
        amount
    }

    /// Moves `amount` of the path's time to `to`: the latest of path wait `wait`
    /// (`WAIT_SEND + d`, `WAIT_DATA + d`), found to be `to`'s. The part of it that ran in the
    /// held exchange's span (its oldest) is taken from that row. Returns what it moved
    /// besides that part.
    fn move_path_time(&mut self, wait: usize, to: Cause, amount: u64) -> u64 {
        let moved = self.move_time(Cause::Network, to, amount);
        if let Some(h) = self.held_exchange.as_deref_mut() {
            let older = moved.min(h.path_waits[wait]).min(h.row.time_ns[Cause::Network as usize]);
            h.row.time_ns[Cause::Network as usize] -= older;
            h.row.time_ns[to as usize] += older;
            self.exchange.revise_start(Cause::Network, to, older);
            return moved - older;
        }
        moved
    }

    /// The path waits running now, at their `WAIT_SEND + d` and `WAIT_DATA + d` places.
    fn path_waits(&self) -> [u64; 4] {
        [self.net_since_send[C2S], self.net_since_send[S2C], self.net_since_data[C2S], self.net_since_data[S2C]]
    }

    /// Path wait `wait` ends (its side sent, or sent new data): none of it can move now.
    fn path_wait_ends(&mut self, wait: usize) {
        let d = wait % 2;
        if wait >= WAIT_DATA {
            self.net_since_data[d] = 0;
        } else {
            self.net_since_send[d] = 0;
        }
        if let Some(h) = self.held_exchange.as_deref_mut() {
            h.path_waits[wait] = 0;
            if h.settled() {
                self.release_held_exchange();
            }
        }
    }

    /// Round trips from the capture point to the client (SYN/ACK → ACK, at `C2S`) and to
    /// the server (SYN → SYN/ACK, at `S2C`); none when the handshake was not seen.
    fn legs(&self) -> [Option<u64>; 2] {
        [self.ack_delay_ns(), self.synack_delay_ns()]
    }

    /// The connection's RTT: the handshake's, else the smallest data sample.
    pub fn full_rtt_ns(&self) -> Option<u64> {
        self.full_rtt_of(self.legs())
    }

    /// `full_rtt_ns` given `legs()`.
    fn full_rtt_of(&self, legs: [Option<u64>; 2]) -> Option<u64> {
        match legs {
            [Some(a), Some(b)] => Some(a + b),
            _ => (self.rtt.n > 0).then_some(self.rtt.min),
        }
    }

    fn is_capture_duplicate(&mut self, dir: usize, ts: u64, seg: &Segment, extra: &SegmentExtra) -> bool {
        let fp = Fingerprint::of(ts, seg, extra);
        let recent = &mut self.recent[dir];
        let id_changed_at = recent.id_changed_before(ts, extra.ip_id);
        // Newest first: a copy mostly follows its original at once; a router forwarding a
        // burst interleaves them (A, B, A', B': arkime's http-post-upload.pcap).
        let Some(i) = recent.find(&fp) else {
            if fp.ip_id() == recent.packets[recent.newest()].ip_id && extra.ip_id != 0 && self.packets[dir] > 0 {
                self.ids_constant[dir] = true;
            }
            // Beyond the last few packets: a segment whose data is still in flight, sent
            // with the same IP ID moments ago (a span port's copy 1.7 ms late, after the
            // sender's next packets). A resend of its own carries a new ID.
            let copy = seg.payload_len > 0
                && extra.ip_id != 0
                && !self.ids_constant[dir]
                && self.halves[dir].copy_in_flight(seg, extra.ip_id, ts, DUPLICATE_WINDOW_SAME_ID_NS);
            if !copy {
                self.recent[dir].remember(fp);
            }
            return copy;
        };
        let earlier = recent.get(i, ts);
        // Same headers and IP ID within 100 µs (5 ms with a non-zero ID from a sender whose
        // IDs count, 100 ms when it sent others since), TTL equal or one lower (both sides
        // of a router). Without an IP ID (IPv6, or ID 0) only data or a TTL one apart
        // counts: identical pure ACKs are legitimately sent in pairs (duplicate ACKs), and
        // a server may answer a repeated SYN the instant its own timer repeats the
        // SYN/ACK, but a sender's own repeat leaves with its own TTL, so copies one hop
        // apart are the capture's (arkime's mongo.pcap: a Linux SYN/ACK with ID 0 at TTL
        // 61 and 60, 45 µs apart); data is never retransmitted within 100 µs (the minimum
        // RTO is 200 ms, a TLP ≥ 10 ms).
        let one_hop = fp.ttl.checked_add(1) == Some(earlier.ttl) || earlier.ttl.checked_add(1) == Some(fp.ttl);
        // A SYN repeated within a millisecond, whatever its ID: no stack's timer repeats it
        // that soon (Linux's floor, `TCP_TIMEOUT_MIN`, is two jiffies, 2-8 ms). A SYN/ACK
        // likewise (Linux sends it with ID 0), but a server answers each SYN repeat and its
        // own timer may repeat the SYN/ACK the same instant (the simulator's server does, 10
        // µs apart): it is taken for a copy only where no SYN came between and the capture
        // already showed it records this connection's packets twice (its SYN's copy).
        let unanswering = !seg.flags.ack() || (self.syns.last_ts <= earlier.ts && self.capture_duplicates > 0);
        let handshake_copy = seg.flags.syn() && unanswering && ts.saturating_sub(earlier.ts) <= HANDSHAKE_COPY_WINDOW_NS;
        // Without an ID, what no sender repeats within milliseconds: data or a FIN with the
        // same TSval (Linux's clock ticks every millisecond, a resend comes ≥ 2 ms later),
        // an ACK with the same SACK blocks (a duplicate ACK reports more), or an ACK
        // without SACK blocks where SACK is on (a duplicate ACK would carry some).
        let stamped = extra.opts.timestamps.is_some();
        let unrepeated = (stamped && (seg.payload_len > 0 || seg.flags.fin()))
            || extra.opts.sack_len > 0
            || (self.sack_ok == [true, true] && seg.payload_len == 0 && !seg.flags.syn());
        let distinctive = extra.ip_id != 0 || seg.payload_len > 0 || one_hop || handshake_copy || unrepeated;
        // The sender sent another datagram after the original (the copy of an older one
        // counts: a capture replaying a stretch of the exchange, wireshark-retrans.pcap).
        // In `FingerprintRest`'s units: the change that came with the original itself is
        // not after it.
        let moved_on = id_changed_at >> TS_UNIT_SHIFT > earlier.ts >> TS_UNIT_SHIFT;
        let window = match extra.ip_id != 0 && !self.ids_constant[dir] {
            true if moved_on => DUPLICATE_WINDOW_MOVED_ON_NS,
            true => DUPLICATE_WINDOW_SAME_ID_NS,
            // A sender's own repeat leaves with its own TTL: one hop apart is the capture's.
            false if one_hop => DUPLICATE_WINDOW_SAME_ID_NS,
            false if unrepeated => DUPLICATE_WINDOW_NO_ID_NS,
            false if handshake_copy => HANDSHAKE_COPY_WINDOW_NS,
            false => DUPLICATE_WINDOW_NS,
        };
        let dup =
            // `earlier.ts` is the start of its unit (`FingerprintRest`): one unit of slack.
            distinctive
                && ts.saturating_sub(earlier.ts) <= window + (1 << TS_UNIT_SHIFT)
                && (fp.ttl == earlier.ttl || one_hop)
                && self.packets[dir] > 0;
        // A copy is not remembered, but the next copy's window runs from it (copies 1, 4.6
        // and 5.6 ms after the original: wireshark-retrans.pcap); the TTL stays the first's.
        let recent = &mut self.recent[dir];
        if dup {
            recent.packets[i].ts_units = (ts >> TS_UNIT_SHIFT) as u32;
        } else {
            recent.remember(fp);
        }
        dup
    }

    #[inline(always)]
    pub fn observe(&mut self, ts: u64, seg: &Segment) {
        self.observe_ext(ts, seg, &SegmentExtra::default());
    }

    /// The client sent its SYN and nothing answered it yet (RFC 9293's SYN-SENT).
    fn in_syn_sent(&self) -> bool {
        self.syn_seen && self.synacks.count == 0 && self.established_ts.is_none()
    }

    /// RFC 9293 3.10.7.3: in SYN-SENT, an ACK that does not acknowledge the SYN is not
    /// accepted; the client answers it with a RST whose sequence number is that ACK's
    /// number, and stays in SYN-SENT, sending its SYN again on its timer. Such an ACK is a
    /// server's challenge ACK (RFC 5961 4) from an older connection it still holds on the
    /// 4-tuple, which the RST clears. Neither segment belongs to this try's data: the
    /// challenge ACK's numbers are the old connection's. True for such an ACK and for the
    /// client's RST to one.
    #[inline(never)]
    fn challenge_exchange(&mut self, from_client: bool, seg: &Segment) -> bool {
        let f = seg.flags;
        if !self.in_syn_sent() {
            return false;
        }
        if from_client {
            return f.rst() && self.challenge_ack == Some(seg.seq);
        }
        let challenge = f.ack() && !f.syn() && !f.rst() && seg.ack != self.client_isn.wrapping_add(1);
        if challenge {
            self.challenge_ack = Some(seg.ack);
        }
        challenge
    }

    /// The options both SYNs offered, as negotiated: (SACK, timestamps, window scaling);
    /// all false when the SYNs were not both seen.
    pub fn options(&self) -> (bool, bool, bool) {
        (self.sack_ok == [true, true], self.ts_ok == [true, true], self.wscale_ok)
    }

    /// The MSS each side's SYN announced: [client's, server's] (0: none seen).
    pub fn mss_announced(&self) -> [u16; 2] {
        self.mss_announced
    }

    /// Accounts one segment (with its IP fields and options) captured at `ts`.
    pub fn observe_ext(&mut self, ts: u64, seg: &Segment, extra: &SegmentExtra) {
        let from_client = seg.src == self.client;
        let dir = if from_client { C2S } else { S2C };
        let f = seg.flags;
        // Only before the handshake completes (one test on the hot path).
        let outside = self.established_ts.is_none() && self.challenge_exchange(from_client, seg);
        if f.syn() {
            self.sack_ok[dir] = extra.opts.sack_permitted;
            self.ts_ok[dir] = extra.opts.timestamps.is_some();
            self.mss_announced[dir] = extra.opts.mss.unwrap_or(0);
        }
        if self.is_capture_duplicate(dir, ts, seg, extra) {
            self.capture_duplicates += 1;
            self.last_note = PacketNote { event: PacketNote::COPY, cause: Cause::Network as u8, from_client, revise: 0 };
            return;
        }
        // Captures merged from several interfaces may step back in time: the gap is then
        // zero and the connection's end stays its latest packet.
        let gap = ts.saturating_sub(self.last_ts);
        self.last_ts = self.last_ts.max(ts);
        self.max_idle_ns = self.max_idle_ns.max(gap);
        if self.packets[dir] == 0 {
            self.first_ttl[dir] = extra.ttl;
        }
        self.packets[dir] += 1;
        self.payload_bytes[dir] += u64::from(seg.payload_len);
        if outside {
            self.data_phase::<true>(ts, gap, dir, seg, extra, false);
            return;
        }
        let mut handshake_wait = false;
        if f.syn() {
            if from_client && !f.ack() {
                if self.refused_rst && seg.seq == self.client_isn {
                    self.syn_retries_after_rst += 1;
                    handshake_wait = true;
                    // The try goes on (its RST closed nothing the retry does not reopen):
                    // what follows is this connection's, not late packets of a closed one.
                    self.rst = false;
                } else {
                    self.syns.record(ts);
                    handshake_wait = self.syns.count > 1;
                }
                self.halves[C2S].start(seg.seq.wrapping_add(1));
                self.client_wscale = extra.opts.wscale;
                self.client_syn_window = seg.window;
                if seg.payload_len > 0 || extra.opts.fast_open {
                    self.fast_open = true;
                }
            } else if !from_client && f.ack() {
                self.on_synack(ts, seg);
                self.scale_windows(extra.opts.wscale, seg.window);
                handshake_wait = self.synacks.count > 1;
                self.halves[S2C].start(seg.seq.wrapping_add(1));
            }
        } else if from_client && f.ack() && self.established_ts.is_none() {
            // The third packet of the handshake (or, if it was lost, the first data segment
            // that carries the same acknowledgment). Without a SYN/ACK in the capture (one
            // direction only) an ACK from the client shows the handshake completed, unless
            // it is a RST, or acknowledges nothing (ack 0 after unanswered SYNs).
            let acks_synack = match self.server_isn {
                Some(isn) => seg.ack == isn.wrapping_add(1),
                None => seg.ack != 0 && !f.rst(),
            };
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
            if !from_client && self.in_syn_sent() {
                self.refused_rst = true;
            }
        }
        self.data_phase::<false>(ts, gap, dir, seg, extra, handshake_wait);
    }

    /// The data phase of one segment: its ACK for the other direction, its data for its
    /// own, and the gap before it given to a cause.
    ///
    /// `OUTSIDE`: a segment of no sequence space of this connection (a challenge ACK and
    /// its RST, `challenge_exchange`): only the gap before it is accounted.
    #[inline]
    fn data_phase<const OUTSIDE: bool>(
        &mut self,
        ts: u64,
        gap: u64,
        dir: usize,
        seg: &Segment,
        extra: &SegmentExtra,
        handshake_wait: bool,
    ) {
        let other = 1 - dir;
        let prev_data_dir = self.last_data_dir;
        let mut after_rest = false;
        let id_before = self.halves[dir].last_ip_id();
        let len_before = std::mem::replace(&mut self.last_len[dir], seg.payload_len);
        let write_ended = self.data_pushed[dir];
        let own_acked = self.halves[dir].data_acked();
        let in_timeout = self.halves.iter().any(|h| matches!(h.recovery, super::half::Recovery::Timeout { .. }));
        let in_fast = self.halves.iter().any(|h| matches!(h.recovery, super::half::Recovery::Fast { .. }));
        let zero_window_before = [self.halves[C2S].zero_window, self.halves[S2C].zero_window];
        let zero_window = zero_window_before[0] || zero_window_before[1];
        let legs = self.legs();
        let full_rtt = self.full_rtt_of(legs);
        // The receiver's (this segment's sender's) leg, and the data sender's; 0 unknown.
        let (leg_dir, leg_other) = (legs[dir].unwrap_or(0), legs[other].unwrap_or(0));
        let sender_near = leg_other == 0 || (full_rtt.is_some_and(|r| leg_other.saturating_mul(4) < r));
        let ack = if OUTSIDE {
            AckOutcome::default()
        } else {
            self.halves[other].on_ack(ts, seg, extra, (leg_dir > 0).then_some(leg_dir), sender_near, full_rtt)
        };
        let timed_handshake = legs[0].is_some() && legs[1].is_some();
        if let Some(raw) = ack.raw_rtt_ns.filter(|&raw| timed_handshake || self.is_far_side_sample(other, raw)) {
            let full = raw.saturating_add(leg_other);
            self.rtt.add(full);
            self.srtt = Some(match self.srtt {
                // RFC 6298 (2.3), with alpha 1/8 and beta 1/4.
                Some((srtt, var)) => {
                    let r = full as f64;
                    (0.875 * srtt + 0.125 * r, 0.75 * var + 0.25 * (srtt - r).abs())
                }
                None => (full as f64, full as f64 / 2.0),
            });
        }
        if self.srtt.is_none() {
            // Linux seeds its estimator with the handshake's RTT (tcp_synack_rtt_meas).
            self.srtt = full_rtt.map(|r| (r as f64, r as f64 / 2.0));
        }
        let event = if OUTSIDE {
            SendEvent::Nothing
        } else if seg.flags.syn() && seg.payload_len == 0 {
            self.halves[dir].note_syn_stamp(extra);
            SendEvent::Nothing
        } else {
            let mut data = *seg;
            if seg.flags.syn() {
                // Fast Open data rides on the SYN: it starts one past the ISN.
                data.seq = seg.seq.wrapping_add(1);
                data.flags.0 &= !crate::wire::TcpFlags::SYN;
            }
            let least_rtt_ns = match (full_rtt, self.rtt.n > 0) {
                (Some(r), true) => Some(r.min(self.rtt.min)),
                (None, true) => Some(self.rtt.min),
                (r, false) => r,
            };
            // How long nothing was outstanding, beyond what the path's round trip to this
            // sender explains (`settle_quiet`).
            let after_quiet_ns = match &self.quiet {
                Some(q) => (q.ns + gap).saturating_sub(legs[dir].or(full_rtt).unwrap_or(0)),
                None => 0,
            };
            let path = PathTimes { srtt: self.srtt, rtt_ns: full_rtt, least_rtt_ns, sender_leg_ns: leg_dir, after_quiet_ns };
            self.halves[dir].on_send(ts, &data, extra, path)
        };
        if matches!(event, SendEvent::NewData { .. }) {
            self.halves[other].peer_spoke = true;
        }
        let mut revise = 0;
        match self.halves[dir].take_revision() {
            Some(RetxClass::Timeout) => {
                self.move_time(Cause::Tlp, Cause::Timeout, self.resend_booked[dir]);
                revise |= PacketNote::REVISES_TLP;
            }
            Some(_) => {
                self.move_time(Cause::Timeout, Cause::Tlp, self.resend_booked[dir]);
                revise |= PacketNote::REVISES_TO_TLP;
            }
            None => {}
        }
        if let Some((sdir, amount)) = self.pending_delack {
            // A delayed ACK stalled its sender only if the sender's next move was new data
            // of its own; if the receiver spoke first (a new request), the sender was
            // waiting for it, not for the ACK.
            let new_data = matches!(event, SendEvent::NewData { .. });
            if (sdir == dir && (seg.payload_len > 0 || seg.flags.fin())) || (sdir != dir && new_data) {
                self.pending_delack = None;
                if sdir == dir && new_data {
                    self.halves[dir].delack_stalls += 1;
                    self.halves[dir].delack_ns += amount;
                } else {
                    self.revert_delack(amount);
                }
                self.delack_settled();
            }
        }
        // Where the connection rested before this data, for the exchange it may end: its
        // account read after the revisions above (of time before the rest: a delayed ACK
        // that stalled nobody, a resend's class), before this packet's gap is booked.
        let mut rest = match &self.quiet {
            Some(q) if seg.payload_len > 0 => Some(RestReading::new(q.since, self)),
            _ => None,
        };
        // The gap before this packet.
        let mut network = 0;
        let mut cause = Cause::Network;
        let quiet_before = self.quiet.is_some();
        if matches!(event, SendEvent::Retx(RetxClass::Tlp | RetxClass::Timeout)) {
            self.resend_booked[dir] = if quiet_before { 0 } else { gap };
        }
        if OUTSIDE && gap > self.next_syn_due_ns() {
            // A packet of no sequence space of this try, after the client's next SYN was
            // due and none came: the client had given up; nobody waited for it.
            cause = Cause::Idle;
            self.lost_ns[Cause::Idle as usize] += gap;
        } else if let Some(q) = self.quiet.as_mut() {
            // Nothing was outstanding: who waited is known only later (`settle_quiet`).
            q.ns += gap;
            for (held, was) in q.zero_window_ns.iter_mut().zip(zero_window_before) {
                if was {
                    *held += gap;
                }
            }
            if q.closing_since != NEVER {
                q.closing_ns += gap;
            }
            if seg.payload_len > 0 && matches!(event, SendEvent::NewData { .. }) {
                // Judged on the steps before this packet's (counted below).
                let resent = self.ids_per_connection(dir) && self.ids_skipped(dir, extra.ip_id, id_before, len_before);
                let leg = legs[dir].or(full_rtt).unwrap_or(0);
                let (settled, path, idle, moved) = self.settle_quiet(dir, prev_data_dir, write_ended, resent, leg, full_rtt);
                if let Some(r) = rest.as_mut() {
                    r.revise(WAIT_DATA + C2S, Cause::Application, moved);
                }
                after_rest = idle;
                cause = settled;
                network = path;
                revise |= PacketNote::SETTLES;
            }
        } else if handshake_wait {
            cause = Cause::Handshake;
            self.lost_ns[Cause::Handshake as usize] += gap;
        } else if in_timeout || event == SendEvent::Retx(RetxClass::Timeout) {
            cause = Cause::Timeout;
            self.lost_ns[Cause::Timeout as usize] += gap;
        } else if event == SendEvent::Retx(RetxClass::Tlp) {
            cause = Cause::Tlp;
            self.lost_ns[Cause::Tlp as usize] += gap;
        } else if in_fast || event == SendEvent::Retx(RetxClass::Fast) {
            cause = Cause::FastRetransmit;
            self.lost_ns[Cause::FastRetransmit as usize] += gap;
        } else if zero_window {
            cause = Cause::ZeroWindow;
            self.lost_ns[Cause::ZeroWindow as usize] += gap;
        } else if self.packets[other] == 0 && gap > ONE_WAY_IDLE_NS && matches!(event, SendEvent::NewData { .. }) {
            // Seen one way only, no ACK says when the last data was acknowledged: new data
            // after a silence no path explains was sent when its sender chose to.
            cause = Cause::Idle;
            self.lost_ns[Cause::Idle as usize] += gap;
        } else if let Some(wait) = ack.delayed_stall_ns {
            let d = wait.min(gap);
            if d.saturating_mul(2) >= gap {
                cause = Cause::DelayedAck;
            }
            self.lost_ns[Cause::DelayedAck as usize] += d;
            if let Some((_, amount)) = self.pending_delack.take() {
                self.revert_delack(amount);
                self.delack_settled();
            }
            self.pending_delack = Some((other, d));
            self.delack_exchange = self.exchange.index();
            network = gap - d;
        } else {
            network = gap;
        }
        self.count_id_step(dir, extra.ip_id, id_before, len_before);
        self.add_network(network);
        match event {
            // After a quiet stretch its settling says who waited (below).
            SendEvent::NewData { new_burst: true, .. } if !quiet_before => {
                // New data with nothing outstanding, answering the other side (or after a
                // pause of its own): what the path does not explain of the wait since the
                // other side's last data (or this side's last packet) is the application's
                // (server think time, client pauses).
                let app = if self.halves[other].data_bytes > 0 {
                    self.net_since_data[other].saturating_sub(leg_dir)
                } else {
                    self.net_since_send[dir]
                };
                if app > MS.max(full_rtt.unwrap_or(0) / 10) {
                    let wait = if self.halves[other].data_bytes > 0 { WAIT_DATA + other } else { WAIT_SEND + dir };
                    self.move_path_time(wait, Cause::Application, app);
                    if app.saturating_mul(2) >= gap {
                        cause = Cause::Application;
                    }
                }
            }
            SendEvent::NewData { rwnd_limited: true, .. } => {
                // The sender's last data filled the receiver's window: what it waited since
                // (the path's share too: the ACK that opened it) was the window's.
                let moved = self.move_path_time(WAIT_SEND + dir, Cause::ReceiveWindow, self.net_since_send[dir]);
                if let Some(r) = rest.as_mut() {
                    r.revise(WAIT_SEND + dir, Cause::ReceiveWindow, moved);
                }
                if !quiet_before {
                    cause = Cause::ReceiveWindow;
                }
            }
            SendEvent::NewData { new_round: true, .. } => {
                // A round beyond the first: the sender waited a round trip for ACKs.
                let moved = self.move_path_time(WAIT_SEND + dir, Cause::SlowStart, self.net_since_send[dir]);
                if let Some(r) = rest.as_mut() {
                    r.revise(WAIT_SEND + dir, Cause::SlowStart, moved);
                }
                if !quiet_before {
                    cause = Cause::SlowStart;
                }
            }
            _ => {}
        }
        if matches!(event, SendEvent::NewData { .. }) {
            self.path_wait_ends(WAIT_DATA + dir);
            if seg.payload_len > 0 {
                self.last_data_dir = Some(dir as u8);
                self.last_data_ts = ts;
                self.data_pushed[dir] = seg.flags.0 & crate::wire::TcpFlags::PSH != 0;
            }
        }
        if seg.payload_len > 0 && !OUTSIDE {
            let new_bytes = self.exchange.take_new_bytes(dir, self.halves[dir].data_end());
            let other_outstanding = !self.halves[other].data_acked();
            let own_write_done = own_acked && write_ended;
            let d = DataSeen { ts, dir, new_bytes, other_outstanding, after_rest, own_write_done };
            self.note_exchange_data(d, rest.map(|r| (r.since, r.account)), network, write_ended);
        }
        self.path_wait_ends(WAIT_SEND + dir);
        self.last_dir = dir;
        if self.quiet.is_some() {
            self.note_quiet(ts, seg.flags);
        }
        if self.quiet.is_none() {
            self.enter_quiet(ts, seg.flags);
        }
        let code = match event {
            SendEvent::Nothing => 0,
            SendEvent::NewData { .. } => 1,
            SendEvent::Retx(RetxClass::Timeout) => 2,
            SendEvent::Retx(RetxClass::Fast) => 3,
            SendEvent::Retx(RetxClass::Tlp) => 4,
            // Its wait is the path's: it dropped the segment and said so at once.
            SendEvent::Retx(RetxClass::PathMtu) => 7,
            // No wait of its own: it came within half an RTT of the data's last sending.
            SendEvent::Retx(RetxClass::Unprompted) => 8,
        };
        let cause = if self.quiet.is_some() && quiet_before { Cause::PENDING } else { cause as u8 };
        self.last_note = PacketNote { event: code, cause, from_client: dir == C2S, revise };
    }

    /// Whether `dir`'s sender numbered datagrams the capture never saw between its last
    /// packet (ID `id_before`, `len_before` bytes) and this one (ID `id`): during a quiet
    /// stretch, this data's first sending, lost before the capture point, so the stretch
    /// was its timer's wait, not a choice. A packet the capture saw as one but sent as
    /// several (TSO/GSO: Linux counts an ID a segment, `ip_select_ident_segs`) moves the
    /// count on by as many, so only a one-segment packet before says so.
    fn ids_skipped(&self, dir: usize, id: u16, id_before: u16, len_before: u32) -> bool {
        let step = id.wrapping_sub(id_before);
        let one_segment = len_before <= u32::from(self.mss_announced[1 - dir]).max(1460);
        id_before != 0 && !self.ids_constant[dir] && one_segment && (2..=MAX_ID_STEP).contains(&step)
    }

    /// Whether `dir`'s sender numbers its datagrams per connection (Linux), so that a skip
    /// means a packet of this connection the capture missed: its steps from a one-segment
    /// packet to the next were 1 at least three times, and four times as often as not. A
    /// host-wide counter (Windows) steps by the host's other traffic too.
    fn ids_per_connection(&self, dir: usize) -> bool {
        let [exact, other] = self.id_steps[dir];
        exact >= 3 && u16::from(other) * 4 <= u16::from(exact)
    }

    /// Counts the step of `dir`'s IP ID from its last packet (one segment) to this one.
    fn count_id_step(&mut self, dir: usize, id: u16, id_before: u16, len_before: u32) {
        let one_segment = len_before <= u32::from(self.mss_announced[1 - dir]).max(1460);
        if id == 0 || id_before == 0 || !one_segment {
            return;
        }
        let k = usize::from(id.wrapping_sub(id_before) != 1);
        self.id_steps[dir][k] = self.id_steps[dir][k].saturating_add(1);
    }

    /// After a packet outside a quiet stretch: the stretch begins if it left nothing of
    /// data outstanding either way, once the handshake is done.
    fn enter_quiet(&mut self, ts: u64, flags: crate::wire::TcpFlags) {
        let past_handshake = self.established_ts.is_some() || !self.syn_seen;
        if !(past_handshake && self.halves.iter().all(Half::data_acked)) {
            return;
        }
        let closing = self.fin_from_client || self.fin_from_server || self.rst || flags.fin() || flags.rst();
        self.quiet = Some(Quiet { since: ts, closing_since: if closing { ts } else { NEVER }, ..Quiet::default() });
        if self.last_data_dir.is_some() {
            self.response_complete_ts = ts;
        }
    }

    /// A packet without data in a quiet stretch: a FIN or RST begins the closing.
    fn note_quiet(&mut self, ts: u64, flags: crate::wire::TcpFlags) {
        if let Some(q) = self.quiet.as_mut() {
            if (flags.fin() || flags.rst()) && q.closing_since == NEVER {
                q.closing_since = ts;
            }
        }
    }

    /// Data from `dir` ends a quiet stretch: its time goes to who waited. A side held by a
    /// zero window waited for it; the server answering (a request, or speaking first)
    /// kept the client waiting; a side going on with a write it had not ended (its last
    /// segment without PSH, RFC 9293 3.9.1: a sender pushes at the end of what it was
    /// given), or writing again within `REST_NS`, was still producing what its peer waited
    /// for; a side sending again of its own accord after a rest, or the client asking
    /// again after an answer, kept nobody waiting (a push after a rest, a client's pause
    /// between requests).
    ///
    /// An answer's wait began with the request, not with the ACK that left nothing
    /// outstanding: what the path (`leg_ns`, the capture point's round trip to the
    /// answering side) does not explain of the time from the request to that ACK is the
    /// server's too (its delayed ACK of a request it was still working on).
    ///
    /// `leg_ns` is the capture point's round trip to `dir`'s side. Seen away from a sender
    /// that goes on sending, what it sent may have been on its way while the capture saw
    /// all it had seen acknowledged (queued at a bottleneck, or the answer to the last
    /// ACK: a round of slow start): up to that round trip of the stretch is the path's, and
    /// is returned for the caller to book as such.
    fn settle_quiet(
        &mut self,
        dir: usize,
        prev_data_dir: Option<u8>,
        write_ended: bool,
        resent: bool,
        leg_ns: u64,
        full_rtt: Option<u64>,
    ) -> (Cause, u64, bool, u64) {
        let Some(q) = self.quiet.take() else { return (Cause::Network, 0, false, 0) };
        let held = q.zero_window_ns[dir].min(q.ns);
        self.lost_ns[Cause::ZeroWindow as usize] += held;
        let same_side = prev_data_dir == Some(dir as u8);
        let path = if same_side { (q.ns - held).min(leg_ns) } else { 0 };
        let rest = q.ns - held - path;
        let answering = dir == S2C && prev_data_dir != Some(S2C as u8);
        // In a concurrent exchange a side's write left open (no PSH on its last data) goes
        // on after the other side's data too: both streamed at once, the other's bytes cut
        // into this side's long write, they did not answer it.
        let open_concurrent_write = !write_ended && self.exchange.is_concurrent();
        let mid_write = (same_side || open_concurrent_write) && (!write_ended || rest <= REST_NS);
        let cause = if resent {
            Cause::Timeout
        } else if answering || mid_write {
            Cause::Application
        } else {
            Cause::Idle
        };
        self.lost_ns[cause as usize] += rest;
        let mut moved = 0;
        if answering && !resent && prev_data_dir.is_some() {
            let before = self.net_since_data[C2S].saturating_sub(leg_ns);
            if before > MS.max(full_rtt.unwrap_or(0) / 10) {
                moved = self.move_path_time(WAIT_DATA + C2S, Cause::Application, before);
            }
        }
        let idle = cause == Cause::Idle;
        let cause = if held >= rest.max(path) {
            Cause::ZeroWindow
        } else if path > rest {
            Cause::Network
        } else {
            cause
        };
        (cause, path, idle, moved)
    }

    /// Without a timed handshake, an RTT sample of half `h`'s data is kept only from the
    /// side whose samples are the longer: near one end, that end's own data is answered at
    /// once (a few µs), the far end's after a round trip; mixing them averages half trips
    /// with round trips. A switch of sides starts the statistics anew.
    fn is_far_side_sample(&mut self, h: usize, raw: u64) -> bool {
        // In µs (a sample of 0 µs counts as 1): which side is far needs no finer.
        let raw_us = (raw / 1000).clamp(1, u64::from(u32::MAX)) as u32;
        let m = &mut self.raw_rtt_min[h];
        if *m == 0 || raw_us < *m {
            *m = raw_us;
        }
        let (mine, theirs) = (self.raw_rtt_min[h], self.raw_rtt_min[1 - h]);
        let far = if theirs == 0 || mine >= theirs { h } else { 1 - h } as u8;
        if self.rtt_side != Some(far) {
            if self.rtt_side.is_some() {
                self.rtt = RttStats::default();
                self.srtt = None;
            }
            self.rtt_side = Some(far);
        }
        usize::from(far) == h
    }

    fn add_network(&mut self, ns: u64) {
        self.lost_ns[Cause::Network as usize] += ns;
        for d in 0..2 {
            self.net_since_send[d] += ns;
            self.net_since_data[d] += ns;
        }
    }

    /// A delayed ACK that stalled nobody: its time was the path's after all, in the span
    /// it was booked in (the held exchange's, if one is held).
    fn revert_delack(&mut self, amount: u64) {
        let amount = amount.min(self.lost_ns[Cause::DelayedAck as usize]);
        self.lost_ns[Cause::DelayedAck as usize] -= amount;
        self.add_network(amount);
        if let Some(h) = self.held_exchange.as_deref_mut().filter(|h| h.delack) {
            let older = amount.min(h.row.time_ns[Cause::DelayedAck as usize]);
            h.row.time_ns[Cause::DelayedAck as usize] -= older;
            h.row.time_ns[Cause::Network as usize] += older;
            self.exchange.revise_start(Cause::DelayedAck, Cause::Network, older);
            // The path's time now, each wait's (`add_network` above): of the row's span.
            h.path_waits = h.path_waits.map(|w| w + older);
        }
    }

    /// The pending delayed ACK was settled (a stall, or reverted).
    fn delack_settled(&mut self) {
        if let Some(h) = self.held_exchange.as_deref_mut() {
            h.delack = false;
            if h.settled() {
                self.release_held_exchange();
            }
        }
    }

    fn release_held_exchange(&mut self) {
        if let Some(h) = self.held_exchange.take() {
            self.exchanges_done.push(h.row);
        }
    }

    /// An ICMP destination-unreachable about a segment of this connection (the tracker
    /// found it by the quoted 4-tuple). It refuses the try when it quotes the client's SYN
    /// before any answer: Linux ends a connection in SYN-SENT on any such message
    /// (`tcp_v4_err`/`tcp_v6_err`, RFC 1122 4.2.3.9 lets a host treat port/protocol
    /// unreachable as hard errors), other stacks keep retrying on their timer, and a
    /// SYN/ACK that comes later still makes the try answered. Messages about later segments
    /// are soft errors (RFC 1122 4.2.3.9) and leave the connection as it is. The wait
    /// before the message is the path's time. A segment too big for the path (path-MTU
    /// discovery) refuses nothing: what its sender resends smaller is told apart.
    pub fn on_unreachable(&mut self, ts: u64, msg: &IcmpUnreachable) {
        let q = &msg.quoted;
        if msg.reason == Unreachable::PacketTooBig {
            let dir = if q.src == self.client { C2S } else { S2C };
            self.halves[dir].on_packet_too_big();
            return;
        }
        let quotes_syn = q.flags.is_none_or(|f| f.syn() && !f.ack());
        if !(self.syn_seen && q.src == self.client && q.seq == self.client_isn && quotes_syn) {
            return;
        }
        if self.synacks.count > 0 || self.established_ts.is_some() || self.refused_icmp.is_some() {
            return;
        }
        self.refused_icmp = Some(msg.reason);
        let gap = ts.saturating_sub(self.last_ts);
        self.last_ts = self.last_ts.max(ts);
        self.max_idle_ns = self.max_idle_ns.max(gap);
        self.add_network(gap);
    }

    /// The SYN/ACK, with the SYN seen, fixes how each side's windows are read (RFC 7323
    /// 2.2): shifted by that side's SYN's scale when both SYNs carried one, unshifted when
    /// either did not. Without the SYN the scale is unknown and no window is read in bytes.
    fn scale_windows(&mut self, server_wscale: Option<u8>, server_syn_window: u16) {
        if !self.syn_seen {
            return;
        }
        self.wscale_ok = self.client_wscale.is_some() && server_wscale.is_some();
        let (client, server) = match (self.client_wscale, server_wscale) {
            (Some(c), Some(s)) => (c, s),
            _ => (0, 0),
        };
        // The server's data waits on the client's windows, and the reverse.
        self.halves[S2C].set_window_shift(client, self.mss_announced[C2S], self.client_syn_window);
        self.halves[C2S].set_window_shift(server, self.mss_announced[S2C], server_syn_window);
    }

    fn on_synack(&mut self, ts: u64, seg: &Segment) {
        self.server_isn = Some(seg.seq);
        // A repeat that follows a SYN seen after the last SYN/ACK answers that SYN; its
        // gap says nothing about the server's retransmission timer.
        let answer = self.synacks.count > 0 && self.syns.count > 1 && self.syns.last_ts > self.synacks.last_ts;
        if answer && self.synacks.count <= 64 {
            self.synacks.answer_mask |= 1 << (self.synacks.count - 1);
        }
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
