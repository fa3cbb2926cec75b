//! The daemon's own nftables table, `inet sf-<runid>-synopt`: which packets are copied to
//! it. The table is created whole in one transaction and deleted whole with one
//! `delete table`, so the host keeps nothing of ours after the daemon exits — no rule, no
//! chain, not even an empty table — and a half-installed rule set never exists. Where
//! libnftables and the kernel allow it the table is owned by the daemon's netlink socket
//! (`flags owner`, see `nftlib`), so the kernel deletes it even when the daemon is
//! SIGKILLed; otherwise it is made with the `nft` command and a killed daemon's table waits
//! for the next start (`remove_stale`) or `shortflow testbed clean`. One `inet`
//! table covers IPv4 and IPv6. Its base chains hook at the `mangle` priority (-150); an
//! accept policy and copy-only rules mean it never changes another table's verdict.
//!
//! Fail-open by construction: the rules' statement is `log group N` (NFLOG), which sends a
//! *copy* of the packet to the daemon's netlink group and lets the packet go on; nothing in
//! the kernel ever waits for the daemon, whether it runs, hangs or is gone.
//! `queue-threshold 1` sends each copy at once (batching would delay it up to its timeout).

use std::io::{self, Write};
use std::process::{Command, Stdio};

use crate::nftlib::{NftLib, NftLibError};

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

/// What the rules need to know.
#[derive(Debug, Clone)]
pub struct RuleParams {
    pub mode: Mode,
    pub ports: Vec<u16>,
    /// NFLOG group the copies go to.
    pub group: u16,
    /// Our resends carry this mark (SO_MARK) and are excluded, so they are never copied.
    pub mark: u32,
    /// The table's name, `sf-<runid>-synopt`.
    pub table: String,
    /// Copy IPv6 packets too (else the rules match IPv4 only).
    pub ipv6: bool,
}

/// The flags a rule tests, under the mask SYN|ACK|RST (iptables' `--tcp-flags`).
const SYN: &str = "tcp flags & (syn | ack | rst) == syn";
const SYN_ACK: &str = "tcp flags & (syn | ack | rst) == syn | ack";
const ACK: &str = "tcp flags & (syn | ack | rst) == ack";
const RST: &str = "tcp flags & rst == rst";
/// The handshake's first ACK: the 2nd to 6th packet of the connection in the client →
/// server direction (conntrack's packet counter), so that a server's whole ACK stream does
/// not pass through user space.
const FIRST_PACKETS: &str = "ct original packets 2-6";

/// Each rule as `(chain, match)`, without the copy statement (added by [`ruleset`]).
pub fn rule_specs(p: &RuleParams) -> Vec<(&'static str, String)> {
    let ports = match p.ports.as_slice() {
        [one] => one.to_string(),
        many => format!("{{ {} }}", many.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")),
    };
    let family = if p.ipv6 { "" } else { "meta nfproto ipv4 " };
    let not_ours = format!(" meta mark != {:#x}", p.mark);
    let (copy_chain, answer_chain) = match p.mode {
        Mode::Router => ("forward", "forward"),
        _ => ("output", "input"),
    };
    let mut out = vec![];
    let mut add = |chain, dir: &str, rest: &str, marked: bool| {
        let mark = if marked { not_ours.as_str() } else { "" };
        out.push((chain, format!("{family}tcp {dir} {ports} {rest}{mark}")));
    };
    if p.mode.keeps_syn() {
        add(copy_chain, "dport", SYN, true);
        // The answers to a SYN: the SYN/ACK (in router mode also a copy to keep) or a RST.
        add(answer_chain, "sport", SYN_ACK, false);
        add(answer_chain, "sport", RST, false);
    }
    if p.mode == Mode::Server {
        add(copy_chain, "sport", SYN_ACK, true);
    }
    if p.mode.keeps_synack() {
        add(answer_chain, "dport", &format!("{ACK} {FIRST_PACKETS}"), false);
        add(answer_chain, "dport", RST, false);
    }
    out
}

/// The `nft -f` script that creates the table whole; `owned`: with `flags owner` (the table
/// belongs to the socket that runs the script). `add` + `delete` first: a table of the same
/// name left by a dead run (ids are taken under the run lock, so it cannot be a live one)
/// goes in the same transaction.
pub fn ruleset(p: &RuleParams, owned: bool) -> String {
    let specs = rule_specs(p);
    let copy = format!("log group {} snaplen {} queue-threshold 1", p.group, crate::observe::COPY_RANGE);
    let mut s = format!("add table inet {t}\ndelete table inet {t}\ntable inet {t} {{\n", t = p.table);
    if owned {
        s += "  flags owner\n";
    }
    for chain in ["output", "input", "forward"] {
        let rules: Vec<_> = specs.iter().filter(|(c, _)| *c == chain).collect();
        if rules.is_empty() {
            continue;
        }
        s += &format!("  chain {chain} {{\n    type filter hook {chain} priority mangle; policy accept;\n");
        for (_, m) in rules {
            s += &format!("    {m} {copy}\n");
        }
        s += "  }\n";
    }
    s + "}\n"
}

/// What went wrong running `nft`.
#[derive(Debug, thiserror::Error)]
pub enum NftError {
    #[error("cannot run `nft` ({0}): the nftables package provides it")]
    Spawn(#[source] io::Error),
    #[error("`nft {command}`: {source}")]
    Io { command: String, source: io::Error },
    /// nft ran and refused: its own message (which names the line of the script).
    #[error("`nft {command}` failed: {stderr}")]
    Failed { command: String, stderr: String },
    /// The same through libnftables, inside the daemon.
    #[error("`{command}` (libnftables) failed: {source}")]
    Library { command: String, source: NftLibError },
}

/// Runs `nft` with `args`, feeding `stdin` when given; the error names the command and
/// carries nft's message.
fn nft(args: &[&str], stdin: Option<&str>) -> Result<String, NftError> {
    let command = || args.join(" ");
    let mut cmd = Command::new("nft");
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.spawn().map_err(NftError::Spawn)?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).map_err(|source| NftError::Io { command: command(), source })?;
    }
    let out = child.wait_with_output().map_err(|source| NftError::Io { command: command(), source })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(NftError::Failed { command: command(), stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() })
    }
}

/// The installed table; deleted when dropped (normal exit, error, panic unwinding) — and,
/// when owned, by the kernel when the process dies.
pub struct Installed {
    table: Option<String>,
    rules: usize,
    /// The libnftables context whose socket owns the table (None: made with `nft`).
    owner: Option<NftLib>,
    /// Why the table is not owned (None when it is).
    unowned: Option<String>,
}

impl Installed {
    /// Creates the table of `p` in one transaction: all of it, or nothing. Owned by this
    /// process when `owned` is asked and libnftables and the kernel allow it; else with the
    /// `nft` command ([`Installed::unowned`] says why).
    pub fn install(p: &RuleParams, owned: bool) -> Result<Installed, NftError> {
        let why = if !owned {
            "--unowned-table".to_string()
        } else {
            match NftLib::open() {
                Ok(mut lib) => match lib.run(&ruleset(p, true)) {
                    Ok(()) => {
                        return Ok(Installed {
                            table: Some(p.table.clone()),
                            rules: rule_specs(p).len(),
                            owner: Some(lib),
                            unowned: None,
                        })
                    }
                    // An old kernel (before 5.12) or nft refuses `flags owner`; any other
                    // fault shows again below, from the command.
                    Err(e) => format!("libnftables refused an owned table: {e}"),
                },
                Err(e) => e.to_string(),
            }
        };
        nft(&["-f", "-"], Some(&ruleset(p, false)))?;
        Ok(Installed { table: Some(p.table.clone()), rules: rule_specs(p).len(), owner: None, unowned: Some(why) })
    }

    pub fn count(&self) -> usize {
        self.rules
    }

    /// Why the table is not owned by this process (None: it is, and dies with it).
    pub fn unowned(&self) -> Option<&str> {
        self.unowned.as_deref()
    }

    /// Deletes the table. Owned: through its own socket (no other may), then the socket
    /// closes, which deletes it too should the command have failed. Else with `nft` (once
    /// more on failure: a signal sent to our whole process group, as `timeout` does, may
    /// have hit the first nft child).
    pub fn remove(&mut self) -> Result<(), NftError> {
        let Some(t) = self.table.take() else { return Ok(()) };
        if let Some(mut lib) = self.owner.take() {
            let r = lib.run(&format!("delete table inet {t}\n"));
            drop(lib);
            return r.map_err(|source| NftError::Library { command: format!("delete table inet {t}"), source });
        }
        let args = ["delete", "table", "inet", t.as_str()];
        nft(&args, None).or_else(|_| nft(&args, None)).map(drop)
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        if let Err(e) = self.remove() {
            eprintln!("shortflow-synopt: {e}");
        }
    }
}

/// The run id in a synopt table name (`sf-<6 hex>-synopt`), if `token` is one.
pub fn run_id_of(token: &str) -> Option<&str> {
    let id = token.trim_matches('"').strip_prefix("sf-")?.strip_suffix("-synopt")?;
    (id.len() == 6 && id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())).then_some(id)
}

/// Deletes the synopt tables of runs whose daemon is gone (`alive(run_id)` false); returns
/// their names.
pub fn remove_stale(alive: impl Fn(&str) -> bool) -> Result<Vec<String>, NftError> {
    let mut removed = vec![];
    for line in nft(&["list", "tables", "inet"], None)?.lines() {
        // `table inet NAME`
        let Some(name) = line.trim().strip_prefix("table inet ") else { continue };
        let Some(id) = run_id_of(name) else { continue };
        if !alive(id) && nft(&["delete", "table", "inet", name], None).is_ok() {
            removed.push(name.to_string());
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(mode: Mode) -> RuleParams {
        RuleParams { mode, ports: vec![80, 8080], group: 7100, mark: 0x5f0e, table: "sf-abc123-synopt".into(), ipv6: true }
    }

    #[test]
    fn client_rules_copy_syns_on_output_and_watch_input() {
        let specs = rule_specs(&params(Mode::Client));
        assert_eq!(specs.len(), 3);
        assert_eq!(
            specs[0],
            ("output", "tcp dport { 80, 8080 } tcp flags & (syn | ack | rst) == syn meta mark != 0x5f0e".to_string())
        );
        assert!(specs[1..].iter().all(|(c, _)| *c == "input"));
        let text = ruleset(&params(Mode::Client), false);
        assert!(text.starts_with(
            "add table inet sf-abc123-synopt\ndelete table inet sf-abc123-synopt\ntable inet sf-abc123-synopt {\n  chain"
        ));
        assert!(ruleset(&params(Mode::Client), true).contains("table inet sf-abc123-synopt {\n  flags owner\n  chain output {"));
        assert!(text.contains("type filter hook output priority mangle; policy accept;"));
        assert!(text.contains("log group 7100 snaplen 65535 queue-threshold 1"));
        assert!(!text.contains("chain forward"), "no empty chains");
    }

    #[test]
    fn server_and_router_rules() {
        let server = rule_specs(&params(Mode::Server));
        assert!(server
            .iter()
            .any(|(c, m)| *c == "output" && m.starts_with("tcp sport { 80, 8080 } tcp flags & (syn | ack | rst) == syn | ack")));
        assert!(server.iter().any(|(c, m)| *c == "input" && m.ends_with("== ack ct original packets 2-6")));
        let router = rule_specs(&params(Mode::Router));
        assert!(router.iter().all(|(c, _)| *c == "forward"));
        assert_eq!(router.len(), 5);
        let v4 = RuleParams { ipv6: false, ports: vec![80], ..params(Mode::Client) };
        assert!(rule_specs(&v4).iter().all(|(_, m)| m.starts_with("meta nfproto ipv4 tcp ") && m.contains(" 80 ")));
    }

    /// The script is valid nft syntax: `nft -c` (check only, changes nothing) accepts it.
    #[test]
    fn nft_accepts_the_script() {
        let Ok(out) = Command::new("nft").arg("--version").output() else {
            eprintln!("skipped: nft is not installed");
            return;
        };
        assert!(out.status.success());
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: `nft -c` needs root (CAP_NET_ADMIN) to check against the kernel");
            return;
        }
        for mode in [Mode::Client, Mode::Server, Mode::Router] {
            for owned in [false, true] {
                let text = ruleset(&params(mode), owned);
                let r = nft(&["-c", "-f", "-"], Some(&text));
                assert!(r.is_ok(), "{mode:?}: {r:?}\n{text}");
            }
        }
    }

    #[test]
    fn run_ids_in_table_names() {
        assert_eq!(run_id_of("sf-abc123-synopt"), Some("abc123"));
        assert_eq!(run_id_of("\"sf-abc123-synopt\""), Some("abc123"));
        assert_eq!(run_id_of("sf-abc123-netem"), None);
        assert_eq!(run_id_of("sf-ABC123-synopt"), None);
        assert_eq!(run_id_of("sf-abc12-synopt"), None);
    }
}
