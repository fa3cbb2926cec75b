//! The command line of `shortflow-synopt`, the SYN optimizer daemon (document 000's interface:
//! `-d DELAY_MS -r RETRIES (-c | -s | --router) -p PORT[,PORT…]`).
//!
//! Start-up: refuses a port another daemon of the same mode protects in this network
//! namespace, deletes the nftables tables left by dead runs (`inet sf-<id>-synopt`, dead
//! when no daemon holds that run's lock), takes its own run id, binds its NFLOG group
//! (refused when another process holds it), creates its table (one transaction), prints
//! `ready <run id>`. Exit (SIGINT, SIGTERM, SIGHUP, an error): deletes its table and
//! prints/writes its counters. The rules only copy packets (NFLOG), so a stopped, hung or
//! killed daemon never delays traffic. The table belongs to the daemon's netlink socket
//! (libnftables, `flags owner`), so the kernel deletes it even after SIGKILL; where that is
//! not possible (no libnftables, a kernel before 5.12, `--unowned-table`) a SIGKILL leaves
//! the table, which copies to nobody until the next start or `shortflow testbed clean`
//! deletes it.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{ArgGroup, Parser};
use serde_json::json;

use crate::daemon::Daemon;
use crate::error::{OptionError, PrefixLenError, RunError};
use crate::observe::Observer;
use crate::resend::Sender;
use crate::rules::{self, Installed, Mode, RuleParams};
use crate::stats::{self, Stats};
use crate::sys::{self, PortLock, RunLock};
use crate::table::{Config, Table};

#[derive(Parser, Debug)]
#[command(
    name = "shortflow-synopt",
    version,
    about = "SYN optimizer: resend a lost SYN or SYN/ACK after DELAY_MS instead of the kernel's 1 s"
)]
#[command(group(ArgGroup::new("mode").required(true).args(["client", "server", "router"])))]
struct Args {
    /// Wait this many milliseconds for an answer before each resend.
    #[arg(short = 'd', long = "delay", value_name = "DELAY_MS")]
    delay_ms: u64,
    /// Resend each copy at most this many times.
    #[arg(short = 'r', long = "retries", value_name = "RETRIES")]
    retries: u32,
    /// Client side: keep outgoing SYNs, watch incoming SYN/ACKs.
    #[arg(short = 'c', long)]
    client: bool,
    /// Server side: keep outgoing SYN/ACKs, watch the client's ACK (cannot see lost SYNs).
    #[arg(short = 's', long)]
    server: bool,
    /// Router: keep the SYNs and SYN/ACKs it forwards for the hosts behind it.
    #[arg(long)]
    router: bool,
    /// Server port(s) to protect, comma-separated.
    #[arg(short = 'p', long = "port", value_name = "PORT[,PORT…]", value_delimiter = ',', required = true)]
    ports: Vec<u16>,
    /// Write the counters as JSON here at exit (and on SIGUSR1).
    #[arg(long, value_name = "FILE")]
    json_stats: Option<PathBuf>,
    /// Copies held at most; beyond, new ones are shed (not taken, counted).
    #[arg(long, default_value_t = 65_536)]
    max_held: usize,
    /// Copies held at most per source prefix of the connection's initiator (0: no budget);
    /// beyond, the prefix's newest handshakes are shed, so a flood from a few prefixes
    /// cannot take the protection away from clients elsewhere.
    #[arg(long, default_value_t = 1024)]
    prefix_budget: usize,
    /// Prefix lengths grouping initiators for --prefix-budget: IPv4,IPv6.
    #[arg(long, value_name = "V4,V6", default_value = "24,48", value_parser = parse_prefix_lens)]
    prefix_len: (u8, u8),
    /// NFLOG group the rules copy packets to (one daemon per group and namespace).
    #[arg(long, alias = "queue-num", default_value_t = 7100)]
    group: u16,
    /// Mark (SO_MARK) of our resends, excluded from our rules.
    #[arg(long, default_value_t = 0x5f0e)]
    mark: u32,
    /// Receive buffer for the copies, in kB: a burst beyond it loses copies (counted as
    /// bypassed), never packets.
    #[arg(long, default_value_t = 8192)]
    rcvbuf_kb: usize,
    /// SCHED_FIFO priority for precise resends (0: normal priority).
    #[arg(long, default_value_t = 10)]
    rt_priority: i32,
    /// Busy-wait this many µs before each deadline instead of sleeping.
    #[arg(long, default_value_t = 200)]
    spin_us: u64,
    /// IPv4 only (no IPv6 copies, no IPv6 resends).
    #[arg(long)]
    no_ipv6: bool,
    /// Fail-open is the only behaviour: the rules copy packets (NFLOG) and never hold them,
    /// so a dead, hung or overloaded daemon never delays traffic. Accepted for the
    /// document's interface; there is no fail-closed mode.
    #[arg(long, default_value_t = true)]
    fail_open: bool,
    /// Create the table with the `nft` command, not owned by the daemon: after a SIGKILL it
    /// stays (copying to nobody) until the next start or `shortflow testbed clean`. By
    /// default the table belongs to the daemon's netlink socket (libnftables, Linux 5.12+)
    /// and the kernel deletes it when the daemon dies in any way; without libnftables or on
    /// an older kernel the daemon falls back to this and says so.
    #[arg(long)]
    unowned_table: bool,
}

fn parse_prefix_lens(s: &str) -> Result<(u8, u8), PrefixLenError> {
    let (a, b) = s.split_once(',').ok_or_else(|| PrefixLenError::NoComma(s.into()))?;
    let len = |t: &str| t.trim().parse::<u8>().map_err(|_| PrefixLenError::NotANumber(t.into()));
    let (v4, v6) = (len(a)?, len(b)?);
    if v4 > 32 || v6 > 128 {
        return Err(PrefixLenError::OutOfRange(s.into()));
    }
    Ok((v4, v6))
}

fn mode(a: &Args) -> Mode {
    if a.client {
        Mode::Client
    } else if a.server {
        Mode::Server
    } else {
        Mode::Router
    }
}

fn check(a: &Args) -> Result<(), OptionError> {
    if a.delay_ms == 0 {
        return Err(OptionError::ZeroDelay);
    }
    if a.ports.contains(&0) {
        return Err(OptionError::PortZero);
    }
    if a.rcvbuf_kb == 0 {
        return Err(OptionError::Zero { option: "--rcvbuf-kb" });
    }
    if a.max_held == 0 {
        return Err(OptionError::Zero { option: "--max-held" });
    }
    Ok(())
}

fn counters_json(d: &Daemon, head: &serde_json::Value) -> serde_json::Value {
    let mut v = stats::to_json(&d.stats, &d.table.counters, d.table.held(), sys::rss_kb(), head.clone());
    v["pid"] = std::process::id().into();
    v
}

fn write_stats(path: &Option<PathBuf>, d: &Daemon, head: &serde_json::Value) {
    let Some(path) = path else { return };
    let v = counters_json(d, head);
    // Written whole then renamed: a reader never sees half a file.
    let tmp = path.with_extension("tmp");
    if let Err(e) = std::fs::write(&tmp, v.to_string() + "\n").and_then(|()| std::fs::rename(&tmp, path)) {
        eprintln!("shortflow-synopt: cannot write {}: {e}", path.display());
    }
}

/// The daemon's command line: parses `argv` (program name first) and runs until SIGINT,
/// SIGTERM or SIGHUP; returns the exit status. The `shortflow-synopt` binary and the Python
/// package (which runs it from its extension module, so a wheel needs no binary) both come
/// here.
pub fn run_cli(argv: impl IntoIterator<Item = OsString>) -> u8 {
    let args: Args = match shortflow_sys::parse_args(argv) {
        Ok(a) => a,
        Err(status) => return status,
    };
    if let Err(e) = check(&args) {
        eprintln!("shortflow-synopt: {e}");
        return 2;
    }
    match run(&args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("shortflow-synopt: {e}");
            1
        }
    }
}

/// IPv6 too, unless `--no-ipv6` or this kernel has no IPv6 (no /proc/net/if_inet6).
fn ipv6(args: &Args) -> bool {
    !args.no_ipv6 && std::path::Path::new("/proc/net/if_inet6").exists()
}

/// Deletes the tables of earlier runs whose daemon is gone (SIGKILL, crash).
fn remove_stale_tables() -> Result<(), RunError> {
    for t in rules::remove_stale(RunLock::is_alive)? {
        eprintln!("shortflow-synopt: removed the nftables table of a dead run: {t}");
    }
    Ok(())
}

/// Prints the counters, and writes them when `--json-stats` was given.
fn reporter(path: Option<PathBuf>, head: serde_json::Value) -> Box<dyn Fn(&Daemon)> {
    Box::new(move |d| {
        eprintln!("shortflow-synopt: {}", stats::line(&d.stats, &d.table.counters, d.table.held()));
        write_stats(&path, d, &head);
    })
}

fn run(args: &Args) -> Result<(), RunError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(RunError::NotRoot);
    }
    // SIGINT/SIGTERM/SIGHUP stop the daemon (rules removed on the way out); SIGUSR1 asks
    // for the counters.
    shortflow_sys::on_signals(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP], &[libc::SIGUSR1]);
    let mode = mode(args);
    let mut port_locks = vec![];
    for &port in &args.ports {
        match PortLock::take(mode.name(), port) {
            Ok(l) => port_locks.push(l),
            Err(None) => return Err(RunError::PortTaken { port, mode: mode.name() }),
            Err(Some(e)) => return Err(RunError::PortLock(e)),
        }
    }
    let ipv6 = ipv6(args);
    remove_stale_tables()?;
    let run_id = sys::fresh_run_id();
    let lock = RunLock::take(&run_id).map_err(RunError::RunLock)?;
    let sender = Sender::open(args.mark, ipv6).map_err(RunError::RawSocket)?;
    // The group is bound before the rules exist: every copy has a reader.
    let mut obs = Observer::open(args.group, args.rcvbuf_kb.saturating_mul(1024))
        .map_err(|source| RunError::Group { group: args.group, source })?;
    let params =
        RuleParams { mode, ports: args.ports.clone(), group: args.group, mark: args.mark, table: RunLock::name(&run_id), ipv6 };
    let installed = Installed::install(&params, !args.unowned_table)?;
    if let Some(why) = installed.unowned() {
        if !args.unowned_table {
            eprintln!(
                "shortflow-synopt: note: table {} is not owned by the daemon ({why}): after a SIGKILL it stays until \
                 the next start or `shortflow testbed clean`",
                params.table
            );
        }
    }
    if args.rt_priority > 0 {
        if let Err(e) = shortflow_sys::go_realtime(args.rt_priority) {
            eprintln!("shortflow-synopt: warning: no real-time priority ({e}); resends may be late under load");
        }
    }
    let config = Config {
        delay_ns: args.delay_ms * 1_000_000,
        retries: args.retries,
        max_held: args.max_held,
        prefix_budget: args.prefix_budget,
        prefix_len_v4: args.prefix_len.0,
        prefix_len_v6: args.prefix_len.1,
    };
    let head = json!({ "run_id": run_id, "mode": mode.name(), "delay_ms": args.delay_ms, "retries": args.retries,
                       "max_held": args.max_held, "prefix_budget": args.prefix_budget,
                       "prefix_len": [args.prefix_len.0, args.prefix_len.1], "ports": args.ports,
                       "group": args.group, "table_owned": installed.unowned().is_none() });
    let mut d = Daemon {
        mode,
        table: Table::new(config),
        sender,
        spin_ns: args.spin_us * 1000,
        stats: Stats::default(),
        report: reporter(args.json_stats.clone(), head.clone()),
        status: {
            let head = head.clone();
            Box::new(move |d| counters_json(d, &head).to_string())
        },
    };
    println!("ready {run_id} ({} rules, NFLOG group {})", installed.count(), args.group);
    let result = d.run(&mut obs, &lock);
    drop(installed);
    (d.report)(&d);
    result.map_err(RunError::Nflog)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Result<Args, clap::Error> {
        let base = ["shortflow-synopt", "-d", "200", "-r", "3", "-c", "-p", "80"];
        Args::try_parse_from(base.iter().chain(extra))
    }

    /// Each refusal is its own variant and keeps the message the daemon prints.
    #[test]
    fn typed_refusals_keep_their_messages() {
        assert_eq!(check(&args(&[]).unwrap()), Ok(()));
        let zero_delay = Args { delay_ms: 0, ..args(&[]).unwrap() };
        assert_eq!(check(&zero_delay), Err(OptionError::ZeroDelay));
        assert_eq!(OptionError::ZeroDelay.to_string(), "-d: the delay must be at least 1 ms");
        let e = check(&args(&["--max-held", "0"]).unwrap()).unwrap_err();
        assert_eq!(e, OptionError::Zero { option: "--max-held" });
        assert_eq!(e.to_string(), "--max-held: must be at least 1");
        assert_eq!(check(&args(&["-p", "0"]).unwrap()), Err(OptionError::PortZero));
        let taken = RunError::PortTaken { port: 80, mode: "client" }.to_string();
        assert!(taken.starts_with("port 80 is already protected by a running shortflow-synopt in client mode"), "{taken}");
    }

    #[test]
    fn prefix_lengths() {
        assert_eq!(parse_prefix_lens("24, 48"), Ok((24, 48)));
        assert_eq!(parse_prefix_lens("24"), Err(PrefixLenError::NoComma("24".into())));
        assert_eq!(parse_prefix_lens("x,48"), Err(PrefixLenError::NotANumber("x".into())));
        assert_eq!(parse_prefix_lens("33,48").unwrap_err().to_string(), "33,48: IPv4 prefixes are 0-32 bits, IPv6 0-128");
        // clap puts the typed error's message beside the option.
        let e = args(&["--prefix-len", "24"]).unwrap_err().to_string();
        assert!(e.contains("expected V4,V6 prefix lengths"), "{e}");
    }
}
