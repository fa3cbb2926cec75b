//! Any text as a file of tmix connection vectors: the reader returns vectors or an error
//! naming the line, never panics; what it reads, written again, reads back as written.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shortflow_scenario::abt::{format, parse, writable, ConnVector, Units};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(vectors) = parse(&text) else { return };
    let again = parse(&format(&vectors)).expect("what was read, written, reads back");
    let written: Vec<ConnVector> = vectors
        .iter()
        .map(|v| match &v.units {
            Units::Sequential(e) => ConnVector { units: Units::Sequential(writable(e)), ..v.clone() },
            _ => v.clone(),
        })
        .collect();
    assert_eq!(again.len(), written.len());
    for (a, b) in again.iter().zip(&written) {
        // Loss fractions go through the text's six decimals.
        assert_eq!((a.start_us, a.id, a.window, a.min_rtt_us, &a.units), (b.start_us, b.id, b.window, b.min_rtt_us, &b.units));
    }
});
