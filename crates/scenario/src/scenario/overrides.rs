//! `--set key=value`: dotted keys into the parsed file before it is checked, so an override
//! meets exactly the same rules (unknown key, missing unit) as the file itself.

use toml::{Table, Value};

use crate::error::OverrideError;

/// Parses `value` as a TOML value (`5`, `true`, `[1, 2]`, `"x"`), or takes it as a bare
/// string (`100ms`, `linux`) when it is not one.
fn parse_value(text: &str) -> Value {
    match format!("v = {text}").parse::<Table>() {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| Value::String(text.to_string())),
        Err(_) => Value::String(text.to_string()),
    }
}

/// Applies one `key=value` to `doc`. Errors name the override.
pub fn apply(doc: &mut Table, assignment: &str) -> Result<(), (String, OverrideError)> {
    let Some((key, value)) = assignment.split_once('=') else {
        return Err((assignment.to_string(), OverrideError::NoEquals));
    };
    let key = key.trim();
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err((key.to_string(), OverrideError::NotDotted));
    }
    let mut table = doc;
    for (i, part) in parts[..parts.len() - 1].iter().enumerate() {
        let entry = table.entry(part.to_string()).or_insert_with(|| Value::Table(Table::new()));
        table = match entry {
            Value::Table(t) => t,
            _ => {
                return Err((parts[..=i].join("."), OverrideError::NotATable));
            }
        };
    }
    table.insert(parts[parts.len() - 1].to_string(), parse_value(value.trim()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_their_toml_types() {
        let mut doc = Table::new();
        apply(&mut doc, "path.rtt=100ms").unwrap();
        apply(&mut doc, "workload.connections=5").unwrap();
        apply(&mut doc, "drop.syn=[1, 2]").unwrap();
        apply(&mut doc, "mechanisms.syn_optimizer.side=client").unwrap();
        assert_eq!(doc["path"]["rtt"].as_str(), Some("100ms"));
        assert_eq!(doc["workload"]["connections"].as_integer(), Some(5));
        assert_eq!(doc["drop"]["syn"].as_array().unwrap().len(), 2);
        assert_eq!(doc["mechanisms"]["syn_optimizer"]["side"].as_str(), Some("client"));
        assert!(apply(&mut doc, "path.rtt.x=1").is_err());
        assert!(apply(&mut doc, "nothing").is_err());
    }
}
