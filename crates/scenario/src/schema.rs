//! The scenario file's reference, generated from the model: the JSON Schema of the raw
//! document (derived from the serde structs: each key's help from its doc comment, its
//! unit from its type, its default as shown from its `schemars(extend("default" = …))`,
//! its range from its `schemars(extend("x-range" = …))`, read by `ranges`), and the flat
//! list of keys that `shortflow scenario keys` prints and `docs/scenario.md` shows.

use serde::Serialize;
use serde_json::{json, Value};

use crate::scenario::ranges::{self, ref_name, Unit};
use crate::scenario::raw::RawScenario;

/// One key of the scenario file as `shortflow scenario keys` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyDoc {
    /// Dotted key; `{side}.` stands for `client.` and `server.`.
    pub key: String,
    /// TOML type: string, integer, number, boolean, array, table.
    pub kind: String,
    /// duration, size or rate for values written with their unit; empty otherwise.
    pub unit: String,
    pub default: String,
    /// "1ms to 120s" and why, when the model bounds the key.
    pub range: String,
    pub help: String,
}

/// The JSON Schema (draft 2020-12) of a scenario file, with defaults and ranges.
pub fn json_schema() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(RawScenario)).expect("a schema is JSON");
    let obj = schema.as_object_mut().expect("an object schema");
    // The project has no web address to name the schema by: a URN with the model's version
    // identifies it (JSON Schema 2020-12 allows any absolute URI), and editors are pointed
    // at the shipped file itself (docs/scenario.md).
    obj.insert("$id".into(), json!(concat!("urn:shortflow:scenario-schema:", env!("CARGO_PKG_VERSION"))));
    obj.insert("title".into(), json!("shortflow scenario file"));
    obj.insert("description".into(), json!("One TOML file drives the simulator and the testbed (docs/scenario.md)."));
    // Each table's definition is annotated once, for the first key it appears under: the
    // tables used twice (path.queue and dumbbell.queue, the two hosts as `{side}`, ...)
    // have the same ranges wherever they appear.
    let mut todo = annotate(&mut schema, "");
    let mut done = std::collections::HashSet::new();
    while let Some((name, key)) = todo.pop() {
        if !done.insert(name.clone()) {
            continue;
        }
        let prefix = if name == "RawHost" { "{side}".to_string() } else { key };
        if let Some(def) = schema.get_mut("$defs").and_then(|d| d.get_mut(&name)) {
            todo.extend(annotate(def, &prefix));
        }
    }
    schema
}

/// Adds default and range to each property of `node` (keys under `prefix`); returns the
/// definitions its properties refer to, with their keys.
fn annotate(node: &mut Value, prefix: &str) -> Vec<(String, String)> {
    let mut refs = Vec::new();
    let Some(Value::Object(props)) = node.get_mut("properties") else { return refs };
    for (name, prop) in props.iter_mut() {
        let key = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        if let Some(def) = ref_name(prop) {
            refs.push((def, key.clone()));
        }
        let p = prop.as_object_mut().expect("a property schema");
        // serde(default) tables get their Default as a JSON default: noise, not a value.
        if p.get("default").is_some_and(|d| d.is_object()) {
            p.remove("default");
        }
        // The declaration (`[MIN, MAX]` as written) gives way to the bounds as shown.
        p.remove("x-range-of");
        if let Some(range) = range_of(&key) {
            p.insert("x-range".into(), json!(range.bounds()));
            p.insert("x-range-why".into(), json!(range.why));
            if range.of_length {
                p.insert("minItems".into(), json!(range.min));
                p.insert("maxItems".into(), json!(range.max));
            } else if range.unit == Unit::Count && p.get("items").is_none() {
                p.insert("minimum".into(), json!(range.min));
                p.insert("maximum".into(), json!(range.max));
            }
        }
    }
    refs
}

/// The range of `key` (a host's keys as `{side}.key`, whichever host it is shown under).
fn range_of(key: &str) -> Option<&'static ranges::Range> {
    match key.split_once('.') {
        Some(("client" | "server", rest)) => ranges::of(&format!("{{side}}.{rest}")),
        _ => ranges::of(key),
    }
}

/// Every key of the scenario file (tables in alphabetical order, host keys once as `{side}.`).
pub fn keys() -> Vec<KeyDoc> {
    let schema = json_schema();
    let mut out = Vec::new();
    walk(&schema, "", &schema["$defs"], &mut out);
    out
}

fn walk(node: &Value, prefix: &str, defs: &Value, out: &mut Vec<KeyDoc>) {
    let Some(Value::Object(props)) = node.get("properties") else { return };
    for (name, prop) in props {
        let key = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        let def = ref_name(prop).and_then(|n| Some((n.clone(), defs.get(&n)?)));
        match def {
            Some((n, def)) if n == "RawHost" => {
                if name == "client" {
                    walk(def, "{side}", defs, out);
                }
            }
            Some((_, def)) => {
                out.push(doc(&key, prop, Some(def)));
                walk(def, &key, defs, out);
            }
            None => out.push(doc(&key, prop, None)),
        }
    }
}

fn doc(key: &str, prop: &Value, def: Option<&Value>) -> KeyDoc {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let def_or_prop = def.unwrap_or(prop);
    let unit = s(def_or_prop.get("x-unit"));
    let kind = if !unit.is_empty() {
        "string".to_string()
    } else if def.is_some_and(|d| d.get("properties").is_some()) {
        "table".to_string()
    } else {
        kind_of(def_or_prop)
    };
    // A doc comment's lines, joined: one space between words, as the comment reads.
    let one_line = |t: String| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let help = one_line(s(prop.get("description")));
    let help = if help.is_empty() { one_line(s(def.and_then(|d| d.get("description")))) } else { help };
    let range = match (prop.get("x-range"), prop.get("x-range-why")) {
        (Some(r), Some(w)) => format!("{} ({})", r.as_str().unwrap_or(""), w.as_str().unwrap_or("")),
        _ => String::new(),
    };
    let default = match prop.get("default") {
        Some(Value::String(d)) => d.clone(),
        Some(d) => d.to_string(),
        None if key.starts_with("{side}.") => "the stack profile's".to_string(),
        None => String::new(),
    };
    KeyDoc { key: key.to_string(), kind, unit, default, range, help }
}

fn kind_of(v: &Value) -> String {
    let name = |t: &str| match t {
        "object" => "table".to_string(),
        other => other.to_string(),
    };
    match v.get("type") {
        Some(Value::String(t)) => name(t),
        Some(Value::Array(ts)) => {
            ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").map(name).collect::<Vec<_>>().join(" or ")
        }
        _ => match v.get("anyOf").or_else(|| v.get("oneOf")) {
            Some(Value::Array(alts)) => {
                let mut kinds: Vec<String> = alts.iter().map(kind_of).filter(|k| !k.is_empty() && k != "null").collect();
                kinds.dedup();
                kinds.join(" or ")
            }
            _ if v.get("const").is_some() => "string".to_string(),
            _ => String::new(),
        },
    }
}

/// The keys as the Markdown table of `docs/scenario.md`.
pub fn keys_markdown() -> String {
    let mut out = String::from("| key | type | unit | default | range | help |\n|---|---|---|---|---|---|\n");
    let cell = |t: &str| t.replace('|', "\\|");
    for k in keys() {
        let default = if k.default.is_empty() { String::new() } else { format!("`{}`", k.default) };
        out +=
            &format!("| `{}` | {} | {} | {} | {} | {} |\n", k.key, k.kind, k.unit, cell(&default), cell(&k.range), cell(&k.help));
    }
    out
}
