//! The range of every count, size and duration a scenario can set, checked on the file as
//! written with its `--set` overrides, after it is read and resolved (so a resolution error
//! is reported first, as a user fixes them in that order).
//!
//! A range is declared once, on its raw field, beside its help and default:
//! `#[schemars(extend("x-range" = [MIN, MAX], "x-range-why" = "why it stops there"))]`,
//! a bound written as the key's values are (`"1ms"`, `"1GB"`, `"1kbit"`) or as a whole
//! number of the unit's base (a count, nanoseconds, bytes, bit/s). On a list, the range
//! bounds each item, or with `"x-range-of" = "length"` the number of items. This module
//! reads the declarations from the schema of the raw document once; the range check,
//! the schema's `x-range` and `docs/scenario.md` all come from that table.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::Value;

use super::raw::RawScenario;
use crate::error::ScenarioError;
use crate::units;

/// How a range's bounds print (`1ms`, `1000000`, `1GB`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Unit {
    Count,
    Nanos,
    Bytes,
    BitsPerSecond,
}

/// One key's range: the bounds, what they bound and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    pub unit: Unit,
    pub min: u64,
    pub max: u64,
    pub why: String,
    /// On a list: the bounds are its number of items, not each item's value.
    pub of_length: bool,
}

const MS: u64 = 1_000_000;
const S: u64 = 1_000 * MS;

/// The range of `key` (dotted; a host's keys as `{side}.key`), as its field declares it.
pub fn of(key: &str) -> Option<&'static Range> {
    TABLE.get(key)
}

/// Every declared range by dotted key, read from the raw document's schema.
static TABLE: LazyLock<HashMap<String, Range>> = LazyLock::new(|| {
    let schema = serde_json::to_value(schemars::schema_for!(RawScenario)).expect("a schema is JSON");
    let mut out = HashMap::new();
    declared(&schema, "", &schema["$defs"], &mut out);
    out
});

/// Collects the ranges declared on the properties of `node` (keys under `prefix`), and
/// under the tables they refer to; the hosts' table once, as `{side}`.
fn declared(node: &Value, prefix: &str, defs: &Value, out: &mut HashMap<String, Range>) {
    let Some(Value::Object(props)) = node.get("properties") else { return };
    for (name, prop) in props {
        let key = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        let def_name = ref_name(prop);
        if let Some(def) = def_name.as_deref().and_then(|n| defs.get(n)) {
            match def_name.as_deref() {
                Some("RawHost") if name == "client" => declared(def, "{side}", defs, out),
                Some("RawHost") => {}
                _ => declared(def, &key, defs, out),
            }
        }
        if let Some(range) = prop.get("x-range") {
            out.insert(key.clone(), parse_declaration(&key, prop, range, defs));
        }
    }
}

/// The definition name a `$ref` (or an `Option`'s `anyOf [$ref, null]`, or a list's
/// `items`) points to.
pub(crate) fn ref_name(node: &Value) -> Option<String> {
    let r = node.get("$ref").or_else(|| node.get("anyOf")?.as_array()?.iter().find_map(|v| v.get("$ref")))?;
    Some(r.as_str()?.strip_prefix("#/$defs/")?.to_string())
}

/// A field's declared range. A malformed declaration is the project's own mistake: it
/// panics, naming the key, the first time any range is asked for (every test does).
fn parse_declaration(key: &str, prop: &Value, range: &Value, defs: &Value) -> Range {
    let of_length = match prop.get("x-range-of").map(|v| v.as_str()) {
        None => false,
        Some(Some("length")) => true,
        Some(other) => panic!("{key}: x-range-of is {other:?}; the only one is \"length\""),
    };
    // The unit of the value (of a list's items): its type's `x-unit`, a count without one.
    let item = prop.get("items").unwrap_or(prop);
    let unit_name = ref_name(item).and_then(|n| defs.get(&n)?.get("x-unit")?.as_str().map(str::to_string));
    let unit = match (of_length, unit_name.as_deref()) {
        (true, _) | (false, None) => Unit::Count,
        (false, Some("duration")) => Unit::Nanos,
        (false, Some("size")) => Unit::Bytes,
        (false, Some("rate")) => Unit::BitsPerSecond,
        (false, Some(other)) => panic!("{key}: a range of {other} values"),
    };
    let bound = |b: &Value| match b {
        Value::Number(n) => n.as_u64().unwrap_or_else(|| panic!("{key}: range bound {n} is not a whole number")),
        Value::String(t) => parse(unit, t).unwrap_or_else(|| panic!("{key}: range bound {t:?} is not a {unit:?}")),
        other => panic!("{key}: range bound {other} is neither a number nor a value with its unit"),
    };
    let (min, max) = match range.as_array().map(Vec::as_slice) {
        Some([min, max]) => (bound(min), bound(max)),
        _ => panic!("{key}: x-range is [MIN, MAX], not {range}"),
    };
    let why = prop.get("x-range-why").and_then(Value::as_str).unwrap_or_else(|| panic!("{key}: a range says why (x-range-why)"));
    assert!(min <= max, "{key}: range {min} to {max} is empty");
    Range { unit, min, max, why: why.to_string(), of_length }
}

/// A value written with the key's unit (`"200ms"`), None when it is not one (`"rfc3390"`,
/// `"bdp"`: a named value the resolution checks).
fn parse(unit: Unit, text: &str) -> Option<u64> {
    match unit {
        Unit::Count => None,
        Unit::Nanos => units::duration_ns(text).ok(),
        Unit::Bytes => units::size_bytes(text).ok(),
        Unit::BitsPerSecond => units::rate_bps(text).ok(),
    }
}

pub fn show(unit: Unit, v: u64) -> String {
    match unit {
        Unit::Count => v.to_string(),
        Unit::Nanos => duration(v),
        Unit::Bytes => format!("{v}B"),
        Unit::BitsPerSecond => format!("{v}bit"),
    }
}

/// The largest unit that writes `ns` exactly: `120s`, `500ms`, `0s`.
fn duration(ns: u64) -> String {
    match ns {
        0 => "0s".into(),
        n if n % S == 0 => format!("{}s", n / S),
        n if n % MS == 0 => format!("{}ms", n / MS),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

impl Range {
    /// "1ms to 120s": the bounds as the reference shows them.
    pub fn bounds(&self) -> String {
        format!("{} to {}", show(self.unit, self.min), show(self.unit, self.max))
    }
}

fn check(src: &str, key: &str, range: &Range, value: u64) -> Result<(), ScenarioError> {
    if (range.min..=range.max).contains(&value) {
        return Ok(());
    }
    Err(ScenarioError::new(
        src,
        key,
        format!("{} is outside its range {} ({})", show(range.unit, value), range.bounds(), range.why),
    ))
}

/// Checks one key where its value is read (before anything is sized by it).
pub fn check_key(src: &str, key: &str, value: u64) -> Result<(), ScenarioError> {
    check(src, key, of(key).expect("every checked key has a range"), value)
}

/// Checks every value of the document (`--set` overrides applied) that has a range.
pub fn check_document(doc: &toml::Table, src: &str) -> Result<(), ScenarioError> {
    check_table(doc, "", src)
}

fn check_table(table: &toml::Table, prefix: &str, src: &str) -> Result<(), ScenarioError> {
    for (name, value) in table {
        let key = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        if let toml::Value::Table(t) = value {
            check_table(t, &key, src)?;
            continue;
        }
        // A host's keys are declared once for both (`{side}.`).
        let declared = match key.split_once('.') {
            Some(("client" | "server", rest)) => of(&format!("{{side}}.{rest}")),
            _ => of(&key),
        };
        let Some(range) = declared else { continue };
        match value {
            toml::Value::Array(items) if range.of_length => check(src, &key, range, items.len() as u64)?,
            toml::Value::Array(items) => {
                for item in items {
                    check_value(src, &key, range, item)?;
                }
            }
            _ => check_value(src, &key, range, value)?,
        }
    }
    Ok(())
}

/// One value: a whole number, or a string with the key's unit; any other (a name such as
/// `"rfc3390"`) is the resolution's to check.
fn check_value(src: &str, key: &str, range: &Range, value: &toml::Value) -> Result<(), ScenarioError> {
    let n = match value {
        toml::Value::Integer(i) => u64::try_from(*i).ok(),
        toml::Value::String(t) => parse(range.unit, t),
        _ => None,
    };
    n.map_or(Ok(()), |n| check(src, key, range, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every declaration parses (a malformed one panics here, naming its key), and the
    /// keys the resolution checks by name have one.
    #[test]
    fn every_declared_range_reads() {
        assert!(TABLE.len() > 40, "{} ranges", TABLE.len());
        for key in ["dumbbell.pairs", "{side}.syn_rto", "drop.data", "workload.response_writes"] {
            assert!(of(key).is_some(), "{key}");
        }
        let rto = of("{side}.syn_rto").unwrap();
        assert_eq!((rto.unit, rto.min, rto.max), (Unit::Nanos, MS, crate::kernel::TCP_RTO_MAX.as_nanos()));
        assert!(of("workload.response_writes").unwrap().of_length);
    }

    fn doc(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn a_value_outside_is_refused_with_its_key_and_range() {
        let e = check_document(&doc("[server]\nsyn_rto = \"121s\""), "t.toml").unwrap_err().to_string();
        assert!(e.contains("server.syn_rto") && e.contains("121s is outside its range 1ms to 120s"), "{e}");
        let e = check_document(&doc("[drop]\ndata = [3, 2000000]"), "t.toml").unwrap_err().to_string();
        assert!(e.contains("drop.data") && e.contains("2000000 is outside its range 1 to 1000000"), "{e}");
        let e = check_document(&doc("[workload]\nresponse_writes = []"), "t.toml").unwrap_err().to_string();
        assert!(e.contains("workload.response_writes") && e.contains("0 is outside its range 1 to 10000"), "{e}");
    }

    #[test]
    fn values_inside_and_named_values_pass() {
        let ok = "[server]\nsyn_rto = \"120s\"\ninitial_window = \"rfc3390\"\n[path]\nqueue = { packets = \"bdp\" }";
        check_document(&doc(ok), "t.toml").unwrap();
    }
}
