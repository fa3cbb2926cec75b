//! Connections replayed from tmix connection vectors (`shortflow_scenario::abt`, written by
//! `shortflow analyze --abt`): each starts at its vector's start time and carries its
//! epochs — request, the server's wait, response, the client's wait — or, concurrent,
//! each side's ADUs and waits on its own, over its own two-way delay (the vector's minimum
//! RTT, as tmix's DelayBox gives each flow its own).

use super::{Adu, ConnSpec, Exchange, Workload};
use crate::scenario::{AbtConfig, WorkloadConfig};
use crate::time::{Duration, Instant};
use shortflow_scenario::abt::{ConnVector, Units};

/// Whether the simulator can replay `sc`'s vectors (when it has any): concurrent ones with
/// an ADU on some side, and sequential ones whose every epoch has a request and a response
/// (its applications answer each request; the testbed's replay the rest).
pub fn check_replayable(sc: &crate::Scenario, source: &str) -> Result<(), crate::error::ScenarioError> {
    let crate::scenario::WorkloadKind::Abt(a) = &sc.workload.kind else { return Ok(()) };
    let refuse = |msg: String| Err(crate::error::ScenarioError::new(source, a.key.clone(), msg));
    for v in &a.vectors {
        match &v.units {
            Units::Concurrent([a, b]) => {
                if a.is_empty() && b.is_empty() {
                    return refuse(format!("connection {}: no ADU on either side", v.id));
                }
            }
            Units::Sequential(epochs) => {
                if epochs.is_empty() {
                    return refuse(format!("connection {}: no epoch", v.id));
                }
                if let Some(k) = epochs.iter().position(|e| e.request == 0 || e.response == 0) {
                    return refuse(format!(
                        "connection {}, epoch {k}: the simulator replays epochs with a request and a response (> and <)",
                        v.id
                    ));
                }
            }
        }
    }
    Ok(())
}

pub struct Abt {
    vectors: Vec<ConnVector>,
    w: WorkloadConfig,
    pairs: u32,
    /// The path's own two-way delay: a vector's RTT beyond it is the connection's extra.
    base_rtt: Duration,
    next: usize,
}

impl Abt {
    pub fn new(w: &WorkloadConfig, a: &AbtConfig, pairs: u32, base_rtt: Duration) -> Self {
        let vectors = shortflow_scenario::abt::in_start_order(&a.vectors);
        Self { vectors, w: w.clone(), pairs: pairs.max(1), base_rtt, next: 0 }
    }

    fn spec(&self, i: usize) -> ConnSpec {
        let v = &self.vectors[i];
        let us = |x: u64| Duration(x.saturating_mul(1000));
        let (exchanges, concurrent) = match &v.units {
            Units::Sequential(epochs) => {
                let exchanges = epochs
                    .iter()
                    .enumerate()
                    .map(|(k, e)| Exchange {
                        request: e.request,
                        response_writes: vec![e.response],
                        think: us(e.response_delay_us),
                        gap: if k == 0 { Duration::ZERO } else { us(epochs[k - 1].interval_us) },
                    })
                    .collect();
                (exchanges, None)
            }
            Units::Concurrent(sides) => {
                let adus = |side: &Vec<shortflow_scenario::abt::Adu>| {
                    side.iter().map(|a| Adu { bytes: a.bytes, wait: us(a.wait_us) }).collect::<Vec<_>>()
                };
                (Vec::new(), Some(Box::new([adus(&sides[0]), adus(&sides[1])])))
            }
        };
        let extra = v.extra_rtt_ns(self.base_rtt.0);
        ConnSpec {
            pair: i as u32 % self.pairs,
            exchanges,
            concurrent,
            close: self.w.close,
            port: self.w.port,
            extra_rtt: (extra > 0).then_some(Duration(extra)),
        }
    }

    fn at(&self, i: usize) -> Option<Instant> {
        let first = self.vectors.first()?.start_us;
        self.vectors.get(i).map(|v| Instant::ZERO + Duration((v.start_us - first).saturating_mul(1000)))
    }
}

impl Workload for Abt {
    fn first(&mut self) -> Option<Instant> {
        self.at(0)
    }

    fn arrive(&mut self, _now: Instant) -> (ConnSpec, Option<Instant>) {
        let i = self.next;
        self.next += 1;
        (self.spec(i), self.at(self.next))
    }
}
