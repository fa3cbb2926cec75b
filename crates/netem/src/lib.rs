//! `shortflow-netem`: the testbed's link, run in the router namespace. iptables sends the
//! forwarded packets of each direction to an NFQUEUE (forward = client → server on queue N,
//! reverse on N+1); this program holds each one until the link would deliver it and then
//! accepts it, or drops it when a scripted drop, the seeded loss or the router's queue says
//! so. The kernel still routes; only the verdict's timing is ours.
//!
//! `--scenario FILE` (what the testbed runs) builds the link from a scenario file, resolved
//! by the one scenario model (see [`scenario`]): the simulator's own ports (rate, queue,
//! delays), scripted drops and seeded random loss (Bernoulli or Gilbert-Elliott), so each
//! packet is released when the simulator's path would deliver it and the emulator is also
//! the rate limit (no tbf). By hand, `--delay-*`, `--loss-*`, `--drop` and `--rate` with
//! `--serialize-hops N` hold each packet its direction's delay plus N serialization times,
//! with no rate limit of its own (put tbf behind it for one).
//!
//! Prints `ready` on stdout once bound; on SIGTERM/SIGINT writes its statistics (JSON) to
//! `--stats` and exits 0.

mod emulator;
mod nfqueue;
pub mod scenario;
mod stats;

use clap::Parser;
use rand::SeedableRng;
use std::ffi::OsString;

use shortflow_scenario::units::UnitError;
use shortflow_scenario::ScenarioError;
use shortflow_sim::loss::LossModel;
use shortflow_sim::scenario::{DropConfig, LossConfig, RandomLossConfig};

#[derive(Parser, Debug)]
#[command(name = "shortflow-netem", version, about = "NFQUEUE link emulator: one-way delay, seeded loss, scripted drops")]
struct Args {
    /// Scenario file (TOML): the path's delays, rate, scripted drops and random loss come
    /// from it, resolved as the simulator resolves it (replaces --delay-*, --loss-*, --seed,
    /// --drop, --rate and --serialize-hops).
    #[arg(long, value_name = "FILE",
          conflicts_with_all = ["delay_forward", "delay_reverse", "loss_forward", "loss_reverse", "seed", "drops", "rate", "serialize_hops"])]
    scenario: Option<std::path::PathBuf>,
    /// Override a scenario key, as `shortflow simulate --set` (e.g. path.rtt=100ms). Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "scenario")]
    set: Vec<String>,
    /// A scenario of connection vectors (workload kind "abt"): the a-b-t client's source
    /// port of the first vector in start order, each next one a port higher. Each
    /// connection then runs over its vector's own RTT (`r`), its delay beyond path.rtt
    /// added to its packets, as the simulator does.
    #[arg(long, value_name = "PORT", requires = "scenario")]
    abt_first_port: Option<u16>,
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
    /// Scripted drop KIND:N, as a scenario's `[drop]` table names it: KIND syn (client
    /// SYNs), synack, ack (client pure ACKs), data (server data), client_data; N the 1-based
    /// occurrence of that kind, retransmissions counted. Repeatable.
    #[arg(long = "drop", value_name = "KIND:N")]
    drops: Vec<String>,
    /// The path's rate (e.g. 10Mbit), for `--serialize-hops`.
    #[arg(long)]
    rate: Option<String>,
    /// Add this many serialization times of each packet (IP length + 18 B Ethernet header
    /// and FCS, the simulator's accounting, at `--rate`) to its hold: the links of the
    /// simulator's path that tbf does not serialize (0: none).
    #[arg(long, default_value_t = 0)]
    serialize_hops: u32,
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

/// What is wrong with an option's value; the message names the option and the value.
#[derive(Debug, thiserror::Error)]
pub enum OptionError {
    #[error("--drop {0:?}: expected KIND:N, e.g. syn:1")]
    DropShape(String),
    #[error("--drop {0:?}: kind must be syn, synack, ack, data or client_data")]
    DropKind(String),
    #[error("--drop {0:?}: N must be a whole number ≥ 1")]
    DropOccurrence(String),
    #[error("{option} {value}: a probability is between 0 and 1")]
    Probability { option: &'static str, value: f64 },
    #[error("--serialize-hops needs --rate (above 0)")]
    HopsWithoutRate,
    #[error(transparent)]
    Unit(#[from] UnitError),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

/// Adds `KIND:N` to the scripted drops.
fn add_drop(script: &mut DropConfig, spec: &str) -> Result<(), OptionError> {
    let Some((kind, nth)) = spec.split_once(':') else {
        return Err(OptionError::DropShape(spec.into()));
    };
    let list = match kind {
        "syn" => &mut script.syn,
        "synack" => &mut script.synack,
        "ack" => &mut script.ack,
        "data" => &mut script.data,
        "client_data" => &mut script.client_data,
        _ => return Err(OptionError::DropKind(spec.into())),
    };
    let nth: u32 = nth.parse().ok().filter(|&n| n >= 1).ok_or_else(|| OptionError::DropOccurrence(spec.into()))?;
    list.push(nth);
    Ok(())
}

fn config(args: &Args) -> Result<emulator::Config, OptionError> {
    let spin_ns = shortflow_scenario::units::duration_ns(&args.spin).map_err(|e| OptionError::from(e.for_subject("--spin")))?;
    if let Some(path) = &args.scenario {
        let sc = scenario::read(path, &args.set)?;
        let link = scenario::link(&sc)?;
        // Drop-tail queues draw nothing; the generator is there because a port wants one.
        let rng = rand_chacha::ChaCha8Rng::seed_from_u64(sc.seed);
        return Ok(emulator::Config {
            queue: args.queue,
            spin_ns,
            loss: link.loss,
            timing: emulator::Timing::Path { topology: link.topology, rng: Box::new(rng) },
            conns: Default::default(),
            flow_delays: match args.abt_first_port {
                Some(port) => scenario::flow_delays(&sc, port)?,
                None => Default::default(),
            },
        });
    }
    let mut script = DropConfig::default();
    for spec in &args.drops {
        add_drop(&mut script, spec)?;
    }
    for (name, p) in [("--loss-forward", args.loss_forward), ("--loss-reverse", args.loss_reverse)] {
        if !(0.0..=1.0).contains(&p) {
            return Err(OptionError::Probability { option: name, value: p });
        }
    }
    let delay =
        |name: &str, s: &str| shortflow_scenario::units::duration_ns(s).map_err(|e| OptionError::from(e.for_subject(name)));
    let random = RandomLossConfig {
        forward: LossConfig::Bernoulli(args.loss_forward),
        reverse: LossConfig::Bernoulli(args.loss_reverse),
        seed: args.seed,
        // The command line's losses are per direction; per-kind losses come with --scenario.
        kinds: Default::default(),
        per_connection: false,
    };
    let rate_bps = match &args.rate {
        None => None,
        Some(r) => Some(shortflow_scenario::units::rate_bps(r).map_err(|e| OptionError::from(e.for_subject("--rate")))?),
    };
    if args.serialize_hops > 0 && !rate_bps.is_some_and(|r| r > 0) {
        return Err(OptionError::HopsWithoutRate);
    }
    Ok(emulator::Config {
        queue: args.queue,
        timing: emulator::Timing::Hold {
            serialize: rate_bps.filter(|_| args.serialize_hops > 0).map(|r| (r, args.serialize_hops)),
            delay_ns: [delay("--delay-forward", &args.delay_forward)?, delay("--delay-reverse", &args.delay_reverse)?],
        },
        spin_ns,
        conns: Default::default(),
        flow_delays: Default::default(),
        loss: LossModel::new(script, random),
    })
}

/// The emulator's command line: parses `argv` (program name first) and runs until
/// SIGTERM/SIGINT; returns the exit status. The `shortflow-netem` binary and the Python
/// package (which runs it from its extension module, so a wheel needs no binary) both
/// come here.
pub fn run_cli(argv: impl IntoIterator<Item = OsString>) -> u8 {
    let args: Args = match shortflow_sys::parse_args(argv) {
        Ok(a) => a,
        Err(status) => return status,
    };
    let cfg = match config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("shortflow-netem: {e}");
            return 2;
        }
    };
    shortflow_sys::die_with_parent();
    if args.rt_priority > 0 {
        if let Err(e) = shortflow_sys::go_realtime(args.rt_priority) {
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
                        return 1;
                    }
                }
                None => println!("{text}"),
            }
            0
        }
        Err(e) => {
            eprintln!("shortflow-netem: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_specs_use_the_scenario_names() {
        let mut d = DropConfig::default();
        add_drop(&mut d, "syn:1").unwrap();
        add_drop(&mut d, "data:3").unwrap();
        add_drop(&mut d, "client_data:2").unwrap();
        assert_eq!((d.syn, d.data, d.client_data), (vec![1], vec![3], vec![2]));
        let mut d = DropConfig::default();
        assert!(matches!(add_drop(&mut d, "syn:0"), Err(OptionError::DropOccurrence(_))));
        assert!(matches!(add_drop(&mut d, "fin:1"), Err(OptionError::DropKind(_))));
        assert!(matches!(add_drop(&mut d, "syn"), Err(OptionError::DropShape(_))));
        assert!(matches!(add_drop(&mut d, "forward:syn:1"), Err(OptionError::DropKind(_))));
        assert_eq!(add_drop(&mut d, "syn:x").unwrap_err().to_string(), "--drop \"syn:x\": N must be a whole number ≥ 1");
    }

    fn parse(argv: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("shortflow-netem").chain(argv.iter().copied()))
    }

    #[test]
    fn scenario_refuses_the_flags_it_replaces_naming_both() {
        for flag in [
            &["--drop", "syn:1"][..],
            &["--seed", "3"],
            &["--delay-forward", "5ms"],
            &["--loss-reverse", "0.1"],
            &["--rate", "10Mbit"],
        ] {
            let argv: Vec<&str> = ["--scenario", "s.toml"].iter().chain(flag).copied().collect();
            let e = parse(&argv).unwrap_err().to_string();
            assert!(e.contains("--scenario") && e.contains(flag[0]), "{e}");
        }
        // What a scenario does not say stays an option beside it.
        let a = parse(&["--scenario", "s.toml", "--set", "path.rtt=10ms", "--queue", "4", "--spin", "100us"]).unwrap();
        assert_eq!((a.queue, a.set.as_slice()), (4, &["path.rtt=10ms".to_string()][..]));
        let e = parse(&["--set", "path.rtt=10ms"]).unwrap_err().to_string();
        assert!(e.contains("--scenario"), "{e}");
    }

    #[test]
    fn a_scenario_file_gives_the_emulators_config() {
        let dir = std::env::temp_dir().join(format!("sf-netem-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.toml");
        std::fs::write(&path, "[path]\nrtt = \"40ms\"\nbandwidth = \"5Mbit\"\n[drop]\nsyn = [1]\n").unwrap();
        let p = path.to_str().unwrap();
        let cfg = config(&parse(&["--scenario", p, "--set", "path.rtt=60ms", "--queue", "2"]).unwrap()).unwrap();
        assert_eq!(cfg.queue, 2);
        let emulator::Timing::Path { topology, .. } = &cfg.timing else { panic!("a scenario gives the simulator's path") };
        assert_eq!(topology.ports.iter().map(|p| p.rate_bps).collect::<Vec<_>>(), [5_000_000; 4]);
        assert_eq!(topology.pair_rtt, [shortflow_sim::time::Duration(60_000_000)]);
        let mut loss = cfg.loss;
        assert_eq!(loss.decide_kind(true, Some(shortflow_sim::loss::Kind::Syn)), shortflow_sim::loss::Fate::Scripted);
        // Errors name the file and the key, overrides included.
        let e = config(&parse(&["--scenario", p, "--set", "path.rtt=fast"]).unwrap()).err().unwrap().to_string();
        assert!(e.starts_with(&format!("{p}: path.rtt: ")), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
