//! A TCP segment as it travels through the simulated network: the header fields that
//! matter, with real 32-bit sequence numbers, plus which connection and direction it is.

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;

/// Bytes of IPv4 + TCP headers without options.
pub const HEADER_BYTES: u32 = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub conn: u32,
    pub from_client: bool,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub len: u32,
    /// Advertised window in bytes (no scaling modelled; the pcap shows it capped at 65535).
    pub window: u32,
    /// MSS option (SYN and SYN/ACK only).
    pub mss: Option<u16>,
}

impl Segment {
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
    pub fn is_syn(&self) -> bool {
        self.has(SYN) && !self.has(ACK)
    }
    pub fn is_synack(&self) -> bool {
        self.has(SYN) && self.has(ACK)
    }
    /// An ACK with no payload and no SYN, FIN or RST.
    pub fn is_pure_ack(&self) -> bool {
        self.len == 0 && self.flags & (SYN | FIN | RST) == 0 && self.has(ACK)
    }
    /// Sequence space the segment occupies (SYN and FIN count one each).
    pub fn seq_len(&self) -> u32 {
        self.len + u32::from(self.has(SYN)) + u32::from(self.has(FIN))
    }
    /// Bytes on an Ethernet wire: payload + 40 B IP/TCP (+4 B MSS option) + 18 B Ethernet
    /// header and FCS, at least a 64 B frame (document 003's accounting).
    pub fn wire_bytes(&self) -> u32 {
        let opt = if self.mss.is_some() { 4 } else { 0 };
        (self.len + HEADER_BYTES + opt + 18).max(64)
    }
}
