//! Prints what a scenario's capture point sees, tcpdump-style:
//! `cargo run -p shortflow-sim --example timeline -- SCENARIO.toml [key=value ...]`

use shortflow_sim::packet::{ACK, FIN, PSH, SYN};
use shortflow_sim::{simulate, RunOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: timeline SCENARIO.toml [key=value ...]");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(path).expect("read scenario");
    let opts = RunOptions { capture: true, timeline: false, totals_only: false };
    let (report, capture, _) = match simulate(&text, path, &args[1..], opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    // Relative sequence numbers: each side's from its SYN (or SYN/ACK).
    let (mut cbase, mut sbase) = (None::<u32>, None::<u32>);
    for (t, s) in &capture.records {
        if s.flags & SYN != 0 {
            *(if s.from_client { &mut cbase } else { &mut sbase }) = Some(s.seq);
        }
        let (cb, sb) = (cbase.unwrap_or(0), sbase.unwrap_or(0));
        let (own, peer) = if s.from_client { (cb, sb) } else { (sb, cb) };
        let flags: String =
            [(SYN, 'S'), (FIN, 'F'), (PSH, 'P'), (ACK, '.')].iter().filter(|(f, _)| s.flags & f != 0).map(|&(_, c)| c).collect();
        let sack: Vec<String> =
            s.sack.as_slice().iter().map(|(l, r)| format!("{}:{}", l.wrapping_sub(peer), r.wrapping_sub(peer))).collect();
        println!(
            "{:>10.6} {} {:<3} {}:{}({}) ack {} win {}{}",
            t.as_secs_f64(),
            if s.from_client { "c>s" } else { "s>c" },
            flags,
            s.seq.wrapping_sub(own),
            s.seq.wrapping_sub(own).wrapping_add(s.len),
            s.len,
            s.ack.wrapping_sub(peer),
            s.window,
            if sack.is_empty() { String::new() } else { format!(" sack {}{}", if s.dsack { "D " } else { "" }, sack.join(" ")) }
        );
    }
    println!("{}", serde_json::to_string_pretty(&report.connections).unwrap());
}
