//! `[drop]` and `[random_loss]`: scripted and random losses.

use serde::{Deserialize, Serialize};

use super::err;
use super::raw::*;
use crate::error::ScenarioError;

/// Scripted drops: 1-based occurrence numbers per packet kind, counted over the whole run,
/// retransmissions included (as the testbed's link emulator counts them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DropConfig {
    /// Client SYNs.
    pub syn: Vec<u32>,
    /// Server SYN/ACKs.
    pub synack: Vec<u32>,
    /// Client pure ACKs (no payload, no SYN/FIN/RST): the handshake's third packet is #1.
    pub ack: Vec<u32>,
    /// Server data segments (payload > 0).
    pub data: Vec<u32>,
    /// Client data segments.
    pub client_data: Vec<u32>,
    /// Server stream offsets (0 = the first data byte after the SYN/ACK): the segment that
    /// carries each is lost at its first transmission (an offset listed k times, at its
    /// first k), wherever a stack's segment boundaries fall (`shortflow_sim::byte_loss`).
    pub data_bytes: Vec<u64>,
    /// Client stream offsets, as `data_bytes`.
    pub client_data_bytes: Vec<u64>,
}

/// Gilbert-Elliott two-state loss (Gilbert 1960, Elliott 1963).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GilbertConfig {
    pub p_good_to_bad: f64,
    pub p_bad_to_good: f64,
    pub loss_good: f64,
    pub loss_bad: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossConfig {
    Bernoulli(f64),
    Gilbert(GilbertConfig),
}

/// Bernoulli loss probabilities of one packet kind each (the kinds `[drop]` names), drawn
/// besides the direction's loss.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct KindLoss {
    pub syn: f64,
    pub synack: f64,
    pub ack: f64,
    pub data: f64,
    pub client_data: f64,
}

impl KindLoss {
    pub fn any(&self) -> bool {
        [self.syn, self.synack, self.ack, self.data, self.client_data].iter().any(|&p| p > 0.0)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandomLossConfig {
    pub forward: LossConfig,
    pub reverse: LossConfig,
    pub seed: u64,
    pub kinds: KindLoss,
    /// Each connection draws from a stream of its own (`random_loss.per_connection`).
    #[serde(default)]
    pub per_connection: bool,
}

/// Byte offsets per `drop.*_bytes` list: as many as the occurrence lists hold.
/// The most occurrence numbers one `drop` list may hold.
const MAX_OCCURRENCE_DROPS: usize = 10_000;
const MAX_BYTE_DROPS: usize = 10_000;

pub(super) fn drops(d: &RawDrop, src: &str) -> Result<DropConfig, ScenarioError> {
    for (k, v) in [("syn", &d.syn), ("synack", &d.synack), ("ack", &d.ack), ("data", &d.data), ("client_data", &d.client_data)] {
        if v.contains(&0) {
            return Err(err(src, &format!("drop.{k}"), "occurrence numbers start at 1"));
        }
        if v.len() > MAX_OCCURRENCE_DROPS {
            return Err(err(
                src,
                &format!("drop.{k}"),
                format!("{} occurrences: at most {MAX_OCCURRENCE_DROPS} per list", v.len()),
            ));
        }
    }
    for (k, v) in [("data_bytes", &d.data_bytes), ("client_data_bytes", &d.client_data_bytes)] {
        if v.len() > MAX_BYTE_DROPS {
            return Err(err(src, &format!("drop.{k}"), format!("{} offsets: at most {MAX_BYTE_DROPS} per list", v.len())));
        }
    }
    Ok(DropConfig {
        syn: d.syn.clone(),
        synack: d.synack.clone(),
        ack: d.ack.clone(),
        data: d.data.clone(),
        client_data: d.client_data.clone(),
        data_bytes: d.data_bytes.clone(),
        client_data_bytes: d.client_data_bytes.clone(),
    })
}

pub(super) fn random_loss(r: &RawRandomLoss, src: &str, seed: u64) -> Result<RandomLossConfig, ScenarioError> {
    let prob = |key: &str, p: f64| {
        if (0.0..=1.0).contains(&p) {
            Ok(p)
        } else {
            Err(err(src, key, format!("{p} is not a probability between 0 and 1")))
        }
    };
    let one = |dir: &str, p: Option<f64>, g: &Option<RawGilbert>| -> Result<LossConfig, ScenarioError> {
        match (p, g) {
            (Some(_), Some(_)) => {
                Err(err(src, &format!("random_loss.gilbert_{dir}"), format!("set either random_loss.{dir} or gilbert_{dir}")))
            }
            (p, None) => Ok(LossConfig::Bernoulli(prob(&format!("random_loss.{dir}"), p.unwrap_or(0.0))?)),
            (None, Some(g)) => {
                let k = format!("random_loss.gilbert_{dir}");
                Ok(LossConfig::Gilbert(GilbertConfig {
                    p_good_to_bad: prob(&format!("{k}.p_good_to_bad"), g.p_good_to_bad)?,
                    p_bad_to_good: prob(&format!("{k}.p_bad_to_good"), g.p_bad_to_good)?,
                    loss_good: prob(&format!("{k}.loss_good"), g.loss_good)?,
                    loss_bad: prob(&format!("{k}.loss_bad"), g.loss_bad.unwrap_or(1.0))?,
                }))
            }
        }
    };
    let per_connection = r.per_connection.unwrap_or(false);
    if per_connection && (r.gilbert_forward.is_some() || r.gilbert_reverse.is_some()) {
        return Err(err(
            src,
            "random_loss.per_connection",
            "draws Bernoulli losses only: a Gilbert-Elliott chain runs over the whole direction",
        ));
    }
    Ok(RandomLossConfig {
        per_connection,
        forward: one("forward", r.forward, &r.gilbert_forward)?,
        reverse: one("reverse", r.reverse, &r.gilbert_reverse)?,
        seed: r.seed.unwrap_or(seed),
        kinds: KindLoss {
            syn: prob("random_loss.syn", r.syn.unwrap_or(0.0))?,
            synack: prob("random_loss.synack", r.synack.unwrap_or(0.0))?,
            ack: prob("random_loss.ack", r.ack.unwrap_or(0.0))?,
            data: prob("random_loss.data", r.data.unwrap_or(0.0))?,
            client_data: prob("random_loss.client_data", r.client_data.unwrap_or(0.0))?,
        },
    })
}
