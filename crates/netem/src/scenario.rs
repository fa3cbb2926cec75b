//! The emulator's link from a scenario file (`--scenario`): the file is resolved by the one
//! scenario model (`shortflow_scenario::load`, nothing here parses it), and the link takes
//! from the resolved `Scenario` what the simulator's single path does to a packet between
//! the client and the server — its one-way delays, the serialization of its store-and-forward
//! links, and the router's loss model built exactly as the simulator builds it.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use shortflow_scenario::scenario::WorkloadKind;
use shortflow_scenario::scenario::MAX_FILE_BYTES;
use shortflow_scenario::{Scenario, ScenarioError};
use shortflow_sim::loss::LossModel;
use shortflow_sim::scenario::{QueueConfig, TopologyConfig};
use shortflow_sim::topology::Topology;

/// What the emulator does to each direction's packets, from a resolved scenario.
pub struct ScenarioLink {
    /// The simulator's own single path (`Topology::build` of `TopologyConfig::Single`): per
    /// direction the sending host's access port, then the router's egress (the bottleneck,
    /// with the scenario's drop-tail queue), each with its rate and its share of the
    /// propagation delay. The
    /// emulator offers every packet to these ports as the simulator does and releases it
    /// when its last bit would reach the far end, so the emulator itself is the rate
    /// limit (no tbf: tbf with a one-frame bucket loses the lateness of every late
    /// dequeue, ~18 µs a packet on a loaded machine, and delivered 120 of 148 Mbit/s).
    pub topology: Topology,
    /// Scripted drops and seeded random loss (Bernoulli or Gilbert-Elliott).
    pub loss: LossModel,
}

/// Reads and resolves scenario `path` with `overrides` (`key=value`, as `--set`); errors
/// name the file and the key (the model's own `ScenarioError`).
pub fn read(path: &Path, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    let source = path.display().to_string();
    let cannot = |why: String| ScenarioError::new(&source, "", why);
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES as u64 + 1).read_to_string(&mut text))
        .map_err(|e| cannot(format!("cannot read: {e}")))?;
    // `load` refuses a file above the limit by its size: the cut text says so too.
    shortflow_scenario::load(&text, &source, overrides)
}

/// Each connection vector's one-way delay beyond the path's (ns), by its client's port:
/// the vectors in start order from `first_port` up (the testbed's a-b-t client binds
/// them so). Half of a vector's RTT beyond path.rtt each way; nothing for a vector whose
/// RTT is unknown (0) or not above the path's.
pub fn flow_delays(sc: &Scenario, first_port: u16) -> Result<HashMap<u16, u64>, ScenarioError> {
    let WorkloadKind::Abt(abt) = &sc.workload.kind else {
        return Err(ScenarioError::new(
            &sc.source,
            "workload.kind",
            "--abt-first-port: not a scenario of connection vectors (kind = \"abt\")",
        ));
    };
    let vectors = shortflow_scenario::abt::in_start_order(&abt.vectors);
    if vectors.len() > usize::from(u16::MAX - first_port) + 1 {
        return Err(ScenarioError::new(
            &sc.source,
            &abt.key,
            format!("{} connection vectors do not fit in the ports from {first_port} up", vectors.len()),
        ));
    }
    Ok(vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (first_port + i as u16, v.extra_rtt_ns(sc.path.rtt.0) / 2))
        .filter(|&(_, ns)| ns > 0)
        .collect())
}

/// The link for resolved scenario `sc`, or the key the emulator cannot carry.
pub fn link(sc: &Scenario) -> Result<ScenarioLink, ScenarioError> {
    let p = match sc.topology() {
        TopologyConfig::Single(p) => p,
        TopologyConfig::Dumbbell(_) => {
            return Err(ScenarioError::new(
                &sc.source,
                "dumbbell",
                "the emulator is one link between one client and one server, not a dumbbell",
            ))
        }
    };
    if p.access_bandwidth_bps != p.bandwidth_bps {
        // Slower hosts would queue on their own links before the router: tbf shapes only
        // the router's egress, so the emulator has no queue to put there.
        return Err(ScenarioError::new(
            &sc.source,
            "path.access_bandwidth",
            "the emulated hosts have no rate of their own: only path.bandwidth (the router's egress) is shaped",
        ));
    }
    if let Some(m) = p.rtt_max {
        // One link, one delay each way: the emulator has no per-connection delay.
        return Err(ScenarioError::new(
            &sc.source,
            "path.rtt_max",
            format!("{m}: the emulator delays every packet alike (path.rtt), it draws no delay per connection"),
        ));
    }
    if let QueueConfig::Red { .. } = p.queue {
        // RED's drops come from the simulator's own generator, in its event order: the
        // emulator could run RED but not the same drops.
        return Err(ScenarioError::new(&sc.source, "path.queue", "RED: the emulator's queue is drop-tail (packets or bytes)"));
    }
    if p.bandwidth_bps == 0 {
        return Err(ScenarioError::new(&sc.source, "path.bandwidth", "the emulator's link needs a rate above 0"));
    }
    Ok(ScenarioLink { topology: Topology::build(TopologyConfig::Single(p)), loss: LossModel::for_scenario(sc) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use shortflow_sim::loss::{Fate, Kind};
    use shortflow_sim::scenario::LossConfig;
    use shortflow_sim::time::Instant;

    const GILBERT: &str = r#"
        name = "bursty"
        seed = 11
        [path]
        rtt = "30ms"
        bandwidth = "10Mbit"
        [drop]
        syn = [1]
        data = [2, 5]
        [random_loss]
        gilbert_forward = { p_good_to_bad = 0.05, p_bad_to_good = 0.3, loss_good = 0.01, loss_bad = 0.6 }
        reverse = 0.02
    "#;

    /// A packet sequence in both directions, every kind `[drop]` names and some it does not.
    fn packets() -> Vec<(bool, Option<Kind>)> {
        let round = [
            (true, Some(Kind::Syn)),
            (false, Some(Kind::SynAck)),
            (true, Some(Kind::Ack)),
            (true, Some(Kind::ClientData)),
            (false, Some(Kind::Data)),
            (false, Some(Kind::Data)),
            (true, Some(Kind::Ack)),
            (false, None),
            (true, None),
        ];
        round.iter().copied().cycle().take(9 * 400).collect()
    }

    fn decisions(mut m: LossModel) -> Vec<Fate> {
        packets().into_iter().map(|(from_client, kind)| m.decide_kind(from_client, kind)).collect()
    }

    fn write(dir: &str, text: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("sf-netem-test-{}-{dir}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("s.toml");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn the_link_is_the_simulators_single_path() {
        let sc = shortflow_scenario::load(GILBERT, "g.toml", &["path.rtt=20ms".into()]).unwrap();
        let mut t = link(&sc).unwrap().topology;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        // A 1518 B frame from each end at t = 0: two serializations at 10 Mbit/s (1.2144 ms
        // each) and half the RTT; a second frame right behind the first, one more.
        for from_client in [true, false] {
            let route = t.route(0, from_client);
            let (host, router) = (route.hop(0).unwrap(), route.hop(1).unwrap());
            let mut last = 0;
            for n in 1..=2u64 {
                let at_router = t.ports[host].send(Instant(0), 1518, &mut rng).unwrap();
                let at_end = t.ports[router].send(at_router, 1518, &mut rng).unwrap().0;
                assert_eq!(at_end, 10_000_000 + (n + 1) * 1_214_400, "{from_client} #{n}");
                last = at_end;
            }
            assert!(last > 0);
        }
        // The router's queue is the scenario's: 2 packets, the third behind a busy port is refused.
        let sc =
            shortflow_scenario::load(GILBERT, "g.toml", &["path.queue={ kind = \"droptail\", packets = 2 }".into()]).unwrap();
        let mut t = link(&sc).unwrap().topology;
        let router = t.route(0, true).hop(1).unwrap();
        let fates: Vec<bool> = (0..4).map(|_| t.ports[router].send(Instant(0), 1518, &mut rng).is_some()).collect();
        assert_eq!(fates, [true, true, true, false]);
    }

    #[test]
    fn gilbert_loss_decides_as_the_simulators_model_for_the_same_seed() {
        let sc = shortflow_scenario::load(GILBERT, "g.toml", &[]).unwrap();
        assert!(matches!(sc.random_loss.forward, LossConfig::Gilbert(_)));
        let ours = decisions(link(&sc).unwrap().loss);
        // The simulator's router builds its model with `World::new` → `LossModel::for_scenario`;
        // built independently here from the resolved fields, it must decide the same.
        let sims = decisions(LossModel::new(sc.drop.clone(), sc.random_loss.clone()));
        assert_eq!(ours, sims);
        // Not vacuous: the scripted drops and both random shapes act on this sequence...
        assert_eq!(ours[0], Fate::Scripted, "syn #1");
        assert!(ours.iter().filter(|&&f| f == Fate::Scripted).count() == 3);
        let random = ours.iter().filter(|&&f| f == Fate::Random).count();
        assert!(random > 50, "{random} random losses");
        // ...and the seed matters: another seed loses other packets.
        let other = shortflow_scenario::load(GILBERT, "g.toml", &["random_loss.seed=12".into()]).unwrap();
        assert_ne!(decisions(link(&other).unwrap().loss), ours);
    }

    #[test]
    fn gilbert_losses_come_in_bursts() {
        // The forward direction's losses with Gilbert-Elliott cluster: the chance that the
        // packet after a loss is lost too is far above the average loss rate.
        let sc = shortflow_scenario::load(GILBERT, "g.toml", &["drop.syn=[]".into(), "drop.data=[]".into()]).unwrap();
        let mut m = link(&sc).unwrap().loss;
        let lost: Vec<bool> = (0..20_000).map(|_| m.decide_kind(true, None) == Fate::Random).collect();
        let rate = lost.iter().filter(|&&l| l).count() as f64 / lost.len() as f64;
        let after: Vec<bool> = lost.windows(2).filter(|w| w[0]).map(|w| w[1]).collect();
        let burst = after.iter().filter(|&&l| l).count() as f64 / after.len() as f64;
        assert!(rate > 0.03 && burst > 2.0 * rate, "rate {rate}, after a loss {burst}");
    }

    #[test]
    fn scripted_drops_reach_the_link_by_kind_and_occurrence() {
        let text = "[path]\nrtt = \"10ms\"\n[drop]\nsynack = [2]\nack = [1]\nclient_data = [1]\n";
        let sc = shortflow_scenario::load(text, "d.toml", &[]).unwrap();
        let mut m = link(&sc).unwrap().loss;
        let fates: Vec<Fate> =
            [(false, Kind::SynAck), (false, Kind::SynAck), (true, Kind::Ack), (true, Kind::Ack), (true, Kind::ClientData)]
                .into_iter()
                .map(|(c, k)| m.decide_kind(c, Some(k)))
                .collect();
        assert_eq!(fates, [Fate::Pass, Fate::Scripted, Fate::Scripted, Fate::Pass, Fate::Scripted]);
    }

    #[test]
    fn what_one_link_cannot_carry_is_refused_by_key() {
        let sc = shortflow_scenario::load(
            "[path]\nrtt = \"10ms\"\nbandwidth = \"10Mbit\"\naccess_bandwidth = \"100Mbit\"\n",
            "a.toml",
            &[],
        )
        .unwrap();
        let e = link(&sc).err().unwrap();
        assert_eq!((e.file.as_str(), e.key.as_str()), ("a.toml", "path.access_bandwidth"));
        let red = "[path]\nrtt = \"10ms\"\nqueue = { kind = \"red\", packets = 50, min_threshold = 5, max_threshold = 15 }\n";
        match shortflow_scenario::load(red, "r.toml", &[]) {
            Ok(sc) => assert_eq!(link(&sc).err().unwrap().key, "path.queue"),
            Err(e) => panic!("the RED example no longer parses: {e}"),
        }
        let db = "[dumbbell]\npairs = 2\nbandwidth = \"10Mbit\"\ndelay = \"10ms\"\n";
        let e = link(&shortflow_scenario::load(db, "d.toml", &[]).unwrap()).err().unwrap();
        assert_eq!(e.to_string(), "d.toml: dumbbell: the emulator is one link between one client and one server, not a dumbbell");
    }

    #[test]
    fn read_names_the_file_and_the_key() {
        let p = write("bad-key", "[path]\nrtt = \"20\"\n");
        let e = read(&p, &[]).unwrap_err();
        assert_eq!((e.file.as_str(), e.key.as_str()), (p.display().to_string().as_str(), "path.rtt"));
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
        let p = write("bad-set", "[path]\nrtt = \"20ms\"\n");
        let e = read(&p, &["random_loss.forward=2".into()]).unwrap_err();
        assert_eq!(e.key, "random_loss.forward");
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
        let e = read(Path::new("/nonexistent/s.toml"), &[]).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/s.toml: cannot read:"), "{e}");
    }

    #[test]
    fn each_connection_vector_gets_its_rtt_beyond_the_paths_by_its_port() {
        let text = "[path]\nrtt = \"20ms\"\n[workload]\nkind = \"abt\"\nvectors = \"\"\"\n\
                    SEQ 500000 1 7 0\nr 150000\n> 100\n< 100\n\
                    SEQ 0 1 8 0\nr 80000\n> 100\n< 100\n\
                    SEQ 900000 1 9 0\nr 10000\n> 100\n< 100\n\"\"\"\n";
        let sc = shortflow_scenario::load(text, "v.toml", &[]).unwrap();
        // In start order: the 80 ms one first (port 41000), then 150 ms, then 10 ms (none:
        // below the path's own).
        assert_eq!(flow_delays(&sc, 41000).unwrap(), HashMap::from([(41000, 30_000_000), (41001, 65_000_000)]));
        let http = shortflow_scenario::load("[path]\nrtt = \"20ms\"\n", "h.toml", &[]).unwrap();
        let e = flow_delays(&http, 41000).unwrap_err();
        assert_eq!(e.key, "workload.kind", "{e}");
        let e = flow_delays(&sc, u16::MAX - 1).unwrap_err();
        assert!(e.to_string().contains("3 connection vectors do not fit"), "{e}");
    }

    #[test]
    fn per_connection_delay_is_refused_and_kind_losses_are_carried() {
        let sets = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let sc = shortflow_scenario::load(GILBERT, "g.toml", &sets(&["path.rtt_max=\"90ms\""])).unwrap();
        let e = link(&sc).err().expect("refused");
        assert_eq!(e.key, "path.rtt_max", "{e}");
        // A kind's loss is the simulator's loss model: the same fates for the same packets.
        let sc = shortflow_scenario::load(GILBERT, "g.toml", &sets(&["random_loss.synack=0.4"])).unwrap();
        let fates = decisions(link(&sc).unwrap().loss);
        assert_eq!(fates, decisions(LossModel::for_scenario(&sc)));
        let synacks = packets().iter().zip(&fates).filter(|((_, k), f)| *k == Some(Kind::SynAck) && **f != Fate::Pass).count();
        assert!((120..200).contains(&synacks), "{synacks} of 400 SYN/ACKs lost at 40 %");
    }
}
