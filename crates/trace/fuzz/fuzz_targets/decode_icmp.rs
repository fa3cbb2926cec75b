//! Any bytes as a frame of any link type through the ICMP destination-unreachable decoder
//! (the outer IP header, the ICMP header, the quoted IP and TCP headers, all cut anywhere):
//! a message or nothing, never a panic, and a quote is never longer than what was given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shortflow_trace::wire::{decode_unreachable, LinkType};

/// Every link type the decoder reads (the first eight in the order the seeds were made for).
const LINKS: [u32; 21] = [0, 1, 101, 108, 113, 228, 229, 276, 9, 51, 104, 105, 117, 119, 127, 163, 166, 192, 204, 205, 239];

fuzz_target!(|data: &[u8]| {
    let Some((&which, frame)) = data.split_first() else { return };
    let link = LinkType::from_code(LINKS[usize::from(which) % LINKS.len()]);
    if let Some(msg) = decode_unreachable(link, frame) {
        // The 8 quoted bytes (ports, sequence number) and an IP header must have been there.
        assert!(frame.len() >= 20 + 8 + 20 + 8, "decoded from {} bytes", frame.len());
        let _ = (msg.reason, msg.quoted.flags);
    }
});
