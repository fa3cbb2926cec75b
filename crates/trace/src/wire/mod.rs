//! Wire formats: link layers down to the TCP header fields the tracker needs.

pub mod icmp;
pub mod link;
pub mod segment;

pub use icmp::{decode_unreachable, IcmpUnreachable, QuotedTcp, Unreachable};
pub use link::LinkType;
pub use segment::{decode, decode_ext, Endpoint, Segment, SegmentExtra, TcpFlags, TcpOptions};
