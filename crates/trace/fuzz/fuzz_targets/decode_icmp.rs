//! Any bytes as a frame of any link type through the ICMP destination-unreachable decoder
//! (the outer IP header, the ICMP header, the quoted IP and TCP headers, all cut anywhere):
//! a message or nothing, never a panic, and a quote is never longer than what was given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shortflow_trace::wire::{decode_unreachable, LinkType};

const LINKS: [u32; 8] = [0, 1, 101, 108, 113, 228, 229, 276];

fuzz_target!(|data: &[u8]| {
    let Some((&which, frame)) = data.split_first() else { return };
    let link = LinkType::from_code(LINKS[usize::from(which % 8)]);
    if let Some(msg) = decode_unreachable(link, frame) {
        // The 8 quoted bytes (ports, sequence number) and an IP header must have been there.
        assert!(frame.len() >= 20 + 8 + 20 + 8, "decoded from {} bytes", frame.len());
        let _ = (msg.reason, msg.quoted.flags);
    }
});
