//! The causes of the time account: where each stretch of a connection's time went, shared
//! by the connection and its exchanges.

/// Where a stretch of a connection's time went. Every gap between two of its packets is
/// given to one cause (or split), so the causes add up to its duration; a gap whose cause
/// is known only later (a quiet stretch, a probe that turns out to be a timer's first step)
/// is given when it is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Cause {
    /// Time the path itself takes: the handshake's round trip, one round trip for the
    /// data, serialization; whatever no other cause explains.
    Network = 0,
    /// Waiting for a SYN or SYN/ACK to be sent again (document 000), or re-sent after a refusal.
    Handshake = 1,
    /// Round trips of slow start beyond the first (document 002).
    SlowStart = 2,
    /// Loss repaired by the retransmission timer, from the wait until the repair is acknowledged.
    Timeout = 3,
    /// Loss repaired by fast retransmit, or early (fewer than three duplicate ACKs, RACK),
    /// until the repair is acknowledged.
    FastRetransmit = 4,
    /// A sender with nothing it could send waiting for an ACK the receiver delayed (document 003).
    DelayedAck = 5,
    /// A sender stopped by a zero receive window.
    ZeroWindow = 6,
    /// One side producing what the other waits for: the server's time to answer a request
    /// (beyond the path's share), a sender pausing within a write or between the pieces of
    /// its answer (`Conn::settle_quiet`).
    Application = 7,
    /// Waiting for a tail loss probe (RFC 8985 7.3): at most one per tail episode.
    Tlp = 8,
    /// Nothing outstanding and nobody waiting: a side that sends again of its own accord
    /// (a client's pause between requests, a keep-alive connection at rest).
    Idle = 9,
    /// After the last data byte was acknowledged and a side began to close (FIN or RST):
    /// FIN resends and the last ACKs, which no user waits for.
    Teardown = 10,
    /// The sender waiting on the receiver's (non-zero) window, its last data having filled
    /// it (RFC 9293 3.8.6.2.1), where slow start's rounds wait on the congestion window.
    ReceiveWindow = 11,
}

impl Cause {
    pub const COUNT: usize = 12;
    pub const NAMES: [&'static str; Self::COUNT] = [
        "network",
        "handshake",
        "slow_start",
        "timeout",
        "fast_retransmit",
        "delayed_ack",
        "zero_window",
        "application",
        "tlp",
        "idle",
        "teardown",
        "receive_window",
    ];
    /// Each cause in words, as the command line's time account and the report name it.
    pub const WORDS: [&'static str; Self::COUNT] = [
        "the path itself",
        "handshake losses",
        "slow-start round trips",
        "loss repair by timeout",
        "loss repair by fast retransmit",
        "delayed-ACK stalls",
        "zero-window stalls",
        "application think time",
        "tail loss probes",
        "idle",
        "teardown",
        "the receiver's window",
    ];
    /// Each cause as a time-sequence graph labels one of its gaps, in two words at most;
    /// the path's own time is what a graph shows without a label.
    pub const LABELS: [&'static str; Self::COUNT] = [
        "",
        "handshake loss",
        "slow-start round",
        "timeout",
        "fast retransmit",
        "delayed ACK",
        "zero window",
        "think time",
        "tail loss probe",
        "idle",
        "teardown",
        "receive window",
    ];
    /// A `PacketNote::cause` not decided yet: the gap lies in a quiet stretch whose cause
    /// the next data (or the connection's end) decides (`PacketNote::SETTLES`).
    pub const PENDING: u8 = 255;

    /// The causes a user waits through: all but `Idle` and `Teardown`, which the time
    /// account reports apart.
    pub fn waited(self) -> bool {
        !matches!(self, Cause::Idle | Cause::Teardown)
    }

    /// The causes a user waited through beyond the path's own time: what a connection
    /// lost, by which the worst are ranked.
    pub fn lost(self) -> bool {
        self.waited() && self != Cause::Network
    }

    pub const ALL: [Cause; Self::COUNT] = [
        Cause::Network,
        Cause::Handshake,
        Cause::SlowStart,
        Cause::Timeout,
        Cause::FastRetransmit,
        Cause::DelayedAck,
        Cause::ZeroWindow,
        Cause::Application,
        Cause::Tlp,
        Cause::Idle,
        Cause::Teardown,
        Cause::ReceiveWindow,
    ];
}
