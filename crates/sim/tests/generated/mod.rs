//! Synthetic traces for the analyzer's tests that need many connections with known
//! losses: the simulator's generator workload (`shortflow_sim::generate`). These tests live
//! in the simulator's crate, which stands above the analyzer's (the analyzer's own tests
//! cannot reach the simulator).
#![allow(dead_code)]

pub use shortflow_sim::generate::{GenError, GenOptions, GenTruth};
use shortflow_trace::LinkType;
use shortflow_wire::capture::{PcapWriter, SegmentOptions};

/// A synthetic trace through writer `w`, framed as `opts` says (its link type must be the
/// writer's).
pub fn generated(cfg: &GenOptions, w: PcapWriter<Vec<u8>>, opts: &SegmentOptions) -> (Vec<u8>, GenTruth) {
    let (truth, bytes) = try_generated(cfg, w, opts).unwrap();
    (bytes, truth)
}

pub fn try_generated(cfg: &GenOptions, w: PcapWriter<Vec<u8>>, opts: &SegmentOptions) -> Result<(GenTruth, Vec<u8>), GenError> {
    let name = match opts.link {
        LinkType::Ethernet => "ethernet",
        LinkType::Raw => "raw",
        LinkType::Null => "null",
        LinkType::Loop => "loop",
        LinkType::LinuxSll => "sll",
        LinkType::LinuxSll2 => "sll2",
        LinkType::Ipv4 => "ipv4",
        LinkType::Ipv6 => "ipv6",
        other => panic!("the generator writes no link type {}", other.code()),
    };
    let link = shortflow_sim::scenario::CaptureLink::from_name(name).unwrap();
    let cfg = GenOptions { link, vlan: opts.vlan, ..cfg.clone() };
    shortflow_sim::generate::generate(&cfg, w, &shortflow_sim::Budget::default())
}
