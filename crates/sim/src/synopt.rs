//! Document 000's syn_optimizer (section 4) as a mechanism beside one endpoint: it keeps a
//! copy of each SYN (client side) or SYN/ACK (server side) to the configured port and, if
//! no answer came within `delay`, sends the copy again, at most `retries` times. The TCP
//! beside it knows nothing of this (its timers and Karn's rule see only its own SYNs).

use crate::packet::Segment;
use crate::scenario::{Side, SynOptimizerConfig};
use crate::time::Instant;

#[derive(Debug, Clone, Default)]
pub struct SynOptimizer {
    copy: Option<Segment>,
    resends: u32,
    pub deadline: Option<Instant>,
}

impl SynOptimizer {
    fn watches(cfg: &SynOptimizerConfig, seg: &Segment, server_port: u16) -> bool {
        cfg.port == server_port
            && match cfg.side {
                Side::Client => seg.is_syn(),
                Side::Server => seg.is_synack(),
            }
    }

    /// The endpoint beside us sent `seg`: keep a copy if it is ours to watch. Returns the
    /// deadline to schedule.
    pub fn outgoing(&mut self, cfg: &SynOptimizerConfig, seg: &Segment, server_port: u16, now: Instant) -> Option<Instant> {
        if !Self::watches(cfg, seg, server_port) {
            return None;
        }
        self.copy = Some(*seg);
        self.deadline = Some(now + cfg.delay);
        self.deadline
    }

    /// The endpoint beside us received `seg`: an answer ends the watch.
    pub fn incoming(&mut self, cfg: &SynOptimizerConfig, seg: &Segment) {
        let answered = match cfg.side {
            Side::Client => seg.is_synack(),
            Side::Server => seg.has(crate::packet::ACK) && !seg.has(crate::packet::SYN),
        };
        if answered {
            self.copy = None;
            self.deadline = None;
        }
    }

    /// The timer set for `now` fired: the copy to resend, if any (the next deadline is in
    /// `self.deadline`).
    pub fn fire(&mut self, cfg: &SynOptimizerConfig, now: Instant) -> Option<Segment> {
        if self.deadline != Some(now) {
            return None;
        }
        self.deadline = None;
        let copy = self.copy?;
        if self.resends >= cfg.retries {
            return None;
        }
        self.resends += 1;
        self.deadline = Some(now + cfg.delay);
        Some(copy)
    }

    pub fn resends(&self) -> u32 {
        self.resends
    }
}
