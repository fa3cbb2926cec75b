//! Classifies the gap between a handshake packet and its repeat against the standard
//! retransmission-timeout ladders (document 000 section 3).
//!
//! - RFC 6298 (2.1): initial RTO 1 s, doubled on each back-off (5.5): 1, 2, 4, 8 … s.
//! - RFC 2988 (2.1): initial RTO 3 s, doubled: 3, 6, 12, 24 … s — the ladder of the 2008
//!   traces. The two ladders share no step, so a gap matches at most one.
//!
//! Anything else is "outside standard interval": document 000 found a peak at 0–0.3 s
//! (duplicates made by applications or the network) and stacks with their own timers.

/// How far a gap may lie from a ladder step and still count as that step: timers fire on
/// the sender's clock tick (Linux: 4 ms jiffies, rounded coarser for long timers) and the
/// capture adds its own delay, so the tolerance is 5 % of the step, and at least 100 ms.
pub const TOLERANCE_FRACTION: f64 = 0.05;
pub const TOLERANCE_MIN_S: f64 = 0.1;
/// Steps considered: 2^0 … 2^7 times the initial RTO (Linux gives up on SYNs after 6
/// retries by default; 8 covers the most persistent stacks).
const STEPS: u32 = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GapClass {
    /// A step of the 1 s ladder; `step` 0 is 1 s, 1 is 2 s, …
    Rfc6298 {
        step: u8,
    },
    /// A step of the 3 s ladder; `step` 0 is 3 s, 1 is 6 s, …
    Rfc2988 {
        step: u8,
    },
    Outside,
    /// A SYN/ACK repeated because a repeated SYN arrived, not by the server's timer.
    Answer,
}

impl GapClass {
    pub fn classify(gap_s: f64) -> Self {
        for step in 0..STEPS {
            let scale = f64::from(1u32 << step);
            if near(gap_s, scale) {
                return Self::Rfc6298 { step: step as u8 };
            }
            if near(gap_s, 3.0 * scale) {
                return Self::Rfc2988 { step: step as u8 };
            }
        }
        Self::Outside
    }

    pub fn is_standard(self) -> bool {
        !matches!(self, Self::Outside | Self::Answer)
    }

    /// Stable small code for columnar output: 0 outside, 1+step RFC 6298, 17+step RFC 2988.
    pub fn code(self) -> u8 {
        match self {
            Self::Outside => 0,
            Self::Rfc6298 { step } => 1 + step,
            Self::Rfc2988 { step } => 17 + step,
            Self::Answer => 25,
        }
    }

    /// Human label, e.g. `rfc6298:2s`, `rfc2988:6s`, `outside`.
    pub fn label(self) -> String {
        match self {
            Self::Outside => "outside".into(),
            Self::Rfc6298 { step } => format!("rfc6298:{}s", 1u32 << step),
            Self::Rfc2988 { step } => format!("rfc2988:{}s", 3u32 << step),
            Self::Answer => "answer_to_syn".into(),
        }
    }

    /// All labels indexed by code (for a dictionary-encoded column).
    pub fn labels_by_code() -> Vec<String> {
        (0..=(17 + STEPS as u8))
            .map(|code| match code {
                0 => Self::Outside.label(),
                c if (1..=STEPS as u8).contains(&c) => Self::Rfc6298 { step: c - 1 }.label(),
                25 => Self::Answer.label(),
                c if c >= 17 => Self::Rfc2988 { step: c - 17 }.label(),
                _ => String::new(),
            })
            .collect()
    }
}

/// Whole SYN retry ladders, gap by gap (s), for the stack fingerprint of a connection's
/// sequence of SYNs. Each names where it comes from.
pub const LADDERS: [(&str, &[f64]); 5] = [
    // RFC 6298 (2.1) initial 1 s, doubled on each back-off (5.5); Linux's default, and
    // Windows since Vista (1 s, 2 s).
    ("rfc6298", &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]),
    // RFC 2988 (2.1) initial 3 s, doubled; the 2008 traces, Windows XP (3 s, 6 s).
    ("rfc2988", &[3.0, 6.0, 12.0, 24.0, 48.0, 96.0]),
    // Linux `net.ipv4.tcp_syn_linear_timeouts` (default 4): 1 s while linear, then doubling.
    ("linux_linear", &[1.0, 1.0, 1.0, 1.0, 2.0, 4.0, 8.0, 16.0]),
    // macOS / FreeBSD (`tcp_syn_backoff`): 1 s five times, then doubling.
    ("bsd", &[1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0]),
    // Windows' `TcpMaxConnectRetransmissions` with 3 s initial RTO (3 s, 6 s): same as
    // RFC 2988's start; kept apart only by name in the fingerprint below.
    ("windows_3s", &[3.0, 6.0]),
];

/// The ladders a connection's whole sequence of SYN gaps fits, joined by `|` (several
/// when the sequence is too short to tell them apart), `outside` when a gap fits none
/// (a NAT's own timer), or empty without repeats.
pub fn fingerprint(gaps_s: &[f64]) -> String {
    if gaps_s.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = LADDERS
        .iter()
        .filter(|(_, steps)| gaps_s.len() <= steps.len() && gaps_s.iter().zip(steps.iter()).all(|(&g, &s)| near(g, s)))
        .map(|(name, _)| *name)
        .collect();
    if names.is_empty() {
        "outside".into()
    } else {
        names.join("|")
    }
}

fn near(gap_s: f64, step_s: f64) -> bool {
    (gap_s - step_s).abs() <= (step_s * TOLERANCE_FRACTION).max(TOLERANCE_MIN_S)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladders_and_outside() {
        let cases = [
            (1.0, "rfc6298:1s"),
            (1.02, "rfc6298:1s"),
            (2.05, "rfc6298:2s"),
            (3.0, "rfc2988:3s"),
            (2.95, "rfc2988:3s"),
            (6.2, "rfc2988:6s"),
            (12.0, "rfc2988:12s"),
            (8.3, "rfc6298:8s"),
            (0.2, "outside"),
            (3.4, "outside"),
            (1.5, "outside"),
            (0.0, "outside"),
        ];
        for (gap, want) in cases {
            assert_eq!(GapClass::classify(gap).label(), want, "gap {gap}");
        }
    }

    #[test]
    fn whole_ladders_fingerprint_the_stack() {
        assert_eq!(fingerprint(&[]), "");
        assert_eq!(fingerprint(&[1.0, 2.0, 4.0]), "rfc6298");
        assert_eq!(fingerprint(&[1.0]), "rfc6298|linux_linear|bsd");
        assert_eq!(fingerprint(&[1.0, 1.0, 1.0, 1.0, 2.0]), "linux_linear");
        assert_eq!(fingerprint(&[1.0, 1.0, 1.0, 1.0, 1.0, 2.0]), "bsd");
        assert_eq!(fingerprint(&[3.0, 6.0]), "rfc2988|windows_3s");
        assert_eq!(fingerprint(&[3.0, 6.0, 12.0]), "rfc2988");
        // A NAT's own 14 s timer fits no ladder, nor does a 1 s gap after a 2 s one.
        assert_eq!(fingerprint(&[14.0]), "outside");
        assert_eq!(fingerprint(&[2.0, 1.0]), "outside");
    }

    #[test]
    fn codes_round_trip_through_labels() {
        let labels = GapClass::labels_by_code();
        for gap in [1.0, 2.0, 64.0, 3.0, 96.0, 0.5] {
            let c = GapClass::classify(gap);
            assert_eq!(labels[c.code() as usize], c.label());
        }
    }
}
