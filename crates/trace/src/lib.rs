//! shortflow's trace analyzer: streams pcap/pcapng captures, tracks TCP connections and
//! says where each one lost time in its handshake (document 000).
//!
//! ```text
//! read (pcap, pcapng, gzip) → wire (link, IP, TCP) → track (connections) → diag (table, Table 1)
//! ```

pub mod analyze;
pub mod diag;
pub mod error;
mod feed;
pub mod graph;
pub mod live;
mod mem;
pub mod read;
mod shard;
pub mod stream;
pub mod track;

pub use analyze::{analyze_capture, analyze_file, analyze_paths, Analysis, FileStats, Options, Progress};
pub use diag::{ConnectionTable, ExchangeTable, GapClass, Summary, Vantage};
pub use error::{ReadError, ReadErrorKind};
pub use read::{CaptureReader, RawPacket};
/// The wire layer (link types, IP, TCP) is its own crate, one floor down; re-exported so
/// `shortflow_trace::wire::…` keeps naming it.
pub use shortflow_wire as wire;
pub use shortflow_wire::{Endpoint, LinkType, Segment, TcpFlags};
