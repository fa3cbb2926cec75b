//! The daemon's own iptables rules: which packets are copied to it, in which chain, marked
//! with the comment `sf-<runid>-synopt` so that leftovers of a crashed run can be found.
//!
//! Rules live in the `mangle` table and are appended, so we skip none of its other rules.
//!
//! Fail-open by construction: the target is NFLOG, which sends a *copy* of the packet to the
//! daemon's netlink group and lets the packet go on (a non-terminating target); nothing in
//! the kernel ever waits for the daemon, whether it runs, hangs or is gone. `--nflog-threshold
//! 1` sends each copy at once (the default batching would delay it up to its timeout).

use std::io;
use std::process::Command;

/// Where the daemon runs and which handshake packets it protects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Keeps outgoing SYNs (OUTPUT), watches incoming SYN/ACKs and RSTs (INPUT).
    Client,
    /// Keeps outgoing SYN/ACKs (OUTPUT), watches the client's ACK completing the handshake.
    Server,
    /// Keeps SYNs and SYN/ACKs forwarded for hosts behind it (FORWARD), watches the answers.
    Router,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Client => "client",
            Mode::Server => "server",
            Mode::Router => "router",
        }
    }
    pub fn keeps_syn(self) -> bool {
        matches!(self, Mode::Client | Mode::Router)
    }
    pub fn keeps_synack(self) -> bool {
        matches!(self, Mode::Server | Mode::Router)
    }
}

/// The firewall tool of one address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub fn tool(self) -> &'static str {
        match self {
            Family::V4 => "iptables",
            Family::V6 => "ip6tables",
        }
    }
}

/// What the rules need to know.
#[derive(Debug, Clone)]
pub struct RuleParams {
    pub mode: Mode,
    pub ports: Vec<u16>,
    /// NFLOG group the copies go to.
    pub group: u16,
    /// Our resends carry this mark (SO_MARK) and are excluded, so they are never queued.
    pub mark: u32,
    pub comment: String,
}

/// Packets of the handshake's first ACK: the 2nd to 6th packet of the connection in the
/// client → server direction (`connbytes`, which needs conntrack), so that a server's whole
/// ACK stream does not pass through user space.
const FIRST_ACKS: [&str; 12] = [
    "--tcp-flags",
    "SYN,ACK,RST",
    "ACK",
    "-m",
    "connbytes",
    "--connbytes",
    "2:6",
    "--connbytes-dir",
    "original",
    "--connbytes-mode",
    "packets",
    "",
];

/// Each rule as `[chain, match…]` without the target (appended by `rule_args`).
pub fn rule_specs(p: &RuleParams) -> Vec<Vec<String>> {
    let mut out = vec![];
    let s = |v: &[&str]| {
        v.iter()
            .filter(|x| !x.is_empty())
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
    };
    let not_ours = ["-m", "mark", "!", "--mark"];
    let mark = format!("{:#x}", p.mark);
    for port in &p.ports {
        let port = port.to_string();
        let (copy_chain, answer_chain) = match p.mode {
            Mode::Router => ("FORWARD", "FORWARD"),
            _ => ("OUTPUT", "INPUT"),
        };
        let mut add = |chain: &str, dir: &str, rest: &[&str], marked: bool| {
            let mut r = s(&[chain, "-p", "tcp", dir, &port]);
            r.extend(s(rest));
            if marked {
                r.extend(s(&not_ours));
                r.push(mark.clone());
            }
            out.push(r);
        };
        if p.mode.keeps_syn() {
            add(
                copy_chain,
                "--dport",
                &["--tcp-flags", "SYN,ACK,RST", "SYN"],
                true,
            );
            // The answers to a SYN: the SYN/ACK (in router mode also a copy to keep) or a RST.
            add(
                answer_chain,
                "--sport",
                &["--tcp-flags", "SYN,ACK,RST", "SYN,ACK"],
                false,
            );
            add(
                answer_chain,
                "--sport",
                &["--tcp-flags", "RST", "RST"],
                false,
            );
        }
        if p.mode == Mode::Server {
            add(
                copy_chain,
                "--sport",
                &["--tcp-flags", "SYN,ACK,RST", "SYN,ACK"],
                true,
            );
        }
        if p.mode.keeps_synack() {
            add(answer_chain, "--dport", &FIRST_ACKS, false);
            add(
                answer_chain,
                "--dport",
                &["--tcp-flags", "RST", "RST"],
                false,
            );
        }
    }
    out
}

/// The `iptables` arguments after the action (`-A`/`-D`) for one spec.
fn rule_args(spec: &[String], p: &RuleParams) -> Vec<String> {
    let mut a = vec![spec[0].clone()];
    a.extend(spec[1..].iter().cloned());
    a.extend(["-m", "comment", "--comment", &p.comment].map(String::from));
    a.extend(
        [
            "-j",
            "NFLOG",
            "--nflog-group",
            &p.group.to_string(),
            "--nflog-size",
            &crate::observe::COPY_RANGE.to_string(),
            "--nflog-threshold",
            "1",
        ]
        .map(String::from),
    );
    a
}

fn iptables(family: Family, args: &[String]) -> io::Result<()> {
    let out = Command::new(family.tool())
        .args(["-w", "-t", "mangle"])
        .args(args)
        .output()?;
    if out.status.success() {
        Ok(())
    } else {
        let msg = String::from_utf8_lossy(&out.stderr);
        Err(io::Error::other(format!(
            "`{} -t mangle {}` failed: {}",
            family.tool(),
            args.join(" "),
            msg.trim()
        )))
    }
}

/// Installed rules; removed when dropped (normal exit, error, panic unwinding).
#[derive(Debug)]
pub struct Installed {
    rules: Vec<(Family, Vec<String>)>,
}

impl Installed {
    /// Installs the rules of `p` for each family; on any failure removes what was added.
    pub fn install(p: &RuleParams, families: &[Family]) -> io::Result<Installed> {
        let mut done = Installed { rules: vec![] };
        for &f in families {
            for spec in rule_specs(p) {
                let args = rule_args(&spec, p);
                let mut add = vec!["-A".to_string()];
                add.extend(args.iter().cloned());
                iptables(f, &add)?; // on error `done` drops and removes the rules so far
                done.rules.push((f, args));
            }
        }
        Ok(done)
    }

    pub fn count(&self) -> usize {
        self.rules.len()
    }

    /// Removes every rule; returns the errors (rules someone else already removed).
    pub fn remove(&mut self) -> Vec<String> {
        let mut errors = vec![];
        for (f, args) in self.rules.drain(..).rev() {
            let mut del = vec!["-D".to_string()];
            del.extend(args);
            // Once more on failure: a signal sent to our whole process group (as `timeout`
            // does) may have hit the first iptables child.
            if let Err(e) = iptables(f, &del).or_else(|_| iptables(f, &del)) {
                errors.push(e.to_string());
            }
        }
        errors
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        for e in self.remove() {
            eprintln!("shortflow-synopt: {e}");
        }
    }
}

/// The run id in a synopt comment (`sf-<6 hex>-synopt`), if `token` is one.
pub fn run_id_of(token: &str) -> Option<&str> {
    let id = token
        .trim_matches('"')
        .strip_prefix("sf-")?
        .strip_suffix("-synopt")?;
    (id.len() == 6
        && id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()))
    .then_some(id)
}

/// Removes synopt rules of runs whose daemon is gone (`alive(run_id)` false) from the
/// `mangle` table of `family`; returns the removed rules (as `iptables -S` printed them).
pub fn remove_stale(family: Family, alive: impl Fn(&str) -> bool) -> io::Result<Vec<String>> {
    let out = Command::new(family.tool())
        .args(["-w", "-t", "mangle", "-S"])
        .output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "`{} -t mangle -S` failed",
            family.tool()
        )));
    }
    let mut removed = vec![];
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(rest) = line.strip_prefix("-A ") else {
            continue;
        };
        let tokens: Vec<String> = rest
            .split_whitespace()
            .map(|t| t.trim_matches('"').to_string())
            .collect();
        let Some(id) = tokens.iter().find_map(|t| run_id_of(t)) else {
            continue;
        };
        if alive(id) {
            continue;
        }
        let mut del = vec!["-D".to_string()];
        del.extend(tokens.iter().cloned());
        if iptables(family, &del).is_ok() {
            removed.push(line.to_string());
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(mode: Mode) -> RuleParams {
        RuleParams {
            mode,
            ports: vec![80, 8080],
            group: 7100,
            mark: 0x5f0e,
            comment: "sf-abc123-synopt".into(),
        }
    }

    #[test]
    fn client_rules_copy_syns_on_output_and_watch_input() {
        let specs = rule_specs(&params(Mode::Client));
        assert_eq!(specs.len(), 6);
        let first = specs[0].join(" ");
        assert_eq!(
            first,
            "OUTPUT -p tcp --dport 80 --tcp-flags SYN,ACK,RST SYN -m mark ! --mark 0x5f0e"
        );
        assert!(specs.iter().all(|s| s[0] == "OUTPUT" || s[0] == "INPUT"));
        let args = rule_args(&specs[0], &params(Mode::Client)).join(" ");
        assert!(args.ends_with(
            "-m comment --comment sf-abc123-synopt -j NFLOG --nflog-group 7100 --nflog-size 65535 --nflog-threshold 1"
        ));
    }

    #[test]
    fn server_and_router_rules() {
        let server = rule_specs(&params(Mode::Server));
        assert!(server.iter().any(|s| s
            .join(" ")
            .starts_with("OUTPUT -p tcp --sport 80 --tcp-flags SYN,ACK,RST SYN,ACK")));
        assert!(server.iter().any(|s| s
            .join(" ")
            .contains("INPUT -p tcp --dport 80 --tcp-flags SYN,ACK,RST ACK -m connbytes")));
        let router = rule_specs(&params(Mode::Router));
        assert!(router.iter().all(|s| s[0] == "FORWARD"));
        assert_eq!(router.len(), 10);
    }

    #[test]
    fn run_ids_in_comments() {
        assert_eq!(run_id_of("sf-abc123-synopt"), Some("abc123"));
        assert_eq!(run_id_of("\"sf-abc123-synopt\""), Some("abc123"));
        assert_eq!(run_id_of("sf-abc123-netem"), None);
        assert_eq!(run_id_of("sf-ABC123-synopt"), None);
        assert_eq!(run_id_of("sf-abc12-synopt"), None);
    }
}
