//! `[capture]`: where the simulator's capture is taken and how it is framed.

use serde::{Deserialize, Serialize};

use super::err;
use super::raw::RawCapture;
use crate::error::ScenarioError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapturePoint {
    Client,
    Router,
    Server,
}

/// The capture's link type (the writer, `shortflow_wire::capture`, frames each one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaptureLink {
    Ethernet,
    /// LINKTYPE_RAW ("raw"): the IP version from the packet.
    RawIpv4,
    Null,
    Loop,
    Sll,
    Sll2,
    Ipv4,
    Ipv6,
}

impl CaptureLink {
    /// Every link type under its name in scenario files (`capture.link`) and in
    /// `shortflow generate --link`: the one table both read.
    pub const NAMES: [(&'static str, CaptureLink); 8] = [
        ("ethernet", CaptureLink::Ethernet),
        ("raw", CaptureLink::RawIpv4),
        ("null", CaptureLink::Null),
        ("loop", CaptureLink::Loop),
        ("sll", CaptureLink::Sll),
        ("sll2", CaptureLink::Sll2),
        ("ipv4", CaptureLink::Ipv4),
        ("ipv6", CaptureLink::Ipv6),
    ];

    pub fn from_name(name: &str) -> Option<Self> {
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|&(_, l)| l)
    }

    pub fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, l)| *l == self).map(|&(n, _)| n).expect("every link type is named")
    }

    /// The names, in order, for messages that list what is accepted.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::NAMES.iter().map(|&(n, _)| n)
    }
}

/// The capture point, link type and IP version `c` asks for, checked against each other.
pub(super) fn resolve(c: &RawCapture, src: &str) -> Result<(CapturePoint, CaptureLink, bool), ScenarioError> {
    let capture_point = match c.point.as_deref().unwrap_or("client") {
        "client" => CapturePoint::Client,
        "router" => CapturePoint::Router,
        "server" => CapturePoint::Server,
        other => return Err(err(src, "capture.point", format!("{other:?}: expected \"client\", \"router\" or \"server\""))),
    };
    let link = c.link.as_deref().unwrap_or("ethernet");
    let Some(capture_link) = CaptureLink::from_name(link) else {
        return Err(err(src, "capture.link", {
            let quoted: Vec<String> = CaptureLink::names().map(|n| format!("{n:?}")).collect();
            let (last, rest) = quoted.split_last().expect("link types exist");
            format!("{link:?}: expected {} or {last}", rest.join(", "))
        }));
    };
    // LINKTYPE_IPV4 and LINKTYPE_IPV6 carry packets of one IP version only.
    let capture_ipv6 = match (capture_link, c.ipv6) {
        (CaptureLink::Ipv6, Some(false)) => {
            return Err(err(src, "capture.ipv6", "false, but link = \"ipv6\" (LINKTYPE_IPV6) carries only IPv6 packets"))
        }
        (CaptureLink::Ipv4, Some(true)) => {
            return Err(err(src, "capture.ipv6", "true, but link = \"ipv4\" (LINKTYPE_IPV4) carries only IPv4 packets"))
        }
        (CaptureLink::Ipv6, _) => true,
        (_, v) => v.unwrap_or(false),
    };
    if let Some(v) = c.vlan {
        if capture_link != CaptureLink::Ethernet {
            return Err(err(src, "capture.vlan", "an 802.1Q tag is part of an Ethernet frame: needs link = \"ethernet\""));
        }
        if v > 4095 {
            return Err(err(src, "capture.vlan", format!("{v}: a VLAN id is 0 to 4095 (12 bits)")));
        }
    }
    Ok((capture_point, capture_link, capture_ipv6))
}
