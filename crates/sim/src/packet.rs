//! A TCP segment as it travels through the simulated network: the header fields that
//! matter, with real 32-bit sequence numbers, plus which connection and direction it is.

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;

/// Bytes of IPv4 + TCP headers without options.
pub const HEADER_BYTES: u32 = 40;

/// SACK blocks (RFC 2018) as 32-bit wire sequence numbers, [left, right); a D-SACK
/// (RFC 2883) is the first block when it reports a duplicate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SackBlocks {
    pub n: u8,
    pub blocks: [(u32, u32); 4],
}

impl SackBlocks {
    pub fn as_slice(&self) -> &[(u32, u32)] {
        &self.blocks[..usize::from(self.n)]
    }
    pub fn push(&mut self, b: (u32, u32)) {
        if usize::from(self.n) < self.blocks.len() {
            self.blocks[usize::from(self.n)] = b;
            self.n += 1;
        }
    }
}

/// TCP options a SYN announces (RFC 7323 window scale and timestamps, RFC 2018 SACK-permitted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SynOptions {
    pub sack_permitted: bool,
    pub timestamps: bool,
    pub window_scale: Option<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub conn: u32,
    pub from_client: bool,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub len: u32,
    /// Advertised window in bytes, already a multiple of the sender's window scale (the
    /// pcap writes it shifted by that scale once both SYNs carried the option).
    pub window: u32,
    /// MSS option (SYN and SYN/ACK only).
    pub mss: Option<u16>,
    /// SYN and SYN/ACK options.
    pub syn_opts: SynOptions,
    /// The timestamps option (RFC 7323) rides on this segment (12 bytes with its padding).
    pub ts: bool,
    /// The option's values when it rides (on a SYN or SYN/ACK: when `syn_opts.timestamps`):
    /// the sender's millisecond clock, and the peer's TSval it echoes (RFC 7323 3, 4.3).
    pub tsval: u32,
    pub tsecr: u32,
    /// SACK blocks, D-SACK first (RFC 2018, RFC 2883).
    pub sack: SackBlocks,
    /// The first SACK block reports a duplicate (RFC 2883 D-SACK).
    pub dsack: bool,
    /// Handshake bookkeeping that stands for the timestamps' values (RFC 7323): which
    /// transmission of its SYN or SYN/ACK this is (1 = the first; 0 on other segments),
    /// and which transmission of the peer's SYN or SYN/ACK the timestamp echo carries
    /// (0: none). Linux tells a spurious handshake timeout and measures the handshake's RTT
    /// after a retransmission from the echo (tcp_try_undo_spurious_syn, tcp_rtt_tsopt_us).
    pub hs_sent: u8,
    pub hs_echo: u8,
}

impl Segment {
    /// A segment of connection 0 with only its direction, flags, sequence number and
    /// length set (the loss models' tests).
    #[cfg(test)]
    pub(crate) fn bare(from_client: bool, flags: u8, seq: u32, len: u32) -> Segment {
        Segment {
            conn: 0,
            from_client,
            seq,
            ack: 0,
            flags,
            len,
            window: 0,
            mss: None,
            syn_opts: Default::default(),
            ts: false,
            tsval: 0,
            tsecr: 0,
            sack: Default::default(),
            dsack: false,
            hs_sent: 0,
            hs_echo: 0,
        }
    }

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
    /// TCP option bytes, padded as Linux lays them out (tcp_options_write): MSS 4,
    /// timestamps 10 (+2: SACK-permitted rides in its padding, else 4 with NOPs), window
    /// scale 4 (NOP + 3), SACK 2 + 8 per block (+2 NOPs).
    pub fn option_bytes(&self) -> u32 {
        let mut n = if self.mss.is_some() { 4 } else { 0 };
        if self.ts || self.syn_opts.timestamps {
            n += 12;
        } else if self.syn_opts.sack_permitted {
            n += 4;
        }
        if self.syn_opts.window_scale.is_some() {
            n += 4;
        }
        if self.sack.n > 0 {
            n += 4 + 8 * u32::from(self.sack.n);
        }
        n
    }

    /// Bytes on an Ethernet wire: payload + 40 B IP/TCP + options + 18 B Ethernet header
    /// and FCS, at least a 64 B frame (document 003's accounting).
    pub fn wire_bytes(&self) -> u32 {
        (self.len + HEADER_BYTES + self.option_bytes() + 18).max(64)
    }
}
