//! Prints the scenario reference: `keys` (Markdown table, default) or `schema` (JSON).
fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("schema") => println!("{}", serde_json::to_string_pretty(&shortflow_scenario::schema::json_schema()).unwrap()),
        _ => print!("{}", shortflow_scenario::schema::keys_markdown()),
    }
}
