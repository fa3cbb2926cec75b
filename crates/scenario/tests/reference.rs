//! The scenario reference is generated from the model and kept in sync: docs/scenario.md's
//! key table and the JSON Schema shipped in the Python package are what the model generates
//! now (regenerate with `shortflow scenario keys --markdown` / `shortflow scenario schema`),
//! and every default the reference states is the model's default.

use shortflow_scenario::load;
use shortflow_scenario::schema::{json_schema, keys, keys_markdown};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
pub const BEGIN: &str = "<!-- BEGIN generated: shortflow scenario keys --markdown -->\n";
pub const END: &str = "<!-- END generated -->";

#[test]
fn docs_scenario_md_has_the_generated_key_table() {
    let doc = std::fs::read_to_string(format!("{ROOT}/docs/scenario.md")).unwrap();
    let start = doc.find(BEGIN).expect("docs/scenario.md has the BEGIN marker") + BEGIN.len();
    let end = doc.find(END).expect("docs/scenario.md has the END marker");
    assert!(
        doc[start..end] == keys_markdown(),
        "docs/scenario.md is stale: regenerate its table with `shortflow scenario keys --markdown`"
    );
}

#[test]
fn the_shipped_json_schema_is_the_models() {
    let shipped = std::fs::read_to_string(format!("{ROOT}/python/shortflow/data/scenario.schema.json")).unwrap();
    let now = serde_json::to_string_pretty(&json_schema()).unwrap() + "\n";
    assert!(shipped == now, "python/shortflow/data/scenario.schema.json is stale: `shortflow scenario schema -o` it");
}

/// Setting a key to the default the reference states changes nothing.
#[test]
fn every_stated_default_is_the_models_default() {
    let base = "[path]\nrtt = \"20ms\"\n";
    let dumbbell = "[dumbbell]\npairs = 2\nbandwidth = \"10Mbit\"\ndelay = \"5ms\"\n";
    let mut checked = 0;
    let stated: Vec<(String, String)> = keys()
        .into_iter()
        .filter(|k| !k.default.is_empty() && k.default != "the stack profile's")
        .map(|k| (k.key, k.default))
        .collect();
    for (key, value) in &stated {
        let (key, value) = (key.as_str(), value.as_str());
        // Defaults that name another key ("the workload's port") are stated, not literal.
        if ["seed", "path.bandwidth", "workload.port", "[workload.response]"].contains(&value) {
            continue;
        }
        let (text, table) = if key.starts_with("dumbbell.") {
            (dumbbell, None)
        } else if let Some(rest) = key.strip_prefix("mechanisms.") {
            (base, rest.split_once('.').map(|(t, _)| format!("mechanisms.{t}={{}}")))
        } else {
            (base, None)
        };
        let mut pre: Vec<String> = table.into_iter().collect();
        // Keys of one workload kind are checked within it.
        match key {
            "workload.http_1_1" => {
                pre.extend(["workload.kind=packmime", "workload.load=\"50%\"", "workload.duration=\"1s\""].map(String::from))
            }
            "workload.flows" | "workload.spacing" => pre.push("workload.kind=bulk".into()),
            // A Gilbert-Elliott table's optional key, beside the keys it cannot go without.
            k if k.starts_with("random_loss.gilbert_") => {
                let table = k.rsplit_once('.').expect("a key in a table").0;
                pre.push(format!("{table}={{p_good_to_bad=0.01, p_bad_to_good=0.5, loss_bad=0.5}}"));
            }
            _ => {}
        }
        let key = key.replace("{side}", "client");
        let quoted = if value.starts_with('{')
            || value.starts_with('[')
            || value.parse::<f64>().is_ok()
            || value == "false"
            || value == "true"
        {
            value.to_string()
        } else {
            format!("\"{value}\"")
        };
        let mut with = pre.clone();
        with.push(format!("{key}={quoted}"));
        let a = load(text, "s.toml", &pre).unwrap();
        let b = load(text, "s.toml", &with).unwrap_or_else(|e| panic!("{key}={quoted}: {e}"));
        assert_eq!(a, b, "{key}: the stated default {value} is not the model's");
        checked += 1;
    }
    assert!(checked > 25, "only {checked} defaults checked");
}
