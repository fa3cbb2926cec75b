//! The start-up fixes a host can apply, each as the scenario overrides that model it and
//! the command that applies it. A capture's vantage decides whose fixes it can judge: a
//! server capture sees the server's timers and windows (and the host to change is the
//! server), a client capture the client's.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Server,
    Client,
}

impl Side {
    pub fn key(self) -> &'static str {
        match self {
            Side::Server => "server",
            Side::Client => "client",
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Fix {
    #[serde(rename = "fix")]
    pub name: String,
    /// The host command that applies it.
    pub apply: String,
    /// The same fix as `key=value` strings for `simulate --set`.
    #[serde(rename = "scenario_overrides")]
    pub overrides: Vec<String>,
}

impl Fix {
    fn new(name: &str, apply: &str, overrides: &[String]) -> Self {
        Self { name: name.to_string(), apply: apply.to_string(), overrides: overrides.to_vec() }
    }

    /// Two fixes at once (their overrides together), or `None` when they set the same key.
    pub fn combined(&self, other: &Fix) -> Option<Fix> {
        let keys = |f: &Fix| f.overrides.iter().map(|o| o.split('=').next().unwrap_or("").to_string()).collect::<Vec<_>>();
        let (a, b) = (keys(self), keys(other));
        if a.iter().any(|k| b.contains(k)) {
            return None;
        }
        // Two settings of the tuner are one `tune apply` (one journal entry, one revert).
        const TUNE: &str = "shortflow tune apply ";
        let apply = match (self.apply.strip_prefix(TUNE), other.apply.strip_prefix(TUNE)) {
            (Some(a), Some(b)) => format!("{TUNE}{a} {b}"),
            _ => format!("{} && {}", self.apply, other.apply),
        };
        Some(Fix {
            name: format!("{} + {}", self.name, other.name),
            apply,
            overrides: self.overrides.iter().chain(&other.overrides).cloned().collect(),
        })
    }
}

/// The fixes of `side`'s host: its SYN (SYN/ACK) RTO and the SYN optimizer (document 000),
/// Super Fast Retransmit (001), the initial window (002), quick ACKs (003) and the minimum
/// RTO (004). Only the server sends responses: the initial window and SFR are server fixes.
pub fn catalogue(side: Side) -> Vec<Fix> {
    let s = side.key();
    let set = |k: &str, v: &str| format!("{s}.{k}={v}");
    let mut out = vec![
        Fix::new(&format!("{s} SYN RTO 200ms"), "shortflow tune apply --syn-rto 200ms", &[set("syn_rto", "\"200ms\"")]),
        Fix::new(
            &format!("{s} SYN optimizer 200ms"),
            &format!("shortflow synopt --{s} --delay 200ms --retries 3 --port PORT"),
            &[
                format!("mechanisms.syn_optimizer.side=\"{s}\""),
                "mechanisms.syn_optimizer.delay=\"200ms\"".to_string(),
                "mechanisms.syn_optimizer.retries=3".to_string(),
            ],
        ),
        Fix::new(&format!("{s} minimum RTO 50ms"), "shortflow tune apply --rto-min 50ms", &[set("rto_min", "\"50ms\"")]),
        Fix::new(&format!("{s} quick ACKs"), "shortflow tune apply --quickack", &[set("quickack", "true")]),
    ];
    if side == Side::Server {
        out.push(Fix::new("server IW 16", "shortflow tune apply --iw 16", &[set("initial_window", "16")]));
        out.push(Fix::new("server IW 32", "shortflow tune apply --iw 32", &[set("initial_window", "32")]));
        out.push(Fix::new(
            "server SFR (3 x handshake RTT)",
            "shortflow tune apply --sfr-factor 3",
            &["mechanisms.sfr.side=\"server\"".to_string(), "mechanisms.sfr.factor=3.0".to_string()],
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fix_loads_on_a_scenario() {
        let model = crate::advise::model::ConnModel {
            conn_id: 1,
            rtt_s: 0.05,
            lost_syns: 0,
            lost_synacks: 0,
            epochs: vec![shortflow_scenario::abt::Epoch { request: 100, response_delay_us: 0, response: 5000, interval_us: 0 }],
            lost_c2s: vec![],
            lost_s2c: vec![],
            server_iw: None,
            options: None,
            mss: [None, None],
            rto_min_s: [None, None],
            bottleneck_bps: None,
            queueing_s: None,
            ack_every_segment: [None, None],
            delack_s: [None, None],
            observed_s: 0.0,
        };
        for side in [Side::Server, Side::Client] {
            for f in catalogue(side) {
                assert!(model.replay(&f.overrides).is_ok(), "{}: {:?}", f.name, model.replay(&f.overrides).err());
            }
        }
    }

    #[test]
    fn fixes_on_the_same_key_do_not_combine() {
        let c = catalogue(Side::Server);
        let iw16 = c.iter().find(|f| f.name == "server IW 16").unwrap();
        let iw32 = c.iter().find(|f| f.name == "server IW 32").unwrap();
        assert!(iw16.combined(iw32).is_none());
        let both = iw16.combined(&c[0]).unwrap();
        assert_eq!(both.overrides.len(), 2);
        assert_eq!(both.apply, "shortflow tune apply --iw 16 --syn-rto 200ms");
        let with_daemon = iw16.combined(&c[1]).unwrap();
        assert!(with_daemon.apply.contains(" && shortflow synopt --server"), "{}", with_daemon.apply);
    }
}
