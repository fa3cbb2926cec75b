//! Scenario files: one TOML file describes the path, both hosts, the losses, the workload,
//! the mechanisms and where the capture is taken. `load` checks it all and returns the
//! typed `Scenario` the simulator runs; every error names the file and the dotted key.

mod capture;
mod host;
mod loss;
pub mod mechanisms;
mod overrides;
mod path;
pub mod ranges;
pub mod raw;
mod workload;

pub use capture::{CaptureLink, CapturePoint};
pub use loss::{DropConfig, GilbertConfig, KindLoss, LossConfig, RandomLossConfig};
pub use mechanisms::{Mechanisms, MinRto004Config, SfrConfig, Side, Sides, SynOptimizerConfig};
pub use path::{DumbbellConfig, PathConfig, QueueConfig, TopologyConfig};
pub use workload::{AbtConfig, ArrivalRate, BulkConfig, Closer, PackMimeConfig, PoissonConfig, WorkloadConfig, WorkloadKind};

use raw::*;
use toml::Table;

use serde::{Deserialize, Serialize};

use crate::error::ScenarioError;
use crate::profile::StackConfig;
use crate::time::Duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    pub name: String,
    pub source: String,
    pub seed: u64,
    pub time_limit: Duration,
    pub path: PathConfig,
    /// The dumbbell, when the file has one (then `path` is unused).
    pub dumbbell: Option<DumbbellConfig>,
    pub client: StackConfig,
    pub server: StackConfig,
    pub drop: DropConfig,
    pub random_loss: RandomLossConfig,
    pub workload: WorkloadConfig,
    /// The mechanisms under test, each `None` when the file does not configure it (their
    /// fields stand in the scenario's own table).
    #[serde(flatten)]
    pub mechanisms: Mechanisms,
    pub capture_point: CapturePoint,
    pub capture_link: CaptureLink,
    /// The capture writes IPv6 packets.
    pub capture_ipv6: bool,
    /// 802.1Q VLAN id of every captured frame (Ethernet).
    pub capture_vlan: Option<u16>,
    /// What the model implied from the keys the file set, as the kernel implies it (e.g.
    /// `server.sack = false` turns RACK and TLP off), one sentence each.
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Scenario {
    /// The network its connections cross.
    pub fn topology(&self) -> TopologyConfig<'_> {
        match &self.dumbbell {
            Some(d) => TopologyConfig::Dumbbell(d),
            None => TopologyConfig::Single(&self.path),
        }
    }
}

/// Reads scenario `text` (from `source`, named in errors), applies `overrides`
/// (`key=value`) and checks everything.
/// The file's TOML table with `overrides` applied, before any check: what the testbed
/// reads, so that both worlds see the same document.
pub fn document(text: &str, source: &str, overrides: &[String]) -> Result<Table, ScenarioError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(ScenarioError::new(
            source,
            "",
            format!("{} bytes: a scenario file has at most {MAX_FILE_BYTES}", text.len()),
        ));
    }
    let mut doc: Table = text.parse().map_err(|e: toml::de::Error| {
        let at = e.span().map(|s| line_column(text, s.start)).unwrap_or_default();
        ScenarioError::new(source, "", format!("{at}not valid TOML: {}", e.message()))
    })?;
    for o in overrides {
        overrides::apply(&mut doc, o).map_err(|(key, why)| ScenarioError::new(source, key, format!("{why} (in --set {o})")))?;
    }
    Ok(doc)
}

/// Largest scenario file read (a scenario is a page of TOML; this refuses a wrong file).
pub const MAX_FILE_BYTES: usize = 4 << 20;

/// `line L, column C: ` of byte `at` in `text` (both from 1, columns in characters).
fn line_column(text: &str, at: usize) -> String {
    // The char boundary at or before `at` (str::floor_char_boundary is newer than our MSRV).
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {column}: ")
}

pub fn load(text: &str, source: &str, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    let doc = document(text, source, overrides)?;
    // The ranges are checked on the values as written, after the resolution's own checks.
    let written = doc.clone();
    let raw: RawScenario = serde_path_to_error::deserialize(toml::Value::Table(doc)).map_err(|e| {
        // The path already ends with the offending key (unknown ones included).
        let key = e.path().to_string();
        let key = if key == "." { String::new() } else { key };
        let message = e.into_inner().message().to_string();
        let message = match message.strip_prefix("unknown field `").and_then(|m| m.split_once('`')) {
            Some((_, rest)) => format!("unknown key{rest}"),
            None => message,
        };
        ScenarioError::new(source, key, message)
    })?;
    let sc = resolve(raw, source)?;
    ranges::check_document(&written, source)?;
    Ok(sc)
}

fn err(source: &str, key: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError::new(source, key, message)
}

fn resolve(raw: RawScenario, src: &str) -> Result<Scenario, ScenarioError> {
    let seed = raw.seed.unwrap_or(1);
    let mut notes = Vec::new();
    let mut client = host::host(&raw.client, src, "client", "linux", &mut notes)?;
    let mut server = host::host(&raw.server, src, "server", "linux", &mut notes)?;
    // One kernel runs both ends of the testbed: one jiffies clock, its reading at time 0
    // drawn from the seed (splitmix64), so timer-wheel phases are reproducible.
    let origin = jiffies_origin(seed);
    client.jiffies_origin_ns = origin;
    server.jiffies_origin_ns = origin;
    let workload = workload::workload(&raw.workload, src)?;
    let dumbbell = match &raw.dumbbell {
        None => None,
        Some(d) => Some(path::dumbbell(d, src)?),
    };
    if dumbbell.is_some()
        && (raw.path.rtt.is_some() || raw.path.rtt_max.is_some() || raw.path.bandwidth.is_some() || raw.path.queue.is_some())
    {
        return Err(err(src, "path", "a scenario has either [path] (one client, one server) or [dumbbell], not both"));
    }
    let path = match &dumbbell {
        // The dumbbell's pair 0 stands for `path` where a single path is asked about.
        Some(d) => PathConfig {
            rtt: Duration(2 * (d.client_delay[0].0 + d.delay.0 + d.server_delay[0].0)),
            rtt_max: None,
            bandwidth_bps: d.bandwidth_bps,
            access_bandwidth_bps: d.access_bandwidth_bps,
            queue: d.queue.clone(),
        },
        None => path::path(&raw.path, src)?,
    };
    let mechanisms = mechanisms::resolve(&raw.mechanisms, src, workload.port)?;
    let (capture_point, capture_link, capture_ipv6) = capture::resolve(&raw.capture, src)?;
    Ok(Scenario {
        name: raw.name.clone().unwrap_or_else(|| src.to_string()),
        source: src.to_string(),
        seed,
        time_limit: raw.time_limit.map_or(Duration::from_secs(3600), |d| d.0),
        path,
        dumbbell,
        client,
        server,
        drop: loss::drops(&raw.drop, src)?,
        random_loss: loss::random_loss(&raw.random_loss, src, seed)?,
        workload,
        mechanisms,
        capture_point,
        capture_link,
        capture_ipv6,
        capture_vlan: raw.capture.vlan,
        notes,
    })
}

/// A jiffies reading (up to 2^20 ticks of 4 ms) and a phase within the tick, from `seed`.
fn jiffies_origin(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    z % ((1u64 << 20) * 4_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{InitialWindow, RecoveryName, SpuriousRtoName};
    use crate::sizes::SizeDist;

    const MINIMAL: &str = "[path]\nrtt = \"100ms\"\n";

    #[test]
    fn minimal_file_gets_defaults() {
        let s = load(MINIMAL, "s.toml", &[]).unwrap();
        assert_eq!(s.path.rtt, Duration::from_millis(100));
        assert_eq!(s.client.profile, "linux");
        assert_eq!(s.workload.response, 13_549);
    }

    #[test]
    fn unknown_key_names_file_and_key() {
        let e = load("[path]\nrtt = \"1ms\"\nbandwith = \"1Mbit\"\n", "s.toml", &[]).unwrap_err();
        assert_eq!((e.file.as_str(), e.key.as_str()), ("s.toml", "path.bandwith"));
        assert!(e.to_string().starts_with("s.toml: path.bandwith: unknown key"), "{e}");
        let e = load(MINIMAL, "s.toml", &["client.nagle=true".into()]).unwrap_err();
        assert_eq!(e.key, "client.nagle");
        let e = load("colour = 1\n[path]\nrtt = \"1ms\"\n", "s.toml", &[]).unwrap_err();
        assert_eq!(e.key, "colour");
    }

    #[test]
    fn missing_or_unknown_unit_names_the_key() {
        let e = load("[path]\nrtt = 100\n", "a.toml", &[]).unwrap_err();
        assert_eq!(e.key, "path.rtt");
        assert!(e.message.contains("no unit"), "{e}");
        let e = load(MINIMAL, "a.toml", &["workload.response=35".into()]).unwrap_err();
        assert_eq!(e.key, "workload.response");
        let e = load(MINIMAL, "a.toml", &["path.bandwidth=10Mbaud".into()]).unwrap_err();
        assert_eq!(e.key, "path.bandwidth");
        assert!(e.message.contains("unknown unit"), "{e}");
        let e = load("[path]\n", "a.toml", &[]).unwrap_err();
        assert_eq!(e.key, "path.rtt");
    }

    #[test]
    fn overrides_and_profiles() {
        let s = load(
            MINIMAL,
            "s.toml",
            &[
                "client.stack=rfc2988".into(),
                "client.rto_min=200ms".into(),
                "server.slow_start_initial=2".into(),
                "mechanisms.syn_optimizer={side=\"client\", delay=\"200ms\", retries=3}".into(),
            ],
        )
        .unwrap();
        assert_eq!(s.client.rto.initial, Duration::from_secs(3));
        assert_eq!(s.client.rto.min, Duration::from_millis(200));
        assert_eq!(s.server.initial_window, InitialWindow::Segments(2));
        assert_eq!(s.mechanisms.syn_optimizer.unwrap().retries, 3);
        let e = load(MINIMAL, "s.toml", &["client.stack=vms".into()]).unwrap_err();
        assert_eq!(e.key, "client.stack");
        let e = load(MINIMAL, "s.toml", &["workload.response_writes=[\"1kB\"]".into()]).unwrap_err();
        assert_eq!(e.key, "workload.response_writes");
    }

    /// BBR is the Linux sender's: named on a `linux` host it is taken, on another profile it
    /// is refused with the key and the reason.
    #[test]
    fn bbr_is_for_the_linux_stack_only() {
        let s = load(MINIMAL, "s.toml", &["server.congestion_control=\"bbr\"".into()]).unwrap();
        assert_eq!((s.server.congestion_control.name(), s.client.congestion_control.name()), ("bbr", "cubic"));
        let sets = ["client.stack=\"rfc6298\"".into(), "client.congestion_control=\"bbr\"".into()];
        let e = load(MINIMAL, "s.toml", &sets).unwrap_err();
        assert_eq!(e.key, "client.congestion_control");
        assert!(e.message.contains("needs stack = \"linux\"") && e.message.contains("rfc6298"), "{}", e.message);
    }

    /// `sack = false` in the linux profile implies what the kernel implies (no RACK, no
    /// TLP, the recovery `tcp_is_reno` runs) with a note; a file that turns one of them on beside it
    /// is refused once, naming every key involved.
    #[test]
    fn sack_off_implies_what_the_kernel_implies_and_contradictions_are_refused_at_once() {
        let s = load(MINIMAL, "s.toml", &["server.sack=false".into()]).unwrap();
        let sv = &s.server;
        assert_eq!((sv.sack, sv.rack, sv.tlp, sv.recovery), (false, false, false, RecoveryName::Prr));
        assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
        let note = &s.notes[0];
        for k in ["server.sack = false", "server.rack = false", "server.tlp = false", "PRR stays"] {
            assert!(note.contains(k), "{note}");
        }
        // The client is untouched, and the defaults imply nothing.
        assert_eq!((s.client.rack, s.client.tlp, s.client.recovery), (true, true, RecoveryName::Prr));
        assert!(load(MINIMAL, "s.toml", &[]).unwrap().notes.is_empty());
        // What the file says beside it stays when it needs no SACK.
        let s = load(MINIMAL, "s.toml", &["client.sack=false".into(), "client.recovery=reno".into()]).unwrap();
        assert_eq!((s.client.recovery.name(), s.client.rack, s.client.tlp), ("reno", false, false));
        assert!(!s.notes[0].contains("recovery"), "{:?}", s.notes);

        let e = load(MINIMAL, "s.toml", &["server.sack=false".into(), "server.rack=true".into(), "server.tlp=true".into()])
            .unwrap_err();
        assert_eq!(e.key, "server.sack");
        for k in ["server.rack = true", "server.tlp = true", "set server.sack = true", "drop server.rack and server.tlp"] {
            assert!(e.message.contains(k), "{e}");
        }
        let e = load(MINIMAL, "s.toml", &["client.sack=false".into(), "client.recovery=rfc6675".into()]).unwrap_err();
        assert!(e.message.contains("client.recovery = \"rfc6675\"") && !e.message.contains("rack"), "{e}");
        // Linux's PRR runs without SACK too.
        let s = load(MINIMAL, "s.toml", &["client.sack=false".into(), "client.recovery=prr".into()]).unwrap();
        assert_eq!(s.client.recovery, RecoveryName::Prr);
        // A profile without SACK: the key that needs it is named with the reason.
        let e = load(MINIMAL, "s.toml", &["client.stack=bsd".into(), "client.tlp=true".into()]).unwrap_err();
        assert!(e.message.contains("the profile has no SACK") && e.message.contains("client.tlp = true"), "{e}");
    }

    #[test]
    fn spurious_rto_defaults_by_profile_and_names_what_it_knows() {
        let s = load(MINIMAL, "s.toml", &["client.stack=rfc2988".into()]).unwrap();
        assert_eq!((s.client.spurious_rto.name(), s.server.spurious_rto.name()), ("off", "linux"));
        let s = load(MINIMAL, "s.toml", &["client.stack=rfc2988".into(), "client.spurious_rto=frto".into()]).unwrap();
        assert_eq!(s.client.spurious_rto, SpuriousRtoName::Frto);
        let e = load(MINIMAL, "s.toml", &["server.spurious_rto=eifel".into()]).unwrap_err();
        assert_eq!(e.key, "server.spurious_rto");
        assert!(e.message.contains("known: off, frto, linux"), "{e}");
    }

    #[test]
    fn web_keys_are_checked_and_errors_name_them() {
        let db = "[dumbbell]\npairs = 4\nbandwidth = \"10Mbit\"\ndelay = \"10ms\"\n";
        let s = load(
            db,
            "d.toml",
            &["workload.kind=packmime".into(), "workload.load=\"50%\"".into(), "workload.duration=\"10s\"".into()],
        )
        .unwrap();
        assert_eq!(s.workload.kind.rate(), Some(ArrivalRate::Load(0.5)));
        assert_eq!(s.dumbbell.as_ref().unwrap().pairs, 4);
        let bad = |ov: &[&str]| {
            let ov: Vec<String> = ov.iter().map(|s| s.to_string()).collect();
            load(db, "d.toml", &ov).unwrap_err().key
        };
        assert_eq!(bad(&["workload.kind=packmime", "workload.duration=\"1s\""]), "workload.load");
        assert_eq!(bad(&["workload.kind=packmime", "workload.load=\"150%\"", "workload.duration=\"1s\""]), "workload.load");
        assert_eq!(bad(&["workload.kind=poisson", "workload.connections_per_second=5"]), "workload.duration");
        assert_eq!(bad(&["workload.flows=3"]), "workload.flows");
        assert_eq!(bad(&["dumbbell.client_delay=[\"1ms\", \"2ms\"]"]), "dumbbell.client_delay");
        assert_eq!(bad(&["dumbbell.queue={kind=\"red\", packets=\"bdq\"}"]), "dumbbell.queue.packets");
        assert_eq!(bad(&["dumbbell.queue={kind=\"red\", packets=100, max_p=0.1, linterm=10}"]), "dumbbell.queue.linterm");
        assert_eq!(bad(&["mechanisms.sfr={side=\"middle\"}"]), "mechanisms.sfr.side");
        assert_eq!(bad(&["path.rtt=\"10ms\""]), "path");
        assert_eq!(
            bad(&[
                "workload.kind=poisson",
                "workload.connections_per_second=5",
                "workload.duration=\"1s\"",
                "workload.response_dist={kind=\"empirical\", file=\"no-such.csv\"}"
            ]),
            "workload.response_dist.file"
        );
        // BDP sizing: 10 Mbit/s × 2·(1 + 10 + 1) ms = 30 kB = 30 packets of 1000 B; RED thresholds 5 and 15.
        let s = load(
            db,
            "d.toml",
            &["dumbbell.queue={kind=\"red\", packets=\"bdp\", q_weight=0.01, linterm=20, gentle=true}".into()],
        )
        .unwrap();
        assert_eq!(
            s.dumbbell.unwrap().queue,
            QueueConfig::Red { min_th: 5.0, max_th: 15.0, max_p: 0.05, weight: 0.01, limit: 30, gentle: true }
        );
    }

    #[test]
    fn generator_keys_are_checked_with_their_key() {
        let bad = |sets: &[&str], key: &str, says: &str| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let e = load(MINIMAL, "g.toml", &sets).unwrap_err();
            assert_eq!(e.key, key, "{e}");
            assert!(e.to_string().contains(says), "{e}");
        };
        bad(&["path.rtt_max=\"50ms\""], "path.rtt_max", "below path.rtt");
        bad(&["path.rtt_max=\"61s\""], "path.rtt_max", "");
        bad(&["random_loss.syn=1.5"], "random_loss.syn", "not a probability");
        bad(&["random_loss.client_data=-0.1"], "random_loss.client_data", "not a probability");
        bad(&["capture.link=\"token-ring\""], "capture.link", "\"sll2\"");
        bad(&["capture.link=\"ipv6\"", "capture.ipv6=false"], "capture.ipv6", "only IPv6");
        bad(&["capture.link=\"ipv4\"", "capture.ipv6=true"], "capture.ipv6", "only IPv4");
        bad(&["capture.link=\"raw\"", "capture.vlan=7"], "capture.vlan", "Ethernet");
        bad(&["capture.vlan=4096"], "capture.vlan", "0 to 4095");
        bad(&["workload.max_connections=10"], "workload.max_connections", "\"poisson\"");
        let poisson = |extra: &str| format!("{MINIMAL}[workload]\nkind = \"poisson\"\nconnections_per_second = 10.0\n{extra}");
        let e = load(&poisson(""), "p.toml", &[]).unwrap_err();
        assert_eq!(e.key, "workload.duration", "{e}");
        assert!(e.message.contains("or max_connections"), "{e}");
        assert_eq!(load(&poisson("max_connections = 0\n"), "p.toml", &[]).unwrap_err().key, "workload.max_connections");
        let e = load(
            &poisson("max_connections = 5\nresponse_dist = { kind = \"uniform\", min = \"9kB\", max = \"1kB\" }\n"),
            "p.toml",
            &[],
        );
        assert_eq!(e.unwrap_err().key, "workload.response_dist.max");
        let ok = load(
            &poisson("max_connections = 5\nresponse_dist = { kind = \"uniform\", min = \"1B\", max = \"1kB\" }\n"),
            "p.toml",
            &[],
        );
        match ok.unwrap().workload.kind {
            WorkloadKind::Poisson(p) => {
                assert_eq!((p.max_connections, p.response), (Some(5), SizeDist::Uniform { min: 1, max: 1000 }))
            }
            k => panic!("{k:?}"),
        }
        let dumbbell = "[dumbbell]\npairs = 2\nbandwidth = \"10Mbit\"\ndelay = \"5ms\"\n[path]\nrtt_max = \"90ms\"\n";
        assert_eq!(load(dumbbell, "d.toml", &[]).unwrap_err().key, "path");
        let s = load(
            MINIMAL,
            "g.toml",
            &["path.rtt_max=\"200ms\"".into(), "random_loss.synack=0.25".into(), "capture.link=\"ipv6\"".into()],
        )
        .unwrap();
        assert_eq!(s.path.rtt_max, Some(Duration::from_millis(200)));
        assert_eq!(s.random_loss.kinds, KindLoss { synack: 0.25, ..KindLoss::default() });
        assert!(s.capture_ipv6 && s.capture_link == CaptureLink::Ipv6);
        // Unset, the keys change nothing.
        let plain = load(MINIMAL, "g.toml", &[]).unwrap();
        assert_eq!((plain.path.rtt_max, plain.random_loss.kinds.any(), plain.capture_ipv6), (None, false, false));
    }
}
