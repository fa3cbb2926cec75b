//! Document 000's syn_optimizer (section 4) as a mechanism beside one endpoint: it keeps a
//! copy of each SYN (client side) or SYN/ACK (server side) to the configured port and, if
//! no answer came within `delay`, sends the copy again, at most `retries` times. The TCP
//! beside it knows nothing of this (its timers and Karn's rule see only its own SYNs).

use super::{Fired, Mechanism};
use crate::packet::Segment;
use crate::report::ConnReport;
use crate::scenario::{Mechanisms, Side, SynOptimizerConfig};
use crate::tcp::Tcb;
use crate::time::Instant;

/// Its place in the timer order (`mod.rs`): first, its timer acts in the handshake.
pub const ORDER: u8 = 1;

/// On the side the optimizer is configured for, watching connections to its port.
pub fn plug(configured: &Mechanisms, client: bool, port: u16) -> Option<Box<dyn Mechanism>> {
    let cfg = configured.syn_optimizer.filter(|o| (o.side == Side::Client) == client)?;
    Some(Box::new(SynOptimizer::new(cfg, port)))
}

#[derive(Debug, Clone)]
pub struct SynOptimizer {
    cfg: SynOptimizerConfig,
    /// The connection's server port: only connections to `cfg.port` are watched.
    server_port: u16,
    copy: Option<Segment>,
    resends: u32,
    deadline: Option<Instant>,
}

impl SynOptimizer {
    pub fn new(cfg: SynOptimizerConfig, server_port: u16) -> Self {
        SynOptimizer { cfg, server_port, copy: None, resends: 0, deadline: None }
    }

    fn watches(&self, seg: &Segment) -> bool {
        self.cfg.port == self.server_port
            && match self.cfg.side {
                Side::Client => seg.is_syn(),
                Side::Server => seg.is_synack(),
            }
    }
}

impl Mechanism for SynOptimizer {
    /// The endpoint beside us sends: keep a copy of what is ours to watch.
    fn on_send(&mut self, _tcb: &Tcb, out: &[Segment], now: Instant) {
        if let Some(seg) = out.iter().rev().find(|s| self.watches(s)) {
            self.copy = Some(*seg);
            self.deadline = Some(now + self.cfg.delay);
        }
    }

    /// An answer ends the watch.
    fn on_receive(&mut self, seg: &Segment) {
        let answered = match self.cfg.side {
            Side::Client => seg.is_synack(),
            Side::Server => seg.has(crate::packet::ACK) && !seg.has(crate::packet::SYN),
        };
        if answered {
            self.copy = None;
            self.deadline = None;
        }
    }

    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The copy to resend, if any (the next deadline is set again for the one after).
    fn on_timer(&mut self, _tcb: Option<&mut Tcb>, now: Instant) -> Fired {
        if self.deadline != Some(now) {
            return Fired::Nothing;
        }
        self.deadline = None;
        let Some(copy) = self.copy else { return Fired::Nothing };
        if self.resends >= self.cfg.retries {
            return Fired::Nothing;
        }
        self.resends += 1;
        self.deadline = Some(now + self.cfg.delay);
        Fired::Send(copy)
    }

    fn report(&self, r: &mut ConnReport) {
        r.optimizer_resends += self.resends;
    }
}
