//! Every message the readers give is plain words, located in the file: thousands of
//! damaged pcap and pcapng files (random bytes overwritten, lengths cut, blocks spliced)
//! must give `FILE: byte N: what` without the parser's internals or byte dumps. The fuzz
//! targets (`make fuzz`) check the same on whatever libFuzzer finds.

// The analyzer's own test helpers (pcaps of scripted segments, analysis of bytes), and the
// generator's traces.
#[path = "../../trace/tests/common.rs"]
mod common;
mod generated;

use generated::{generated, GenOptions};
use shortflow_trace::{analyze_capture, CaptureReader, LinkType, Options, Progress};
use shortflow_wire::capture::{ByteOrder, PcapWriter, SegmentOptions, TsResolution};

/// A small deterministic generator (xorshift64*): the test needs variety, not quality.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn assert_plain_words(name: &str, msg: &str) {
    assert!(msg.starts_with(&format!("{name}: byte ")), "not located: {msg}");
    for internal in ["Nom", "Error(", "Verify", "Incomplete(", "Some(", "[", "]", "\\x"] {
        assert!(!msg.contains(internal), "{internal:?} in {msg}");
    }
}

/// Reads `bytes` to the end; returns how many messages it gave, each checked.
fn read_all(name: &str, bytes: Vec<u8>) -> usize {
    match CaptureReader::from_bytes(name, bytes) {
        Err(e) => {
            assert_plain_words(name, &e.to_string());
            1
        }
        Ok(reader) => {
            let (_, _, _, stats) = analyze_capture(reader, 0, &Options::default(), &Progress::default());
            let msgs: Vec<String> = stats.error.iter().map(|e| e.to_string()).chain(stats.warnings).collect();
            for m in &msgs {
                assert_plain_words(name, m);
            }
            msgs.len()
        }
    }
}

fn damage(rng: &mut Rng, clean: &[u8]) -> Vec<u8> {
    let mut b = clean.to_vec();
    match rng.below(4) {
        // A few random bytes overwritten (lengths, types, options, magic).
        0 | 1 => {
            for _ in 0..1 + rng.below(6) {
                let at = rng.below(b.len());
                b[at] = rng.next() as u8;
            }
        }
        // Cut anywhere.
        2 => b.truncate(rng.below(b.len())),
        // A run of one value over a random stretch (a zeroed or 0xff'd sector).
        _ => {
            let at = rng.below(b.len());
            let len = (1 + rng.below(64)).min(b.len() - at);
            let v = if rng.below(2) == 0 { 0 } else { 0xff };
            b[at..at + len].fill(v);
        }
    }
    b
}

#[test]
fn damaged_captures_give_plain_located_messages() {
    let cfg = GenOptions { connections: 20, ..GenOptions::default() };
    let opts = SegmentOptions::default();
    let (pcap, _) = generated(
        &cfg,
        PcapWriter::pcap(Vec::new(), LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little, 65535).unwrap(),
        &opts,
    );
    let (pcapng, _) = generated(&cfg, PcapWriter::pcapng(Vec::new(), LinkType::Ethernet, 65535).unwrap(), &opts);
    let mut rng = Rng(0x5eed_1234_abcd_0042);
    let mut messages = 0;
    for _ in 0..1500 {
        messages += read_all("d.pcap", damage(&mut rng, &pcap));
        messages += read_all("d.pcapng", damage(&mut rng, &pcapng));
    }
    // Most damage is seen (a byte inside a payload is not an error): the test read messages.
    assert!(messages > 500, "{messages}");
    for text in [&b"hello, this is no capture"[..], &[0x00, 0xff, 0x10, 0x20, 0x30][..], &[][..]] {
        read_all("x.pcap", text.to_vec());
    }
}
