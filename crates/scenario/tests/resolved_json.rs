//! A resolved scenario crosses to Python and the emulator as JSON: read back, it is the
//! same `Scenario`, bit for bit (floats included), for random valid scenarios; and the
//! same values give the same resolution from the file or from `--set` overrides.

use proptest::prelude::*;
use shortflow_scenario::{load, Scenario};

fn keys() -> impl Strategy<Value = Vec<(String, String)>> {
    (
        0u64..60_000,
        1u64..10_000,
        prop::sample::select(vec!["linux", "rfc2988", "rfc6298", "solaris", "bsd", "windows"]),
        prop::sample::select(vec!["linux", "rfc2988", "rfc6298", "solaris", "bsd", "windows"]),
        prop::option::of(1u32..200),
        0.0f64..=1.0,
        prop::collection::btree_set(1u32..10, 0..4),
        any::<u32>(),
        prop::sample::select(vec!["http", "poisson", "packmime", "bulk"]),
        prop::option::of(4u64..5_000),
    )
        .prop_map(|(rtt_us, kbit, client, server, iw, loss, syn, seed, kind, rto_min)| {
            let mut v = vec![
                ("path.rtt".to_string(), format!("\"{rtt_us}us\"")),
                ("path.bandwidth".into(), format!("\"{kbit}kbit\"")),
                ("client.stack".into(), format!("\"{client}\"")),
                ("server.stack".into(), format!("\"{server}\"")),
                ("random_loss.forward".into(), format!("{loss:?}")),
                ("drop.syn".into(), format!("{:?}", syn.into_iter().collect::<Vec<_>>())),
                ("seed".into(), seed.to_string()),
                ("workload.kind".into(), format!("\"{kind}\"")),
            ];
            if let Some(n) = iw {
                v.push(("server.initial_window".into(), n.to_string()));
            }
            if let Some(ms) = rto_min {
                v.push(("client.rto_min".into(), format!("\"{ms}ms\"")));
            }
            if matches!(kind, "poisson" | "packmime") {
                v.push(("workload.load".into(), "\"30%\"".into()));
                v.push(("workload.duration".into(), "\"10s\"".into()));
            }
            v
        })
}

fn toml(keys: &[(String, String)]) -> String {
    let mut tables: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for (k, v) in keys {
        let (table, leaf) = k.rsplit_once('.').unwrap_or(("", k));
        tables.entry(table).or_default().push(format!("{leaf} = {v}"));
    }
    let mut out = tables.remove("").unwrap_or_default().join("\n") + "\n";
    for (t, lines) in tables {
        out += &format!("[{t}]\n{}\n", lines.join("\n"));
    }
    out
}

proptest! {
    #[test]
    fn json_round_trip_and_file_equals_overrides(keys in keys()) {
        let from_file = load(&toml(&keys), "s.toml", &[]).unwrap();
        let overrides: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let from_set = load("[path]\nrtt = \"1ms\"\n", "s.toml", &overrides).unwrap();
        prop_assert_eq!(&from_file, &from_set);
        let json = serde_json::to_string(&from_file).unwrap();
        let back: Scenario = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(&back, &from_file);
    }
}
