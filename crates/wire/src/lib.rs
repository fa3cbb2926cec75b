//! shortflow's one wire layer, in smoltcp's style: each protocol has a zero-copy *view* of a
//! byte buffer (checked once, then read or written by field) and a *representation* of what
//! the header means (validated values, no bytes). Everything in shortflow that reads or
//! writes a TCP/IP header goes through here: the analyzer (a captured frame of any link type
//! → [`Segment`]), the SYN optimizer (an NFLOG copy → [`Segment`]; the copy's checksums
//! completed before it is resent), the link emulator (an NFQUEUE packet → [`Segment`]) and
//! the simulator's capture writer ([`Segment`] + [`SegmentExtra`] → a frame).
//!
//! ```text
//! link   LinkType, EthernetFrame / LinuxSllFrame / LinuxSll2Frame views, ip_payload:
//!        Ethernet (802.1Q/802.1ad tags, E-tag, VN-tag; PPPoE, MPLS), Linux SLL/SLL2,
//!        BSD loopback, raw, PPP, Cisco HDLC, NFLOG, 802.11 (wifi)
//! ip     Ipv4Packet / Ipv6Packet views (version, lengths, addresses, header checksum)
//! tcp    TcpPacket view (fixed header, option bytes, checksum), TcpOptions, sequence arithmetic
//! icmp   ICMP/ICMPv6 destination unreachable with the quoted TCP header (a SYN refused by ICMP)
//! segment  decode / decode_ext: frame → Segment (+ IP id, TTL, TcpOptions), the analyzer's hot path
//! emit   Segment (+ SegmentExtra) → a frame for any link type, checksums filled
//! capture  PcapWriter: those frames into a pcap or pcapng file (the simulator's capture, the generator, tests)
//! checksum  the Internet checksum (RFC 1071) and the TCP pseudo-header sums
//! tunnel  IP in IP, GRE (IP, Ethernet, ERSPAN I-III), VXLAN(-GPE), Geneve, GTP-U: the packet inside
//! wifi   802.11 data frames behind radiotap, PPI, Prism or AVS headers: their LLC/SNAP payload
//! defrag  Reassembly: IP fragments put back together into the datagram they carry
//! filter  libpcap filter expressions, compiled by libpcap per link type
//! libpcap  libpcap loaded at run time: filters and live capture
//! ```

pub mod capture;
pub mod checksum;
pub mod defrag;
pub mod emit;
pub mod filter;
pub mod icmp;
pub mod ip;
pub mod libpcap;
pub mod link;
pub mod segment;
pub mod tcp;
pub mod tunnel;
pub mod wifi;

pub use emit::{encode_frame, Framing};
pub use icmp::{decode_unreachable, IcmpUnreachable, QuotedTcp, Unreachable};
pub use ip::{Ipv4Packet, Ipv6Packet};
pub use link::{EthernetFrame, IpVersion, LinkType, LinuxSll2Frame, LinuxSllFrame};
pub use segment::{decode, decode_ext, decode_ip, Endpoint, Segment, SegmentExtra, Skip, TcpFlags, TcpOptions};
pub use tcp::{seq_ge, TcpPacket};

/// Why a buffer is not a valid packet of the kind asked for (views' `new_checked`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// Shorter than the header (or than the length the header declares).
    Truncated { need: usize, have: usize },
    /// A field holds a value the protocol forbids; `field` names it.
    Invalid { field: &'static str, value: u32 },
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Truncated { need, have } => write!(f, "packet truncated: {have} bytes, the header needs {need}"),
            Self::Invalid { field, value } => write!(f, "invalid {field}: {value}"),
        }
    }
}

impl std::error::Error for WireError {}
