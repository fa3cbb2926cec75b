//! `shortflow-netem`: the testbed's link, run in the router namespace. iptables sends the
//! forwarded packets of each direction to an NFQUEUE (forward = client → server on queue N,
//! reverse on N+1); this program holds each one for its direction's one-way delay and then
//! accepts it, or drops it when a scripted drop or the seeded loss says so. The kernel still
//! routes; only the verdict's timing is ours. Rate limits are `tbf` on the veths, not here.
//!
//! Prints `ready` on stdout once bound; on SIGTERM/SIGINT writes its statistics (JSON) to
//! `--stats` and exits 0.

mod classify;
mod clock;
mod emulator;
mod script;
mod stats;

use clap::Parser;
use std::process::ExitCode;

use classify::Kind;
use script::{Dir, DropScript, LossModel};

#[derive(Parser, Debug)]
#[command(name = "shortflow-netem", version, about = "NFQUEUE link emulator: one-way delay, seeded loss, scripted drops")]
struct Args {
    /// Queue number of the forward (client → server) direction; reverse uses this + 1.
    #[arg(long, default_value_t = 0)]
    queue: u16,
    /// One-way delay client → server (e.g. 50ms).
    #[arg(long, default_value = "0ms")]
    delay_forward: String,
    /// One-way delay server → client.
    #[arg(long, default_value = "0ms")]
    delay_reverse: String,
    /// Probability that a forward packet is lost (Bernoulli, seeded).
    #[arg(long, default_value_t = 0.0)]
    loss_forward: f64,
    /// Probability that a reverse packet is lost.
    #[arg(long, default_value_t = 0.0)]
    loss_reverse: f64,
    /// Seed of the loss generator: same seed and packets, same losses.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Scripted drop DIR:KIND:N (DIR forward|reverse, KIND syn|synack|ack|data, N the
    /// 1-based occurrence in that direction, retransmissions counted). Repeatable.
    #[arg(long = "drop", value_name = "DIR:KIND:N")]
    drops: Vec<String>,
    /// Busy-wait this long before each release instead of sleeping (precision).
    #[arg(long, default_value = "300us")]
    spin: String,
    /// SCHED_FIFO priority (0: stay at normal priority).
    #[arg(long, default_value_t = 50)]
    rt_priority: i32,
    /// Where to write the statistics JSON when stopped.
    #[arg(long)]
    stats: Option<std::path::PathBuf>,
}

fn parse_drop(spec: &str) -> Result<(Dir, Kind, u32), String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let [dir, kind, nth] = parts[..] else {
        return Err(format!("--drop {spec:?}: expected DIR:KIND:N, e.g. forward:syn:1"));
    };
    let dir = match dir {
        "forward" => Dir::Forward,
        "reverse" => Dir::Reverse,
        _ => return Err(format!("--drop {spec:?}: direction must be forward or reverse")),
    };
    let kind = match kind {
        "syn" => Kind::Syn,
        "synack" => Kind::SynAck,
        "ack" => Kind::PureAck,
        "data" => Kind::Data,
        _ => return Err(format!("--drop {spec:?}: kind must be syn, synack, ack or data")),
    };
    let nth: u32 = nth.parse().ok().filter(|&n| n >= 1).ok_or_else(|| format!("--drop {spec:?}: N must be a whole number ≥ 1"))?;
    Ok((dir, kind, nth))
}

fn config(args: &Args) -> Result<emulator::Config, String> {
    let mut script = DropScript::default();
    for spec in &args.drops {
        let (dir, kind, nth) = parse_drop(spec)?;
        script.add(dir, kind, nth);
    }
    for (name, p) in [("--loss-forward", args.loss_forward), ("--loss-reverse", args.loss_reverse)] {
        if !(0.0..=1.0).contains(&p) {
            return Err(format!("{name} {p}: a probability is between 0 and 1"));
        }
    }
    let delay = |name: &str, s: &str| {
        shortflow_scenario::units::duration_ns(s).map_err(|e| e.for_subject(name).to_string())
    };
    Ok(emulator::Config {
        queue: args.queue,
        delay_ns: [delay("--delay-forward", &args.delay_forward)?, delay("--delay-reverse", &args.delay_reverse)?],
        spin_ns: delay("--spin", &args.spin)?,
        loss: LossModel::new(script, args.loss_forward, args.loss_reverse, args.seed),
    })
}

fn main() -> ExitCode {
    let args = Args::parse();
    let cfg = match config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("shortflow-netem: {e}");
            return ExitCode::from(2);
        }
    };
    clock::die_with_parent();
    if args.rt_priority > 0 {
        if let Err(e) = clock::go_realtime(args.rt_priority) {
            eprintln!("shortflow-netem: warning: no real-time priority ({e}); releases may drift under load");
        }
    }
    match emulator::run(cfg) {
        Ok(stats) => {
            let text = stats.to_json().to_string();
            match &args.stats {
                Some(path) => {
                    if let Err(e) = std::fs::write(path, text) {
                        eprintln!("shortflow-netem: cannot write {}: {e}", path.display());
                        return ExitCode::from(1);
                    }
                }
                None => println!("{text}"),
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("shortflow-netem: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_specs() {
        assert_eq!(parse_drop("forward:syn:1"), Ok((Dir::Forward, Kind::Syn, 1)));
        assert_eq!(parse_drop("reverse:data:3"), Ok((Dir::Reverse, Kind::Data, 3)));
        assert!(parse_drop("forward:syn:0").is_err());
        assert!(parse_drop("up:syn:1").is_err());
        assert!(parse_drop("forward:fin:1").is_err());
        assert!(parse_drop("forward:syn").is_err());
    }
}
