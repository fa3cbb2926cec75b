//! Named TCP stack profiles and the configuration every endpoint runs with.
//!
//! A profile is a starting point: every field can be overridden per host in the scenario
//! (`[client]`/`[server]`). Each profile cites where its numbers come from; where a number
//! is a model of an OS's behaviour rather than a documented constant, the comment says so.

use serde::{Deserialize, Serialize};

use crate::kernel;
use crate::time::Duration;

/// How the retransmission timer is computed (RFC 6298 section 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RtoConfig {
    /// RTO before any RTT sample, also the SYN and SYN/ACK timer (RFC 6298 (2.1)).
    pub initial: Duration,
    /// Lower bound of the RTO (RFC 6298 (2.4)).
    pub min: Duration,
    /// Upper bound of the RTO, back-off included (RFC 6298 (2.5)).
    pub max: Duration,
    /// Clock granularity G in RTO = SRTT + max(G, K·RTTVAR) (RFC 6298 (2.3)).
    pub granularity: Duration,
    /// Linux: the minimum applies to the variance term, RTO = SRTT + max(min, 4·RTTVAR)
    /// (net/ipv4/tcp_input.c tcp_rtt_estimator, mdev_max ≥ tcp_rto_min); otherwise the
    /// whole RTO is floored.
    pub min_on_variance: bool,
    /// RFC 6298 (5.7): after a SYN (or SYN/ACK) was lost, the RTO is re-initialised to this
    /// (3 s) when data transmission begins, unless an RTT sample was taken.
    pub after_syn_loss: Option<Duration>,
}

/// The initial congestion window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InitialWindow {
    /// A fixed number of segments (`ip route ... initcwnd N`, Solaris tcp_slow_start_initial).
    Segments(u32),
    /// RFC 3390: min(4·MSS, max(2·MSS, 4380 B)).
    Rfc3390,
}

impl InitialWindow {
    pub fn bytes(self, mss: u32) -> u64 {
        let mss = u64::from(mss);
        match self {
            InitialWindow::Segments(n) => u64::from(n) * mss,
            // RFC 3390 section 1, equation (1).
            InitialWindow::Rfc3390 => (4 * mss).min((2 * mss).max(4380)),
        }
    }
}

/// When the receiver's delayed-ACK timer fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DelayedAck {
    /// Every segment is acknowledged at once (Linux `quickack`).
    Off,
    /// A per-connection timer started by the first unacknowledged segment (RFC 1122
    /// 4.2.3.2, RFC 5681 section 4.2).
    Timer(Duration),
    /// BSD's fast timer: fires at fixed multiples of `period` since boot, so a delayed ACK
    /// waits 0..period (Stevens, TCP/IP Illustrated Vol. 1, 19.3; document 003).
    /// `phase` is where the first tick after the run's start falls (boot time modulo period).
    Tick { period: Duration, phase: Duration },
}

/// What counts toward "ACK every second segment".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AckCount {
    /// Bytes: ACK once `ack_every`·MSS bytes are unacknowledged (BSD tcp_output sends a
    /// window update when the window opens by two maximum segments; RFC 5681 "every second
    /// full-sized segment").
    Bytes,
    /// Segments of any size (Windows TcpAckFrequency, Solaris tcp_deferred_acks_max).
    Segments,
}

/// The receiver's acknowledgement policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AckPolicy {
    pub delayed: DelayedAck,
    /// ACK at once when this many segments (or full segments' worth of bytes) are unacked.
    pub ack_every: u32,
    pub count: AckCount,
    /// The first this-many data segments of a connection are acknowledged at once (Linux
    /// quick-ACK mode, Solaris's first segments).
    pub quick_acks: u32,
}

/// SYN (and SYN/ACK) retransmission schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SynBackoff {
    /// Doubling each time (RFC 6298 (5.5)).
    Exponential,
    /// Multipliers of the initial RTO per retry (FreeBSD tcp_syn_backoff[]).
    Table(Vec<u32>),
}

/// The receive side as Linux runs it (`tcp::linux_rcv`): buffer sizes and autotuning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinuxReceiver {
    /// net.ipv4.tcp_rmem: min, default (the buffer a connection starts with) and max (what
    /// autotuning may grow it to; with net.core.rmem_max it also sets the window scale).
    pub rmem: [u64; 3],
    /// net.core.rmem_max.
    pub core_rmem_max: u64,
    /// Route `initrwnd` (segments): caps the first window offered.
    pub init_rcv_wnd: Option<u32>,
    /// Window bytes per 256 bytes of buffer once data has arrived (tp->scaling_ratio, set
    /// by tcp_measure_rcv_mss from payload / skb truesize). A property of the receive path,
    /// not a sysctl: on this machine's veth links the window stopped at 32 × 1024 B =
    /// 131072 × 64/256 until autotuning in 4 of 6 runs of an 80 kB transfer (36 or 47 units
    /// in the others, when the application's reads fell differently): 64.
    pub data_scaling_ratio: u32,
    /// net.ipv4.tcp_moderate_rcvbuf: autotuning on.
    pub moderate_rcvbuf: bool,
}

impl Default for LinuxReceiver {
    fn default() -> Self {
        // Linux 6.18 defaults measured in a fresh network namespace here:
        // tcp_rmem = 4096 131072 33554432, rmem_max = 4194304, tcp_moderate_rcvbuf = 1.
        Self {
            rmem: [4096, 131_072, 33_554_432],
            core_rmem_max: 4_194_304,
            init_rcv_wnd: None,
            data_scaling_ratio: 64,
            moderate_rcvbuf: true,
        }
    }
}

/// Everything one TCP endpoint does differently from another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackConfig {
    pub profile: String,
    pub rto: RtoConfig,
    /// SYN retransmissions before the client gives up.
    pub syn_retries: u32,
    /// SYN/ACK retransmissions before the server drops the half-open connection.
    pub synack_retries: u32,
    /// The client's SYN schedule.
    pub syn_backoff: SynBackoff,
    /// The server's SYN/ACK schedule (Linux's linear SYN timeouts and FreeBSD's SYN table
    /// are for the active side only; both double the SYN/ACK timer).
    pub synack_backoff: SynBackoff,
    /// A duplicate SYN for a half-open connection makes the server resend its SYN/ACK
    /// (Linux tcp_check_req, FreeBSD syncache_add).
    pub synack_on_duplicate_syn: bool,
    pub initial_window: InitialWindow,
    /// RFC 5681 section 3.1: after a lost SYN or SYN/ACK the initial window is one segment.
    pub iw_one_after_handshake_loss: bool,
    /// Linux's handshake after a retransmission (net/ipv4): with timestamps the echoed SYN
    /// or SYN/ACK gives an RTT sample even after a resend (tcp_ack_update_rtt →
    /// tcp_rtt_tsopt_us), so no TCP_TIMEOUT_FALLBACK; the initial window drops to one
    /// segment only after more than one handshake resend with a timeout that the echo does
    /// not show spurious (tcp_init_transfer: `total_retrans > 1 && undo_marker`,
    /// tcp_try_undo_spurious_syn; the server's undo_marker is set by a SYN/ACK timeout,
    /// tcp_create_openreq_child); and a duplicate SYN's SYN/ACK pushes the SYN/ACK timer
    /// back (tcp_check_req: mod_timer_pending(jiffies + tcp_reqsk_timeout(req))).
    pub linux_handshake: bool,
    /// RFC 5681 section 4.1: after an idle period longer than the RTO, cwnd restarts from
    /// the initial window (Linux net.ipv4.tcp_slow_start_after_idle).
    pub slow_start_after_idle: bool,
    /// Slow-start growth per ACK in segments (RFC 5681: 1; RFC 3465 L = 2); 0 = as many
    /// as the ACK acknowledges (Linux tcp_slow_start).
    pub abc_limit: u32,
    /// Congestion control: "reno" (RFC 5681), "cubic" (RFC 9438 as Linux's tcp_cubic.c),
    /// "bbr" (BBR v1 as Linux's tcp_bbr.c, with internal pacing).
    pub congestion_control: CongestionControlName,
    /// HyStart (tcp_cubic.c hystart = 1, ACK train and delay detection) for "cubic".
    pub hystart: bool,
    /// Loss recovery: "reno" (RFC 5681 3.2), "newreno"
    /// (RFC 6582) without SACK; "rfc6675" (conservative SACK recovery) with SACK; "prr"
    /// (RFC 6937, Linux tcp_cwnd_reduction) with SACK or, without it, with duplicate ACKs
    /// counted as SACKed segments and the head resent at each partial ACK (tcp_is_reno:
    /// tcp_add_reno_sack, tcp_newreno_mark_lost).
    pub recovery: RecoveryName,
    /// Spurious-timeout detection and response: "off",
    /// "frto" (RFC 5682 with the RFC 4015 response, ns-2's frto_enabled_ and
    /// spurious_response_ 1) or "linux" (net.ipv4.tcp_frto = 2: tcp_process_loss,
    /// tcp_try_undo_loss).
    pub spurious_rto: SpuriousRtoName,
    /// TCP timestamps (RFC 7323; Linux net.ipv4.tcp_timestamps = 1): when both ends offer
    /// them, every segment carries 12 option bytes, so the payload is MSS − 12 (1448 B on a
    /// 1500 B MTU).
    pub timestamps: bool,
    /// SACK-permitted (RFC 2018; net.ipv4.tcp_sack = 1), D-SACK (RFC 2883; tcp_dsack = 1).
    pub sack: bool,
    /// Window scaling (RFC 7323; net.ipv4.tcp_window_scaling = 1).
    pub window_scaling: bool,
    /// RACK loss detection (RFC 8985; net.ipv4.tcp_recovery = 1) instead of three
    /// duplicate ACKs / DupThresh SACKed segments; needs SACK.
    pub rack: bool,
    /// Tail loss probe (RFC 8985 section 7; net.ipv4.tcp_early_retrans = 3); needs SACK.
    pub tlp: bool,
    /// The receiver as Linux runs it (window scaling, rcv_ssthresh, autotuning, quick
    /// ACKs); None: a fixed `receive_window` and the `ack` policy.
    pub linux_receiver: Option<LinuxReceiver>,
    /// Timers count in jiffies of this length (Linux CONFIG_HZ = 250: 4 ms); None: exact.
    pub jiffy: Option<Duration>,
    /// Model the Linux timer wheel's slack (kernel/time/timer.c: a timer lands on its
    /// level's granularity, 8^level jiffies, so a 1 s timer fires up to 32 ms late at
    /// HZ 250), with the jiffies counter's phase drawn from the seed.
    pub timer_slack: bool,
    /// The time this host takes to answer a segment: each arriving segment reaches its TCP
    /// this much later (document 003: "'Immediately' is still four to five milliseconds
    /// processing time for an Irix Indy"). 0: at once.
    pub processing_time: Duration,
    /// How much later than their slot on the jiffies clock (and wheel) this host's timers
    /// run: the timer softirq of a loaded machine runs late, so a timer and a packet that
    /// arrive in the same jiffy can come in either order. 0: at the slot.
    pub timer_lag: Duration,
    /// The jiffies clock's reading at simulated time 0, in nanoseconds (its phase within a
    /// tick and the wheel's buckets): drawn from the scenario's seed.
    pub jiffies_origin_ns: u64,
    pub dupack_threshold: u32,
    pub ack: AckPolicy,
    /// Maximum segment size this host announces in its SYN or SYN/ACK (bytes of payload;
    /// Linux route `advmss`), and sends with when `mtu` is None.
    pub mss: u32,
    /// The MTU of this host's path (bytes), when it sends as Linux does: at most the peer's
    /// announced MSS and this MTU less the IPv4 and TCP headers, whatever this host
    /// announces itself (tcp_sync_mss → tcp_mtu_to_mss: mss_now = pmtu − 40, capped by
    /// rx_opt.mss_clamp, the peer's MSS option; route `advmss` sets only tp->advmss). None:
    /// the host sends with the MSS it announces (the other profiles' model).
    pub mtu: Option<u32>,
    /// Receive window this host advertises (bytes; the application reads at once).
    pub receive_window: u32,
    /// false: a segment never spans two application writes (Solaris 2.x, document 003's
    /// figures: 1460, 1460, 1176 | 1460, 1460, 1432 | ...).
    pub coalesce_writes: bool,
}

pub const PROFILE_NAMES: &[&str] = &["rfc2988", "rfc6298", "linux", "solaris", "bsd", "windows"];

fn base(profile: &str) -> StackConfig {
    StackConfig {
        profile: profile.to_string(),
        rto: RtoConfig {
            initial: Duration::from_secs(1),
            min: Duration::from_secs(1),
            max: Duration::from_secs(60),
            granularity: Duration::from_millis(1),
            min_on_variance: false,
            after_syn_loss: None,
        },
        syn_retries: 5,
        synack_retries: 5,
        syn_backoff: SynBackoff::Exponential,
        synack_backoff: SynBackoff::Exponential,
        synack_on_duplicate_syn: true,
        initial_window: InitialWindow::Rfc3390,
        iw_one_after_handshake_loss: false,
        linux_handshake: false,
        slow_start_after_idle: true,
        abc_limit: 1,
        congestion_control: CongestionControlName::Reno,
        hystart: false,
        recovery: RecoveryName::NewReno,
        spurious_rto: SpuriousRtoName::Off,
        timestamps: false,
        sack: false,
        window_scaling: false,
        rack: false,
        tlp: false,
        linux_receiver: None,
        jiffy: None,
        timer_slack: false,
        processing_time: Duration::ZERO,
        timer_lag: Duration::ZERO,
        jiffies_origin_ns: 0,
        dupack_threshold: 3,
        ack: AckPolicy {
            delayed: DelayedAck::Timer(Duration::from_millis(200)),
            ack_every: 2,
            count: AckCount::Bytes,
            quick_acks: 0,
        },
        mss: 1460,
        mtu: None,
        receive_window: 65_535,
        coalesce_writes: true,
    }
}

/// The named profile, or None for an unknown name.
pub fn profile(name: &str) -> Option<StackConfig> {
    let mut c = base(name);
    match name {
        // RFC 2988 (2.1) initial RTO 3 s, (2.4) minimum 1 s, (2.5) maximum >= 60 s; RFC 3390
        // initial window; RFC 2582/3782 NewReno; delayed ACKs per RFC 1122 4.2.3.2 with the
        // common 200 ms timer; ACK every second full-sized segment (RFC 2581 4.2). The
        // "2008-era stack" of document 000 (Linux 2.6 also used a 3 s SYN timer then).
        "rfc2988" => {
            c.rto.initial = Duration::from_secs(3);
            c.iw_one_after_handshake_loss = true;
        }
        // RFC 6298 (2.1) initial RTO 1 s, (2.4) minimum 1 s, (5.7) back to 3 s after a lost
        // SYN; RFC 5681 3.1 initial window (same formula as RFC 3390).
        "rfc6298" => {
            c.rto.after_syn_loss = Some(Duration::from_secs(3));
            c.iw_one_after_handshake_loss = true;
        }
        // Linux 6.x (include/net/tcp.h): TCP_TIMEOUT_INIT 1 s, TCP_RTO_MIN 200 ms applied to the
        // variance term, TCP_RTO_MAX 120 s, TCP_TIMEOUT_FALLBACK 3 s after a lost SYN,
        // TCP_INIT_CWND 10 (RFC 6928), tcp_syn_retries 6, tcp_synack_retries 5; quick-ACK
        // mode for the first segments (TCP_MAX_QUICKACKS 16), then delayed ACKs after
        // TCP_ATO_MIN 40 ms (40 ms measured on Linux 6.18); slow start counts every
        // acknowledged segment (tcp_slow_start); tcp_slow_start_after_idle = 1.
        // The timer constants, retries, initial window and reordering come from the kernel
        // table (`kernel::KERNEL_KNOBS`, its `linux` defaults), set below.
        "linux" => {
            c.rto.min_on_variance = true;
            c.rto.after_syn_loss = Some(Duration::from_secs(3));
            // net.ipv4.tcp_syn_linear_timeouts (default 4, Linux 6.x): the first four SYN
            // retries wait the initial RTO, then the timer doubles from it. Measured on this
            // machine's kernel (`shortflow testbed run`, six SYNs dropped): gaps of
            // 1, 1, 1, 1, 1, 2 s. SYN/ACKs still double.
            c.syn_backoff = SynBackoff::Table(vec![1, 1, 1, 1, 1, 2, 4, 8, 16, 32, 64]);
            // A count of segments (the number itself is the kernel table's, set below).
            c.initial_window = InitialWindow::Segments(kernel::TCP_INIT_CWND);
            // The testbed's veths (and Ethernet): a 1500-byte MTU, advmss 1460 (mtu − 40).
            c.mtu = Some(1500);
            c.linux_handshake = true;
            c.abc_limit = 0;
            // The sender: CUBIC with HyStart (net.ipv4.tcp_congestion_control; this machine's
            // default is BBR, the testbed sets cubic on its routes), SACK, RACK-TLP and PRR
            // (tcp_sack 1, tcp_recovery 1, tcp_early_retrans 3), timestamps and window
            // scaling on (tcp_timestamps 1, tcp_window_scaling 1), jiffies of 4 ms (HZ 250).
            c.congestion_control = CongestionControlName::Cubic;
            c.hystart = true;
            c.recovery = RecoveryName::Prr;
            c.spurious_rto = SpuriousRtoName::Linux; // net.ipv4.tcp_frto = 2
            c.timestamps = true;
            c.sack = true;
            c.window_scaling = true;
            c.rack = true;
            c.tlp = true;
            c.linux_receiver = Some(LinuxReceiver::default());
            c.jiffy = Some(kernel::jiffy(kernel::PROFILE_HZ));
            c.ack = AckPolicy {
                delayed: DelayedAck::Timer(Duration::from_millis(40)),
                ack_every: 2,
                count: AckCount::Segments,
                quick_acks: 16,
            };
        }
        // Solaris 2.5.1/2.6 as in document 003: tcp_slow_start_initial 1 (the pre-patch
        // default; 2 with the patch), a 200 ms delayed-ACK interval ("Both machines have a
        // delayed ACK interval of 200 ms"), the first two data segments acked at once and
        // then up to tcp_deferred_acks_max segments deferred (figures 3.1-3.4 defer 3 and 4;
        // we use 8, Solaris's tcp_local_dacks_max for LAN peers); segments never span two
        // writes (the figures' 1176 and 1432 B segments). Solaris Tunable Parameters:
        // tcp_rexmit_interval_initial 3 s, tcp_rexmit_interval_min 400 ms,
        // tcp_rexmit_interval_max 60 s.
        "solaris" => {
            c.rto.initial = Duration::from_secs(3);
            c.rto.min = Duration::from_millis(400);
            c.initial_window = InitialWindow::Segments(1);
            c.recovery = RecoveryName::Reno;
            c.ack = AckPolicy {
                delayed: DelayedAck::Timer(Duration::from_millis(200)),
                ack_every: 8,
                count: AckCount::Segments,
                quick_acks: 2,
            };
            c.coalesce_writes = false;
        }
        // 4.4BSD and its descendants (IRIX in document 003): delayed ACKs on the 200 ms fast
        // timer since boot (TCP/IP Illustrated Vol. 1, 19.3; Vol. 2, 25.1), ACK when the
        // window opens by two full segments (tcp_output), slow start from one segment,
        // minimum RTO two 500 ms slow ticks (TCPTV_MIN = 1 s), initial RTO 3 s
        // (TCPTV_SRTTDFLT), SYN retries on FreeBSD's tcp_syn_backoff[] = {1,1,1,1,1,2,4,...}.
        "bsd" => {
            c.rto.initial = Duration::from_secs(3);
            c.rto.granularity = Duration::from_millis(500);
            c.syn_backoff = SynBackoff::Table(vec![1, 1, 1, 1, 1, 2, 4, 8, 16, 32, 64, 64, 64]);
            c.initial_window = InitialWindow::Segments(1);
            c.recovery = RecoveryName::Reno;
            c.ack.delayed = DelayedAck::Tick { period: Duration::from_millis(200), phase: Duration::ZERO };
        }
        // Windows (Vista/7/2008 era): initial window 2 segments (document 002: "netsh ... icw"
        // raises it), delayed ACK 200 ms after every second segment (TcpAckFrequency 2,
        // TcpDelAckTicks 2), initial RTO 3 s (TcpInitialRtt), TcpMaxConnectRetransmissions 2,
        // minimum RTO 300 ms (netsh "MinRto" default).
        "windows" => {
            c.rto.initial = Duration::from_secs(3);
            c.rto.min = Duration::from_millis(300);
            c.syn_retries = 2;
            c.initial_window = InitialWindow::Segments(2);
            c.ack.count = AckCount::Segments;
        }
        _ => return None,
    }
    if name == "linux" {
        let mut v = serde_json::to_value(&c).expect("plain data");
        kernel::set_linux_defaults(&mut v);
        c = serde_json::from_value(v).expect("the kernel table's defaults fit the fields they name");
    }
    Some(c)
}

/// Where each profile's numbers come from (the comments in [`profile`] give the detail).
pub const PROFILE_SOURCES: &[(&str, &str)] = &[
    (
        "rfc2988",
        "RFC 2988 (2.1) initial RTO 3 s, (2.4) minimum 1 s, (2.5) maximum 60 s; RFC 3390 initial window; \
                 RFC 2582/3782 NewReno; RFC 1122 4.2.3.2 delayed ACKs (200 ms); the 2008-era stack of document 000",
    ),
    ("rfc6298", "RFC 6298 (2.1) initial RTO 1 s, (2.4) minimum 1 s, (5.7) 3 s after a lost SYN; RFC 5681 3.1 initial window"),
    (
        "linux",
        "Linux 6.x include/net/tcp.h (TCP_TIMEOUT_INIT 1 s, TCP_RTO_MIN 200 ms, TCP_RTO_MAX 120 s, \
               TCP_TIMEOUT_FALLBACK 3 s, TCP_INIT_CWND 10, TCP_ATO_MIN 40 ms), sysctl defaults of this kernel",
    ),
    (
        "solaris",
        "Solaris 2.5.1/2.6 as in document 003 and the Solaris Tunable Parameters guide \
                 (tcp_rexmit_interval_initial 3 s, _min 400 ms, tcp_slow_start_initial 1)",
    ),
    (
        "bsd",
        "4.4BSD (TCP/IP Illustrated Vol. 1 19.3, Vol. 2 25.1): 200 ms fast-timer delayed ACKs, TCPTV_SRTTDFLT 3 s, \
             FreeBSD tcp_syn_backoff[]",
    ),
    (
        "windows",
        "Windows Vista/7/2008: initial window 2 (document 002), TcpInitialRtt 3 s, \
                 TcpMaxConnectRetransmissions 2, MinRto 300 ms",
    ),
];

/// The citation of profile `name`.
pub fn profile_source(name: &str) -> Option<&'static str> {
    PROFILE_SOURCES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// An enum of plug-in names, each variant written in files and reports under its name:
/// the simulator matches the enum exhaustively, so a name the model accepts always has
/// its plug-in (a new variant does not compile until it has one).
macro_rules! plug_in_names {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            /// Every variant, in the order messages list them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            pub fn from_name(text: &str) -> Option<Self> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// The names, comma-separated, for messages that list what is accepted.
            pub fn known() -> String {
                Self::ALL.iter().map(|v| v.name()).collect::<Vec<_>>().join(", ")
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

plug_in_names! {
    /// Congestion controls a profile or a scenario may name (`shortflow_sim::tcp::cc`).
    CongestionControlName {
        /// RFC 5681 (the `linux` profile's: the kernel's tcp_cong.c, counting packets).
        Reno = "reno",
        /// RFC 9438 as Linux's tcp_cubic.c.
        Cubic = "cubic",
        /// BBR v1 as Linux's tcp_bbr.c, with internal pacing.
        Bbr = "bbr",
    }
}

plug_in_names! {
    /// Loss recoveries a profile or a scenario may name (`shortflow_sim::tcp::recovery`).
    RecoveryName {
        /// RFC 5681 3.2.
        Reno = "reno",
        /// RFC 6582.
        NewReno = "newreno",
        /// RFC 6675's conservative SACK recovery.
        Rfc6675 = "rfc6675",
        /// RFC 6937, Linux tcp_cwnd_reduction.
        Prr = "prr",
    }
}

plug_in_names! {
    /// Spurious-timeout detections a profile or a scenario may name
    /// (`shortflow_sim::tcp::spurious`).
    SpuriousRtoName {
        /// None: conventional RTO recovery.
        Off = "off",
        /// RFC 5682 F-RTO with RFC 4015's response.
        Frto = "frto",
        /// Linux's SACK-enhanced F-RTO (`tcp_frto`, net.ipv4.tcp_frto = 2).
        Linux = "linux",
    }
}

impl RecoveryName {
    /// Whether the recovery needs SACK: RFC 6675 works on SACKed segments; Linux's PRR
    /// runs with or without it (without, duplicate ACKs count as SACKed segments:
    /// tcp_add_reno_sack).
    pub fn needs_sack(self) -> bool {
        self == RecoveryName::Rfc6675
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_profile_exists() {
        for name in PROFILE_NAMES {
            assert_eq!(profile(name).unwrap().profile, *name);
        }
        assert!(profile("vms").is_none());
    }

    #[test]
    fn every_profile_has_its_source() {
        for name in PROFILE_NAMES {
            assert!(profile_source(name).is_some(), "{name}");
        }
    }

    #[test]
    fn plug_in_names_are_written_as_files_write_them() {
        fn round_trip<T: Copy + PartialEq + std::fmt::Debug + Serialize + serde::de::DeserializeOwned>(
            all: &[T],
            name: fn(T) -> &'static str,
            from_name: fn(&str) -> Option<T>,
        ) {
            for &v in all {
                assert_eq!(serde_json::to_value(v).unwrap(), serde_json::json!(name(v)));
                assert_eq!(serde_json::from_value::<T>(serde_json::json!(name(v))).unwrap(), v);
                assert_eq!(from_name(name(v)), Some(v));
            }
            assert_eq!(from_name("vegas"), None);
        }
        round_trip(CongestionControlName::ALL, CongestionControlName::name, CongestionControlName::from_name);
        round_trip(RecoveryName::ALL, RecoveryName::name, RecoveryName::from_name);
        round_trip(SpuriousRtoName::ALL, SpuriousRtoName::name, SpuriousRtoName::from_name);
        assert_eq!(RecoveryName::known(), "reno, newreno, rfc6675, prr");
        assert_eq!(profile("linux").unwrap().recovery, RecoveryName::Prr);
    }

    #[test]
    fn rfc3390_window() {
        // RFC 3390: 4 segments up to MSS 1095, 3 up to 2190, then 2.
        assert_eq!(InitialWindow::Rfc3390.bytes(1000), 4000);
        assert_eq!(InitialWindow::Rfc3390.bytes(1460), 4380);
        assert_eq!(InitialWindow::Rfc3390.bytes(4000), 8000);
    }
}
